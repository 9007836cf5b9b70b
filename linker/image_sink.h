// Internal. Where an in-memory link's image goes as it leaves lld's output
// pipe (driver.cpp): into a vector, or, for a link that publishes a file
// (run_in_process's image_fd), spliced into that file, so that the kernel
// moves the pipe's pages into the file's and the image is never copied
// into, nor faulted in, this process's memory (7.6 MB for 100,000 exported
// functions). The pipe is always emptied, even after a write failed: lld
// must never block on it.
#pragma once

#include <cstdint>
#include <vector>

namespace hotlink::detail {

class ImageSink {
public:
  // Appends to `bytes`, or with `fd` >= 0 writes into that file.
  ImageSink(std::vector<std::uint8_t> &bytes, int fd) : bytes_(bytes), fd_(fd) {}

  // Takes what the (non-blocking) pipe holds now; the image is complete
  // once lld has returned and a last take() found nothing more.
  void take(int pipe);
  std::uint64_t written() const { return written_; } // into the file
  int error() const { return error_; }                // errno of a failed write into the file

private:
  std::vector<std::uint8_t> &bytes_;
  int fd_;
  bool splicing_ = true;
  std::uint64_t written_ = 0;
  int error_ = 0;
};

} // namespace hotlink::detail
