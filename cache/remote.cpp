// RemoteStore (hotlink/remote_cache.h) over a backend (remote_backend.h):
// the publish queue and its events, the size limits, leases' waiting.
#include "cache/remote_backend.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace hotlink::cache {

namespace {

constexpr std::uint64_t kMaxManifest = 16u << 20;

} // namespace

struct HOTLINK_HIDDEN RemoteStore::Impl {
  RemoteConfig cfg;
  RemoteUrl url;
  std::unique_ptr<RemoteBackend> backend;

  std::mutex qmu;
  std::condition_variable qcv, idle_cv;
  std::deque<std::pair<std::string, Blobs>> queue;
  bool busy = false, stopping = false;
  std::thread thread;

  std::mutex emu;
  std::function<void(Event, const std::string &)> events;

  void event(Event e, const std::string &msg) {
    std::lock_guard<std::mutex> lock(emu);
    if (events)
      events(e, msg);
  }

  // Names this process in the leases it takes.
  const std::string holder = [] {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(::getpid()) + ":" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  }();

  bool publish_now(const std::string &key, const Blobs &b) {
    Got g = backend->publish(key, b, cfg.ttl);
    if (g.status == Status::Skipped) {
      event(Event::Skipped, url.display + ": in backoff after a failure");
      return false;
    }
    if (g.status != Status::Hit) {
      event(Event::PublishFailed, g.error);
      return false;
    }
    event(Event::Published, key);
    return true;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(qmu);
    for (;;) {
      qcv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      auto job = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      publish_now(job.first, job.second);
      lock.lock();
      busy = false;
      idle_cv.notify_all();
    }
  }
};

RemoteStore::RemoteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Expected<std::unique_ptr<RemoteStore>> RemoteStore::create(RemoteConfig config) {
  auto url = parse_remote_url(config.url);
  if (!url)
    return url.take_error();
  if (config.max_entry_bytes == 0)
    return make_error(ErrorCode::BadRequest, "the remote's size limit per entry is 0", config.url,
                      "--remote-max-bytes", "give a limit in bytes, e.g. 67108864");
  auto impl = std::make_unique<Impl>();
  impl->cfg = std::move(config);
  impl->url = std::move(url.value());
  if (impl->url.http) {
    auto http = make_http_backend(impl->cfg, impl->url);
    if (!http)
      return http.take_error();
    impl->backend = std::move(http.value());
  } else {
    impl->backend = impl->url.cluster ? make_cluster_backend(impl->cfg, impl->url)
                                      : make_redis_backend(impl->cfg, impl->url);
  }
  return std::unique_ptr<RemoteStore>(new RemoteStore(std::move(impl)));
}

RemoteStore::~RemoteStore() {
  Impl &I = *impl_;
  if (!I.thread.joinable())
    return;
  std::unique_lock<std::mutex> lock(I.qmu);
  // Drains what is queued, for at most drain_timeout; the rest is dropped.
  I.idle_cv.wait_for(lock, I.cfg.drain_timeout, [&] { return I.queue.empty() && !I.busy; });
  std::size_t dropped = I.queue.size();
  I.queue.clear();
  I.stopping = true;
  I.qcv.notify_all();
  lock.unlock();
  I.thread.join();
  for (std::size_t i = 0; i < dropped; ++i)
    I.event(Event::Dropped, "still queued when the cache was closed");
}

bool RemoteStore::usable() const { return impl_->backend->usable(); }
const RemoteConfig &RemoteStore::config() const { return impl_->cfg; }
const RemoteUrl &RemoteStore::url() const { return impl_->url; }

void RemoteStore::on_event(std::function<void(Event, const std::string &)> callback) {
  std::lock_guard<std::mutex> lock(impl_->emu);
  impl_->events = std::move(callback);
}

RemoteStore::Got RemoteStore::get_manifest(const std::string &key) {
  return impl_->backend->get_manifest(key, kMaxManifest);
}

RemoteStore::Got RemoteStore::get_files(const std::string &key, std::uint64_t artifact_size,
                                        const std::vector<std::pair<std::string, std::uint64_t>> &companions) {
  Got g;
  g.blobs.companions.resize(companions.size());
  std::vector<RemoteBackend::Part> parts = {{"a", artifact_size, &g.blobs.artifact}};
  for (std::size_t i = 0; i < companions.size(); ++i) {
    g.blobs.companions[i].first = companions[i].first;
    parts.push_back({companions[i].first.c_str(), companions[i].second, &g.blobs.companions[i].second});
  }
  Got read = impl_->backend->get_parts(key, parts);
  if (read.status != Status::Hit)
    return read;
  g.status = Status::Hit;
  for (const RemoteBackend::Part &p : parts) {
    if (p.out->size() == p.size)
      continue;
    // A part that is gone reads empty: expired or evicted, a miss. One of
    // another length than its manifest says is damage.
    g.status = Status::Miss;
    g.damaged = !p.out->empty();
    g.error = g.damaged ? std::string("the remote's '") + p.name + "' value is " + std::to_string(p.out->size()) +
                              " bytes, its manifest says " + std::to_string(p.size)
                        : std::string("the remote's '") + p.name + "' value is gone";
    g.blobs = {};
    return g;
  }
  return g;
}

RemoteStore::Got RemoteStore::take_lease(const std::string &key) {
  Impl &I = *impl_;
  if (I.cfg.lease.count() == 0) {
    Got g;
    g.status = Status::Hit;
    return g;
  }
  return I.backend->take_lease(key, I.holder, I.cfg.lease);
}

void RemoteStore::release_lease(const std::string &key) {
  Impl &I = *impl_;
  if (I.cfg.lease.count() != 0)
    I.backend->release_lease(key, I.holder);
}

RemoteStore::Got RemoteStore::wait_for_manifest(const std::string &key) {
  Impl &I = *impl_;
  auto deadline = std::chrono::steady_clock::now() + I.cfg.lease_wait;
  auto nap = std::chrono::milliseconds(2);
  for (;;) {
    Got g = get_manifest(key);
    if (g.status != Status::Miss)
      return g;
    if (std::chrono::steady_clock::now() >= deadline)
      return g;
    // Still leased? A lease that is gone without an entry means its
    // holder failed: stop waiting.
    Got held = I.backend->lease_held(key);
    if (held.status == Status::Error || held.status == Status::Skipped)
      return held;
    if (held.status == Status::Miss)
      return get_manifest(key); // published just now, or given up
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::milliseconds(50));
  }
}

void RemoteStore::publish(const std::string &key, Blobs blobs) {
  Impl &I = *impl_;
  std::uint64_t size = blobs.artifact.size();
  for (const auto &c : blobs.companions)
    size += c.second.size();
  if (size > I.cfg.max_entry_bytes) {
    release_lease(key);
    I.event(Event::PublishFailed, "entry " + key + " is " + std::to_string(size) +
                                      " bytes, over the remote's limit of " +
                                      std::to_string(I.cfg.max_entry_bytes));
    return;
  }
  if (I.cfg.synchronous_publish) {
    I.publish_now(key, blobs);
    return;
  }
  std::lock_guard<std::mutex> lock(I.qmu);
  if (I.queue.size() >= I.cfg.max_queued) {
    I.event(Event::Dropped, "the publish queue is full (" + std::to_string(I.cfg.max_queued) + ")");
    return;
  }
  if (!I.thread.joinable())
    I.thread = std::thread([&I] { I.loop(); });
  I.queue.emplace_back(key, std::move(blobs));
  I.qcv.notify_one();
}

} // namespace hotlink::cache
