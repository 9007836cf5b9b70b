// The remote tier as a fleet relies on it, against a real redis-server on
// loopback: one host links and the others get it without lld; nothing that
// a trusted key did not sign (or that changed after signing) is used; a
// remote that is down, slow, killed or lying never fails a link; many
// processes on few keys link each key about once.
#include "hotlink/cache.h"
#include "hotlink/remote_cache.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/cache_entry.h"
#include "hotlink/load.h"
#include "hotlink/signature.h"
#include "test/cache/remote_host.h"
#include "test/redis_server.h"
#include "test/support.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <thread>

namespace hotlink {
namespace {

using cache::Cache;
using signature::PublicKey;
using signature::SecretKey;
using test::Bytes;
using test::warnings_of;

Bytes kernel(int k = 3) {
  return test::compile_c(host_target(), "int f(int x) { return x * " + std::to_string(k) +
                                            "; }\n" HOTLINK_TEST_F_ARGV);
}

LinkRequest request(const Bytes &obj, const std::string &out = {}) {
  LinkRequest r;
  r.inputs.push_back(Input::memory("k.o", obj));
  r.output_path = out;
  return r;
}

// One Redis for the whole suite; tests use different keys or flush it.
// Destroyed (killed) at exit.
test::RedisServer &redis() {
  static test::RedisServer server(test::temp_dir());
  static bool started = [] {
    std::string why;
    bool ok = server.start(&why);
    if (!ok)
      ADD_FAILURE() << why << " (./run installs redis-server)";
    return ok;
  }();
  (void)started;
  return server;
}

void flush_redis() {
  redisContext *c = redis().connect();
  ASSERT_NE(c, nullptr) << "redis-server is not running";
  freeReplyObject(redisCommand(c, "FLUSHALL"));
  redisFree(c);
}

struct HostOptions {
  std::string url;
  std::optional<SecretKey> sign;
  std::vector<PublicKey> trust;
  bool sync = true;
  std::function<void(cache::RemoteConfig &)> tweak;
};

// The cache a host of these tests opens: its own directory, one remote
// (the suite's Redis unless named), the library's own timeouts.
cache::Config host_config(const HostOptions &o) {
  cache::Config c;
  c.dir = test::temp_dir() + "/cache";
  c.sign_key = o.sign;
  c.trusted_keys = o.trust;
  cache::RemoteConfig r;
  r.url = o.url.empty() ? redis().url() : o.url;
  r.synchronous_publish = o.sync;
  if (o.tweak)
    o.tweak(r);
  c.remote = r;
  return c;
}

// A host: its own cache directory and link service, one remote.
struct Host : test::RemoteHost {
  std::string dir;
  explicit Host(const HostOptions &o) : Host(host_config(o)) {}

private:
  explicit Host(const cache::Config &c) : RemoteHost(c), dir(c.dir) {
    EXPECT_FALSE(error) << error->to_string();
  }
};

HostOptions publisher(const SecretKey &k) {
  HostOptions o;
  o.sign = k;
  return o;
}
HostOptions consumer(const PublicKey &k) {
  HostOptions o;
  o.trust = {k};
  return o;
}


// Runs a Redis command with binary-safe arguments; returns the reply's string.
std::string redis_cmd(const std::vector<std::string> &args) {
  redisContext *c = redis().connect();
  if (!c)
    return "<no connection>";
  redisReply *r = test::redis_command(c, args);
  std::string out = r && r->str ? std::string(r->str, r->len) : "";
  if (r)
    freeReplyObject(r);
  redisFree(c);
  return out;
}
std::string rkey(const std::string &key, const char *part) { return "hotlink:1:" + key + ":" + part; }

TEST(RemoteUrl, ParsesWhatRedisClientsAcceptAndNamesWhatIsWrong) {
  auto u = cache::parse_remote_url("redis://cache.example:6380/3");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "cache.example");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->db, 3);
  u = cache::parse_remote_url("redis://:s3cret@10.0.0.1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->password, "s3cret");
  EXPECT_EQ(u->port, 6379);
  EXPECT_EQ(u->display.find("s3cret"), std::string::npos) << "the password leaks into messages";
  u = cache::parse_remote_url("redis://[::1]:7000");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 7000);
  u = cache::parse_remote_url("redis+unix:///run/redis.sock?db=2");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->unix_socket);
  EXPECT_EQ(u->path, "/run/redis.sock");
  EXPECT_EQ(u->db, 2);
  for (std::string bad : {"memcached://x", "redis://", "redis://h:0", "redis://h:99999", "redis://h/x",
                          "redis+unix://relative.sock", "redis://[::1"}) {
    auto e = cache::parse_remote_url(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().input, bad);
    EXPECT_EQ(e.error().symbol, "--remote");
  }
}

