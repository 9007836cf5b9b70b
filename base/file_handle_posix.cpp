// base/file_handle.h on POSIX hosts: a descriptor and flock(2).
#include "base/file_handle.h"
#include "base/files.h"

#include <cerrno>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::base {

FileHandle FileHandle::open(const std::string &path, Access access) {
  FileHandle f;
  // Never through a symbolic link: a file hotlink opens is one it made.
  int fd = access == Access::Read ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                                  : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  f.native_ = fd;
  f.error_ = fd < 0 ? errno : 0;
  return f;
}

void FileHandle::reset() {
  if (native_ >= 0)
    ::close(static_cast<int>(native_));
  native_ = -1;
}

bool FileHandle::try_lock(Lock lock) {
  if (::flock(static_cast<int>(native_), (lock == Lock::Shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
    return true;
  error_ = errno;
  return false;
}

bool FileHandle::lock(Lock lock) {
  int r;
  while ((r = ::flock(static_cast<int>(native_), lock == Lock::Shared ? LOCK_SH : LOCK_EX)) != 0 && errno == EINTR) {
  }
  error_ = r == 0 ? 0 : errno;
  return r == 0;
}

void FileHandle::unlock() { ::flock(static_cast<int>(native_), LOCK_UN); }

bool FileHandle::names(const std::string &path) const { return same_file(static_cast<int>(native_), path); }

FileIdentity FileHandle::identity() const { return identify_open_file(static_cast<int>(native_)); }

bool FileHandle::read_all(std::vector<std::uint8_t> &out, std::uint64_t size) const {
  return read_exact(static_cast<int>(native_), out, size);
}

long long FileHandle::read_at(void *data, std::size_t size, std::uint64_t offset) const {
  ssize_t n;
  while ((n = ::pread(static_cast<int>(native_), data, size, static_cast<off_t>(offset))) < 0 && errno == EINTR) {
  }
  return n;
}

bool FileHandle::write_at(const void *data, std::size_t size, std::uint64_t offset) {
  bool ok = write_all(static_cast<int>(native_), data, size, offset);
  error_ = ok ? 0 : errno;
  return ok;
}

bool FileHandle::touch() {
  struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  return ::futimens(static_cast<int>(native_), times) == 0;
}

} // namespace hotlink::base
