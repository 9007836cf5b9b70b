// Symbol scan + export policy + writer for a large JIT object (~5 MB,
// 20,000 symbols), against linking the same object in-process: the export
// work should be a small fraction of the link.
#include "hotlink/export_policy.h"
#include "hotlink/symbols.h"
#include "exports/writers.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"

#include "bench/bench_support.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

std::vector<std::uint8_t> g_elf, g_coff;

// 10,000 functions, every 10th an entry point with an _argv companion, and
// 10,000 initialized arrays: ~20,000 global symbols.
std::string generate() {
  std::string s = "#include <stddef.h>\n";
  for (int i = 0; i < 10000; ++i) {
    std::string n = std::to_string(i);
    s += "int table_" + n + "[48] = {" + n + ", 1, 2, 3};\n";
    s += "int kernel_" + n + "(int x, int y) { int a = x * " + n + " + y; for (int k = 0; k < y; ++k) a += table_" + n +
         "[k & 31] * k; return a ^ " + n + "; }\n";
    if (i % 10 == 0)
      s += "int kernel_" + n + "_argv(void **args) { return kernel_" + n + "(*(int *)args[0], *(int *)args[1]); }\n";
  }
  return s;
}

void BM_ScanPolicyWriter_ELF(benchmark::State &state) {
  using namespace hotlink::exports;
  for (auto _ : state) {
    auto info = read_object(g_elf.data(), g_elf.size(), "big.o");
    auto ex = select_exports({info.value()}, Format::ELF, Arch::X86_64, ExportPolicy());
    auto script = write_version_script(ex.value());
    benchmark::DoNotOptimize(script.value().size());
  }
}

void BM_ScanAllDef_COFF(benchmark::State &state) {
  using namespace hotlink::exports;
  for (auto _ : state) {
    auto info = read_object(g_coff.data(), g_coff.size(), "big.obj");
    auto ex = select_exports({info.value()}, Format::COFF, Arch::X86_64, ExportPolicy::all());
    auto def = write_def(ex.value(), "big.dll");
    benchmark::DoNotOptimize(def.value().size());
  }
}

void BM_LinkInProcess_ELF(benchmark::State &state) {
  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("big.o", g_elf)};
  for (auto _ : state)
    if (!service.link(req).ok())
      return state.SkipWithError("link failed");
}

BENCHMARK(BM_ScanPolicyWriter_ELF)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ScanAllDef_COFF)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinkInProcess_ELF)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

int main(int argc, char **argv) {
  initialize(argc, argv, 5);
  std::string source = generate();
  g_elf = compile_object(HOTLINK_BENCH_CLANG, source, "--target=x86_64-linux-gnu -O0 -fPIC -fno-stack-protector");
  g_coff = compile_object(HOTLINK_BENCH_CLANG, source, "--target=x86_64-pc-windows-msvc -O0 -fno-stack-protector");
  if (g_elf.empty() || g_coff.empty()) {
    std::fprintf(stderr, "exports_bench: cannot compile the generated object\n");
    return 1;
  }
  auto info = hotlink::exports::read_object(g_elf.data(), g_elf.size(), "big.o");
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double scan = reporter.median["BM_ScanPolicyWriter_ELF"];
  double link = reporter.median["BM_LinkInProcess_ELF"];
  std::printf("\nELF object: %zu bytes, %zu global symbols; COFF object: %zu bytes\n", g_elf.size(),
              info.value().symbols.size(), g_coff.size());
  std::printf("scan + entry-points + version script: %.3f ms median; in-process link: %.3f ms median; "
              "export work = %.1f%% of the link\n",
              scan, link, link > 0 ? 100.0 * scan / link : 0);
  std::printf("scan + all + .def (COFF): %.3f ms median\n", reporter.median["BM_ScanAllDef_COFF"]);
  return 0;
}
