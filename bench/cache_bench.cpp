// The cache's two paths, for a small kernel and a ~150 KB object, with the
// cache on tmpfs (/dev/shm):
// - hit: LinkService::link (plan, key, lookup, read + BLAKE3 check) +
//   loader verify against the manifest's hash + map (dlopen of a memfd);
// - caller-key hit: Cache::get_or_build with a key the caller computed
//   before compiling (nothing is planned) + cache::load;
// - miss: link + store + verify + map, on an emptied cache.
// Only the path itself is timed (manual timing): emptying the cache and
// unmapping the library are not.
#include "bench/bench_support.h"
#include "cache/cache.h"
#include "linker/service.h"
#include "loader/loader.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::vector<std::uint8_t> g_small, g_large;
std::string g_dir;

const std::vector<std::uint8_t> &object(int which) { return which == 0 ? g_small : g_large; }

// About 150 KB of object code: many small functions behind one entry point.
std::string large_source() {
  std::string s;
  const int n = 400;
  for (int i = 0; i < n; ++i)
    s += "int g" + std::to_string(i) + "(int x, int y) { int a = x * " + std::to_string(i + 3) +
         "; for (int j = 0; j < y; ++j) a = (a ^ (a >> 3)) + j * " + std::to_string(i + 1) +
         "; return a + y; }\n";
  s += "int kernel(int x) { int r = 0;\n";
  for (int i = 0; i < n; ++i)
    s += "  r += g" + std::to_string(i) + "(x, r & 7);\n";
  s += "  return r; }\n"
       "int kernel_argv(void **a) { *(int *)a[1] = kernel(*(int *)a[0]); return 0; }\n";
  return s;
}

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
  if (!r.ok() || r.cache != want)
    return false;
  hotlink::loader::VerifyOptions v;
  v.blake3 = r.artifact_blake3;
  v.expected_exports = r.exports;
  if (!hotlink::loader::verify(r.artifact, "kernel.so", v))
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
    auto lib = hotlink::cache::load(got->entry);
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

BENCHMARK(BM_Hit)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_CallerKeyHit)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_Miss)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();

} // namespace

int main(int argc, char **argv) {
  initialize(argc, argv, 7);
  g_small = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  g_large = compile_object(HOTLINK_BENCH_CLANG, large_source(), "-O2 -fPIC");
  if (g_small.empty() || g_large.empty())
    return 1;
  char tmpl[] = "/dev/shm/hotlink-cache-bench-XXXXXX";
  char tmpl_tmp[] = "/tmp/hotlink-cache-bench-XXXXXX";
  char *d = mkdtemp(tmpl);
  if (!d)
    d = mkdtemp(tmpl_tmp);
  if (!d)
    return 1;
  g_dir = std::string(d) + "/cache";
  std::printf("cache on %s; objects: small %zu bytes, large %zu bytes\n", g_dir.c_str(),
              g_small.size(), g_large.size());

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  for (int which = 0; which < 2; ++which) {
    std::string arg = "/" + std::to_string(which);
    double hit = reporter.median["BM_Hit" + arg], caller = reporter.median["BM_CallerKeyHit" + arg],
           miss = reporter.median["BM_Miss" + arg];
    std::printf("%s object (%zu bytes), medians: hit %.3f ms, caller-key hit %.3f ms, "
                "miss %.3f ms; a hit is %.1fx faster than a miss (caller key: %.1fx)\n",
                which == 0 ? "small" : "~150 KB", object(which).size(), hit, caller, miss,
                hit > 0 ? miss / hit : 0.0, caller > 0 ? miss / caller : 0.0);
  }
  std::string rm = "rm -rf " + std::string(d);
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
