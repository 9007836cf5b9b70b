// Internal. What a Watcher (hotlink/hot_module.h) asks of its host: a
// notification that the watched file's name may have changed in its
// directory (watcher_linux.cpp: inotify), which the shared loop
// (watcher.cpp) debounces; without one the loop polls the file's identity.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace hotlink::loader {

class FileNotifier {
public:
  virtual ~FileNotifier() = default;
  // Waits up to `timeout` for an event about the watched name, or for
  // wake(); true when one was seen.
  virtual bool wait(std::chrono::milliseconds timeout) = 0;
  // Ends a wait now (the watcher is stopping).
  virtual void wake() = 0;
};

// The host's notifier for `path`, or null where there is none (the loop
// then polls).
std::unique_ptr<FileNotifier> file_notifier(const std::string &path);

} // namespace hotlink::loader