TEST(Remote, NeedsATrustedKey) {
  cache::Config c;
  c.dir = test::temp_dir() + "/cache";
  c.remote = cache::RemoteConfig{};
  c.remote->url = redis().url();
  auto opened = Cache::open(c);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().symbol, "--trusted-key");
}

// Host A links and publishes; host B, another process with its own cache
// directory, gets the artifact without running lld.
TEST(Remote, TwoHostsLinkOnce) {
  std::string dir = test::temp_dir(), hl = test::bin_dir() + "/hotlink";
  test::write_file(dir + "/k.o", kernel(11));
  ASSERT_EQ(test::run({hl, "keygen", "-o", dir + "/fleet"}).code, 0);
  ::mkdir((dir + "/a").c_str(), 0700);
  ::mkdir((dir + "/b").c_str(), 0700);
  // Default (asynchronous) publishing: the CLI drains it before exiting.
  test::Run a = test::run({hl, "link", dir + "/k.o", "-o", dir + "/a/k.so", "--cache", dir + "/ca",
                           "--remote", redis().url(), "--sign-key", dir + "/fleet", "--json"});
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("\"cache\": \"miss\""), std::string::npos) << a.out;
  test::Run b = test::run({hl, "link", dir + "/k.o", "-o", dir + "/b/k.so", "--cache", dir + "/cb",
                           "--remote", redis().url(), "--trusted-key", dir + "/fleet.pub", "--json"});
  ASSERT_EQ(b.code, 0) << b.out << b.err;
  EXPECT_NE(b.out.find("\"cache\": \"remote-hit\""), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("\"executed_by\": \"cache\""), std::string::npos) << b.out << "\nlld ran on B";
  EXPECT_EQ(test::read_file(dir + "/a/k.so"), test::read_file(dir + "/b/k.so"));

  auto stats = [&](const std::string &cache_dir) {
    test::Run s = test::run({hl, "cache", "stats", "--dir", cache_dir, "--json"});
    EXPECT_EQ(s.code, 0) << s.err;
    auto v = llvm::json::parse(s.out);
    EXPECT_TRUE(static_cast<bool>(v)) << s.out;
    return v ? *v->getAsObject() : llvm::json::Object{};
  };
  llvm::json::Object sa = stats(dir + "/ca"), sb = stats(dir + "/cb");
  EXPECT_EQ(sa.getObject("remote")->getInteger("published"), 1);
  EXPECT_EQ(sa.getObject("remote")->getInteger("misses"), 1);
  EXPECT_EQ(sb.getObject("remote")->getInteger("hits"), 1);
  EXPECT_EQ(sb.getObject("remote")->getInteger("refused"), 0);
  EXPECT_EQ(sb.getInteger("stores"), 1) << "B kept the remote entry locally";

  // B again: now a local hit, the remote is not asked.
  test::Run b2 = test::run({hl, "link", dir + "/k.o", "-o", dir + "/b/k.so", "--cache", dir + "/cb",
                            "--remote", redis().url(), "--trusted-key", dir + "/fleet.pub", "--json"});
  EXPECT_NE(b2.out.find("\"cache\": \"hit\""), std::string::npos) << b2.out;
  EXPECT_EQ(stats(dir + "/cb").getObject("remote")->getInteger("hits"), 1);

  // The remote over a unix socket, in-process: no lld either.
  SecretKey k = SecretKey::generate();
  HostOptions pa = publisher(k), pb = consumer(k.public_key());
  pa.url = pb.url = redis().unix_url();
  Host ha(pa), hb(pb);
  ASSERT_TRUE(ha.link(request(kernel(12))).ok());
  LinkResult r = hb.link(request(kernel(12)));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::RemoteHit) << warnings_of(r);
  EXPECT_EQ(hb.service->stats().in_process + hb.service->stats().in_worker, 0u);
}

