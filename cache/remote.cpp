#include "hotlink/remote_cache.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <csignal>
#include <pthread.h>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace hotlink::cache {

namespace {

constexpr std::uint64_t kMaxManifest = 16u << 20;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

struct ReplyFree {
  void operator()(redisReply *r) const {
    if (r)
      freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

struct ContextFree {
  void operator()(redisContext *c) const {
    if (c)
      redisFree(c);
  }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

// hiredis writes with write(2): a write to a server that has just died
// raises SIGPIPE, whose default action kills the host. While a guard lives,
// SIGPIPE is blocked in this thread, and one raised meanwhile is consumed.
class SigpipeGuard {
public:
  SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~SigpipeGuard() {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe, nullptr, &zero) == -1 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard &) = delete;
  SigpipeGuard &operator=(const SigpipeGuard &) = delete;

private:
  sigset_t old_;
  bool was_pending_ = false;
};

} // namespace

struct HOTLINK_HIDDEN RemoteStore::Impl {
  RemoteConfig cfg;
  RemoteUrl url;

  // Backoff, shared by both connections: a server that is down for one is
  // down for the other.
  mutable std::mutex bmu;
  std::chrono::steady_clock::time_point retry_at{};
  std::chrono::milliseconds backoff{0};

  // One connection for reads, one for the publisher, so a large publish
  // never delays a read.
  struct Conn {
    std::mutex mu;
    Context ctx;
  } reader, writer;

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

  bool usable() const {
    std::lock_guard<std::mutex> lock(bmu);
    return std::chrono::steady_clock::now() >= retry_at;
  }
  void succeeded() {
    std::lock_guard<std::mutex> lock(bmu);
    backoff = std::chrono::milliseconds(0);
    retry_at = {}; // the other connection need not wait out a backoff either
  }
  // Closes the connection and starts (or lengthens) the backoff.
  std::string failed(Conn &c, const std::string &what) {
    c.ctx.reset();
    std::lock_guard<std::mutex> lock(bmu);
    backoff = backoff.count() == 0 ? cfg.backoff_min : std::min(backoff * 2, cfg.backoff_max);
    retry_at = std::chrono::steady_clock::now() + backoff;
    return url.display + ": " + what + " (not used for the next " +
           std::to_string(backoff.count()) + " ms)";
  }

