// A real redis-server for tests and benchmarks: started on a free loopback
// port (and a unix socket) in a private directory, with no persistence;
// stopped (SIGKILL) and restarted on demand; killed when destroyed.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

class RedisServer {
public:
  // `dir` must exist; the socket and log go there. `extra`: more of
  // redis-server's options (a cluster node's).
  explicit RedisServer(std::string dir, std::vector<std::string> extra = {})
      : dir_(std::move(dir)), extra_(std::move(extra)), port_(free_port()) {}
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer &) = delete;
  RedisServer &operator=(const RedisServer &) = delete;

  // Starts the server and waits until it answers PING. False if it did not
  // within 10 s (the error says why).
  bool start(std::string *error = nullptr) {
    if (pid_ > 0)
      return true;
    std::string port = std::to_string(port_), sock = socket_path(), log = dir_ + "/redis.log";
    pid_ = ::fork();
    if (pid_ == 0) {
      // Not the test's stdout/stderr: a server that outlived the test
      // would keep ctest waiting on the pipe.
      int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      std::vector<const char *> argv = {HOTLINK_REDIS_SERVER_PATH, "--port", port.c_str(), "--bind", "127.0.0.1",
                                        "--unixsocket", sock.c_str(), "--unixsocketperm", "700", "--save", "",
                                        "--appendonly", "no", "--dir", dir_.c_str(), "--logfile", log.c_str(),
                                        "--protected-mode", "no"};
      for (const std::string &e : extra_)
        argv.push_back(e.c_str());
      argv.push_back(nullptr);
      ::execv(HOTLINK_REDIS_SERVER_PATH, const_cast<char *const *>(argv.data()));
      std::_Exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ping())
        return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (error)
          *error = "redis-server (" HOTLINK_REDIS_SERVER_PATH ") exited at start; see " + log;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (error)
      *error = "redis-server did not answer PING within 10 s; see " + log;
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
  pid_t pid_ = -1;
};

} // namespace hotlink::test