TEST(Remote, OnlyTrustedSignersAreUsed) {
  SecretKey k1 = SecretKey::generate(), k2 = SecretKey::generate();
  Host a(publisher(k1));
  Bytes obj = kernel(21);
  LinkResult ra = a.link(request(obj));
  ASSERT_TRUE(ra.ok()) << ra.error->to_string();
  ASSERT_EQ(a.cache->stats().published, 1u) << warnings_of(ra);

  Host untrusting(consumer(k2.public_key()));
  LinkResult r = untrusting.link(request(obj));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::Miss);
  EXPECT_NE(warnings_of(r).find("does not trust"), std::string::npos) << warnings_of(r);
  EXPECT_EQ(untrusting.cache->stats().remote_refused, 1u);
  EXPECT_EQ(r.artifact, ra.artifact) << "linked here, the same bytes";

  Host trusting(consumer(k1.public_key()));
  EXPECT_EQ(trusting.link(request(obj)).cache, CacheUse::RemoteHit);
  HostOptions both;
  both.trust = {k2.public_key(), k1.public_key()};
  Host either(both);
  EXPECT_EQ(either.link(request(obj)).cache, CacheUse::RemoteHit);

  // A consumer that also signs: its own key is trusted, the publisher's too.
  HostOptions mixed = publisher(k2);
  mixed.trust = {k1.public_key()};
  Host m(mixed);
  EXPECT_EQ(m.link(request(obj)).cache, CacheUse::RemoteHit);
}

// Each way a Redis value can be changed: B refuses it before storing or
// mapping anything, links locally, and ends with the right bytes.
struct Damage {
  const char *name;
  const char *reason; // in B's warning
  std::function<void(const std::string &key, const std::string &other_key)> apply;
};

class RemoteTamper : public ::testing::TestWithParam<Damage> {};

TEST_P(RemoteTamper, IsRefusedAndLinkedLocally) {
  SecretKey k = SecretKey::generate();
  Host a(publisher(k));
  Bytes obj = kernel(31);
  LinkResult good = a.link(request(obj));
  ASSERT_TRUE(good.ok());
  // Another valid artifact of the same size, so that a replacement is
  // caught by its hash (not by its length).
  LinkResult other;
  for (int k = 32; k < 64; ++k) {
    other = a.link(request(kernel(k)));
    ASSERT_TRUE(other.ok());
    if (other.artifact.size() == good.artifact.size() && other.artifact != good.artifact)
      break;
  }
  ASSERT_EQ(other.artifact.size(), good.artifact.size());
  ASSERT_GE(a.cache->stats().published, 2u);
  GetParam().apply(good.cache_key, other.cache_key);

  Host b(consumer(k.public_key()));
  LinkResult r = b.link(request(obj));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::Miss) << "a tampered entry was used";
  EXPECT_NE(warnings_of(r).find("refused"), std::string::npos) << warnings_of(r);
  EXPECT_NE(warnings_of(r).find(GetParam().reason), std::string::npos) << warnings_of(r);
  EXPECT_EQ(b.cache->stats().remote_refused, 1u);
  EXPECT_EQ(r.artifact, good.artifact);
  // What B stored is its own link, intact.
  auto v = b.cache->verify();
  EXPECT_EQ(v.ok, 1u);
  EXPECT_TRUE(v.corrupt.empty());
  auto again = b.link(request(obj));
  EXPECT_EQ(again.cache, CacheUse::Hit);
  EXPECT_EQ(again.artifact, good.artifact);
}

// Redis evicting (or expiring) part of an entry is not tampering: the
// artifact's key gone is a miss, counted as one and said as one.
TEST(RemoteFailure, AnEvictedPartIsAMissNotARefusal) {
  SecretKey k = SecretKey::generate();
  Host a(publisher(k));
  Bytes obj = kernel(71);
  LinkResult good = a.link(request(obj));
  ASSERT_TRUE(good.ok());
  redis_cmd({"DEL", rkey(good.cache_key, "a")});
  Host b(consumer(k.public_key()));
  LinkResult r = b.link(request(obj));
  ASSERT_TRUE(r.ok()) << r.error->to_string();
  EXPECT_EQ(r.cache, CacheUse::Miss);
  EXPECT_EQ(b.cache->stats().remote_refused, 0u) << warnings_of(r);
  EXPECT_EQ(b.cache->stats().remote_misses, 1u) << warnings_of(r);
  EXPECT_NE(warnings_of(r).find("evicted"), std::string::npos) << warnings_of(r);
  EXPECT_EQ(warnings_of(r).find("refused"), std::string::npos) << warnings_of(r);
  EXPECT_EQ(r.artifact, good.artifact);
}

