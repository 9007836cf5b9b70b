// base/pending_file.h on POSIX hosts: O_TMPFILE and linkat through
// /proc/self/fd where they work, a locked named temporary elsewhere, flock
// as the holder's mark, rename (or link, which refuses an existing path).
#include "base/pending_file.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::base {

namespace {

std::string directory_of(const std::string &path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool is_directory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The process's umask, read without changing it (umask() would race with
// other threads creating files): /proc/self/status has it since Linux 4.7.
unsigned process_umask() {
  static const unsigned mask = [] {
    unsigned m = 022;
    if (std::FILE *f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "Umask: %o", &m) == 1)
          break;
      std::fclose(f);
    }
    return m;
  }();
  return mask;
}

} // namespace

void PendingFile::drop() {
  if (native_ >= 0)
    ::close(fd());
  native_ = -1;
  if (!temp_.empty())
    ::unlink(temp_.c_str());
  temp_.clear();
}

std::optional<FileError> PendingFile::reserve(const std::string &path, Publish how, PendingFile &out) {
  out.drop();
  out.path_ = path;
  out.how_ = how;
  std::string dir = directory_of(path);
  // Unnamed: named only when complete, through /proc/self/fd (without
  // /proc it could not be named).
  static const bool can_name = ::access("/proc/self/fd", X_OK) == 0;
  int fd = can_name ? ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600) : -1;
  if (fd >= 0) {
    ::flock(fd, LOCK_EX); // the name it gets at commit() is a live writer's
    out.native_ = fd;
    return std::nullopt;
  }
  int e = can_name ? errno : EOPNOTSUPP;
  if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL && e != ENOENT)
    return FileError{"cannot create", e, dir};
  if (e == ENOENT && !is_directory(dir))
    return FileError{"cannot create", ENOENT, dir};
  // A file system without O_TMPFILE: a named temporary, owned (one that a
  // cleaner took between its creation and its lock is made again).
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string temp = path + unique_suffix();
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
      return FileError{"cannot create", errno, temp};
    if (own_file(fd, temp)) {
      out.native_ = fd;
      out.temp_ = temp;
      return std::nullopt;
    }
    ::close(fd);
  }
  return FileError{"cannot create", EAGAIN, path};
}

std::optional<FileError> PendingFile::write(const void *data, std::size_t size) {
  if (!write_all(fd(), data, size))
    return FileError{"cannot write", errno, temp_.empty() ? path_ : temp_};
  return std::nullopt;
}

std::optional<FileError> PendingFile::commit() {
  ::fchmod(fd(), how_.mode & ~(how_.umask ? process_umask() : 0u));
  if (temp_.empty()) {
    // A temporary name beside the path, then the path, as a named
    // temporary's (closed first, so that a failed close publishes nothing).
    std::string proc = "/proc/self/fd/" + std::to_string(fd());
    for (int attempt = 0; attempt < 100 && temp_.empty(); ++attempt) {
      std::string t = path_ + unique_suffix();
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, t.c_str(), AT_SYMLINK_FOLLOW) == 0)
        temp_ = t;
      else if (errno != EEXIST)
        return FileError{"cannot name", errno, t};
    }
    if (temp_.empty())
      return FileError{"cannot name", EEXIST, path_};
  }
  // Closed first (a file system may report a write error only then), while
  // a second descriptor keeps the temporary locked until it has its name:
  // a cleaner leaves it alone.
  int held = ::dup(fd());
  int rc = ::close(fd());
  native_ = -1;
  const char *step = nullptr;
  if (rc != 0)
    step = "cannot close";
  else if (how_.replace ? ::rename(temp_.c_str(), path_.c_str()) != 0 : ::link(temp_.c_str(), path_.c_str()) != 0)
    step = how_.replace ? "cannot rename into place" : "cannot create";
  int e = errno;
  if (held >= 0)
    ::close(held);
  if (step)
    return FileError{step, e, path_}; // the temporary goes with drop()
  if (!how_.replace)
    ::unlink(temp_.c_str());
  temp_.clear();
  return std::nullopt;
}

} // namespace hotlink::base
