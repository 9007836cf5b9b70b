// base/file_handle.h: what is the same on every host.
#include "base/file_handle.h"

#include <algorithm>
#include <cerrno>
#include <thread>

namespace hotlink::base {

FileHandle::FileHandle(FileHandle &&o) noexcept : native_(o.native_), error_(o.error_) { o.native_ = -1; }

FileHandle &FileHandle::operator=(FileHandle &&o) noexcept {
  if (this != &o) {
    reset();
    native_ = o.native_;
    error_ = o.error_;
    o.native_ = -1;
  }
  return *this;
}

FileHandle::operator bool() const { return native_ != -1; }

bool FileHandle::size(std::uint64_t &out) const {
  FileIdentity id = identity();
  out = id.size;
  return id.exists;
}

bool FileHandle::lock_until(Lock lock, std::chrono::steady_clock::time_point deadline) {
  auto nap = std::chrono::microseconds(200);
  for (;;) {
    if (try_lock(lock))
      return true;
    if (error_ != EWOULDBLOCK && error_ != EINTR)
      return false;
    if (std::chrono::steady_clock::now() >= deadline) {
      error_ = ETIMEDOUT;
      return false;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(20));
  }
}

} // namespace hotlink::base
