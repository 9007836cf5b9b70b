// A real Redis Cluster for tests and benchmarks: six redis-server nodes on
// free loopback ports (three masters, each with a replica), created by
// redis-cli --cluster create as an operator would; nodes killed and the
// cluster resharded on demand; everything killed when destroyed.
//
// The nodes run with cluster-node-timeout 1000 (a dead master's replica is
// promoted within about two seconds) and without full coverage required,
// so the surviving masters serve their slots while one is down: the
// settings docs/cache.md recommends.
#pragma once

#include "test/redis_server.h"
#include "test/support.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <memory>
#include <sys/stat.h>

#ifndef HOTLINK_REDIS_CLI_PATH
#define HOTLINK_REDIS_CLI_PATH "/usr/bin/redis-cli"
#endif

namespace hotlink::test {

class RedisCluster {
public:
  static constexpr int kNodes = 6;

  explicit RedisCluster(const std::string &dir) {
    for (int i = 0; i < kNodes; ++i) {
      std::string d = dir + "/node" + std::to_string(i);
      ::mkdir(d.c_str(), 0700);
      nodes_.push_back(std::make_unique<RedisServer>(
          d, std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                      "--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
                                      // the bus on a free port too (not the default PORT+10000)
                                      "--cluster-port", std::to_string(free_port())}));
    }
  }

  // Starts the nodes, creates the cluster and waits until every slot is
  // served. False (with why) otherwise.
  bool start(std::string *why) {
    std::vector<std::string> create = {HOTLINK_REDIS_CLI_PATH, "--cluster", "create"};
    for (auto &n : nodes_) {
      if (!n->start(why))
        return false;
      create.push_back("127.0.0.1:" + std::to_string(n->port()));
    }
    create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    RunOptions o;
    o.timeout_seconds = 60;
    Run r = run(create, o);
    if (r.code != 0) {
      *why = "redis-cli --cluster create failed:\n" + r.out + r.err;
      return false;
    }
    return wait_until_served(std::chrono::seconds(30), why) && wait_until_replicated(std::chrono::seconds(30), why);
  }

  // Waits until each replica's link to its master is up: a replica that
  // has never synced refuses to fail over ("disconnected from master for
  // longer than allowed").
  bool wait_until_replicated(std::chrono::seconds limit, std::string *why) const {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int up = 0;
      for (int port : ports())
        up += text(port, {"INFO", "replication"}).find("master_link_status:up") != std::string::npos;
      if (up == kNodes / 2)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (why)
      *why = "the replicas did not sync with their masters within " + std::to_string(limit.count()) + " s";
    return false;
  }

  // redis+cluster:// naming two of the nodes.
  std::string url() const {
    return "redis+cluster://127.0.0.1:" + std::to_string(nodes_[0]->port()) + ",127.0.0.1:" +
           std::to_string(nodes_[1]->port());
  }

  // One command on the node at `port`; nullptr when it does not answer.
  static redisReply *command(int port, const std::vector<std::string> &args) {
    timeval tv{2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
      redisFree(c);
      return nullptr;
    }
    redisReply *r = redis_command(c, args);
    redisFree(c);
    return r;
  }
  static std::string text(int port, const std::vector<std::string> &args) {
    redisReply *r = command(port, args);
    std::string s = r && r->str ? std::string(r->str, r->len) : "";
    if (r)
      freeReplyObject(r);
    return s;
  }
  static long long integer(int port, const std::vector<std::string> &args) {
    redisReply *r = command(port, args);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
      freeReplyObject(r);
    return v;
  }

  // The live nodes' ports.
  std::vector<int> ports() const {
    std::vector<int> out;
    for (auto &n : nodes_)
      if (n->running())
        out.push_back(n->port());
    return out;
  }
  // Port of the master serving `slot` as a live node sees it now (0: none).
  int master_of(unsigned slot) const { return slot_map()[slot]; }
  // Each slot's master port (0: none), from one live node's CLUSTER SLOTS.
  std::vector<int> slot_map() const {
    std::vector<int> map(16384, 0);
    for (int port : ports()) {
      redisReply *r = command(port, {"CLUSTER", "SLOTS"});
      if (!r)
        continue;
      for (std::size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) {
        redisReply *range = r->element[i];
        for (long long s = range->element[0]->integer; s <= range->element[1]->integer; ++s)
          map[static_cast<std::size_t>(s)] = static_cast<int>(range->element[2]->element[1]->integer);
      }
      freeReplyObject(r);
      break;
    }
    return map;
  }
  // The masters' ports, from a live node's view.
  std::vector<int> masters() const {
    std::vector<int> out;
    for (int m : slot_map())
      if (m && std::find(out.begin(), out.end(), m) == out.end())
        out.push_back(m);
    return out;
  }
  std::string node_id(int port) const { return text(port, {"CLUSTER", "MYID"}); }

  // SIGKILL of the node at `port`.
  void kill(int port) {
    for (auto &n : nodes_)
      if (n->port() == port)
        n->stop();
  }

  // Waits until every slot has a live master that says cluster_state:ok.
  bool wait_until_served(std::chrono::seconds limit, std::string *why) const {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      bool ok = true;
      for (int port : ports())
        ok = ok && text(port, {"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
      std::vector<int> live = ports(), map = slot_map();
      for (int m : map)
        ok = ok && std::find(live.begin(), live.end(), m) != live.end();
      if (ok)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (why)
      *why = "the cluster did not serve every slot within " + std::to_string(limit.count()) + " s";
    return false;
  }

private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

} // namespace hotlink::test
