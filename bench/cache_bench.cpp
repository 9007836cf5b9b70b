// The cache's two paths, for a small kernel and a ~150 KB object, with the
// cache on tmpfs (/dev/shm):
// - hit: LinkService::link (plan, key, lookup, read + BLAKE3 check) +
//   loader verify against the manifest's hash + map (dlopen of a private file on tmpfs);
// - caller-key hit: Cache::get_or_build with a key the caller computed
//   before compiling (nothing is planned) + cache::load;
// - miss: link + store + verify + map, on an emptied cache (the local link);
// - remote hit: another host published the entry to Redis (a redis-server
//   this program starts on loopback); this host's local cache is empty, so
//   LinkService::link plans, keys, gets manifest + artifact from Redis,
//   checks the Ed25519 signature against its trusted key and the BLAKE3
//   hash, stores the entry locally, then verify + map as above.
// Only the path itself is timed (manual timing): emptying the cache and
// unmapping the library are not.
#include "bench/bench_support.h"
#include "hotlink/cache.h"
#include "hotlink/link_service.h"
#include "hotlink/cache_entry.h"
#include "hotlink/load.h"
#include "hotlink/signature.h"
#include "test/redis_server.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::vector<std::uint8_t> g_small, g_large;
std::string g_dir, g_scratch;
std::unique_ptr<hotlink::test::RedisServer> g_redis;

const std::vector<std::uint8_t> &object(int which) { return which == 0 ? g_small : g_large; }

std::shared_ptr<hotlink::cache::Cache> open_cache() {
  auto c = hotlink::cache::Cache::open({g_dir});
  if (!c) {
    std::fprintf(stderr, "cache_bench: %s\n", c.error().to_string().c_str());
    std::exit(1);
  }
  return c.value();
}

hotlink::LinkRequest request(int which) {
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", object(which))};
  return req;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// link (hit or miss) + verify against the manifest's hash + map.
bool link_and_map(hotlink::LinkService &svc, const hotlink::LinkRequest &req,
                  std::unique_ptr<hotlink::loader::Library> &lib, hotlink::CacheUse want) {
  hotlink::LinkResult r = svc.link(req);
  if (!r.ok() || r.cache != want) {
    std::fprintf(stderr, "cache_bench: wanted %s, got %s%s\n", hotlink::to_string(want),
                 hotlink::to_string(r.cache), r.ok() ? "" : (": " + r.error->to_string()).c_str());
    for (const auto &d : r.diagnostics)
      std::fprintf(stderr, "  %s\n", d.message.c_str());
    return false;
  }
  hotlink::VerifyOptions v;
  v.blake3 = r.artifact_blake3;
  v.expected_exports = r.exports;
  if (!hotlink::verify(r.artifact, "kernel.so", v))
    return false;
  auto l = hotlink::loader::load_private(r.artifact, "kernel.so");
  if (!l)
    return false;
  lib = std::move(l.value());
  return true;
}

void BM_Hit(benchmark::State &state) {
  auto cache = open_cache();
  (void)cache->clear();
  hotlink::LinkService svc({.cache = cache});
  hotlink::LinkRequest req = request(static_cast<int>(state.range(0)));
  std::unique_ptr<hotlink::loader::Library> lib;
  if (!link_and_map(svc, req, lib, hotlink::CacheUse::Miss))
    return state.SkipWithError("the first (storing) link failed");
  for (auto _ : state) {
    lib.reset();
    auto t0 = std::chrono::steady_clock::now();
    if (!link_and_map(svc, req, lib, hotlink::CacheUse::Hit))
      return state.SkipWithError("not a hit");
    state.SetIterationTime(seconds_since(t0));
  }
}

void BM_CallerKeyHit(benchmark::State &state) {
  auto cache = open_cache();
  (void)cache->clear();
  hotlink::LinkService svc;
  hotlink::LinkRequest req = request(static_cast<int>(state.range(0)));
  hotlink::cache::Key key = hotlink::cache::Key::of_caller("bench pipeline " +
                                                           std::to_string(state.range(0)));
  auto produce = [&]() -> hotlink::Expected<hotlink::cache::Artifact> {
    hotlink::LinkResult r = svc.link(req);
    if (!r.ok())
      return *r.error;
    hotlink::cache::Artifact a;
    a.bytes = std::move(r.artifact);
    a.name = "kernel.so";
    a.target = r.target;
    a.exports = r.exports;
    return a;
  };
  if (!cache->get_or_build(key, produce))
    return state.SkipWithError("the first (storing) build failed");
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto got = cache->get_or_build(key, produce);
    if (!got || !got->hit)
      return state.SkipWithError("not a hit");
    auto lib = hotlink::loader::load(got->entry);
    if (!lib)
      return state.SkipWithError("load failed");
    state.SetIterationTime(seconds_since(t0));
  }
}

