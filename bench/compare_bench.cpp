// hotlink against what JIT users do today, from object bytes in memory to a
// function they can call, for three sizes of object:
// - hotlink in-process: LinkService::link (bytes out) + load_private
//   (a private file on tmpfs + dlopen) + symbol lookup;
// - ld.lld-22 process: write the object to tmpfs, run `ld.lld-22 -shared`,
//   dlopen + dlsym;
// - cc -shared process: the same with the system compiler driver;
// - LLVM ORC LLJIT: one long-lived LLJIT (created once, untimed, as a JIT
//   keeps it); each iteration adds the object to a fresh JITDylib and looks
//   the symbol up (the in-memory path JIT users pick instead of a linker);
// - hotlink cache hit: LinkService::link answered by the cache on tmpfs +
//   load_private + lookup.
// Every path calls the function once (untimed) and checks its result;
// unloading is untimed. Then: 64 links of the ~150 KB object through 1, 2
// and 4 workers (throughput).
//
// `--markdown FILE` writes the tables (medians and ratios of this run) for
// bench/report.sh.
#include "bench/bench_support.h"
#include "hotlink/cache.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"
#include "hotlink/load.h"

#include "lld/Common/Driver.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"

#include <benchmark/benchmark.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>

LLD_HAS_DRIVER(elf)

