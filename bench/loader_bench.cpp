// The hot module's cost on the call path and on the reload path.
// - Call: a raw function pointer vs a call through HotModule::Entry (a pin
//   per call) vs calls through one Pin held for a batch, single-threaded.
// - Reload: object bytes in memory -> in-process link -> verify + map +
//   publish -> first call on the new version.
// - Forwarding: a reload (verify + map + publish) with forward_old_versions
//   off, and on with 16 and 200 replaced versions kept mapped (each reload
//   points all of them at the new one); and what each kept version costs.
// - Under load: a reload of a Box2D plugin while two threads step worlds
//   in pinned batches, with and without a HOTLINK_STATE variable (with
//   state, reload() reads its layout and waits for the batches inside the
//   old version before it copies).
#include "bench/bench_support.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace {

std::vector<std::uint8_t> g_object;
std::vector<std::uint8_t> g_so;
std::vector<std::uint8_t> g_forty;            // 40 functions, for forwarding
std::vector<std::uint8_t> g_physics[2][2];    // [state][variant]

// A physics kernel on Box2D (Debian's libbox2d-dev), built with -g as a
// hot-reloaded engine plugin is: `step` advances a world of 50 boxes by one
// frame (about 35 us here). With `state` it counts its frames in a
// HOTLINK_STATE variable, whose layout reload() reads from the debug info
// and whose value it carries. `variant` makes two versions' bytes differ.
std::string physics_source(bool state, int variant) {
  return std::string("#include <box2d/box2d.h>\n#include <hotlink/state.h>\n") +
         (state ? "static long HOTLINK_STATE frames = 0;\n" : "static long frames = 0;\n") +
         "struct Scene { b2World world{b2Vec2(0.f, -10.f - " + std::to_string(variant) + ".f)}; };\n"
         "extern \"C\" void *scene_make(int bodies) {\n"
         "  Scene *s = new Scene;\n"
         "  b2BodyDef gd; b2PolygonShape floor; floor.SetAsBox(50.f, 1.f);\n"
         "  s->world.CreateBody(&gd)->CreateFixture(&floor, 0.f);\n"
         "  for (int i = 0; i < bodies; ++i) {\n"
         "    b2BodyDef bd; bd.type = b2_dynamicBody; bd.allowSleep = false;\n"
         "    bd.position.Set(-20.f + (i % 10) * 1.5f, 1.5f + (i / 10) * 1.05f);\n"
         "    b2PolygonShape box; box.SetAsBox(0.5f, 0.5f);\n"
         "    s->world.CreateBody(&bd)->CreateFixture(&box, 1.f);\n"
         "  }\n"
         "  return s;\n}\n"
         "extern \"C\" int step(void *s) {\n"
         "  static_cast<Scene *>(s)->world.Step(1.f / 60.f, 8, 3);\n"
         "  return (int)__atomic_add_fetch(&frames, 1, __ATOMIC_RELAXED);\n}\n";
}

std::string forty_functions() {
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += "__attribute__((noinline)) int g" + std::to_string(i) + "(int x) { return x * " + std::to_string(i + 3) +
         " + (x >> 2); }\n";
  s += "int kernel(int x) { int r = 0;\n";
  for (int i = 0; i < 40; ++i)
    s += "  r += g" + std::to_string(i) + "(x + r);\n";
  return s + "  return r; }\n";
}

std::vector<std::uint8_t> link_kernel(const std::vector<std::uint8_t> &object, const std::vector<std::string> &exports,
                                      const std::vector<std::string> &libraries = {}) {
  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", object)};
  req.exports = hotlink::exports::ExportPolicy::list(exports);
  req.libraries = libraries;
  hotlink::LinkResult r = service.link(req);
  return r.ok() ? r.artifact : std::vector<std::uint8_t>();
}

std::vector<std::uint8_t> physics(bool state, int variant) {
  auto object = object_of(physics_source(state, variant), ".cpp", [](const std::string &src, const std::string &obj) {
    return std::string(HOTLINK_BENCH_CLANG) + " -O2 -g -fPIC -I" HOTLINK_BENCH_SOURCE_DIR "/include -c " + src +
           " -o " + obj;
  });
  return object.empty() ? object : link_kernel(object, {"scene_make", "step"}, {"box2d"});
}

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