std::string manifest_of(const std::string &key) { return redis_cmd({"GET", rkey(key, "m")}); }
void set_manifest(const std::string &key, const std::string &text) {
  redis_cmd({"SET", rkey(key, "m"), text});
}
std::string json_of(const std::string &manifest) { return manifest.substr(0, manifest.find("\nblake3 ")); }

INSTANTIATE_TEST_SUITE_P(
    AllDamages, RemoteTamper,
    ::testing::Values(
        Damage{"ArtifactByteFlipped", "artifact does not match",
               [](const std::string &key, const std::string &) {
                 std::string a = redis_cmd({"GET", rkey(key, "a")});
                 a[a.size() / 2] ^= 0x20;
                 redis_cmd({"SET", rkey(key, "a"), a});
               }},
        Damage{"ArtifactReplaced", "artifact does not match",
               [](const std::string &key, const std::string &other) {
                 redis_cmd({"SET", rkey(key, "a"), redis_cmd({"GET", rkey(other, "a")})});
               }},
        Damage{"ArtifactTruncated", "incomplete",
               [](const std::string &key, const std::string &) {
                 std::string a = redis_cmd({"GET", rkey(key, "a")});
                 redis_cmd({"SET", rkey(key, "a"), a.substr(0, a.size() / 2)});
               }},
        Damage{"ManifestEditedAndResealed", "does not verify",
               [](const std::string &key, const std::string &) {
                 std::string m = manifest_of(key);
                 std::string json = json_of(m);
                 json.replace(json.find("\"f_argv\""), 8, "\"f_evil\"");
                 set_manifest(key, signature::seal(json) + m.substr(m.find("ed25519 ")));
               }},
        Damage{"SignatureRemoved", "not signed",
               [](const std::string &key, const std::string &) {
                 std::string m = manifest_of(key);
                 set_manifest(key, m.substr(0, m.find("ed25519 ")));
               }},
        Damage{"ResignedByAnotherKey", "does not trust",
               [](const std::string &key, const std::string &) {
                 std::string m = manifest_of(key);
                 std::string sealed = m.substr(0, m.find("ed25519 "));
                 set_manifest(key, signature::add_signature(sealed, SecretKey::generate()));
               }},
        Damage{"SignatureByteFlipped", "does not verify",
               [](const std::string &key, const std::string &) {
                 std::string m = manifest_of(key);
                 m[m.size() - 5] = m[m.size() - 5] == 'a' ? 'b' : 'a';
                 set_manifest(key, m);
               }},
        Damage{"AnotherKeysManifest", "another key",
               [](const std::string &key, const std::string &other) {
                 set_manifest(key, manifest_of(other));
               }},
        Damage{"Garbage", "checksum",
               [](const std::string &key, const std::string &) { set_manifest(key, "\x89PNG garbage"); }}),
    [](const ::testing::TestParamInfo<Damage> &i) { return std::string(i.param.name); });

// A fake server on loopback: silent (never answers), garbage (answers
// something that is not RESP), or cut (starts a reply and hangs up).
class FakeServer {
public:
  enum Mode { Silent, Garbage, Cut };
  explicit FakeServer(Mode mode) : mode_(mode) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    for (int c : clients_)
      ::close(c);
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

private:
  void serve() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0)
        return;
      char buf[4096];
      if (::recv(c, buf, sizeof buf, 0) <= 0) {
        ::close(c);
        continue;
      }
      if (mode_ == Garbage) {
        const char *g = "HTTP/1.1 400 Bad Request\r\n\r\n";
        ::send(c, g, std::strlen(g), MSG_NOSIGNAL);
      } else if (mode_ == Cut) {
        const char *g = "$100000\r\nhotlink-cache-half-a-valu";
        ::send(c, g, std::strlen(g), MSG_NOSIGNAL);
        ::close(c);
        continue;
      }
      clients_.push_back(c); // Silent (and Garbage): keep it open, say nothing more
    }
  }
  Mode mode_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> clients_;
  std::thread thread_;
};

