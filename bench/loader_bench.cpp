// The hot module's cost on the call path and on the reload path.
// - Call: a raw function pointer vs a call through HotModule::Entry (a pin
//   per call) vs calls through one Pin held for a batch, single-threaded.
// - Reload: object bytes in memory -> in-process link -> verify + map +
//   publish -> first call on the new version.
#include "bench/bench_support.h"
#include "linker/service.h"
#include "loader/hot_module.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace {

std::vector<std::uint8_t> g_object;
std::vector<std::uint8_t> g_so;

void BM_RawPointerCall(benchmark::State &state) {
  auto lib = hotlink::loader::load_private(g_so, "k.so");
  auto fn = reinterpret_cast<int (*)(int)>(lib.value()->symbol("kernel"));
  int x = 0;
  for (auto _ : state) {
    x = fn(x);
    benchmark::DoNotOptimize(x);
  }
}

void BM_HotModuleCall(benchmark::State &state) {
  hotlink::loader::HotModule m;
  auto e = m.entry<int(int)>("kernel").value();
  if (m.reload(g_so, "k.so"))
    return state.SkipWithError("reload failed");
  int x = 0;
  for (auto _ : state) {
    x = e(x);
    benchmark::DoNotOptimize(x);
  }
}

void BM_HotModulePinnedCalls(benchmark::State &state) {
  hotlink::loader::HotModule m;
  auto e = m.entry<int(int)>("kernel").value();
  if (m.reload(g_so, "k.so"))
    return state.SkipWithError("reload failed");
  int x = 0;
  for (auto _ : state) {
    hotlink::loader::HotModule::Pin p = m.pin(); // once per batch of 64 calls
    auto fn = p.get(e);
    for (int i = 0; i < 64; ++i)
      x = fn(x);
    benchmark::DoNotOptimize(x);
  }
  state.SetItemsProcessed(state.iterations() * 64);
}

void BM_ObjectBytesToServing(benchmark::State &state) {
  hotlink::LinkService service;
  hotlink::loader::HotModule m;
  auto e = m.entry<int(int)>("kernel").value();
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", g_object)};
  service.link(req); // warm lld up
  for (auto _ : state) {
    hotlink::LinkResult r = service.link(req);
    if (!r.ok() || m.reload(r.artifact, "kernel.so"))
      return state.SkipWithError("link or reload failed");
    benchmark::DoNotOptimize(e(1));
  }
}

BENCHMARK(BM_RawPointerCall)->UseRealTime();
BENCHMARK(BM_HotModuleCall)->UseRealTime();
BENCHMARK(BM_HotModulePinnedCalls)->UseRealTime();
BENCHMARK(BM_ObjectBytesToServing)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

int main(int argc, char **argv) {
  initialize(argc, argv, 5);
  g_object = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  if (g_object.empty())
    return 1;
  {
    hotlink::LinkService service;
    hotlink::LinkRequest req;
    req.inputs = {hotlink::Input::memory("kernel.o", g_object)};
    hotlink::LinkResult r = service.link(req);
    if (!r.ok())
      return 1;
    g_so = r.artifact;
  }
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double raw = reporter.median["BM_RawPointerCall"];
  double hot = reporter.median["BM_HotModuleCall"];
  double pinned = reporter.median["BM_HotModulePinnedCalls"] / 64;
  std::printf("\ncall, medians: raw pointer %.2f ns; HotModule entry %.2f ns (+%.2f ns); "
              "through one Pin per 64 calls %.2f ns (+%.2f ns)\n",
              raw, hot, hot - raw, pinned, pinned - raw);
  std::printf("object bytes -> new version serving (link + verify + map + publish + first call): %.3f ms median\n",
              reporter.median["BM_ObjectBytesToServing"]);
  return 0;
}
