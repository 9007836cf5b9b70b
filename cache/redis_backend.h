// The remote tier's operations in Redis commands, shared by one server
// (remote_redis.cpp) and a cluster (remote_cluster.cpp), which differ in
// where a key's commands go and how its parts are named.
//
// An entry is Redis strings NAME(key, "m") (the signed manifest), "a" (the
// artifact), "d" and "l" (COFF .def and import library) and "b" (the build
// lease). A publish writes them in one MULTI/EXEC; every command of one
// call concerns one key, so a cluster serves it from one node.
#pragma once

#include "cache/redis_node.h"
#include "cache/remote_backend.h"

namespace hotlink::cache {

class RedisBackend : public RemoteBackend {
public:
  Got get_manifest(const std::string &key, std::uint64_t limit) override;
  Got get_parts(const std::string &key, const std::vector<Part> &parts) override;
  Got take_lease(const std::string &key, const std::string &holder, std::chrono::milliseconds lease) override;
  void release_lease(const std::string &key, const std::string &holder) override;
  Got lease_held(const std::string &key) override;
  Got publish(const std::string &key, const RemoteStore::Blobs &blobs, std::chrono::seconds ttl) override;

protected:
  // The replies to one call's commands, or why there are none.
  struct Exchange {
    Status status = Status::Hit; // Hit: replies are there; Skipped; Error
    std::string error;
    std::vector<Reply> replies;
    RedisNode *node = nullptr; // the node that answered (Hit)
  };
  // Runs `cmds`, which all concern `key`, on the node that serves it.
  virtual Exchange exchange(const std::string &key, RedisNode::Role role, const std::vector<Command> &cmds,
                            const BinaryArgs *binary) = 0;
  // The Redis key of an entry's part.
  virtual std::string name(const std::string &key, const char *part) const = 0;

private:
  // Runs `cmds` and checks that each reply is of the type `want` holds for
  // it (or NIL, where `nil` allows it): Hit with the replies, or Skipped,
  // or Error (a reply of another type fails the node, as an I/O error).
  Exchange run(const std::string &key, RedisNode::Role role, const std::vector<Command> &cmds,
               const BinaryArgs *binary, const std::vector<int> &want, bool nil = false);
};

} // namespace hotlink::cache