namespace {

using Clock = std::chrono::steady_clock;
using ArgvFn = int (*)(void **);

std::vector<std::uint8_t> g_objects[3];
const char *const kSizeNames[3] = {"small kernel", "~150 KB object", "~20 MB object"};
std::string g_scratch;
std::unique_ptr<llvm::orc::LLJIT> g_jit;

// ~20 MB of code: n functions that call each other, assembled with
// llvm-mc (a compiler would take minutes for this much C).
std::string huge_assembly(int n) {
  std::string s = ".text\n";
  for (int i = 0; i < n; ++i)
    s += ".globl g" + std::to_string(i) + "\n.type g" + std::to_string(i) + ",@function\ng" +
         std::to_string(i) + ":\n  leal " + std::to_string(i % 1000) + "(%rdi), %eax\n  call g" +
         std::to_string((i * 7 + 1) % n) + "@PLT\n  .fill 96,1,0x90\n  ret\n";
  // kernel(x) = x + 1, kernel_argv as in the other objects.
  s += ".globl kernel\n.type kernel,@function\nkernel:\n  leal 1(%rdi), %eax\n  ret\n"
       ".globl kernel_argv\n.type kernel_argv,@function\nkernel_argv:\n"
       "  movq (%rdi), %rax\n  movl (%rax), %eax\n  addl $1, %eax\n  movq 8(%rdi), %rcx\n"
       "  movl %eax, (%rcx)\n  xorl %eax, %eax\n  ret\n"
       ".section .note.GNU-stack,\"\",@progbits\n";
  return s;
}

std::vector<std::uint8_t> assemble(const std::string &source) {
  return object_of(source, ".s", [](const std::string &src, const std::string &obj) {
    return std::string(HOTLINK_BENCH_LLVM_MC) + " -triple=x86_64-linux-gnu -filetype=obj " + src + " -o " + obj;
  });
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Each kernel_argv computes the same thing for x = 41 on the small kernel
// (42); the others compute their own value: only a clean call is checked.
bool call_ok(ArgvFn fn, int which) {
  int in = 41, out = 0;
  void *args[] = {&in, &out};
  return fn && fn(args) == 0 && (which != 0 || out == 42);
}

hotlink::LinkRequest request(int which) {
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", g_objects[which])};
  req.exports = hotlink::ExportPolicy::list({"kernel", "kernel_argv"});
  return req;
}

// link (in-process or from the cache) + map + look up.
void hotlink_path(benchmark::State &state, hotlink::LinkService &svc, hotlink::CacheUse want) {
  int which = static_cast<int>(state.range(0));
  hotlink::LinkRequest req = request(which);
  double lld_ms = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc.link(req);
    if (!r.ok() || r.cache != want)
      return state.SkipWithError("link failed or not the expected cache use");
    lld_ms += r.timings.link_ms;
    auto lib = hotlink::loader::load_private(r.artifact, "kernel.so");
    if (!lib)
      return state.SkipWithError(lib.error().to_string().c_str());
    auto fn = reinterpret_cast<ArgvFn>(lib.value()->symbol("kernel_argv"));
    state.SetIterationTime(seconds_since(t0));
    if (!call_ok(fn, which))
      return state.SkipWithError("the linked function did not run");
  }
  // The lld call itself (signals checked, options set aside, the image
  // back through a pipe): the floor of any in-process lld path.
  state.counters["lld_ms"] = benchmark::Counter(lld_ms, benchmark::Counter::kAvgIterations);
}

void BM_HotlinkInProcess(benchmark::State &state) {
  hotlink::LinkService svc;
  hotlink_path(state, svc, hotlink::CacheUse::Off);
}

// The small kernel linked as a JIT recompiling one kernel at a time does:
// 10 ms apart (untimed), so that the lld thread has gone to sleep and the
// CPU's caches have moved on. range(1): lld on the calling thread (the
// default), else on hotlink's own lld thread.
void BM_HotlinkSpaced(benchmark::State &state) {
  hotlink::ServiceConfig config;
  config.lld_on_own_thread = state.range(1) == 0;
  hotlink::LinkService svc(config);
  hotlink::LinkRequest req = request(0);
  for (auto _ : state) {
    usleep(10000);
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc.link(req);
    if (!r.ok())
      return state.SkipWithError("link failed");
    auto lib = hotlink::loader::load_private(r.artifact, "kernel.so");
    if (!lib)
      return state.SkipWithError(lib.error().to_string().c_str());
    auto fn = reinterpret_cast<ArgvFn>(lib.value()->symbol("kernel_argv"));
    state.SetIterationTime(seconds_since(t0));
    if (!call_ok(fn, 0))
      return state.SkipWithError("the linked function did not run");
  }
}

// A burst of links back to back, lld on hotlink's own thread.
void BM_HotlinkOwnThread(benchmark::State &state) {
  hotlink::ServiceConfig config;
  config.lld_on_own_thread = true;
  hotlink::LinkService svc(config);
  hotlink_path(state, svc, hotlink::CacheUse::Off);
}

// The user's whole path: object bytes to a HotModule serving the new
// version (link to bytes, verify, map, publish) and its first call.
void BM_HotlinkUserPath(benchmark::State &state) {
  int which = static_cast<int>(state.range(0));
  hotlink::LinkService svc;
  hotlink::loader::HotModule module;
  auto entry = module.entry<int(void **)>("kernel_argv");
  hotlink::LinkRequest req = request(which);
  for (auto _ : state) {
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc.link(req);
    if (!r.ok())
      return state.SkipWithError("link failed");
    if (auto err = module.reload(r.artifact, "kernel.so"))
      return state.SkipWithError(err->to_string().c_str());
    int in = 41, out = 0;
    void *args[] = {&in, &out};
    int rc = (*entry)(args);
    state.SetIterationTime(seconds_since(t0));
    if (rc != 0 || (which == 0 && out != 42))
      return state.SkipWithError("the new version did not run");
  }
}

// The same link without the runtime environment (--no-default-libs): what
// the startup objects, libc's stub and their arguments cost a small link.
void BM_HotlinkBare(benchmark::State &state) {
  hotlink::LinkService svc;
  int which = static_cast<int>(state.range(0));
  hotlink::LinkRequest req = request(which);
  req.runtime = hotlink::Runtime::None;
  for (auto _ : state) {
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc.link(req);
    if (!r.ok())
      return state.SkipWithError("link failed");
    auto lib = hotlink::loader::load_private(r.artifact, "kernel.so");
    if (!lib)
      return state.SkipWithError(lib.error().to_string().c_str());
    auto fn = reinterpret_cast<ArgvFn>(lib.value()->symbol("kernel_argv"));
    state.SetIterationTime(seconds_since(t0));
    if (!call_ok(fn, which))
      return state.SkipWithError("the linked function did not run");
  }
}

void BM_HotlinkCacheHit(benchmark::State &state) {
  auto cache = hotlink::cache::Cache::open({g_scratch + "/cache"});
  if (!cache)
    return state.SkipWithError(cache.error().to_string().c_str());
  hotlink::LinkService svc({.cache = cache.value()});
  svc.link(request(static_cast<int>(state.range(0)))); // stores it
  hotlink_path(state, svc, hotlink::CacheUse::Hit);
}

// Writes the object, runs `argv` (which reads it and writes the .so), then
// dlopen + dlsym: what a JIT that shells out to a linker does.
void process_path(benchmark::State &state, const std::string &program,
                  std::vector<std::string> (*args)(const std::string &in, const std::string &out)) {
  int which = static_cast<int>(state.range(0));
  int n = 0;
  for (auto _ : state) {
    std::string in = g_scratch + "/p" + std::to_string(n) + ".o";
    std::string out = g_scratch + "/p" + std::to_string(n++) + ".so";
    auto t0 = Clock::now();
    {
      std::ofstream f(in, std::ios::binary);
      f.write(reinterpret_cast<const char *>(g_objects[which].data()),
              static_cast<std::streamsize>(g_objects[which].size()));
    }
    std::vector<std::string> a = args(in, out);
    std::vector<llvm::StringRef> refs(a.begin(), a.end());
    std::string msg;
    if (llvm::sys::ExecuteAndWait(program, refs, std::nullopt, {}, 0, 0, &msg) != 0)
      return state.SkipWithError((program + " failed: " + msg).c_str());
    void *h = dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto fn = h ? reinterpret_cast<ArgvFn>(dlsym(h, "kernel_argv")) : nullptr;
    state.SetIterationTime(seconds_since(t0));
    bool ok = call_ok(fn, which);
    if (h)
      dlclose(h);
    unlink(in.c_str());
    unlink(out.c_str());
    if (!ok)
      return state.SkipWithError("the linked function did not run");
  }
}

std::vector<std::string> ld_lld_args(const std::string &in, const std::string &out) {
  return {HOTLINK_BENCH_LD_LLD, "-shared", "--threads=1", "-o", out, in};
}
std::vector<std::string> cc_args(const std::string &in, const std::string &out) {
  return {"cc", "-shared", "-o", out, in};
}

void BM_LdLldProcess(benchmark::State &state) { process_path(state, HOTLINK_BENCH_LD_LLD, ld_lld_args); }
void BM_CcShared(benchmark::State &state) {
  static const std::string cc = llvm::sys::findProgramByName("cc").get();
  process_path(state, cc, cc_args);
}

void BM_OrcLLJIT(benchmark::State &state) {
  if (!g_jit)
    return state.SkipWithError("no LLJIT");
  int which = static_cast<int>(state.range(0));
  auto &es = g_jit->getExecutionSession();
  static int n = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto jd = es.createJITDylib("kernel" + std::to_string(n++));
    if (!jd)
      return state.SkipWithError(llvm::toString(jd.takeError()).c_str());
    jd->addToLinkOrder(g_jit->getMainJITDylib());
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char *>(g_objects[which].data()), g_objects[which].size()),
        "kernel.o");
    if (auto err = g_jit->addObjectFile(*jd, std::move(buf)))
      return state.SkipWithError(llvm::toString(std::move(err)).c_str());
    auto sym = g_jit->lookup(*jd, "kernel_argv");
    if (!sym)
      return state.SkipWithError(llvm::toString(sym.takeError()).c_str());
    auto fn = sym->toPtr<ArgvFn>();
    state.SetIterationTime(seconds_since(t0));
    bool ok = call_ok(fn, which);
    if (auto err = es.removeJITDylib(*jd))
      return state.SkipWithError(llvm::toString(std::move(err)).c_str());
    if (!ok)
      return state.SkipWithError("the JIT-linked function did not run");
  }
}

