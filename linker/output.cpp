// Publishing what a link writes: reserved before lld runs, renamed into
// place after (output.h's OutputReservation).
#include "linker/output.h"
#include "hotlink/link.h"

#include "base/files.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <set>
#include <vector>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::detail {

namespace {

// The directory part of `path` ("." for a bare name, "/" for one in the
// root) and its last part ("" when it ends in '/').
std::string directory_of(const std::string &path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}
std::string name_of(const std::string &path) { return path.substr(path.rfind('/') + 1); }

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

// A named temporary beside the output, ".BASE.hotlink-PID-STAMP-ATTEMPT.tmp":
// the name an unnamed reservation gets just before its rename, or the
// reservation itself where there is no O_TMPFILE. A killed link can leave
// one behind.
std::string temp_prefix(const std::string &base) { return "." + base + ".hotlink-"; }
std::string temp_path(const std::string &dir, const std::string &base, int attempt) {
  return dir + "/" + temp_prefix(base) + std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007) + "-" +
         std::to_string(attempt) + ".tmp";
}

// Removes the named temporaries of `base` in `dir` that no link holds (a
// link holds its temporary locked until it is renamed: base::own_file), so
// that those of killed links do not pile up.
void sweep_dead_temporaries(const std::string &dir, const std::string &base) {
  std::string prefix = temp_prefix(base);
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> found;
  while (struct dirent *e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0 && name.size() >= 4 &&
        name.compare(name.size() - 4, 4, ".tmp") == 0)
      found.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const std::string &t : found)
    base::remove_if_abandoned(t);
}

} // namespace

Expected<OutputReservation> OutputReservation::reserve(const std::string &path, unsigned mode) {
  OutputReservation r;
  r.path_ = path;
  r.mode_ = mode;
  std::string dir = directory_of(path);
  if (name_of(path).empty() || name_of(path) == "." || name_of(path) == ".." || is_directory(path))
    return make_error(ErrorCode::OutputError, "the output path names a directory",
                      path, "-o", "name a file");
  // An existing file that is not a regular one (/dev/null, a FIFO, a
  // terminal) is written in place, as ld.lld does: renaming over it would
  // replace a device node with a regular file.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    r.fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (r.fd_ < 0) {
      int e = errno;
      return make_error(ErrorCode::OutputError, std::string("cannot open the output for writing: ") + std::strerror(e),
                        path, "-o", "name a file you can write to");
    }
    r.in_place_ = true;
    return r;
  }
  // An unnamed file in the destination directory, named only when it is
  // complete (commit(), through /proc/self/fd: without /proc it could not
  // be named): a link killed before that leaves nothing behind. One killed
  // in the instant between naming and renaming leaves a named temporary,
  // which the first link of that output in a later process removes (a
  // directory is read once per process and output, not at every link).
  std::string base = name_of(path);
  static const bool can_name = ::access("/proc/self/fd", X_OK) == 0;
  r.fd_ = can_name ? ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600) : -1;
  if (r.fd_ >= 0) {
    ::flock(r.fd_, LOCK_EX); // the name it gets at commit() is a live link's

    static std::mutex mu;
    static std::set<std::string> swept;
    std::lock_guard<std::mutex> lock(mu);
    if (swept.insert(dir + "/" + base).second)
      sweep_dead_temporaries(dir, base);
    return r;
  }
  if (!can_name)
    errno = EOPNOTSUPP;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
    return r.cannot_reserve(dir, errno);
  if (errno == ENOENT && !is_directory(dir))
    return r.cannot_reserve(dir, ENOENT);
  // A file system without O_TMPFILE: a named temporary, and those of
  // links that were killed are swept at every link.
  sweep_dead_temporaries(dir, base);
  for (int attempt = 0; attempt < 100 && r.fd_ < 0; ++attempt) {
    r.temp_ = temp_path(dir, base, attempt);
    r.fd_ = ::open(r.temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (r.fd_ < 0 && errno != EEXIST)
      break;
    if (r.fd_ >= 0 && !base::own_file(r.fd_, r.temp_)) { // another link's sweep took it first
      ::close(r.fd_);
      r.fd_ = -1;
    }
  }
  if (r.fd_ < 0) {
    int e = errno;
    r.temp_.clear();
    return r.cannot_reserve(dir, e);
  }
  return r;
}

Error OutputReservation::cannot_reserve(const std::string &dir, int err) const {
  return make_error(ErrorCode::OutputError,
                    "cannot write in the output directory '" + dir + "': " + std::strerror(err), path_, "-o",
                    "choose a directory that exists and that you can write to");
}

OutputReservation::OutputReservation(OutputReservation &&o) noexcept
    : path_(std::move(o.path_)), temp_(std::move(o.temp_)), fd_(o.fd_), mode_(o.mode_), in_place_(o.in_place_) {
  o.fd_ = -1;
  o.temp_.clear();
}

OutputReservation::~OutputReservation() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!temp_.empty())
    ::unlink(temp_.c_str());
}

Error OutputReservation::failed(const char *what, int err) const {
  const std::string &file = temp_.empty() ? path_ : temp_;
  return make_error(ErrorCode::OutputError, std::string(what) + " '" + file + "': " + std::strerror(err), path_,
                    "-o", "check free space and permissions of the output directory");
}

Error OutputReservation::write_error(int err) const { return failed("cannot write", err); }

std::optional<Error> OutputReservation::publish(const std::vector<std::uint8_t> &b) {
  if (!base::write_all(fd_, b.data(), b.size()))
    return write_error(errno);
  return commit();
}

std::optional<Error> OutputReservation::commit() {
  if (in_place_) {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? std::nullopt : std::optional<Error>(failed("cannot close", errno));
  }
  // Like a linker's output: the mode asked for, less the umask (the
  // temporary was created 0600 so nobody reads it half-written).
  ::fchmod(fd_, mode_ & ~process_umask());
  if (temp_.empty()) {
    // The unnamed file gets a temporary name beside the path, then the
    // path: rename() replaces atomically, linkat() cannot.
    std::string base = name_of(path_), dir = directory_of(path_);
    std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string t = temp_path(dir, base, attempt);
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, t.c_str(), AT_SYMLINK_FOLLOW) == 0) {
        temp_ = t;
        break;
      }
      if (errno != EEXIST)
        return failed("cannot name", errno);
    }
    if (temp_.empty())
      return failed("cannot name", EEXIST);
  }
  // Closed first (a file system may report a write error only then), while
  // a second descriptor keeps the temporary locked until it is renamed:
  // another link's sweep leaves it alone.
  int held = ::dup(fd_);
  const char *step = nullptr;
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0)
    step = "cannot close";
  else if (::rename(temp_.c_str(), path_.c_str()) != 0)
    step = "cannot rename";
  int e = errno;
  if (held >= 0)
    ::close(held);
  if (step)
    return failed(step, e);
  temp_.clear();
  return std::nullopt;
}

} // namespace hotlink::detail

namespace hotlink {

std::optional<Error> write_output_file(const std::string &path, const std::vector<std::uint8_t> &bytes,
                                       unsigned mode) {
  auto out = detail::OutputReservation::reserve(path, mode);
  if (!out)
    return out.take_error();
  return out->publish(bytes);
}

} // namespace hotlink
