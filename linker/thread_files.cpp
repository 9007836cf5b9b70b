#include "linker/thread_files.h"

#include "base/files.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace hotlink::detail {

ThreadFiles &ThreadFiles::mine() {
  thread_local ThreadFiles files;
  if (files.pid_ != ::getpid()) // new, or a fork's child: the fds are the parent's files
    files.forget();
  return files;
}

ThreadFiles::~ThreadFiles() { forget(); }

int ThreadFiles::hold(std::size_t index, const std::string &name, const std::vector<std::uint8_t> &bytes) {
  while (memfds_.size() <= index) {
    int fd = ::memfd_create(("hotlink:" + name).c_str(), MFD_CLOEXEC);
    if (fd < 0)
      return -1;
    memfds_.push_back({fd, 0});
  }
  Memfd &m = memfds_[index];
  if (!base::write_all(m.fd, bytes.data(), bytes.size(), 0) || (m.size > bytes.size() && ::ftruncate(m.fd, off_t(bytes.size())) != 0)) {
    int e = errno;
    close_memfds();
    errno = e;
    return -1;
  }
  m.size = bytes.size();
  return m.fd;
}

void ThreadFiles::release_large() {
  for (Memfd &m : memfds_)
    if (m.size > kKeepBytes && ::ftruncate(m.fd, 0) == 0)
      m.size = 0;
}

std::tuple<int, int, std::uint64_t> ThreadFiles::pipe() {
  if (pipe_[0] >= 0 && !empty_pipe())
    close_pipe();
  if (pipe_[0] < 0) {
    if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
      pipe_[0] = pipe_[1] = -1;
      return {-1, -1, 0};
    }
#ifdef F_SETPIPE_SZ
    (void)::fcntl(pipe_[1], F_SETPIPE_SZ, 1 << 20); // may be refused: then 64 KiB, drained as it fills
    int cap = ::fcntl(pipe_[1], F_GETPIPE_SZ);
    capacity_ = cap > 0 ? std::uint64_t(cap) : 0;
#endif
  }
  return {pipe_[0], pipe_[1], capacity_};
}

// Whether the pipe holds nothing: a link that stopped half-way (it should
// not happen) must not leave bytes that the next image would start with.
bool ThreadFiles::empty_pipe() const {
  char c;
  ssize_t n = ::read(pipe_[0], &c, 1);
  return n < 0 && errno == EAGAIN;
}

void ThreadFiles::close_memfds() {
  for (const Memfd &m : memfds_)
    ::close(m.fd);
  memfds_.clear();
}

void ThreadFiles::close_pipe() {
  for (int &fd : pipe_)
    if (fd >= 0)
      ::close(std::exchange(fd, -1));
}

void ThreadFiles::forget() {
  close_memfds();
  close_pipe();
  pid_ = ::getpid();
}

} // namespace hotlink::detail