TEST(RemoteFailure, UnreachableSlowGarbageOrCutNeverFailALink) {
  SecretKey k = SecretKey::generate();
  Bytes obj = kernel(41);
  std::unique_ptr<FakeServer> silent(new FakeServer(FakeServer::Silent)),
      garbage(new FakeServer(FakeServer::Garbage)), cut(new FakeServer(FakeServer::Cut));
  struct Case {
    std::string name, url, reason;
  } cases[] = {
      {"unreachable", "redis://127.0.0.1:" + std::to_string(test::free_port()), "cannot connect"},
      {"silent", silent->url(), "timed out"},
      {"garbage", garbage->url(), "Protocol error"},
      {"cut", cut->url(), ""},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    HostOptions o = publisher(k);
    o.url = c.url;
    o.tweak = [](cache::RemoteConfig &r) {
      r.connect_timeout = r.io_timeout = std::chrono::milliseconds(200);
      r.backoff_min = std::chrono::milliseconds(60000); // stays in backoff for this test
    };
    Host h(o);
    auto t0 = std::chrono::steady_clock::now();
    LinkResult r = h.link(request(obj));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r.ok()) << r.error->to_string();
    EXPECT_EQ(r.cache, CacheUse::Miss);
    EXPECT_NE(warnings_of(r).find(c.reason), std::string::npos) << warnings_of(r);
    EXPECT_NE(warnings_of(r).find(c.url.substr(8)), std::string::npos) << "the warning names the remote";
    // Bounded by the timeouts (200 ms each), not by the server: a hang
    // would take the test's own timeout. Generous for a loaded machine.
    EXPECT_LT(ms, 5000) << "the remote's timeouts did not bound the link";
    cache::Stats s = h.cache->stats();
    EXPECT_EQ(s.remote_errors, 1u);
    // The next link is not delayed by the remote: it is in backoff.
    LinkResult again = h.link(request(kernel(42)));
    ASSERT_TRUE(again.ok());
    EXPECT_GE(h.cache->stats().remote_skipped, 1u);
    EXPECT_EQ(h.cache->stats().remote_errors, 1u) << "asked the remote during its backoff";
    EXPECT_EQ(h.cache->verify().corrupt.size(), 0u);
  }
}

// Redis is killed (SIGKILL) in the middle of 200 links and comes back
// later: every link succeeds, and publishing resumes after the backoff.
TEST(RemoteFailure, RedisKilledMidRun) {
  // A server of its own: it is killed and restarted.
  test::RedisServer server(test::temp_dir());
  std::string why;
  ASSERT_TRUE(server.start(&why)) << why;
  SecretKey k = SecretKey::generate();
  std::string out = test::temp_dir();
  Bytes obj = kernel(51);
  cache::Stats s;
  {
    HostOptions o = publisher(k);
    o.url = server.url();
    o.sync = false; // the default: the queue meets the dying server too
    o.tweak = [](cache::RemoteConfig &r) {
      r.connect_timeout = r.io_timeout = std::chrono::milliseconds(300);
      r.backoff_min = std::chrono::milliseconds(20);
      r.backoff_max = std::chrono::milliseconds(100);
    };
    Host h(o);
    int ok = 0;
    for (int i = 0; i < 200; ++i) {
      if (i == 80)
        server.stop();
      if (i == 140) {
        ASSERT_TRUE(server.start(&why)) << why;
        std::this_thread::sleep_for(std::chrono::milliseconds(150)); // past the backoff
      }
      LinkResult r = h.link(request(obj, out + "/k" + std::to_string(i) + ".so"));
      ok += r.ok();
      EXPECT_TRUE(r.ok()) << i << ": " << (r.ok() ? "" : r.error->to_string());
    }
    EXPECT_EQ(ok, 200);
    h.cache.reset();
    h.service.reset();
    s = Cache::open({h.dir}).value()->stats();
  }
  EXPECT_GE(s.remote_errors + s.publish_errors, 1u) << "the outage went unnoticed";
  EXPECT_GE(s.published, 100u) << "published " << s.published << " of the 140 links made while Redis was up; "
                               << s.remote_errors << " errors, " << s.publish_errors << " publish errors, "
                               << s.remote_skipped << " skipped, " << s.remote_misses << " misses";
  EXPECT_EQ(s.stores, 200u);
  // What was published after the restart is there for another host.
  HostOptions ob = consumer(k.public_key());
  ob.url = server.url();
  Host b(ob);
  int remote_hits = 0;
  for (int i = 190; i < 200; ++i)
    remote_hits += b.link(request(obj, out + "/k" + std::to_string(i) + ".so")).cache == CacheUse::RemoteHit;
  EXPECT_EQ(remote_hits, 10);
}

