// The cache's tiers side by side, in one run (issue 52): a hit in the local
// directory, and a remote hit from one Redis server (TCP on loopback), a
// Redis Cluster of six nodes (three masters) and nginx's WebDAV, each
// started here as the tests start them (test/redis_server.h,
// test/redis_cluster.h, test/http_server.h).
//
// One host publishes 16 small kernels; another, trusting its key, links
// them in turn. Each timed request is LinkService::link from object bytes
// to an artifact in memory: for the remote tiers its local directory is
// emptied before each (not timed), so the request plans, keys, misses
// locally, reads the manifest and the artifact from the remote, checks the
// signature and the BLAKE3, and stores the entry. Prints p50 and p99 of the
// requests and hits per second (requests / their summed time), and a
// Markdown table with --markdown FILE.
#include "bench/bench_support.h"
#include "hotlink/cache.h"
#include "hotlink/link_service.h"
#include "hotlink/signature.h"
#include "test/http_server.h"
#include "test/redis_cluster.h"
#include "test/redis_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

namespace {

using hotlink::CacheUse;

constexpr int kKernels = 16, kRequests = 400;

struct Tier {
  std::string name, url; // url empty: the local directory alone
};

struct Figures {
  double p50 = 0, p99 = 0, per_second = 0;
  std::string error;
};

std::shared_ptr<hotlink::cache::Cache> open(const std::string &dir, const std::string &url,
                                            const std::optional<hotlink::signature::SecretKey> &sign,
                                            const std::vector<hotlink::signature::PublicKey> &trust) {
  hotlink::cache::Config c{dir};
  c.sign_key = sign;
  c.trusted_keys = trust;
  if (!url.empty()) {
    c.remote = hotlink::cache::RemoteConfig{};
    c.remote->url = url;
    c.remote->synchronous_publish = true;
  }
  auto opened = hotlink::cache::Cache::open(c);
  if (!opened) {
    std::fprintf(stderr, "remote_bench: %s\n", opened.error().to_string().c_str());
    return nullptr;
  }
  return opened.value();
}

hotlink::LinkRequest request(const std::vector<std::uint8_t> &obj) {
  hotlink::LinkRequest r;
  r.inputs = {hotlink::Input::memory("kernel.o", obj)};
  return r;
}

Figures measure(const Tier &t, const std::vector<std::vector<std::uint8_t>> &objects, const std::string &scratch) {
  Figures f;
  static const auto key = hotlink::signature::SecretKey::generate();
  std::string dir = scratch + "/" + t.name;
  auto a = open(dir + "-a", t.url, key, {});
  auto b = t.url.empty() ? a : open(dir + "-b", t.url, std::nullopt, {key.public_key()});
  if (!a || !b)
    return f.error = "cannot open the caches", f;
  hotlink::LinkService publisher({.cache = a});
  for (const auto &obj : objects)
    if (hotlink::LinkResult r = publisher.link(request(obj)); !r.ok())
      return f.error = r.error->to_string(), f;
  hotlink::LinkService consumer({.cache = b});
  CacheUse want = t.url.empty() ? CacheUse::Hit : CacheUse::RemoteHit;
  std::vector<double> ms;
  for (int i = 0; i < kRequests; ++i) {
    if (!t.url.empty())
      (void)b->clear();
    hotlink::LinkRequest req = request(objects[static_cast<std::size_t>(i % kKernels)]);
    auto t0 = std::chrono::steady_clock::now();
    hotlink::LinkResult r = consumer.link(req);
    double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok() || r.cache != want)
      return f.error = "request " + std::to_string(i) + " was not a " + (t.url.empty() ? "hit" : "remote hit"), f;
    ms.push_back(took);
  }
  double total = 0;
  for (double m : ms)
    total += m;
  std::sort(ms.begin(), ms.end());
  f.p50 = ms[ms.size() / 2];
  f.p99 = ms[ms.size() * 99 / 100];
  f.per_second = 1000.0 * ms.size() / total;
  return f;
}

} // namespace

int main(int argc, char **argv) {
  std::string markdown;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--markdown")
      markdown = argv[i + 1];
  std::string scratch = scratch_dir("remote-bench");
  if (scratch.empty())
    return 1;
  std::vector<std::vector<std::uint8_t>> objects;
  for (int k = 0; k < kKernels; ++k) {
    objects.push_back(compile_object(HOTLINK_BENCH_CLANG,
                                     std::string(kSmallKernel) + "\nint bench_variant(void) { return " +
                                         std::to_string(k) + "; }\n",
                                     "-O2 -fPIC"));
    if (objects.back().empty())
      return 1;
  }
  hotlink::test::RedisServer redis(scratch);
  hotlink::test::RedisCluster cluster(scratch);
  hotlink::test::NginxServer nginx(scratch + "/nginx-dir");
  ::mkdir((scratch + "/nginx-dir").c_str(), 0700);
  std::string why;
  std::vector<Tier> tiers = {{"local directory", ""}};
  if (redis.start(&why))
    tiers.push_back({"one Redis (TCP, loopback)", redis.url()});
  else
    std::fprintf(stderr, "remote_bench: %s\n", why.c_str());
  if (cluster.start(&why))
    tiers.push_back({"Redis Cluster (3 masters + 3 replicas)", cluster.url()});
  else
    std::fprintf(stderr, "remote_bench: %s\n", why.c_str());
  if (nginx.start(&why))
    tiers.push_back({"HTTP (nginx WebDAV)", nginx.url()});
  else
    std::fprintf(stderr, "remote_bench: %s\n", why.c_str());
  std::string table = "| tier | p50 | p99 | hits per second |\n|---|---|---|---|\n";
  for (Tier &t : tiers) {
    std::string name = t.name;
    for (char &c : t.name)
      c = std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    Figures f = measure(t, objects, scratch);
    if (!f.error.empty()) {
      std::fprintf(stderr, "remote_bench: %s: %s\n", name.c_str(), f.error.c_str());
      return 1;
    }
    std::printf("%s: p50 %.3f ms, p99 %.3f ms, %.0f hits/s (%d requests)\n", name.c_str(), f.p50, f.p99,
                f.per_second, kRequests);
    char row[256];
    std::snprintf(row, sizeof row, "| %s | %.3f ms | %.3f ms | %.0f |\n", name.c_str(), f.p50, f.p99, f.per_second);
    table += row;
  }
  if (!markdown.empty())
    std::ofstream(markdown) << table;
  std::string rm = "rm -rf " + scratch;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
