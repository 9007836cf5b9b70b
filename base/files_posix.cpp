// base/files.h on POSIX hosts: file descriptors, flock, rename and link.
#include "base/files.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace hotlink::base {

bool write_all(int fd, const void *data, std::size_t size, std::optional<std::uint64_t> at) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = at ? ::pwrite(fd, p, size, static_cast<off_t>(*at)) : ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<std::size_t>(n);
    if (at)
      *at += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool read_exact(int fd, std::vector<std::uint8_t> &out, std::uint64_t size) {
  out.resize(size);
  std::uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<std::uint64_t>(n);
  }
  return true;
}

std::optional<FileError> read_file(const std::string &path, std::vector<std::uint8_t> &out, std::uint64_t most) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return FileError{"cannot read", errno, path};
  struct stat st;
  std::optional<FileError> failed;
  if (::fstat(fd, &st) != 0)
    failed = FileError{"cannot read", errno, path};
  else if (static_cast<std::uint64_t>(st.st_size) > most)
    failed = FileError{"cannot read", EFBIG, path};
  else if (errno = 0, !read_exact(fd, out, static_cast<std::uint64_t>(st.st_size)))
    failed = FileError{"cannot read", errno ? errno : EIO, path};
  ::close(fd);
  return failed;
}

std::optional<FileError> create_file(const std::string &path, const void *data, std::size_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return FileError{"cannot create", errno, path};
  bool ok = write_all(fd, data, size);
  int e = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (!ok)
    return FileError{"cannot write", e, path};
  return std::nullopt;
}

bool same_file(int fd, const std::string &path) {
  struct stat a, b;
  if (::fstat(fd, &a) != 0 || ::stat(path.c_str(), &b) != 0)
    return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool own_file(int fd, const std::string &path) {
  return ::flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, path);
}

bool remove_if_abandoned(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  bool removed = ::flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, path) && ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

void remove_tree(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (struct dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..")
        continue;
      std::string path = dir + "/" + name;
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        remove_tree(path);
      else
        ::unlink(path.c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

namespace {

FileIdentity identity_of(const struct stat &st) {
  FileIdentity id;
  id.exists = true;
  id.directory = S_ISDIR(st.st_mode);
  id.device = static_cast<unsigned long long>(st.st_dev);
  id.inode = st.st_ino;
  id.size = static_cast<unsigned long long>(st.st_size);
  id.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  id.ctime_ns = static_cast<long long>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec;
  return id;
}

} // namespace

FileIdentity identify_open_file(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 ? identity_of(st) : FileIdentity{};
}

FileIdentity identify_file(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? identity_of(st) : FileIdentity{};
}

std::string absolute_path(const std::string &path) {
  if (!path.empty() && path[0] == '/')
    return path;
  std::string cwd(4096, '\0');
  while (!::getcwd(cwd.data(), cwd.size())) {
    if (errno != ERANGE)
      return {};
    cwd.resize(cwd.size() * 2);
  }
  cwd.resize(std::strlen(cwd.c_str()));
  if (path.empty() || path == ".")
    return cwd;
  return cwd + (cwd.back() == '/' ? "" : "/") + (path.compare(0, 2, "./") == 0 ? path.substr(2) : path);
}

std::int64_t file_clock_ns() {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now); // the clock file times are set from
  return now.tv_sec * 1000000000ll + now.tv_nsec;
}

std::optional<std::string> open_to_others(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !(st.st_mode & 077))
    return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string(mode);
}

int remove_file(const std::string &path) { return ::unlink(path.c_str()) == 0 ? 0 : errno; }

int make_directory(const std::string &path) { return ::mkdir(path.c_str(), 0700) == 0 ? 0 : errno; }

int remove_directory(const std::string &path) { return ::rmdir(path.c_str()) == 0 ? 0 : errno; }

bool list_directory(const std::string &dir, std::vector<DirectoryEntry> &out, int &error) {
  DIR *d = ::opendir(dir.c_str());
  if (!d) {
    error = errno;
    return false;
  }
  while (dirent *e = ::readdir(d)) {
    DirectoryEntry entry;
    entry.name = e->d_name;
    if (entry.name == "." || entry.name == "..")
      continue;
    struct stat st;
    if (::lstat((dir + "/" + entry.name).c_str(), &st) == 0) {
      entry.regular = S_ISREG(st.st_mode);
      entry.directory = S_ISDIR(st.st_mode);
      entry.inode = static_cast<std::uint64_t>(st.st_ino);
      entry.size = static_cast<std::uint64_t>(st.st_size);
      entry.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    }
    out.push_back(std::move(entry));
  }
  ::closedir(d);
  return true;
}

std::optional<std::string> writable_by_others(const std::string &dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return std::nullopt;
  if (st.st_uid != ::geteuid())
    return "belongs to another user (uid " + std::to_string(st.st_uid) + ")";
  if (!(st.st_mode & 022))
    return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string("is writable by ") +
         ((st.st_mode & 020) && (st.st_mode & 002) ? "its group and by others"
          : (st.st_mode & 020)                     ? "its group"
                                                   : "others") +
         " (mode " + mode + ")";
}

} // namespace hotlink::base
