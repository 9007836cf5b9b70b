// Internal. The memfds and the output pipe of in-memory links (driver.cpp),
// kept per thread from one link to the next: creating two memfds and a
// pipe raised to 1 MiB, and closing them again, took ~28 us of a small
// link's ~0.75 ms. Each link rewrites its files in place; a file larger
// than kKeepBytes is emptied after its link, so that a thread holds no
// large input between links. A forked child makes its own (it would share
// the parent's memfds). Only the owning thread calls these; lld may read
// and write the files from hotlink's lld thread while the owner waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>
#include <tuple>
#include <vector>

namespace hotlink::detail {

class ThreadFiles {
public:
  static constexpr std::uint64_t kKeepBytes = 256u << 10;

  // The calling thread's files.
  static ThreadFiles &mine();
  ~ThreadFiles();

  // The memfd for a job's `index`th file, holding exactly `bytes`; -1
  // (errno set) when it cannot be made or written.
  int hold(std::size_t index, const std::string &name, const std::vector<std::uint8_t> &bytes);
  // After a link: large files emptied.
  void release_large();
  // The output pipe, empty: {read end, write end, capacity}; read end -1
  // when it cannot be made.
  std::tuple<int, int, std::uint64_t> pipe();

private:
  struct Memfd {
    int fd;
    std::uint64_t size;
  };
  bool empty_pipe() const;
  void close_memfds();
  void close_pipe();
  void forget();

  pid_t pid_ = 0;
  std::vector<Memfd> memfds_;
  int pipe_[2] = {-1, -1};
  std::uint64_t capacity_ = 0;
};

} // namespace hotlink::detail
