// What the benchmarks share: a reporter that keeps each benchmark's median
// for the summary each program prints from the same run, and compiling a
// kernel into object bytes with clang-22.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

// benchmark::Initialize with `repetitions` repetitions unless the command
// line asks for another number (medians need several).
inline void initialize(int argc, char **argv, int repetitions) {
  static std::vector<std::string> extra;
  std::vector<char *> args(argv, argv + argc);
  bool given = false;
  for (int i = 1; i < argc; ++i)
    given |= std::string(argv[i]).rfind("--benchmark_repetitions", 0) == 0;
  if (!given) {
    extra.push_back("--benchmark_repetitions=" + std::to_string(repetitions));
    args.push_back(extra.back().data());
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
}

// Compiles C `source` with `clang_flags` (e.g. "--target=x86_64-linux-gnu
// -O2 -fPIC"); empty on failure. Scratch files live on /dev/shm when it is
// writable.
inline std::vector<std::uint8_t> compile_object(const char *clang, const std::string &source,
                                                const std::string &clang_flags) {
  std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string src = dir + "/hotlink-bench-" + std::to_string(getpid()) + ".c", obj = src + ".o";
  std::ofstream(src) << source;
  std::string cmd = std::string(clang) + " " + clang_flags + " -x c -c " + src + " -o " + obj;
  std::vector<std::uint8_t> bytes;
  if (std::system(cmd.c_str()) == 0) {
    std::ifstream in(obj, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  unlink(src.c_str());
  unlink(obj.c_str());
  return bytes;
}

// The small kernel the loader and cache benchmarks link: kernel(x) = x + 1
// and its argv entry point.
inline const char *kSmallKernel =
    "int kernel(int x) { return x + 1; }\n"
    "int kernel_argv(void **a) { *(int *)a[1] = kernel(*(int *)a[0]); return 0; }\n";

class MedianReporter : public benchmark::ConsoleReporter {
public:
  // Keyed by "function" or "function/args".
  std::map<std::string, double> median;
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs)
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        double t = r.GetAdjustedRealTime();
        median[r.run_name.function_name] = t;
        if (!r.run_name.args.empty())
          median[r.run_name.function_name + "/" + r.run_name.args] = t;
      }
    ConsoleReporter::ReportRuns(runs);
  }
};
