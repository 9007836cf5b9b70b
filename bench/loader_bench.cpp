// The hot module's cost on the call path and on the reload path.
// - Call: a raw function pointer vs a call through HotModule::Entry (a pin
//   per call) vs calls through one Pin held for a batch, single-threaded.
// - Reload: object bytes in memory -> in-process link -> verify + map +
//   publish -> first call on the new version.
// - Forwarding: a reload (verify + map + publish) with forward_old_versions
//   off, and on with 16 replaced versions kept mapped (each reload points
//   all of them at the new one); and what each kept version costs.
#include "bench/bench_support.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// A reload of the linked kernel; with forwarding, quiesce() keeps 16
// replaced versions, as an engine calling it between frames would.
void BM_Reload(benchmark::State &state) {
  hotlink::loader::ModuleOptions o;
  o.forward_old_versions = state.range(0) != 0;
  o.forward_keep_versions = 16;
  hotlink::loader::HotModule m(o);
  auto e = m.entry<int(int)>("kernel").value();
  for (int i = 0; i < 17; ++i)
    if (m.reload(g_so, "k.so"))
      return state.SkipWithError("reload failed");
  for (auto _ : state) {
    if (m.reload(g_so, "k.so"))
      return state.SkipWithError("reload failed");
    m.quiesce();
    benchmark::DoNotOptimize(e(1));
  }
}

long status_kib(const char *field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0)
      return std::atol(line.c_str() + std::strlen(field));
  return 0;
}

long count_lines(const char *path) {
  std::ifstream in(path);
  return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
}

// What one replaced version kept mapped for forwarding costs, averaged over 100.
void print_kept_version_cost() {
  hotlink::loader::ModuleOptions o;
  o.forward_old_versions = true;
  hotlink::loader::HotModule m(o);
  if (m.reload(g_so, "k.so"))
    return;
  long maps = count_lines("/proc/self/maps"), rss = status_kib("VmRSS:"), vm = status_kib("VmSize:");
  for (int i = 0; i < 100; ++i)
    if (m.reload(g_so, "k.so"))
      return;
  std::printf("each replaced version kept for forwarding (of 100 reloads of a %zu-byte image): %.1f mappings, "
              "%.1f KiB address space, %.1f KiB resident, 1 open file\n",
              g_so.size(), (count_lines("/proc/self/maps") - maps) / 100.0, (status_kib("VmSize:") - vm) / 100.0,
              (status_kib("VmRSS:") - rss) / 100.0);
}

BENCHMARK(BM_RawPointerCall)->UseRealTime();
BENCHMARK(BM_HotModuleCall)->UseRealTime();
BENCHMARK(BM_HotModulePinnedCalls)->UseRealTime();
BENCHMARK(BM_ObjectBytesToServing)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Reload)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

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
  double off = reporter.median["BM_Reload/0"], on = reporter.median["BM_Reload/1"];
  if (off > 0 && on > 0)
    std::printf("reload (verify + map + publish), medians: forwarding off %.3f ms; on, 16 replaced versions "
                "re-pointed %.3f ms (%.2fx)\n",
                off, on, on / off);
  print_kept_version_cost();
  return 0;
}