  // Connects when needed. Returns an error text, or empty.
  std::string connect(Conn &c) {
    if (c.ctx && c.ctx->err == 0)
      return {};
    c.ctx.reset();
    timeval tv = to_timeval(cfg.connect_timeout);
    Context ctx(url.unix_socket ? redisConnectUnixWithTimeout(url.path.c_str(), tv)
                                : redisConnectWithTimeout(url.host.c_str(), url.port, tv));
    if (!ctx)
      return "cannot allocate a connection";
    if (ctx->err)
      return std::string("cannot connect: ") + ctx->errstr;
    if (redisSetTimeout(ctx.get(), to_timeval(cfg.io_timeout)) != REDIS_OK)
      return "cannot set the timeout";
    auto simple = [&](std::vector<std::string> args) -> std::string {
      std::vector<const char *> argv;
      std::vector<std::size_t> lens;
      for (const std::string &a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
      }
      Reply r(static_cast<redisReply *>(
          redisCommandArgv(ctx.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
      if (!r)
        return std::string(ctx->errstr[0] ? ctx->errstr : "no reply");
      if (r->type == REDIS_REPLY_ERROR)
        return args[0] + " refused: " + std::string(r->str, r->len);
      return {};
    };
    if (!url.password.empty())
      if (std::string e = simple({"AUTH", url.password}); !e.empty())
        return e;
    if (url.db != 0)
      if (std::string e = simple({"SELECT", std::to_string(url.db)}); !e.empty())
        return e;
    c.ctx = std::move(ctx);
    return {};
  }

  // Sends the commands pipelined and reads one reply each.
  std::string run(Conn &c, const std::vector<std::vector<std::string>> &cmds,
                  const std::vector<std::pair<const void *, std::size_t>> *binary,
                  std::vector<Reply> &replies) {
    int saved_errno = errno;
    SigpipeGuard no_sigpipe;
    struct RestoreErrno {
      int v;
      ~RestoreErrno() { errno = v; }
    } restore{saved_errno};
    // A connection kept from earlier may have died with a server that has
    // since restarted: an I/O error on it is retried once on a new one.
    bool reused = c.ctx && c.ctx->err == 0;
    bool timed_out = false;
    std::string err = attempt(c, cmds, binary, replies, timed_out);
    if (!err.empty() && reused && !timed_out) {
      c.ctx.reset();
      replies.clear();
      err = attempt(c, cmds, binary, replies, timed_out);
    }
    return err;
  }

  std::string attempt(Conn &c, const std::vector<std::vector<std::string>> &cmds,
                      const std::vector<std::pair<const void *, std::size_t>> *binary,
                      std::vector<Reply> &replies, bool &timed_out) {
    if (std::string e = connect(c); !e.empty())
      return e;
    std::size_t bin = 0;
    for (const auto &cmd : cmds) {
      std::vector<const char *> argv;
      std::vector<std::size_t> lens;
      for (const std::string &a : cmd) {
        if (a == "\x01BIN" && binary) { // a placeholder for a large binary argument
          argv.push_back(static_cast<const char *>((*binary)[bin].first));
          lens.push_back((*binary)[bin].second);
          ++bin;
        } else {
          argv.push_back(a.data());
          lens.push_back(a.size());
        }
      }
      if (redisAppendCommandArgv(c.ctx.get(), static_cast<int>(argv.size()), argv.data(),
                                 lens.data()) != REDIS_OK)
        return std::string("cannot send: ") + c.ctx->errstr;
    }
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      void *r = nullptr;
      if (redisGetReply(c.ctx.get(), &r) != REDIS_OK || !r) {
        int e_no = errno;
        timed_out = c.ctx->err == REDIS_ERR_IO && (e_no == EAGAIN || e_no == EWOULDBLOCK);
        std::string e = timed_out
                            ? "timed out after " + std::to_string(cfg.io_timeout.count()) + " ms"
                            : std::string(c.ctx->errstr[0] ? c.ctx->errstr : "connection lost");
        return e;
      }
      replies.emplace_back(static_cast<redisReply *>(r));
    }
    return {};
  }

  // Names this process in the leases it takes.
  const std::string holder = [] {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(::getpid()) + ":" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  }();

  std::string k(const std::string &key, const char *part) const {
    return cfg.prefix + key + ":" + part;
  }

  bool publish_now(const std::string &key, const Blobs &b) {
    if (!usable()) {
      event(Event::Skipped, url.display + ": in backoff after a failure");
      return false;
    }
    std::lock_guard<std::mutex> lock(writer.mu);
    std::vector<std::vector<std::string>> cmds{{"MULTI"}};
    std::vector<std::pair<const void *, std::size_t>> bin;
    std::vector<std::string> ex;
    if (cfg.ttl.count() > 0)
      ex = {"EX", std::to_string(cfg.ttl.count())};
    auto set = [&](const char *part, const void *data, std::size_t size) {
      std::vector<std::string> c{"SET", k(key, part), "\x01BIN"};
      c.insert(c.end(), ex.begin(), ex.end());
      cmds.push_back(std::move(c));
      bin.emplace_back(data, size);
    };
    set("a", b.artifact.data(), b.artifact.size());
    for (const auto &[part, bytes] : b.companions)
      if (!bytes.empty())
        set(part.c_str(), bytes.data(), bytes.size());
      else
        cmds.push_back({"DEL", k(key, part.c_str())});
    set("m", b.manifest.data(), b.manifest.size());
    cmds.push_back({"DEL", k(key, "b")}); // the lease: the entry is there now
    cmds.push_back({"EXEC"});
    std::vector<Reply> replies;
    std::string err = run(writer, cmds, &bin, replies);
    if (err.empty()) {
      const redisReply *exec = replies.back().get();
      if (exec->type != REDIS_REPLY_ARRAY || exec->elements != cmds.size() - 2)
        err = exec->type == REDIS_REPLY_ERROR ? "EXEC refused: " + std::string(exec->str, exec->len)
                                              : "unexpected reply to EXEC";
    }
    if (!err.empty()) {
      event(Event::PublishFailed, failed(writer, err));
      return false;
    }
    succeeded();
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

bool RemoteStore::usable() const { return impl_->usable(); }
const RemoteConfig &RemoteStore::config() const { return impl_->cfg; }
const RemoteUrl &RemoteStore::url() const { return impl_->url; }

void RemoteStore::on_event(std::function<void(Event, const std::string &)> callback) {
  std::lock_guard<std::mutex> lock(impl_->emu);
  impl_->events = std::move(callback);
}

RemoteStore::Got RemoteStore::get_manifest(const std::string &key) {
  Impl &I = *impl_;
  Got g;
  if (!I.usable()) {
    g.status = Status::Skipped;
    return g;
  }
  std::lock_guard<std::mutex> lock(I.reader.mu);
  std::vector<Reply> replies;
  std::string err = I.run(I.reader, {{"GETRANGE", I.k(key, "m"), "0", std::to_string(kMaxManifest - 1)}},
                          nullptr, replies);
  if (err.empty() && replies[0]->type != REDIS_REPLY_STRING)
    err = replies[0]->type == REDIS_REPLY_ERROR
              ? "GETRANGE refused: " + std::string(replies[0]->str, replies[0]->len)
              : "unexpected reply type " + std::to_string(replies[0]->type) + " to GETRANGE";
  if (!err.empty()) {
    g.status = Status::Error;
    g.error = I.failed(I.reader, err);
    return g;
  }
  I.succeeded();
  g.blobs.manifest.assign(replies[0]->str, replies[0]->len);
  g.status = g.blobs.manifest.empty() ? Status::Miss : Status::Hit;
  return g;
}

RemoteStore::Got RemoteStore::get_files(const std::string &key, std::uint64_t artifact_size,
                                        const std::vector<std::pair<std::string, std::uint64_t>> &companions) {
  Impl &I = *impl_;
  Got g;
  if (!I.usable()) {
    g.status = Status::Skipped;
    return g;
  }
  struct Part {
    const char *name;
    std::uint64_t size;
    std::vector<std::uint8_t> *out;
  };
  std::vector<Part> parts;
  g.blobs.companions.resize(companions.size());
  std::vector<Part> all = {Part{"a", artifact_size, &g.blobs.artifact}};
  for (std::size_t i = 0; i < companions.size(); ++i) {
    g.blobs.companions[i].first = companions[i].first;
    all.push_back(Part{companions[i].first.c_str(), companions[i].second, &g.blobs.companions[i].second});
  }
  for (Part p : all)
    if (p.size > 0) // GETRANGE 0 -1 would be the whole value
      parts.push_back(p);
  std::vector<std::vector<std::string>> cmds;
  for (const Part &p : parts)
    cmds.push_back({"GETRANGE", I.k(key, p.name), "0", std::to_string(p.size - 1)});
  std::lock_guard<std::mutex> lock(I.reader.mu);
  std::vector<Reply> replies;
  std::string err = cmds.empty() ? std::string() : I.run(I.reader, cmds, nullptr, replies);
  for (std::size_t i = 0; err.empty() && i < replies.size(); ++i)
    if (replies[i]->type != REDIS_REPLY_STRING)
      err = "unexpected reply type " + std::to_string(replies[i]->type) + " to GETRANGE";
  if (!err.empty()) {
    g.status = Status::Error;
    g.error = I.failed(I.reader, err);
    return g;
  }
  I.succeeded();
  g.status = Status::Hit;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (replies[i]->len != parts[i].size) {
      // GETRANGE of a key that is gone answers an empty string.
      g.status = Status::Miss;
      g.damaged = replies[i]->len != 0;
      g.error = g.damaged ? std::string("the remote's '") + parts[i].name + "' value is " +
                                std::to_string(replies[i]->len) + " bytes, its manifest says " +
                                std::to_string(parts[i].size)
                          : std::string("the remote's '") + parts[i].name + "' value is gone";
      g.blobs = {};
      return g;
    }
    parts[i].out->assign(replies[i]->str, replies[i]->str + replies[i]->len);
  }
  return g;
}

RemoteStore::Got RemoteStore::take_lease(const std::string &key) {
  Impl &I = *impl_;
  Got g;
  if (I.cfg.lease.count() == 0) {
    g.status = Status::Hit;
    return g;
  }
  if (!I.usable()) {
    g.status = Status::Skipped;
    return g;
  }
  std::lock_guard<std::mutex> lock(I.reader.mu);
  std::vector<Reply> replies;
  std::string err = I.run(I.reader,
                          {{"SET", I.k(key, "b"), I.holder, "NX", "PX", std::to_string(I.cfg.lease.count())}},
                          nullptr, replies);
  if (err.empty() && replies[0]->type != REDIS_REPLY_STATUS && replies[0]->type != REDIS_REPLY_NIL)
    err = replies[0]->type == REDIS_REPLY_ERROR ? "SET refused: " + std::string(replies[0]->str, replies[0]->len)
                                                : "unexpected reply to SET NX";
  if (!err.empty()) {
    g.status = Status::Error;
    g.error = I.failed(I.reader, err);
    return g;
  }
  I.succeeded();
  g.status = replies[0]->type == REDIS_REPLY_STATUS ? Status::Hit : Status::Miss;
  return g;
}

void RemoteStore::release_lease(const std::string &key) {
  Impl &I = *impl_;
  if (I.cfg.lease.count() == 0 || !I.usable())
    return;
  // Deleted only if it is still ours (it may have expired and been taken).
  static const char *kScript =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
  std::lock_guard<std::mutex> lock(I.reader.mu);
  std::vector<Reply> replies;
  std::string err = I.run(I.reader, {{"EVAL", kScript, "1", I.k(key, "b"), I.holder}}, nullptr, replies);
  if (!err.empty())
    I.failed(I.reader, err);
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
    bool leased = true;
    {
      // Still leased? A lease that is gone without an entry means its
      // holder failed: stop waiting.
      std::lock_guard<std::mutex> lock(I.reader.mu);
      std::vector<Reply> replies;
      std::string err = I.run(I.reader, {{"EXISTS", I.k(key, "b")}}, nullptr, replies);
      if (!err.empty()) {
        g.status = Status::Error;
        g.error = I.failed(I.reader, err);
        return g;
      }
      leased = replies[0]->type == REDIS_REPLY_INTEGER && replies[0]->integer != 0;
    }
    if (!leased)
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