// 8 processes, each a host with its own cache directory, make 200 requests
// each over 20 keys against one Redis.
TEST(RemoteLoad, EightProcessesTwoHundredRequestsTwentyKeys) {
  flush_redis();
  std::string dir = test::temp_dir();
  SecretKey fleet = SecretKey::generate();
  ASSERT_FALSE(signature::write_key_pair(fleet, dir + "/fleet").has_value());
  test::write_file(dir + "/k.o", kernel(61));
  const int kProcs = 8;
  std::vector<std::future<test::Run>> runs;
  for (int p = 0; p < kProcs; ++p)
    runs.push_back(std::async(std::launch::async, [&, p] {
      std::string self = test::bin_dir() + "/remote_cache_test";
      return test::run({self, "--gtest_filter=RemoteLoadChild.Run", "--", dir, std::to_string(p),
                        redis().url()});
    }));
  std::map<int, int> links_per_key;
  int requests = 0, failures = 0;
  for (int p = 0; p < kProcs; ++p) {
    test::Run r = runs[p].get();
    ASSERT_EQ(r.code, 0) << "process " << p << ":\n" << r.out << r.err;
    std::ifstream in(dir + "/result" + std::to_string(p));
    int key, links, n, failed;
    in >> n >> failed;
    requests += n;
    failures += failed;
    while (in >> key >> links)
      links_per_key[key] += links;
  }
  EXPECT_EQ(requests, kProcs * 200);
  EXPECT_EQ(failures, 0);
  int total = 0;
  for (auto [key, links] : links_per_key) {
    EXPECT_LE(links, 2) << "key " << key << " was linked " << links << " times across 8 hosts";
    total += links;
  }
  EXPECT_GE(total, 20);
  EXPECT_LE(total, 24) << "each key should be linked about once";
  // No corrupt entry anywhere: every host's directory, and every remote
  // entry as a fresh host sees it.
  for (int p = 0; p < kProcs; ++p) {
    auto c = Cache::open({dir + "/host" + std::to_string(p)});
    ASSERT_TRUE(c.ok());
    cache::VerifyReport v = c.value()->verify();
    EXPECT_TRUE(v.corrupt.empty()) << "host " << p;
    EXPECT_EQ(v.ok, 20u) << "host " << p;
  }
  Host fresh(consumer(fleet.public_key()));
  std::string out = test::temp_dir();
  for (int key = 0; key < 20; ++key)
    EXPECT_EQ(fresh.link(request(test::read_file(dir + "/k.o"), out + "/k" + std::to_string(key) + ".so")).cache,
              CacheUse::RemoteHit)
        << key;
}

// The body of one process of the load test (run by the test above).
TEST(RemoteLoadChild, Run) {
  auto args = ::testing::internal::GetArgvs();
  if (args.size() < 5 || args[args.size() - 4] != "--")
    GTEST_SKIP() << "run by RemoteLoad.EightProcessesTwoHundredRequestsTwentyKeys";
  std::string dir = args[args.size() - 3], url = args[args.size() - 1];
  int p = std::stoi(args[args.size() - 2]);
  cache::Config c;
  c.dir = dir + "/host" + std::to_string(p);
  auto key = signature::read_secret_key(dir + "/fleet");
  ASSERT_TRUE(key.ok()) << key.error().to_string();
  c.sign_key = key.value();
  c.remote = cache::RemoteConfig{};
  c.remote->url = url;
  c.remote->synchronous_publish = true;
  auto opened = Cache::open(c);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  ServiceConfig sc;
  sc.cache = opened.value();
  LinkService service(sc);
  Bytes obj = test::read_file(dir + "/k.o");
  std::string out = dir + "/out" + std::to_string(p);
  ::mkdir(out.c_str(), 0700);
  std::mt19937 rng(1234 + p);
  std::vector<int> first(20);
  for (int i = 0; i < 20; ++i)
    first[i] = i;
  std::shuffle(first.begin(), first.end(), rng); // every key at least once
  std::map<int, int> links;
  int failed = 0;
  for (int i = 0; i < 200; ++i) {
    int k = i < 20 ? first[i] : static_cast<int>(rng() % 20);
    LinkResult r = service.link(request(obj, out + "/k" + std::to_string(k) + ".so"));
    failed += !r.ok();
    if (!r.ok())
      std::fprintf(stderr, "request %d: %s\n", i, r.error->to_string().c_str());
    links[k] += r.cache == CacheUse::Miss;
    links.emplace(k, 0);
  }
  std::ofstream res(dir + "/result" + std::to_string(p));
  res << 200 << " " << failed << "\n";
  for (auto [k, n] : links)
    res << k << " " << n << "\n";
}