void BM_Miss(benchmark::State &state) {
  auto cache = open_cache();
  hotlink::LinkService svc({.cache = cache});
  hotlink::LinkRequest req = request(static_cast<int>(state.range(0)));
  svc.link(req); // warm lld up
  std::unique_ptr<hotlink::loader::Library> lib;
  for (auto _ : state) {
    lib.reset();
    (void)cache->clear();
    auto t0 = std::chrono::steady_clock::now();
    if (!link_and_map(svc, req, lib, hotlink::CacheUse::Miss))
      return state.SkipWithError("not a miss");
    state.SetIterationTime(seconds_since(t0));
  }
}

// Host A (its own cache directory, a sign key) links and publishes
// synchronously; host B trusts A's key and starts each iteration with an
// empty local cache.
void BM_RemoteHit(benchmark::State &state) {
  if (!g_redis)
    return state.SkipWithError("no redis-server");
  int which = static_cast<int>(state.range(0));
  // One key for every run of this function: Google Benchmark calls it
  // several times, and Redis keeps what an earlier call published.
  static const auto key = hotlink::signature::SecretKey::generate();
  hotlink::cache::RemoteConfig remote;
  remote.url = g_redis->unix_url();
  remote.synchronous_publish = true;
  remote.prefix = "bench:" + std::to_string(which) + ":";
  hotlink::cache::Config a_config{g_scratch + "/host-a-" + std::to_string(which)};
  a_config.remote = remote;
  a_config.sign_key = key;
  hotlink::cache::Config b_config{g_scratch + "/host-b-" + std::to_string(which)};
  b_config.remote = remote;
  b_config.trusted_keys = {key.public_key()};
  auto a = hotlink::cache::Cache::open(a_config);
  auto b = hotlink::cache::Cache::open(b_config);
  if (!a || !b)
    return state.SkipWithError("cache open failed");
  hotlink::LinkRequest req = request(which);
  std::unique_ptr<hotlink::loader::Library> lib;
  {
    // A miss, or a hit from an earlier repetition (it published then).
    hotlink::LinkService publisher({.cache = a.value()});
    hotlink::LinkResult r = publisher.link(req);
    if (!r.ok())
      return state.SkipWithError(("host A's (publishing) link failed: " +
                                  r.error->to_string()).c_str());
  }
  hotlink::LinkService consumer({.cache = b.value()});
  for (auto _ : state) {
    lib.reset();
    (void)b.value()->clear();
    auto t0 = std::chrono::steady_clock::now();
    if (!link_and_map(consumer, req, lib, hotlink::CacheUse::RemoteHit))
      return state.SkipWithError("not a remote hit");
    state.SetIterationTime(seconds_since(t0));
  }
  if (b.value()->stats().remote_hits < static_cast<std::uint64_t>(state.iterations()))
    state.SkipWithError("fewer remote hits than iterations");
}

BENCHMARK(BM_Hit)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_CallerKeyHit)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_Miss)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_RemoteHit)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();

} // namespace

int main(int argc, char **argv) {
  initialize(argc, argv, 7);
  g_small = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  g_large = compile_object(HOTLINK_BENCH_CLANG, large_source(), "-O2 -fPIC");
  if (g_small.empty() || g_large.empty())
    return 1;
  g_scratch = scratch_dir("cache-bench");
  if (g_scratch.empty())
    return 1;
  g_dir = g_scratch + "/cache";
  std::printf("cache on %s; objects: small %zu bytes, large %zu bytes\n", g_dir.c_str(),
              g_small.size(), g_large.size());
  g_redis = std::make_unique<hotlink::test::RedisServer>(g_scratch);
  std::string why;
  if (!g_redis->start(&why)) {
    std::fprintf(stderr, "cache_bench: %s; the remote benchmark is skipped\n", why.c_str());
    g_redis.reset();
  } else {
    std::printf("redis-server on %s\n", g_redis->unix_url().c_str());
  }

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  for (int which = 0; which < 2; ++which) {
    std::string arg = "/" + std::to_string(which);
    double hit = reporter.median["BM_Hit" + arg], caller = reporter.median["BM_CallerKeyHit" + arg],
           miss = reporter.median["BM_Miss" + arg], remote = reporter.median["BM_RemoteHit" + arg];
    std::printf("%s object (%zu bytes), medians: hit %.3f ms, caller-key hit %.3f ms, "
                "miss %.3f ms; a hit is %.1fx faster than a miss (caller key: %.1fx)\n",
                which == 0 ? "small" : "~150 KB", object(which).size(), hit, caller, miss,
                hit > 0 ? miss / hit : 0.0, caller > 0 ? miss / caller : 0.0);
    std::printf("%s object: remote hit (get + verify signature + store + map) %.3f ms vs "
                "local link (link + store + verify + map) %.3f ms: %.1fx\n",
                which == 0 ? "small" : "~150 KB", remote, miss, remote > 0 ? miss / remote : 0.0);
  }
  g_redis.reset();
  std::string rm = "rm -rf " + g_scratch;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
