// redis+cluster://: a Redis Cluster, routed by slot (the cluster
// specification's CRC16 of the key's hash tag, modulo 16384). The slot map
// comes from CLUSTER SLOTS of any reachable node, and again after a node
// fails or answers MOVED; ASK is followed for the one call. Each master is
// a RedisNode with its own connections and backoff, so a dead master makes
// its own slots misses (Skipped) and no others.
#include "cache/redis_backend.h"
#include "cache/remote_cluster.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

namespace hotlink::cache {

std::uint16_t cluster_crc16(const std::string &s) {
  std::uint16_t crc = 0; // CRC-16/XMODEM: polynomial 0x1021, no reflection
  for (unsigned char c : s) {
    crc ^= static_cast<std::uint16_t>(c) << 8;
    for (int bit = 0; bit < 8; ++bit)
      crc = crc & 0x8000 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

unsigned cluster_slot(const std::string &key) {
  // The hash tag: what is between the first '{' and the next '}', if not
  // empty; else the whole key.
  std::size_t open = key.find('{');
  if (open != std::string::npos) {
    std::size_t close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1)
      return cluster_crc16(key.substr(open + 1, close - open - 1)) & (kClusterSlots - 1);
  }
  return cluster_crc16(key) & (kClusterSlots - 1);
}

namespace {

using Clock = std::chrono::steady_clock;

// "MOVED 3999 127.0.0.1:6381" or "ASK ...": the node it names.
bool redirect_of(const redisReply &r, const char *kind, std::string &host, int &port) {
  if (r.type != REDIS_REPLY_ERROR)
    return false;
  std::string text(r.str, r.len);
  std::string prefix = std::string(kind) + " ";
  if (text.rfind(prefix, 0) != 0)
    return false;
  std::size_t space = text.find(' ', prefix.size());
  std::size_t colon = text.rfind(':');
  if (space == std::string::npos || colon == std::string::npos || colon < space)
    return false;
  host = text.substr(space + 1, colon - space - 1);
  port = std::atoi(text.c_str() + colon + 1);
  return port > 0 && port < 65536;
}

// A reply that says the cluster cannot answer now, without this node
// having failed: the call is a miss, the node keeps serving.
bool cluster_busy(const redisReply &r) {
  if (r.type != REDIS_REPLY_ERROR)
    return false;
  std::string text(r.str, r.len);
  return text.rfind("CLUSTERDOWN", 0) == 0 || text.rfind("TRYAGAIN", 0) == 0 || text.rfind("LOADING", 0) == 0;
}

class Cluster final : public RedisBackend {
public:
  Cluster(const RemoteConfig &cfg, const RemoteUrl &url)
      : prefix_(cfg.prefix), password_(url.password),
        timeouts_{cfg.connect_timeout, cfg.io_timeout, cfg.backoff_min, cfg.backoff_max} {
    for (const auto &[host, port] : url.seeds)
      seeds_.push_back(node_at(host, port));
  }

  bool usable() const override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[address, node] : nodes_)
      if (node->usable())
        return true;
    return false;
  }

protected:
  std::string name(const std::string &key, const char *part) const override {
    return prefix_ + "{" + key + "}:" + part;
  }

  Exchange exchange(const std::string &key, RedisNode::Role role, const std::vector<Command> &cmds,
                    const BinaryArgs *binary) override {
    unsigned slot = cluster_slot(name(key, "m"));
    RedisNode *asked = nullptr; // set after ASK: that node, for this call
    // Each redirect is one more round trip: two cover a MOVED followed by
    // an ASK (a slot moving while its map is stale).
    for (int redirects = 0; redirects < 3; ++redirects) {
      RedisNode *node = asked ? asked : serving(slot);
      Exchange x;
      if (!node) {
        x.status = Status::Error;
        x.error = "no node of the cluster serves slot " + std::to_string(slot) + " (" + seeds_text() + ")";
        return x;
      }
      if (!node->usable()) {
        x.status = Status::Skipped;
        return x;
      }
      if (std::string err = node->run(role, asked ? with_asking(cmds) : cmds, binary, x.replies); !err.empty()) {
        x.status = Status::Error;
        x.error = node->failed(role, err);
        x.replies.clear();
        stale_ = true; // its replica may be promoted: ask for the slots again
        return x;
      }
      if (asked)
        drop_asking_replies(cmds, x.replies);
      std::string host;
      int port = 0;
      bool moved = false, ask = false;
      for (const Reply &r : x.replies) {
        if (cluster_busy(*r)) {
          x.status = Status::Error;
          x.error = node->address().display + ": " + std::string(r->str, r->len) + " (a miss; the node is kept)";
          x.replies.clear();
          return x;
        }
        if ((moved = redirect_of(*r, "MOVED", host, port)) || (ask = redirect_of(*r, "ASK", host, port)))
          break;
      }
      if (moved) {
        std::lock_guard<std::mutex> lock(mu_);
        slots_[slot] = node_at_locked(host, port);
        stale_ = true; // one slot moved: others may have too
        asked = nullptr;
        continue;
      }
      if (ask) {
        asked = node_at(host, port);
        continue;
      }
      x.node = node;
      return x;
    }
    Exchange x;
    x.status = Status::Error;
    x.error = "slot " + std::to_string(slot) + " of " + seeds_text() + " redirected more than twice";
    return x;
  }

private:
  // The node that serves `slot`, reading the slots again first when the
  // map is stale, has no node for it, or that node is in backoff (its
  // replica may have been promoted since).
  RedisNode *serving(unsigned slot) {
    RedisNode *node = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      node = slots_[slot];
    }
    if (stale_ || !node || !node->usable()) {
      refresh();
      std::lock_guard<std::mutex> lock(mu_);
      node = slots_[slot];
    }
    return node;
  }