// lld alone on the small kernel: lld::lldMain called directly on this
// thread, the object already in a file, the image built in memory and
// written to /dev/null. Back to back, and with the thread sleeping 100 us
// before each link (untimed), as a real caller's lld thread sleeps between
// links: on a VM an idle vCPU comes back with cold caches.
void BM_LldAlone(benchmark::State &state) {
  bool sleep_first = state.range(0) != 0;
  std::string obj = g_scratch + "/lld-alone.o";
  std::ofstream(obj, std::ios::binary)
      .write(reinterpret_cast<const char *>(g_objects[0].data()), static_cast<std::streamsize>(g_objects[0].size()));
  std::vector<const char *> argv = {"ld.lld", "-shared", "--threads=1", "-o", "/dev/null", obj.c_str()};
  for (auto _ : state) {
    if (sleep_first)
      usleep(100);
    auto t0 = Clock::now();
    lld::Result r = lld::lldMain(argv, llvm::nulls(), llvm::nulls(), {{lld::Gnu, &lld::elf::link}});
    state.SetIterationTime(seconds_since(t0));
    if (r.retCode != 0 || !r.canRunAgain)
      return state.SkipWithError("lld failed");
  }
}

// 64 links of the ~150 KB object submitted at once. range(0) = 0: the
// in-process slot alone (serialized); N: the pool as submit() uses it by
// default (Execution::Auto: the in-process slot and N worker processes).
// Time for all 64.
void BM_Throughput64(benchmark::State &state) {
  int workers = static_cast<int>(state.range(0));
  hotlink::ServiceConfig config;
  config.workers = workers ? static_cast<unsigned>(workers) : 1;
  hotlink::LinkService svc(config);
  hotlink::LinkRequest req = request(1);
  req.execution = workers ? hotlink::Execution::Auto : hotlink::Execution::InProcess;
  hotlink::LinkRequest start = req;
  start.execution = hotlink::Execution::Isolated;
  for (int i = 0; i < workers; ++i)
    svc.link(start); // start a worker
  for (auto _ : state) {
    auto t0 = Clock::now();
    std::vector<std::future<hotlink::LinkResult>> pending;
    for (int i = 0; i < 64; ++i)
      pending.push_back(svc.submit(req));
    for (auto &p : pending)
      if (!p.get().ok())
        return state.SkipWithError("a link failed");
    state.SetIterationTime(seconds_since(t0));
  }
}

