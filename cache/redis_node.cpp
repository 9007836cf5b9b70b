#include "cache/redis_node.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <pthread.h>

namespace hotlink::cache {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

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

struct Argv {
  std::vector<const char *> words;
  std::vector<std::size_t> lens;
  Argv(const Command &cmd, const BinaryArgs *binary, std::size_t &next_binary) {
    for (const std::string &a : cmd) {
      if (a == kBinary && binary) {
        words.push_back(static_cast<const char *>((*binary)[next_binary].first));
        lens.push_back((*binary)[next_binary].second);
        ++next_binary;
      } else {
        words.push_back(a.data());
        lens.push_back(a.size());
      }
    }
  }
};

} // namespace

std::string reply_error(const redisReply &r, int want, const std::string &command) {
  if (r.type == want)
    return {};
  if (r.type == REDIS_REPLY_ERROR)
    return command + " refused: " + std::string(r.str, r.len);
  return "unexpected reply type " + std::to_string(r.type) + " to " + command;
}

RedisNode::RedisNode(NodeAddress address, NodeTimeouts timeouts)
    : address_(std::move(address)), timeouts_(timeouts), backoff_(timeouts.backoff_min, timeouts.backoff_max) {}

std::string RedisNode::failed(Role role, const std::string &what) {
  {
    std::lock_guard<std::mutex> lock(conns_[role].mu);
    conns_[role].ctx.reset();
  }
  std::chrono::milliseconds b = backoff_.failed();
  return address_.display + ": " + what + " (not used for the next " + std::to_string(b.count()) + " ms)";
}

std::string RedisNode::connect(Conn &c) {
  if (c.ctx && c.ctx->err == 0)
    return {};
  c.ctx.reset();
  timeval tv = to_timeval(timeouts_.connect);
  Context ctx(address_.unix_socket ? redisConnectUnixWithTimeout(address_.host.c_str(), tv)
                                   : redisConnectWithTimeout(address_.host.c_str(), address_.port, tv));
  if (!ctx)
    return "cannot allocate a connection";
  if (ctx->err)
    return std::string("cannot connect: ") + ctx->errstr;
  if (redisSetTimeout(ctx.get(), to_timeval(timeouts_.io)) != REDIS_OK)
    return "cannot set the timeout";
  auto simple = [&](const Command &cmd) -> std::string {
    std::size_t none = 0;
    Argv argv(cmd, nullptr, none);
    Reply r(static_cast<redisReply *>(
        redisCommandArgv(ctx.get(), static_cast<int>(argv.words.size()), argv.words.data(), argv.lens.data())));
    if (!r)
      return std::string(ctx->errstr[0] ? ctx->errstr : "no reply");
    return r->type == REDIS_REPLY_ERROR ? reply_error(*r, REDIS_REPLY_STATUS, cmd[0]) : std::string();
  };
  if (!address_.password.empty())
    if (std::string e = simple({"AUTH", address_.password}); !e.empty())
      return e;
  if (address_.db != 0)
    if (std::string e = simple({"SELECT", std::to_string(address_.db)}); !e.empty())
      return e;
  c.ctx = std::move(ctx);
  return {};
}

std::string RedisNode::run(Role role, const std::vector<Command> &cmds, const BinaryArgs *binary,
                           std::vector<Reply> &replies) {
  int saved_errno = errno;
  SigpipeGuard no_sigpipe;
  struct RestoreErrno {
    int v;
    ~RestoreErrno() { errno = v; }
  } restore{saved_errno};
  Conn &c = conns_[role];
  std::lock_guard<std::mutex> lock(c.mu);
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

std::string RedisNode::attempt(Conn &c, const std::vector<Command> &cmds, const BinaryArgs *binary,
                               std::vector<Reply> &replies, bool &timed_out) {
  if (std::string e = connect(c); !e.empty())
    return e;
  std::size_t next_binary = 0;
  for (const Command &cmd : cmds) {
    Argv argv(cmd, binary, next_binary);
    if (redisAppendCommandArgv(c.ctx.get(), static_cast<int>(argv.words.size()), argv.words.data(),
                               argv.lens.data()) != REDIS_OK)
      return std::string("cannot send: ") + c.ctx->errstr;
  }
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    void *r = nullptr;
    if (redisGetReply(c.ctx.get(), &r) != REDIS_OK || !r) {
      int e_no = errno;
      timed_out = c.ctx->err == REDIS_ERR_IO && (e_no == EAGAIN || e_no == EWOULDBLOCK);
      return timed_out ? "timed out after " + std::to_string(timeouts_.io.count()) + " ms"
                       : std::string(c.ctx->errstr[0] ? c.ctx->errstr : "connection lost");
    }
    replies.emplace_back(static_cast<redisReply *>(r));
  }
  return {};
}

} // namespace hotlink::cache
