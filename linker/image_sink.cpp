#include "linker/image_sink.h"

#include "base/files.h"

#include <cerrno>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

namespace hotlink::detail {

void ImageSink::take(int pipe) {
  while (fd_ >= 0 && splicing_ && error_ == 0) {
    ssize_t n = ::splice(pipe, nullptr, fd_, nullptr, 1u << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      written_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EINVAL || errno == ENOSYS))
      splicing_ = false; // the file system takes no splice: through the chunk below
    else if (n < 0 && errno != EAGAIN)
      error_ = errno;
    else
      return; // empty for now
  }
  // Read through a chunk kept per thread: a vector would zero what it
  // grows into, and a fresh buffer this size would be mapped and
  // unmapped each time.
  constexpr std::size_t kChunk = 256u << 10;
  thread_local std::unique_ptr<std::uint8_t[]> chunk(new std::uint8_t[kChunk]);
  for (;;) {
    ssize_t n = ::read(pipe, chunk.get(), kChunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // EAGAIN: empty for now
    if (fd_ < 0) {
      bytes_.insert(bytes_.end(), chunk.get(), chunk.get() + n);
    } else if (error_ == 0) {
      if (base::write_all(fd_, chunk.get(), static_cast<std::size_t>(n)))
        written_ += static_cast<std::uint64_t>(n);
      else
        error_ = errno ? errno : EIO;
    }
  }
}

} // namespace hotlink::detail
