#include "cache/redis_backend.h"

namespace hotlink::cache {

RedisBackend::Exchange RedisBackend::run(const std::string &key, RedisNode::Role role,
                                         const std::vector<Command> &cmds, const BinaryArgs *binary,
                                         const std::vector<int> &want, bool nil) {
  Exchange x = exchange(key, role, cmds, binary);
  if (x.status != Status::Hit)
    return x;
  for (std::size_t i = 0; i < x.replies.size(); ++i) {
    const redisReply &r = *x.replies[i];
    if (nil && r.type == REDIS_REPLY_NIL)
      continue;
    if (std::string err = reply_error(r, want[std::min(i, want.size() - 1)], cmds[i][0]); !err.empty()) {
      x.status = Status::Error;
      x.error = x.node->failed(role, err);
      x.replies.clear();
      return x;
    }
  }
  x.node->succeeded();
  return x;
}

RemoteBackend::Got RedisBackend::get_manifest(const std::string &key, std::uint64_t limit) {
  Exchange x = run(key, RedisNode::Reader, {{"GETRANGE", name(key, "m"), "0", std::to_string(limit - 1)}}, nullptr,
                   {REDIS_REPLY_STRING});
  Got g;
  g.status = x.status;
  g.error = std::move(x.error);
  if (x.status == Status::Hit) {
    g.blobs.manifest.assign(x.replies[0]->str, x.replies[0]->len);
    g.status = g.blobs.manifest.empty() ? Status::Miss : Status::Hit;
  }
  return g;
}

RemoteBackend::Got RedisBackend::get_parts(const std::string &key, const std::vector<Part> &parts) {
  std::vector<Command> cmds;
  std::vector<const Part *> asked;
  for (const Part &p : parts)
    if (p.size > 0) { // GETRANGE 0 -1 would be the whole value
      cmds.push_back({"GETRANGE", name(key, p.name), "0", std::to_string(p.size - 1)});
      asked.push_back(&p);
    }
  Got g;
  if (cmds.empty())
    return g.status = Status::Hit, g;
  Exchange x = run(key, RedisNode::Reader, cmds, nullptr, {REDIS_REPLY_STRING});
  g.status = x.status;
  g.error = std::move(x.error);
  for (std::size_t i = 0; x.status == Status::Hit && i < asked.size(); ++i)
    asked[i]->out->assign(x.replies[i]->str, x.replies[i]->str + x.replies[i]->len);
  return g;
}

RemoteBackend::Got RedisBackend::take_lease(const std::string &key, const std::string &holder,
                                            std::chrono::milliseconds lease) {
  Exchange x = run(key, RedisNode::Reader, {{"SET", name(key, "b"), holder, "NX", "PX", std::to_string(lease.count())}},
                   nullptr, {REDIS_REPLY_STATUS}, true);
  Got g;
  g.status = x.status;
  g.error = std::move(x.error);
  if (x.status == Status::Hit && x.replies[0]->type == REDIS_REPLY_NIL)
    g.status = Status::Miss; // SET NX found another holder's
  return g;
}

void RedisBackend::release_lease(const std::string &key, const std::string &holder) {
  // Deleted only if it is still ours (it may have expired and been taken).
  static const char *kScript =
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
  run(key, RedisNode::Reader, {{"EVAL", kScript, "1", name(key, "b"), holder}}, nullptr, {REDIS_REPLY_INTEGER});
}

RemoteBackend::Got RedisBackend::lease_held(const std::string &key) {
  Exchange x = run(key, RedisNode::Reader, {{"EXISTS", name(key, "b")}}, nullptr, {REDIS_REPLY_INTEGER});
  Got g;
  g.status = x.status;
  g.error = std::move(x.error);
  if (x.status == Status::Hit && x.replies[0]->integer == 0)
    g.status = Status::Miss;
  return g;
}

RemoteBackend::Got RedisBackend::publish(const std::string &key, const RemoteStore::Blobs &b,
                                         std::chrono::seconds ttl) {
  std::vector<Command> cmds{{"MULTI"}};
  BinaryArgs bin;
  Command ex;
  if (ttl.count() > 0)
    ex = {"EX", std::to_string(ttl.count())};
  auto set = [&](const char *part, const void *data, std::size_t size) {
    Command c{"SET", name(key, part), kBinary};
    c.insert(c.end(), ex.begin(), ex.end());
    cmds.push_back(std::move(c));
    bin.emplace_back(data, size);
  };
  set("a", b.artifact.data(), b.artifact.size());
  for (const auto &[part, bytes] : b.companions)
    if (!bytes.empty())
      set(part.c_str(), bytes.data(), bytes.size());
    else
      cmds.push_back({"DEL", name(key, part.c_str())});
  set("m", b.manifest.data(), b.manifest.size());
  cmds.push_back({"DEL", name(key, "b")}); // the lease: the entry is there now
  cmds.push_back({"EXEC"});
  // MULTI answers OK and each queued command QUEUED (statuses); EXEC an
  // array of one reply per command.
  std::vector<int> want(cmds.size(), REDIS_REPLY_STATUS);
  want.back() = REDIS_REPLY_ARRAY;
  Exchange x = run(key, RedisNode::Writer, cmds, &bin, want);
  Got g;
  g.status = x.status;
  g.error = std::move(x.error);
  if (x.status == Status::Hit && x.replies.back()->elements != cmds.size() - 2) {
    g.status = Status::Error;
    g.error = x.node->failed(RedisNode::Writer, "unexpected reply to EXEC");
  }
  return g;
}

namespace {

// One server: every key's commands go to it.
class SingleServer final : public RedisBackend {
public:
  SingleServer(const RemoteConfig &cfg, const RemoteUrl &url)
      : prefix_(cfg.prefix),
        node_(NodeAddress{url.unix_socket, url.unix_socket ? url.path : url.host, url.port, url.password, url.db,
                          url.display},
              NodeTimeouts{cfg.connect_timeout, cfg.io_timeout, cfg.backoff_min, cfg.backoff_max}) {}

  bool usable() const override { return node_.usable(); }

protected:
  Exchange exchange(const std::string &, RedisNode::Role role, const std::vector<Command> &cmds,
                    const BinaryArgs *binary) override {
    Exchange x;
    if (!node_.usable()) {
      x.status = Status::Skipped;
      return x;
    }
    if (std::string err = node_.run(role, cmds, binary, x.replies); !err.empty()) {
      x.status = Status::Error;
      x.error = node_.failed(role, err);
      x.replies.clear();
      return x;
    }
    x.node = &node_;
    return x;
  }
  std::string name(const std::string &key, const char *part) const override {
    return prefix_ + key + ":" + part;
  }

private:
  std::string prefix_;
  RedisNode node_;
};

} // namespace

std::unique_ptr<RemoteBackend> make_redis_backend(const RemoteConfig &config, const RemoteUrl &url) {
  return std::make_unique<SingleServer>(config, url);
}

} // namespace hotlink::cache
