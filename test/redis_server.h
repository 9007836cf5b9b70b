// A real redis-server for tests and benchmarks: started on a free loopback
// port (and a unix socket) in a private directory, with no persistence;
// stopped (SIGKILL) and restarted on demand; killed when destroyed.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HOTLINK_REDIS_SERVER_PATH
#define HOTLINK_REDIS_SERVER_PATH "/usr/bin/redis-server"
#endif

namespace hotlink::test {

// A port nothing listens on now (bound, read, closed).
inline int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// One command with binary-safe words on `c`; the reply (free it), or null.
inline redisReply *redis_command(redisContext *c, const std::vector<std::string> &args) {
  std::vector<const char *> argv;
  std::vector<size_t> lens;
  for (const std::string &a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return static_cast<redisReply *>(redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data()));
}

// A server process of a test: started with its output to /dev/null (a
// server that outlived the test would keep ctest waiting on the pipe),
// killed (SIGKILL) by stop() or when destroyed.
class ServerProcess {
public:
  ServerProcess() = default;
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess &) = delete;
  ServerProcess &operator=(const ServerProcess &) = delete;

  // Runs argv and waits until ready() (true) or it exits or 10 s pass
  // (false, with why, which names `log`).
  bool start(const std::vector<std::string> &argv, const std::function<bool()> &ready, const std::string &log,
             std::string *why) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      std::vector<const char *> words;
      for (const std::string &a : argv)
        words.push_back(a.c_str());
      words.push_back(nullptr);
      ::execv(words[0], const_cast<char *const *>(words.data()));
      std::_Exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ready())
        return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (why)
          *why = argv[0] + " exited at start; see " + log;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (why)
      *why = argv[0] + " was not ready within 10 s; see " + log;
    return false;
  }

  // SIGKILL: the server dies with whatever it was doing half done.
  void stop() {
    if (pid_ <= 0)
      return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0; }

private:
  pid_t pid_ = -1;
};

class RedisServer {
public:
  // `dir` must exist; the socket and log go there. `extra`: more of
  // redis-server's options (a cluster node's).
  explicit RedisServer(std::string dir, std::vector<std::string> extra = {})
      : dir_(std::move(dir)), extra_(std::move(extra)), port_(free_port()) {}
  RedisServer(const RedisServer &) = delete;
  RedisServer &operator=(const RedisServer &) = delete;

  // Starts the server and waits until it answers PING. False if it did not
  // within 10 s (the error says why).
  bool start(std::string *error = nullptr) {
    if (process_.running())
      return true;
    std::vector<std::string> argv = {HOTLINK_REDIS_SERVER_PATH, "--port", std::to_string(port_), "--bind",
                                     "127.0.0.1", "--unixsocket", socket_path(), "--unixsocketperm", "700",
                                     "--save", "", "--appendonly", "no", "--dir", dir_, "--logfile",
                                     dir_ + "/redis.log", "--protected-mode", "no"};
    argv.insert(argv.end(), extra_.begin(), extra_.end());
    return process_.start(argv, [this] { return ping(); }, dir_ + "/redis.log", error);
  }

  // SIGKILL: the server dies with whatever it was doing half done.
  void stop() { process_.stop(); }

  bool running() const { return process_.running(); }
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  std::string socket_path() const { return dir_ + "/redis.sock"; }
  std::string unix_url() const { return "redis+unix://" + socket_path(); }

  // A connection for the test's own commands (tampering, inspection).
  redisContext *connect() const {
    timeval tv{1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c && c->err) {
      redisFree(c);
      return nullptr;
    }
    return c;
  }

  bool ping() const {
    redisContext *c = connect();
    if (!c)
      return false;
    auto *r = static_cast<redisReply *>(redisCommand(c, "PING"));
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
      freeReplyObject(r);
    redisFree(c);
    return ok;
  }

private:
  std::string dir_;
  std::vector<std::string> extra_;
  int port_;
  ServerProcess process_;
};

} // namespace hotlink::test