// A reload of the linked kernel; with forwarding, quiesce() keeps
// range(1) replaced versions, as an engine calling it between frames would.
void BM_Reload(benchmark::State &state) {
  hotlink::loader::ModuleOptions o;
  o.forward_old_versions = state.range(0) != 0;
  o.forward_keep_versions = static_cast<std::size_t>(state.range(1));
  const std::vector<std::uint8_t> &so = state.range(1) > 16 ? g_forty : g_so;
  hotlink::loader::HotModule m(o);
  auto e = m.entry<int(int)>("kernel").value();
  for (long i = 0; i <= state.range(1); ++i)
    if (m.reload(so, "k.so"))
      return state.SkipWithError("reload failed");
  for (auto _ : state) {
    if (m.reload(so, "k.so"))
      return state.SkipWithError("reload failed");
    m.quiesce();
    benchmark::DoNotOptimize(e(1));
  }
}

// reload() alone (manual time) while two threads step their own Box2D
// worlds in pinned batches of four frames, alternating two versions with
// 2 ms between reloads, as a frame loop would. range(0): the kernel has a
// HOTLINK_STATE variable.
void BM_ReloadUnderLoad(benchmark::State &state) {
  hotlink::loader::HotModule m;
  auto make = m.entry<void *(int)>("scene_make").value();
  auto step = m.entry<int(void *)>("step").value();
  const auto &versions = g_physics[state.range(0) ? 1 : 0];
  if (m.reload(versions[0], "physics.so"))
    return state.SkipWithError("reload failed");
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t)
    callers.emplace_back([&] {
      void *world = m.pin().get(make)(50);
      while (!stop.load()) {
        hotlink::loader::HotModule::Pin p = m.pin();
        for (int i = 0; i < 4; ++i)
          benchmark::DoNotOptimize(p.get(step)(world));
      }
    });
  int i = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto err = m.reload(versions[++i % 2], "physics.so");
    auto took = std::chrono::steady_clock::now() - start;
    if (err) {
      state.SkipWithError(err->message.c_str());
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(took).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop = true;
  for (auto &t : callers)
    t.join();
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
BENCHMARK(BM_Reload)->Args({0, 16})->Args({1, 16})->Args({0, 200})->Args({1, 200})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReloadUnderLoad)->Arg(0)->Arg(1)->Iterations(200)->Unit(benchmark::kMillisecond)->UseManualTime();

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
  g_forty = link_kernel(compile_object(HOTLINK_BENCH_CLANG, forty_functions(), "-O2 -fPIC"), {"kernel"});
  if (g_forty.empty())
    return 1;
  for (int with_state = 0; with_state < 2; ++with_state)
    for (int variant = 0; variant < 2; ++variant)
      if ((g_physics[with_state][variant] = physics(with_state, variant)).empty())
        return 1;
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
  double off = reporter.median["BM_Reload/0/16"], on = reporter.median["BM_Reload/1/16"];
  if (off > 0 && on > 0)
    std::printf("reload (verify + map + publish), medians: forwarding off %.3f ms; on, 16 replaced versions "
                "re-pointed %.3f ms (%.2fx)\n",
                off, on, on / off);
  off = reporter.median["BM_Reload/0/200"], on = reporter.median["BM_Reload/1/200"];
  if (off > 0 && on > 0)
    std::printf("reload of a 41-function kernel, medians: forwarding off %.3f ms; on, 200 replaced versions "
                "re-pointed %.3f ms (%.2fx)\n",
                off, on, on / off);
  double plain = reporter.median["BM_ReloadUnderLoad/0"], with_state = reporter.median["BM_ReloadUnderLoad/1"];
  if (plain > 0 && with_state > 0)
    std::printf("reload of a Box2D plugin (-g) while two threads step worlds in pinned batches of 4 frames, "
                "medians: without state %.3f ms; with a HOTLINK_STATE variable %.3f ms (%.2fx)\n",
                plain, with_state, with_state / plain);
  print_kept_version_cost();
  return 0;
}
