// Watcher (hotlink/hot_module.h): one loop on every host. A change is a
// notification from the host (watcher.h) or, when polling, a different
// identity of the file (base::identify_file); a reload starts once
// `debounce` has passed without another change.
#include "hotlink/hot_module.h"
#include "loader/watcher.h"

#include "base/files.h"

#include <condition_variable>

namespace hotlink::loader {

using base::FileIdentity;

struct Watcher::Impl {
  HotModule &module;
  std::string path;
  Options options;
  std::unique_ptr<FileNotifier> notifier; // null: polling
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> reloads{0}, failures{0};
  mutable std::mutex mu; // last_error, and the polling loop's sleep
  std::condition_variable stopping;
  std::optional<Error> last_error;
  FileIdentity seen; // the file's identity at construction: a change right after it counts
  std::thread thread;

  Impl(HotModule &m, std::string p, Options o) : module(m), path(std::move(p)), options(o) {}

  // Waits for a change (or `timeout`); true when one was seen.
  bool changed_within(std::chrono::milliseconds timeout) {
    if (notifier)
      return notifier->wait(timeout);
    {
      std::unique_lock<std::mutex> lock(mu);
      stopping.wait_for(lock, timeout, [&] { return stop.load(); });
    }
    FileIdentity now = base::identify_file(path);
    if (!(now != seen))
      return false;
    seen = now;
    return true;
  }

  void run() {
    bool pending = false;
    auto quiet_since = std::chrono::steady_clock::now();
    while (!stop) {
      bool changed = changed_within(pending ? options.debounce : options.poll);
      if (stop)
        return;
      if (changed) {
        pending = true;
        quiet_since = std::chrono::steady_clock::now();
        continue;
      }
      if (pending && std::chrono::steady_clock::now() - quiet_since >= options.debounce) {
        pending = false;
        if (!base::identify_file(path).exists)
          continue; // removed: keep serving what we have
        auto err = module.reload(path);
        std::lock_guard<std::mutex> lock(mu);
        last_error = err;
        (err ? failures : reloads).fetch_add(1);
      }
    }
  }
};

Watcher::Watcher(HotModule &module, std::string path, Options options)
    : impl_(std::make_unique<Impl>(module, std::move(path), options)) {
  if (!options.force_polling)
    impl_->notifier = file_notifier(impl_->path);
  impl_->seen = base::identify_file(impl_->path);
  impl_->thread = std::thread([this] { impl_->run(); });
}

Watcher::~Watcher() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->stopping.notify_all();
  if (impl_->notifier)
    impl_->notifier->wake();
  impl_->thread.join();
}

std::uint64_t Watcher::reloads() const { return impl_->reloads.load(); }
std::uint64_t Watcher::failures() const { return impl_->failures.load(); }
bool Watcher::polling() const { return !impl_->notifier; }

std::optional<Error> Watcher::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last_error;
}

} // namespace hotlink::loader
