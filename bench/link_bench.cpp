// Warm link of a small JIT object: hotlink in-process vs one ld.lld-22
// process vs `cc -shared`, same object, same output directory, output on
// tmpfs and on disk. Prints Google Benchmark's table, then medians and
// ratios computed from this one run.
//
// usage: link_bench [--disk-dir DIR] [google benchmark flags]
#include "hotlink/link.h"
#include "hotlink/link_service.h"

#include "bench/bench_support.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fcntl.h>
#include <cstdlib>
#include <fstream>
#include <map>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace {

std::string g_object;   // path of the small object
std::vector<std::uint8_t> g_object_bytes;
std::string g_dirs[2];  // [0] tmpfs, [1] disk
const char *kDirNames[2] = {"tmpfs", "disk"};

int spawn_wait(const std::vector<std::string> &argv) {
  std::vector<char *> a;
  for (const std::string &s : argv)
    a.push_back(const_cast<char *>(s.c_str()));
  a.push_back(nullptr);
  pid_t pid;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ) != 0)
    return -1;
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *kKernel = R"(
struct meta { int version, num_arguments; const void *arguments; const char *target, *name; };
static const struct meta m = {1, 2, 0, "host", "f"};
int f_par_for_closure(void *u, int i, unsigned char *c) { return i + 1; }
__attribute__((weak)) int halide_runtime_helper(int x) { return x - 1; }
int f(int x, float *out) { *out = (float)f_par_for_closure(0, x, 0) * 0.5f; return 0; }
int f_argv(void **args) { return f(*(int *)args[0], (float *)args[1]); }
const struct meta *f_metadata(void) { return &m; }
)";

void BM_HotlinkInProcess(benchmark::State &state) {
  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", g_object_bytes)};
  req.output_path = g_dirs[state.range(0)] + "/hotlink.so";
  if (!service.link(req).ok()) // warm up: lld's one-time initialisation
    return state.SkipWithError("link failed");
  for (auto _ : state)
    if (!service.link(req).ok())
      return state.SkipWithError("link failed");
}

void BM_HotlinkWorker(benchmark::State &state) {
  hotlink::LinkService service(hotlink::ServiceConfig{1, {}});
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", g_object_bytes)};
  req.output_path = g_dirs[state.range(0)] + "/worker.so";
  req.execution = hotlink::Execution::Isolated;
  if (!service.link(req).ok()) // warm up: starts the worker
    return state.SkipWithError("link failed");
  for (auto _ : state)
    if (!service.link(req).ok())
      return state.SkipWithError("link failed");
}

void BM_LdLldProcess(benchmark::State &state) {
  std::string out = g_dirs[state.range(0)] + "/ldlld.so";
  std::vector<std::string> argv = {HOTLINK_BENCH_LD_LLD, "-shared", "--threads=1", "-o", out, g_object};
  for (auto _ : state)
    if (spawn_wait(argv) != 0)
      return state.SkipWithError("ld.lld failed");
}

void BM_CcShared(benchmark::State &state) {
  std::string out = g_dirs[state.range(0)] + "/cc.so";
  std::vector<std::string> argv = {"cc", "-shared", "-o", out, g_object};
  for (auto _ : state)
    if (spawn_wait(argv) != 0)
      return state.SkipWithError("cc failed");
}

BENCHMARK(BM_HotlinkInProcess)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
BENCHMARK(BM_HotlinkWorker)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
BENCHMARK(BM_LdLldProcess)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);
BENCHMARK(BM_CcShared)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.3);

} // namespace

int main(int argc, char **argv) {
  std::string disk = ".";
  std::vector<char *> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--disk-dir" && i + 1 < argc)
      disk = argv[++i];
    else
      rest.push_back(argv[i]);
  }
  initialize(static_cast<int>(rest.size()), rest.data(), 7);

  char shm[] = "/dev/shm/hotlink-bench-XXXXXX";
  std::string disk_templ = disk + "/hotlink-bench-XXXXXX";
  std::vector<char> dbuf(disk_templ.begin(), disk_templ.end());
  dbuf.push_back('\0');
  if (!mkdtemp(shm) || !mkdtemp(dbuf.data())) {
    std::perror("link_bench: mkdtemp");
    return 1;
  }
  g_dirs[0] = shm;
  g_dirs[1] = dbuf.data();

  // The small object, compiled like a JIT would (PIC, -O2), on disk for the
  // process-based linkers and in memory for hotlink.
  std::string src = g_dirs[1] + "/kernel.c";
  g_object = g_dirs[1] + "/kernel.o";
  std::ofstream(src) << kKernel;
  if (spawn_wait({HOTLINK_BENCH_CLANG, "-O2", "-fPIC", "-c", src, "-o", g_object}) != 0) {
    std::fprintf(stderr, "link_bench: cannot compile the kernel with %s\n", HOTLINK_BENCH_CLANG);
    return 1;
  }
  std::ifstream in(g_object, std::ios::binary);
  g_object_bytes.assign(std::istreambuf_iterator<char>(in), {});

  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nobject: %zu bytes; output dirs: tmpfs %s, disk %s\n", g_object_bytes.size(),
              g_dirs[0].c_str(), g_dirs[1].c_str());
  std::printf("%-10s %14s %14s %14s %14s %12s %12s\n", "output", "in-process", "worker",
              "ld.lld-22", "cc -shared", "lld/inproc", "cc/inproc");
  for (int d = 0; d < 2; ++d) {
    std::string a = std::to_string(d);
    double ip = reporter.median["BM_HotlinkInProcess/" + a];
    double wk = reporter.median["BM_HotlinkWorker/" + a];
    double ld = reporter.median["BM_LdLldProcess/" + a];
    double cc = reporter.median["BM_CcShared/" + a];
    std::printf("%-10s %11.3f ms %11.3f ms %11.3f ms %11.3f ms %11.1fx %11.1fx\n", kDirNames[d], ip, wk,
                ld, cc, ip > 0 ? ld / ip : 0, ip > 0 ? cc / ip : 0);
  }
  std::printf("(medians of the repetitions, 7 unless --benchmark_repetitions says otherwise; "
              "ratio = median time of the process / median time in-process)\n");
  std::string cleanup = "rm -rf '" + g_dirs[0] + "' '" + g_dirs[1] + "'";
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
