// One Redis server as the remote tier talks to it (hiredis): its address,
// two connections (one for reads, one for the publisher, so that a large
// publish never delays a read) and its backoff. A single-server remote is
// one node; a cluster is one per master (remote_redis.cpp).
#pragma once

#include "cache/backoff.h"

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hotlink::cache {

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

// A command's words; a word that is kBinary stands for the next of the
// binary arguments passed beside the commands (an artifact's bytes, never
// copied into a string).
using Command = std::vector<std::string>;
inline constexpr const char *kBinary = "\x01" "BIN"; // constant: no initializer runs at start-up
using BinaryArgs = std::vector<std::pair<const void *, std::size_t>>;

struct NodeAddress {
  bool unix_socket = false;
  std::string host; // or the socket's path
  int port = 0;
  std::string password; // AUTH after connecting, when set
  int db = 0;           // SELECTed after connecting, when not 0
  std::string display;  // for messages
};

struct NodeTimeouts {
  std::chrono::milliseconds connect, io, backoff_min, backoff_max;
};

class RedisNode {
public:
  enum Role { Reader, Writer };
  RedisNode(NodeAddress address, NodeTimeouts timeouts);

  // Sends `cmds` pipelined on the role's connection and reads one reply
  // each. Returns an error text (the replies are then incomplete), or
  // empty. A connection kept from an earlier call that fails with an I/O
  // error is replaced and the commands sent once more (the server may have
  // restarted since). Blocks SIGPIPE meanwhile; keeps errno.
  std::string run(Role role, const std::vector<Command> &cmds, const BinaryArgs *binary,
                  std::vector<Reply> &replies);
  // Closes the role's connection and starts or lengthens the backoff;
  // returns "ADDRESS: WHAT (not used for the next N ms)".
  std::string failed(Role role, const std::string &what);
  void succeeded() { backoff_.succeeded(); }
  bool usable() const { return backoff_.usable(); }
  const NodeAddress &address() const { return address_; }

private:
  struct Conn {
    std::mutex mu;
    Context ctx;
  };
  std::string connect(Conn &c);
  std::string attempt(Conn &c, const std::vector<Command> &cmds, const BinaryArgs *binary,
                      std::vector<Reply> &replies, bool &timed_out);

  NodeAddress address_;
  NodeTimeouts timeouts_;
  Backoff backoff_;
  Conn conns_[2];
};

// "SET refused: MSG" for an error reply, "unexpected reply type N to SET"
// for another type than `want`; empty when the reply is of type `want`.
std::string reply_error(const redisReply &r, int want, const std::string &command);

} // namespace hotlink::cache
