// The remote tier on a Redis Cluster (redis+cluster://), against a real
// cluster of six redis-server nodes on loopback (test/redis_cluster.h):
// keys routed as the servers route them, entries spread over every master
// and hit by another host, and processes that keep reading and writing
// while a master dies or slots move, with no wrong hit and no failure
// beyond misses.
#include "cache/remote_cluster.h"
#include "hotlink/cache.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/remote_cache.h"
#include "hotlink/signature.h"
#include "test/cache/remote_host.h"
#include "test/redis_cluster.h"
#include "test/support.h"

#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>

namespace hotlink {
namespace {

using cache::Cache;
using signature::SecretKey;
using test::Bytes;
using test::RedisCluster;

constexpr int kKeys = 12;

Bytes kernel(int k) {
  return test::compile_c(host_target(), "int f(int x) { return x * " + std::to_string(k + 2) +
                                            "; }\n" HOTLINK_TEST_F_ARGV);
}

std::string text_of(const std::string &path) {
  Bytes b = test::read_file(path);
  return std::string(b.begin(), b.end());
}

LinkRequest request(const Bytes &obj, const std::string &out) {
  LinkRequest r;
  r.inputs.push_back(Input::memory("k.o", obj));
  r.output_path = out;
  return r;
}

// The suite's cluster, for the tests that do not kill or reshard it.
RedisCluster &cluster() {
  static RedisCluster c(test::temp_dir());
  static bool started = [] {
    std::string why;
    bool ok = c.start(&why);
    if (!ok)
      ADD_FAILURE() << why << " (./run installs redis-server and redis-tools)";
    return ok;
  }();
  (void)started;
  return c;
}

using Host = test::RemoteHost;
using test::warnings_of;

TEST(ClusterSlot, IsTheSlotTheServersCompute) {
  EXPECT_EQ(cache::cluster_crc16("123456789"), 0x31C3); // the cluster specification's check value
  int port = cluster().ports().at(0);
  for (std::string key : {"hotlink:1:{0123abcd}:m", "hotlink:1:{}:m", "{}", "a{b}c{d}", "plain", "{x",
                          "hotlink:1:{ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff}:a"}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(static_cast<long long>(cache::cluster_slot(key)), RedisCluster::integer(port, {"CLUSTER", "KEYSLOT", key}));
  }
}

TEST(ClusterUrl, NamesItsNodesAndRefusesADatabase) {
  auto u = cache::parse_remote_url("redis+cluster://:pw@10.0.0.1:7001,[::1]:7002,cache.lan");
  ASSERT_TRUE(u.ok()) << u.error().to_string();
  EXPECT_TRUE(u->cluster);
  ASSERT_EQ(u->seeds.size(), 3u);
  EXPECT_EQ(u->seeds[1], std::make_pair(std::string("::1"), 7002));
  EXPECT_EQ(u->seeds[2], std::make_pair(std::string("cache.lan"), 6379));
  EXPECT_EQ(u->password, "pw");
  EXPECT_EQ(u->display, "redis+cluster://10.0.0.1:7001,[::1]:7002,cache.lan:6379") << "no password";
  for (std::string bad : {"redis+cluster://a:1/0", "redis+cluster://a:1,", "redis+cluster://", "redis+cluster://a:99999"}) {
    auto e = cache::parse_remote_url(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().input, bad);
  }
}

// One host publishes twelve entries; another, with its own directory,
// gets every one from the cluster without linking; each master holds some.
TEST(Cluster, EntriesSpreadOverEveryMasterAndHitOnAnotherHost) {
  SecretKey key = SecretKey::generate();
  std::string out_a = test::temp_dir(), out_b = test::temp_dir(); // one name: the key holds it
  Host a(test::temp_dir() + "/a", cluster().url(), key, {});
  Host b(test::temp_dir() + "/b", cluster().url(), std::nullopt, {key.public_key()});
  ASSERT_TRUE(a.service && b.service) << (a.error ? a.error->to_string() : b.error ? b.error->to_string() : "");
  for (int k = 0; k < kKeys; ++k) {
    LinkResult r = a.service->link(request(kernel(k), out_a + "/k" + std::to_string(k) + ".so"));
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(warnings_of(r), "") << k;
  }
  EXPECT_EQ(a.cache->stats().published, static_cast<std::uint64_t>(kKeys));
  for (int k = 0; k < kKeys; ++k) {
    LinkResult r = b.service->link(request(kernel(k), out_b + "/k" + std::to_string(k) + ".so"));
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(r.cache, CacheUse::RemoteHit) << k << ": " << warnings_of(r);
    EXPECT_EQ(test::read_file(out_a + "/k" + std::to_string(k) + ".so"),
              test::read_file(out_b + "/k" + std::to_string(k) + ".so"));
  }
  std::vector<int> masters = cluster().masters();
  ASSERT_EQ(masters.size(), 3u);
  for (int m : masters)
    EXPECT_GT(RedisCluster::integer(m, {"DBSIZE"}), 0) << "master on port " << m << " holds no entry";
}

// The processes of the tests below: each loops over the keys with a fresh
// cache directory per round (so every request asks the cluster), until
// the parent's "stop" file appears, and writes one line per request:
// phase (the parent's "phase" file then), key, cache use, ms, linked, same
// bytes as its own reference link.
TEST(ClusterChild, Run) {
  auto args = ::testing::internal::GetArgvs();
  if (args.size() < 5 || args[args.size() - 4] != "--")
    GTEST_SKIP() << "run by the Cluster tests";
  std::string dir = args[args.size() - 3], url = args[args.size() - 1];
  int p = std::stoi(args[args.size() - 2]);
  auto key = signature::read_secret_key(dir + "/fleet");
  ASSERT_TRUE(key.ok()) << key.error().to_string();
  std::string out = dir + "/out" + std::to_string(p);
  ::mkdir(out.c_str(), 0700);
  std::vector<Bytes> reference; // linked here without a cache, under the same name
  {
    LinkService plain{ServiceConfig{}};
    std::string ref = out + "/reference";
    ::mkdir(ref.c_str(), 0700);
    for (int k = 0; k < kKeys; ++k) {
      std::string so = ref + "/k" + std::to_string(k) + ".so";
      LinkResult r = plain.link(request(test::read_file(dir + "/k" + std::to_string(k) + ".o"), so));
      ASSERT_TRUE(r.ok()) << r.error->to_string();
      reference.push_back(test::read_file(so));
    }
  }
  std::ofstream res(dir + "/result" + std::to_string(p));
  for (int round = 0; !test::exists(dir + "/stop"); ++round) {
    Host h(out + "/round" + std::to_string(round), url, key.value(), {key->public_key()});
    ASSERT_TRUE(h.service);
    for (int k = 0; k < kKeys; ++k) {
      std::string phase = test::exists(dir + "/phase") ? text_of(dir + "/phase") : "0";
      auto t0 = std::chrono::steady_clock::now();
      std::string so = out + "/k" + std::to_string(k) + ".so";
      LinkResult r = h.service->link(request(test::read_file(dir + "/k" + std::to_string(k) + ".o"), so));
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      bool same = r.ok() && test::read_file(so) == reference[k];
      res << phase << " " << round << " " << k << " " << static_cast<int>(r.cache) << " " << ms << " " << r.ok() << " " << same << " "
          << r.cache_key << "\n";
      if (!r.ok())
        std::fprintf(stderr, "key %d: %s\n", k, r.error->to_string().c_str());
    }
    res.flush();
    std::ofstream(dir + "/rounds" + std::to_string(p)) << round + 1;
  }
}

struct Request {
  std::string phase;
  int process = 0, round = 0, key = 0, use = 0;
  double ms = 0;
  bool ok = false, same = false;
  std::string cache_key;
};

// Four processes over one cluster; `disturb` runs once each has finished
// a round (every key is in the cluster by then).
class ClusterUnderTraffic {
public:
  static constexpr int kProcs = 4;
  explicit ClusterUnderTraffic(RedisCluster &c) : cluster_(c), dir_(test::temp_dir()) {
    SecretKey fleet = SecretKey::generate();
    EXPECT_FALSE(signature::write_key_pair(fleet, dir_ + "/fleet").has_value());
    for (int k = 0; k < kKeys; ++k)
      test::write_file(dir_ + "/k" + std::to_string(k) + ".o", kernel(k));
    for (int p = 0; p < kProcs; ++p)
      runs_.push_back(std::async(std::launch::async, [this, p] {
        test::RunOptions o;
        o.timeout_seconds = 300;
        return test::run({test::bin_dir() + "/remote_cluster_test", "--gtest_filter=ClusterChild.Run", "--", dir_,
                          std::to_string(p), cluster_.url()},
                         o);
      }));
  }
  void phase(const std::string &p) { test::write_file(dir_ + "/phase", Bytes(p.begin(), p.end())); }
  // Waits until every process has finished `rounds` rounds more than now.
  void wait_rounds(int rounds) {
    std::vector<int> start(kProcs);
    for (int p = 0; p < kProcs; ++p)
      start[p] = done(p);
    for (int p = 0; p < kProcs; ++p)
      for (int waited = 0; done(p) < start[p] + rounds && waited < 120000; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<Request> stop() {
    test::write_file(dir_ + "/stop", Bytes{'1'});
    std::vector<Request> all;
    for (int p = 0; p < kProcs; ++p) {
      test::Run r = runs_[p].get();
      EXPECT_EQ(r.code, 0) << "process " << p << ":\n" << r.out << r.err;
      std::ifstream in(dir_ + "/result" + std::to_string(p));
      Request q;
      q.process = p;
      while (in >> q.phase >> q.round >> q.key >> q.use >> q.ms >> q.ok >> q.same >> q.cache_key)
        all.push_back(q);
    }
    return all;
  }

private:
  int done(int p) {
    std::string f = dir_ + "/rounds" + std::to_string(p);
    return test::exists(f) ? std::atoi(text_of(f).c_str()) : 0;
  }
  RedisCluster &cluster_;
  std::string dir_;
  std::vector<std::future<test::Run>> runs_;
};

void expect_no_wrong_and_no_failure(const std::vector<Request> &all) {
  ASSERT_FALSE(all.empty());
  for (const Request &q : all) {
    EXPECT_TRUE(q.ok) << "phase " << q.phase << " key " << q.key << " failed";
    EXPECT_TRUE(q.same) << "phase " << q.phase << " key " << q.key << ": not what a link makes";
    // Bounded by the tier's timeouts (500 ms) and a local link, not by a
    // dead node: generous for a loaded machine.
    EXPECT_LT(q.ms, 10000) << "phase " << q.phase << " key " << q.key;
  }
}

std::string part_key(const std::string &cache_key) { return "hotlink:1:{" + cache_key + "}:m"; }

// A master is killed (SIGKILL) while four processes read and write: its
// replica is promoted, the other masters' entries keep hitting meanwhile,
// and the dead master's hit again from its replica.
TEST(Cluster, AMasterKilledWhileFourProcessesReadAndWrite) {
  RedisCluster c(test::temp_dir());
  std::string why;
  ASSERT_TRUE(c.start(&why)) << why;
  ClusterUnderTraffic traffic(c);
  traffic.wait_rounds(1);
  std::vector<int> before = c.slot_map();
  int victim = c.masters().at(0);
  traffic.phase("killed");
  c.kill(victim);
  traffic.wait_rounds(1);
  ASSERT_TRUE(c.wait_until_served(std::chrono::seconds(30), &why)) << why;
  traffic.phase("promoted");
  traffic.wait_rounds(2);
  std::vector<Request> all = traffic.stop();
  expect_no_wrong_and_no_failure(all);
  int survivors_asked = 0, survivors_hit = 0, victims_asked = 0, victims_hit = 0;
  std::set<std::pair<int, int>> hosts_asking_victims; // (process, round): each round is a new host
  for (const Request &q : all) {
    bool victims = before[cache::cluster_slot(part_key(q.cache_key))] == victim;
    bool hit = q.use == static_cast<int>(CacheUse::RemoteHit);
    if (q.phase == "killed" && !victims) {
      ++survivors_asked;
      survivors_hit += hit;
    } else if (q.phase == "promoted" && victims) {
      ++victims_asked;
      victims_hit += hit;
      hosts_asking_victims.insert({q.process, q.round});
    }
  }
  ASSERT_GT(survivors_asked, 0);
  EXPECT_EQ(survivors_hit, survivors_asked) << "the surviving masters' entries stopped hitting";
  ASSERT_GT(victims_asked, 0);
  // A new host may meet the dead node once, where the node it asked for
  // the slots has not yet heard of the failover (the cluster's gossip);
  // it reads the slots again, and after that the replica serves.
  EXPECT_GE(victims_hit, victims_asked - static_cast<int>(hosts_asking_victims.size()))
      << victims_hit << " of " << victims_asked << " requests for the dead master's entries hit its replica";
}

// 2000 slots move from one master to another (redis-cli --cluster
// reshard) while four processes read and write: every request is a hit
// or a miss, never a failure or a wrong artifact.
TEST(Cluster, ReshardedUnderTraffic) {
  RedisCluster c(test::temp_dir());
  std::string why;
  ASSERT_TRUE(c.start(&why)) << why;
  ClusterUnderTraffic traffic(c);
  traffic.wait_rounds(1);
  std::vector<int> masters = c.masters(), before = c.slot_map();
  ASSERT_EQ(masters.size(), 3u);
  traffic.phase("resharding");
  test::RunOptions o;
  o.timeout_seconds = 120;
  test::Run r = test::run({HOTLINK_REDIS_CLI_PATH, "--cluster", "reshard", "127.0.0.1:" + std::to_string(masters[0]),
                           "--cluster-from", c.node_id(masters[0]), "--cluster-to", c.node_id(masters[1]),
                           "--cluster-slots", "2000", "--cluster-yes"},
                          o);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  traffic.phase("resharded");
  traffic.wait_rounds(1);
  std::vector<Request> all = traffic.stop();
  expect_no_wrong_and_no_failure(all);
  int hits = 0, moved_asked = 0;
  for (const Request &q : all) {
    hits += q.phase != "0" && q.use == static_cast<int>(CacheUse::RemoteHit);
    moved_asked += q.phase == "resharded";
  }
  EXPECT_GT(moved_asked, 0);
  EXPECT_GT(hits, 0);
  std::vector<int> after = c.slot_map();
  EXPECT_EQ(std::count(after.begin(), after.end(), masters[0]), std::count(before.begin(), before.end(), masters[0]) - 2000);
  EXPECT_EQ(std::count(after.begin(), after.end(), masters[1]), std::count(before.begin(), before.end(), masters[1]) + 2000);
}

} // namespace
} // namespace hotlink