#define SIZES ->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime()
BENCHMARK(BM_HotlinkInProcess)->Arg(0)->Iterations(100)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_HotlinkInProcess)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_LdLldProcess) SIZES;
BENCHMARK(BM_CcShared) SIZES;
BENCHMARK(BM_OrcLLJIT) SIZES;
BENCHMARK(BM_HotlinkCacheHit) SIZES;
BENCHMARK(BM_HotlinkBare)->Arg(0)->Iterations(100)->Unit(benchmark::kMillisecond)->UseManualTime();
// Bursts of 100 links back to back, and links 10 ms apart, each with lld on
// its own thread and on the calling thread.
BENCHMARK(BM_HotlinkOwnThread)->Arg(0)->Iterations(100)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_HotlinkSpaced)->Args({0, 0})->Args({0, 1})->Iterations(40)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_HotlinkUserPath)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_LldAlone)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseManualTime();
BENCHMARK(BM_Throughput64)->Arg(0)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseManualTime();

std::string fmt(const char *f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

} // namespace

// `compare_bench --first-link [warm]`: one link in a fresh process; prints
// "planning lld total" in ms (planning includes the runtime environment's
// making, lld the first call's one-time work). Without `warm` the service
// does no warm-up; with it, the link starts once the warm-up is done (a
// host that made its service at start-up and links later).
int first_link(bool warm) {
  std::vector<std::uint8_t> obj = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  hotlink::ServiceConfig config;
  config.warm_up = warm;
  hotlink::LinkService svc(config);
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", obj)};
  req.exports = hotlink::ExportPolicy::list({"kernel", "kernel_argv"});
  auto t0 = Clock::now();
  hotlink::LinkResult r = svc.link(req);
  double total = seconds_since(t0) * 1000;
  if (!r.ok())
    return 1;
  std::printf("%.3f %.3f %.3f\n", r.timings.validate_ms + r.timings.prepare_ms, r.timings.link_ms, total);
  return 0;
}

