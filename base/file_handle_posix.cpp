// base/file_handle.h on POSIX hosts: a descriptor and flock(2).
#include "base/file_handle.h"
#include "base/files.h"

#include <algorithm>
#include <cerrno>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hotlink::base {

FileHandle FileHandle::open(const std::string &path, Access access) {
  FileHandle f;
  f.fd_ = access == Access::Read ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC)
                                 : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  f.error_ = f.fd_ < 0 ? errno : 0;
  return f;
}

FileHandle::FileHandle(FileHandle &&o) noexcept : fd_(o.fd_), error_(o.error_) { o.fd_ = -1; }

FileHandle &FileHandle::operator=(FileHandle &&o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.fd_;
    error_ = o.error_;
    o.fd_ = -1;
  }
  return *this;
}

void FileHandle::reset() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

FileHandle::operator bool() const { return fd_ >= 0; }

bool FileHandle::try_lock(Lock lock) {
  if (::flock(fd_, (lock == Lock::Shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
    return true;
  error_ = errno;
  return false;
}

bool FileHandle::lock(Lock lock) {
  int r;
  while ((r = ::flock(fd_, lock == Lock::Shared ? LOCK_SH : LOCK_EX)) != 0 && errno == EINTR) {
  }
  error_ = r == 0 ? 0 : errno;
  return r == 0;
}

void FileHandle::unlock() { ::flock(fd_, LOCK_UN); }

bool FileHandle::names(const std::string &path) const { return same_file(fd_, path); }

bool FileHandle::size(std::uint64_t &out) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    return false;
  out = static_cast<std::uint64_t>(st.st_size);
  return true;
}

bool FileHandle::read_all(std::vector<std::uint8_t> &out, std::uint64_t size) const {
  return read_exact(fd_, out, size);
}

long long FileHandle::read_at(void *data, std::size_t size, std::uint64_t offset) const {
  ssize_t n;
  while ((n = ::pread(fd_, data, size, static_cast<off_t>(offset))) < 0 && errno == EINTR) {
  }
  return n;
}

bool FileHandle::write_at(const void *data, std::size_t size, std::uint64_t offset) {
  bool ok = write_all(fd_, data, size, offset);
  error_ = ok ? 0 : errno;
  return ok;
}

bool FileHandle::touch() {
  struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  return ::futimens(fd_, times) == 0;
}

} // namespace hotlink::base