  // CLUSTER SLOTS from the first node that answers, at most once per
  // kRefreshInterval and by one thread at a time (the others go on with
  // the map they have).
  void refresh() {
    std::unique_lock<std::mutex> one(refresh_mu_, std::try_to_lock);
    if (!one.owns_lock() || Clock::now() - refreshed_at_ < kRefreshInterval)
      return;
    refreshed_at_ = Clock::now();
    std::vector<RedisNode *> ask;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto &[address, node] : nodes_)
        if (node->usable())
          ask.push_back(node.get());
    }
    for (RedisNode *node : ask) {
      std::vector<Reply> replies;
      std::string err = node->run(RedisNode::Reader, {{"CLUSTER", "SLOTS"}}, nullptr, replies);
      if (err.empty())
        err = reply_error(*replies[0], REDIS_REPLY_ARRAY, "CLUSTER SLOTS");
      if (!err.empty()) {
        node->failed(RedisNode::Reader, err);
        continue;
      }
      node->succeeded();
      if (read_slots(*replies[0], *node)) {
        stale_ = false;
        return;
      }
    }
  }

  // Each element: [first slot, last slot, [host, port, id...], replicas...].
  bool read_slots(const redisReply &r, const RedisNode &asked) {
    std::array<RedisNode *, kClusterSlots> slots{};
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < r.elements; ++i) {
      const redisReply &range = *r.element[i];
      if (range.type != REDIS_REPLY_ARRAY || range.elements < 3 || range.element[0]->type != REDIS_REPLY_INTEGER ||
          range.element[1]->type != REDIS_REPLY_INTEGER || range.element[2]->type != REDIS_REPLY_ARRAY ||
          range.element[2]->elements < 2 || range.element[2]->element[0]->type != REDIS_REPLY_STRING ||
          range.element[2]->element[1]->type != REDIS_REPLY_INTEGER)
        return false;
      long long first = range.element[0]->integer, last = range.element[1]->integer;
      if (first < 0 || last >= kClusterSlots || first > last)
        return false;
      const redisReply &master = *range.element[2];
      std::string host(master.element[0]->str, master.element[0]->len);
      if (host.empty()) // the node asked does not know its own address
        host = asked.address().host;
      RedisNode *node = node_at_locked(host, static_cast<int>(master.element[1]->integer));
      for (long long s = first; s <= last; ++s)
        slots[static_cast<std::size_t>(s)] = node;
    }
    slots_ = slots;
    return true;
  }

  RedisNode *node_at(const std::string &host, int port) {
    std::lock_guard<std::mutex> lock(mu_);
    return node_at_locked(host, port);
  }
  // Nodes are never removed, so a pointer to one stays valid.
  RedisNode *node_at_locked(const std::string &host, int port) {
    std::string display = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    auto &node = nodes_[display];
    if (!node)
      node = std::make_unique<RedisNode>(NodeAddress{false, host, port, password_, 0, "redis+cluster node " + display},
                                         timeouts_);
    return node.get();
  }

  // After ASK: ASKING before each command, or once before a MULTI (the
  // flag lasts through the transaction).
  static std::vector<Command> with_asking(const std::vector<Command> &cmds) {
    std::vector<Command> out;
    bool multi = !cmds.empty() && cmds[0][0] == "MULTI";
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      if (!multi || i == 0)
        out.push_back({"ASKING"});
      out.push_back(cmds[i]);
    }
    return out;
  }
  static void drop_asking_replies(const std::vector<Command> &cmds, std::vector<Reply> &replies) {
    bool multi = !cmds.empty() && cmds[0][0] == "MULTI";
    std::vector<Reply> kept;
    for (std::size_t i = 0; i < replies.size(); ++i) {
      bool asking = multi ? i == 0 : i % 2 == 0;
      if (!asking)
        kept.push_back(std::move(replies[i]));
    }
    replies = std::move(kept);
  }

  std::string seeds_text() const {
    std::string s;
    for (const RedisNode *n : seeds_)
      s += (s.empty() ? "" : ",") + n->address().display;
    return s;
  }

  static constexpr auto kRefreshInterval = std::chrono::milliseconds(100);
  const std::string prefix_, password_;
  const NodeTimeouts timeouts_;
  mutable std::mutex mu_; // nodes_, slots_
  std::map<std::string, std::unique_ptr<RedisNode>> nodes_;
  std::array<RedisNode *, kClusterSlots> slots_{};
  std::vector<RedisNode *> seeds_;
  std::atomic<bool> stale_{true};
  std::mutex refresh_mu_;
  Clock::time_point refreshed_at_{};
};

} // namespace

std::unique_ptr<RemoteBackend> make_cluster_backend(const RemoteConfig &config, const RemoteUrl &url) {
  return std::make_unique<Cluster>(config, url);
}

} // namespace hotlink::cache