// Medians over `runs` fresh processes of what their first link cost.
// `kept_answers` false: each process finds no kept answer of clang's driver
// (an empty HOTLINK_DRIVER_REPLAYS), as on a machine's first link, so it
// loads the driver module and asks the driver.
std::vector<double> first_link_medians(const char *self, int runs, bool warm, bool kept_answers = true) {
  std::vector<std::vector<double>> cols(3);
  for (int i = 0; i < runs; ++i) {
    std::string out = g_scratch + "/first.txt";
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out), std::nullopt};
    std::vector<llvm::StringRef> a = {self, "--first-link"};
    if (warm)
      a.push_back("warm");
    std::vector<std::string> env_text;
    for (char **e = environ; *e; ++e)
      if (std::strncmp(*e, "HOTLINK_DRIVER_REPLAYS=", 23) != 0)
        env_text.push_back(*e);
    if (!kept_answers)
      env_text.push_back("HOTLINK_DRIVER_REPLAYS=" + g_scratch + "/replays-" + std::to_string(i));
    std::vector<llvm::StringRef> env(env_text.begin(), env_text.end());
    std::optional<llvm::ArrayRef<llvm::StringRef>> env_arg;
    if (!kept_answers)
      env_arg = env;
    if (llvm::sys::ExecuteAndWait(self, a, env_arg, redirects, 60) != 0)
      return {};
    std::ifstream f(out);
    for (auto &c : cols) {
      double v = 0;
      f >> v;
      c.push_back(v);
    }
  }
  std::vector<double> med;
  for (auto &c : cols) {
    std::sort(c.begin(), c.end());
    med.push_back(c[c.size() / 2]);
  }
  return med;
}

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "--first-link")
    return first_link(argc > 2 && std::string(argv[2]) == "warm");
  std::string markdown;
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--markdown" && i + 1 < argc)
      markdown = argv[++i];
    else
      args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  initialize(n, args.data(), 5);

  g_scratch = scratch_dir("compare");
  if (g_scratch.empty())
    return 1;
  g_objects[0] = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  g_objects[1] = compile_object(HOTLINK_BENCH_CLANG, large_source(), "-O2 -fPIC");
  g_objects[2] = assemble(huge_assembly(125000));
  for (auto &o : g_objects)
    if (o.empty())
      return 1;

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto jit = llvm::orc::LLJITBuilder().create();
  if (jit)
    g_jit = std::move(*jit);
  else
    std::fprintf(stderr, "compare_bench: no LLJIT: %s\n", llvm::toString(jit.takeError()).c_str());

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto &m = reporter.median;

  std::string md;
  md += "### Object bytes to a callable function\n\n";
  md += "| object | hotlink in-process | `ld.lld-22` process + dlopen | `cc -shared` + dlopen | ORC LLJIT (in memory) | "
        "hotlink cache hit | ld.lld / hotlink | hotlink / ORC | cache hit / ORC |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  bool never_slower = true;
  for (int w = 0; w < 3; ++w) {
    std::string a = "/" + std::to_string(w);
    double hl = m["BM_HotlinkInProcess" + a], ld = m["BM_LdLldProcess" + a], cc = m["BM_CcShared" + a],
           orc = m["BM_OrcLLJIT" + a], hit = m["BM_HotlinkCacheHit" + a];
    never_slower &= hl > 0 && hl <= ld;
    md += "| " + std::string(kSizeNames[w]) + " (" + std::to_string(g_objects[w].size()) + " bytes) | " +
          fmt("%.3f ms", hl) + " | " + fmt("%.3f ms", ld) + " | " + fmt("%.3f ms", cc) + " | " +
          fmt("%.3f ms", orc) + " | " + fmt("%.3f ms", hit) + " | " + fmt("%.1f×", hl > 0 ? ld / hl : 0) +
          " | " + fmt("%.2f×", orc > 0 ? hl / orc : 0) + " | " + fmt("%.2f×", orc > 0 ? hit / orc : 0) + " |\n";
  }
  double hl0 = m["BM_HotlinkInProcess/0"], ld0 = m["BM_LdLldProcess/0"], orc0 = m["BM_OrcLLJIT/0"],
         hit0 = m["BM_HotlinkCacheHit/0"];
  auto verdict = [](bool met) { return met ? "met" : "**not met**"; };
  double user0 = m["BM_HotlinkUserPath/0"], user1 = m["BM_HotlinkUserPath/1"];
  double own0 = m["BM_HotlinkOwnThread/0"];
  double spaced_thread = m["BM_HotlinkSpaced/0/0"], spaced_caller = m["BM_HotlinkSpaced/0/1"];
  double hl1 = m["BM_HotlinkInProcess/1"];
  md += "\n### Where a JIT waits: the small kernel\n\n";
  md += "| path | lld on hotlink's own thread (`lld_on_own_thread`) | lld on the calling thread (default) |\n|---|---|---|\n";
  md += "| a burst of 100 links back to back | " + fmt("%.3f ms", own0) + " | " + fmt("%.3f ms", hl0) + " |\n";
  md += "| links 10 ms apart | " + fmt("%.3f ms", spaced_thread) + " | " + fmt("%.3f ms", spaced_caller) + " |\n";
  md += "\nThe user's whole path, object bytes to a `HotModule` serving the new version (link to bytes, "
        "verify, map, publish, first call): " + fmt("%.3f ms", user0) + " for the small kernel, " +
        fmt("%.3f ms", user1) + " for the ~150 KB object; the `ld.lld-22` process + dlopen path takes " +
        fmt("%.3f ms", ld0) + " (" + fmt("%.1f×", user0 > 0 ? ld0 / user0 : 0) + ").\n";
  md += "\nGoals (small kernel unless said):\n\n";
  md += "- object bytes to a called function ≤ 0.30 ms: " + fmt("%.3f ms", hl0) + ", " + verdict(hl0 <= 0.30) + "\n";
  md += "- ≥ 25× faster than the `ld.lld` process path: " + fmt("%.1f×", ld0 / hl0) + ", " +
        verdict(ld0 / hl0 >= 25) + "\n";
  md += "- the user's whole path ≤ 0.45 ms and ≥ 40× faster than `ld.lld` + dlopen: " + fmt("%.3f ms", user0) +
        ", " + fmt("%.1f×", user0 > 0 ? ld0 / user0 : 0) + ", " + verdict(user0 <= 0.45 && ld0 / user0 >= 40) + "\n";
  md += "- ~150 KB object ≤ 0.6 ms: " + fmt("%.3f ms", hl1) + ", " + verdict(hl1 <= 0.6) + "\n";
  md += "- within 1.5× of ORC: hotlink takes " + fmt("%.2f×", hl0 / orc0) + " ORC's time, " +
        verdict(hl0 / orc0 <= 1.5) + "\n";
  md += "- a cache hit faster than ORC's in-memory link: " + fmt("%.3f ms", hit0) + " vs " +
        fmt("%.3f ms", orc0) + ", " + verdict(hit0 < orc0) + "\n";
  md += "- never slower than the `ld.lld` process path at any size: " + std::string(verdict(never_slower)) + "\n";
  double lld0 = m["BM_HotlinkInProcess/0:lld_ms"];
  double warm = m["BM_LldAlone/0"], slept = m["BM_LldAlone/1"];
  if (lld0 > 0 && warm > 0 && slept > 0)
    md += "\nWhere the small kernel's time goes: of hotlink's " + fmt("%.3f ms", hl0) + ", " +
          fmt("%.3f ms", lld0) +
          " is the lld call as hotlink makes it (signals checked, the host's LLVM options set aside, the image back through a "
          "pipe). lld alone (`lld::lldMain` called directly, image to /dev/null) takes " +
          fmt("%.3f ms", slept) + " when its thread slept 100 µs before the link, as an lld thread "
          "between a JIT's links does, and " + fmt("%.3f ms", warm) +
          " back to back. With nothing around lld, a link could be at most " + fmt("%.1f×", ld0 / slept) +
          " faster than the `ld.lld` process (" + fmt("%.1f×", ld0 / warm) +
          " only on a thread that never sleeps between links, i.e. spins on a core) and would take " +
          fmt("%.1f×", slept / orc0) + " ORC's time (" + fmt("%.1f×", warm / orc0) +
          " back to back). ORC links in memory and writes no shared object.\n";
  double bare0 = m["BM_HotlinkBare/0"];
  std::vector<double> first = first_link_medians(argv[0], 7, false);
  std::vector<double> first_warm = first_link_medians(argv[0], 7, true);
  std::vector<double> first_cold = first_link_medians(argv[0], 7, false, /*kept_answers=*/false);
  md += "\n### The ELF runtime environment, and a process's first link\n\n";
  md += "A link gets what `clang -shared` links (startup objects when needed, libc through a stub "
        "holding the symbols the link names, libgcc when referenced). The small kernel, warm, from "
        "object bytes to a called function: " + fmt("%.3f ms", hl0) + " with the runtime environment, " +
        fmt("%.3f ms", bare0) + " without it (`--no-default-libs`): " +
        fmt("%+.1f%%", bare0 > 0 ? (hl0 / bare0 - 1) * 100 : 0) + ".\n";
  if (first.size() == 3 && first_warm.size() == 3 && first_cold.size() == 3)
    md += "\nThe first link of a process (medians of 7 fresh processes): without a warm-up " +
          fmt("%.3f ms", first[2]) + " (planning " + fmt("%.3f ms", first[0]) +
          ": clang's driver's answer replayed from disk and the target's libraries read, once per process "
          "and target; lld " + fmt("%.3f ms", first[1]) + ": its first call's one-time work); with no kept "
          "answer of the driver (a machine's first link: the driver module loaded and the driver run) " +
          fmt("%.3f ms", first_cold[2]) + " (planning " + fmt("%.3f ms", first_cold[0]) +
          "); after the service's warm-up (`ServiceConfig::warm_up`: a link of a one-function object in "
          "the constructor) " + fmt("%.3f ms", first_warm[2]) + ".\n";
  md += "\n### Throughput: 64 links of the ~150 KB object submitted at once\n\n";
  md += "| where | time for 64 | links per second | speedup over serialized |\n|---|---|---|---|\n";
  double serial = m["BM_Throughput64/0"];
  for (int w : {0, 1, 2, 4}) {
    double t = m["BM_Throughput64/" + std::to_string(w)];
    md += "| " +
          (w ? "the in-process slot + " + std::to_string(w) + " worker" + (w > 1 ? "s" : "") +
                   (w == 1 ? " (the default on 2 cores)" : "")
             : std::string("in-process (serialized)")) +
          " | " + fmt("%.1f ms", t) + " | " + fmt("%.0f", t > 0 ? 64000.0 / t : 0) + " | " +
          fmt("%.2f×", t > 0 ? serial / t : 0) + " |\n";
  }
  std::printf("\n%s", md.c_str());
  if (!markdown.empty())
    std::ofstream(markdown) << md;
  g_jit.reset();
  std::string rm = "rm -rf " + g_scratch;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
