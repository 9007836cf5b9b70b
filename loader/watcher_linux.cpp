// loader/watcher.h on Linux: inotify on the file's directory (a rename
// onto the name, a writer closing it, a creation), woken by a pipe.
#include "loader/watcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace hotlink::loader {

namespace {

class Inotify final : public FileNotifier {
public:
  Inotify(int fd, int wake[2], std::string name) : fd_(fd), wake_{wake[0], wake[1]}, name_(std::move(name)) {}
  ~Inotify() override {
    for (int f : {fd_, wake_[0], wake_[1]})
      ::close(f);
  }

  bool wait(std::chrono::milliseconds timeout) override {
    struct pollfd fds[2] = {{wake_[0], POLLIN, 0}, {fd_, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(timeout.count())) <= 0 || !(fds[1].revents & POLLIN))
      return false;
    bool changed = false;
    alignas(struct inotify_event) char buf[4096];
    ssize_t n;
    while ((n = ::read(fd_, buf, sizeof buf)) > 0)
      for (char *p = buf; p < buf + n;) {
        auto *ev = reinterpret_cast<struct inotify_event *>(p);
        if (ev->len && name_ == ev->name)
          changed = true;
        p += sizeof(struct inotify_event) + ev->len;
      }
    return changed;
  }

  void wake() override {
    char c = 0;
    (void)!::write(wake_[1], &c, 1);
  }

private:
  int fd_, wake_[2];
  std::string name_;
};

} // namespace

std::unique_ptr<FileNotifier> file_notifier(const std::string &path) {
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0)
    return nullptr;
  int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0 || ::inotify_add_watch(fd, dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE) < 0) {
    for (int f : {fd, wake[0], wake[1]})
      if (f >= 0)
        ::close(f);
    return nullptr;
  }
  return std::make_unique<Inotify>(fd, wake, path.substr(slash == std::string::npos ? 0 : slash + 1));
}

} // namespace hotlink::loader