TEST(RemoteLimits, OversizedEntriesAreNeitherSentNorRead) {
  SecretKey k = SecretKey::generate();
  Bytes obj = kernel(71);
  HostOptions small = publisher(k);
  small.tweak = [](cache::RemoteConfig &r) { r.max_entry_bytes = 512; };
  Host a(small);
  LinkResult r = a.link(request(obj));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(a.cache->stats().published, 0u);
  EXPECT_EQ(a.cache->stats().publish_errors, 1u);
  EXPECT_EQ(redis_cmd({"GET", rkey(r.cache_key, "m")}), "") << "an oversized entry was published";

  // Published by a host without the limit, refused by one with it, before
  // the artifact is transferred.
  Host big(publisher(k));
  ASSERT_TRUE(big.link(request(obj)).ok());
  HostOptions c = consumer(k.public_key());
  c.tweak = [](cache::RemoteConfig &r) { r.max_entry_bytes = 512; };
  Host b(c);
  LinkResult rb = b.link(request(obj));
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(rb.cache, CacheUse::Miss);
  EXPECT_NE(warnings_of(rb).find("over the limit"), std::string::npos) << warnings_of(rb);
}

// With require_signed, local entries must be signed too, and the loader can
// be told to check the signature of what it maps.
TEST(SignedLocalCache, UnsignedOrForeignLocalEntriesAreRefusedAndReplaced) {
  std::string dir = test::temp_dir() + "/cache";
  SecretKey mine = SecretKey::generate();
  Bytes obj = kernel(81);
  std::string key;
  {
    ServiceConfig sc;
    sc.cache = Cache::open({dir}).value(); // no keys: stores unsigned
    LinkService s(sc);
    LinkResult r = s.link(request(obj));
    ASSERT_TRUE(r.ok());
    key = r.cache_key;
  }
  cache::Config c;
  c.dir = dir;
  c.sign_key = mine;
  c.require_signed = true;
  auto strict = Cache::open(c).value();
  ServiceConfig sc;
  sc.cache = strict;
  LinkService s(sc);
  LinkResult r = s.link(request(obj));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.cache, CacheUse::Miss) << "an unsigned local entry was used";
  EXPECT_NE(warnings_of(r).find("not signed"), std::string::npos) << warnings_of(r);
  EXPECT_EQ(strict->stats().refused, 1u);
  EXPECT_EQ(s.link(request(obj)).cache, CacheUse::Hit) << "the replacement is signed";

  auto l = strict->lookup(cache::Key::parse(key).value());
  ASSERT_TRUE(l.entry.has_value());
  EXPECT_EQ(l.entry->manifest.signer, mine.public_key().hex());
  auto lib = loader::load(*l.entry, strict->trust());
  ASSERT_TRUE(lib.ok()) << lib.error().to_string();
  auto f = reinterpret_cast<int (*)(int)>(lib.value()->symbol("f"));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f(2), 162);
  // Requiring signatures without a key to sign with is refused at open.
  cache::Config no_key;
  no_key.dir = dir;
  no_key.require_signed = true;
  auto refused_open = Cache::open(no_key);
  ASSERT_FALSE(refused_open.ok());
  EXPECT_EQ(refused_open.error().symbol, "--sign-key");
  // The loader refuses it for a host that trusts another key.
  auto refused = loader::load(*l.entry, {SecretKey::generate().public_key()});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::UntrustedSigner);
  // And refuses other bytes under this entry's signed statement.
  cache::Entry swapped = *l.entry;
  swapped.artifact.bytes[swapped.artifact.bytes.size() / 2] ^= 1;
  swapped.manifest.blake3.clear(); // only the signature can catch it now
  auto changed = loader::load(swapped, strict->trust());
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.error().code, ErrorCode::HashMismatch);
}

} // namespace
} // namespace hotlink
