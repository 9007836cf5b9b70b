// What the benchmarks share: a reporter that keeps each benchmark's median
// for the summary each program prints from the same run, and compiling a
// kernel into object bytes with clang-22.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
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

// A private scratch directory on /dev/shm when it is writable, else in
// /tmp; empty on failure.
inline std::string scratch_dir(const std::string &name) {
  for (std::string base : {"/dev/shm", "/tmp"}) {
    std::string templ = base + "/hotlink-" + name + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()))
      return buf.data();
  }
  return {};
}

// Writes `source` to a scratch file with extension `ext`, runs
// command(source_path, object_path) and returns the object's bytes; empty
// on failure.
inline std::vector<std::uint8_t> object_of(
    const std::string &source, const std::string &ext,
    const std::function<std::string(const std::string &, const std::string &)> &command) {
  std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string src = dir + "/hotlink-bench-" + std::to_string(getpid()) + ext, obj = src + ".o";
  std::ofstream(src) << source;
  std::vector<std::uint8_t> bytes;
  if (std::system(command(src, obj).c_str()) == 0) {
    std::ifstream in(obj, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  unlink(src.c_str());
  unlink(obj.c_str());
  return bytes;
}

// Compiles C `source` with `clang_flags` (e.g. "--target=x86_64-linux-gnu
// -O2 -fPIC"); empty on failure.
inline std::vector<std::uint8_t> compile_object(const char *clang, const std::string &source,
                                                const std::string &clang_flags) {
  return object_of(source, ".c", [&](const std::string &src, const std::string &obj) {
    return std::string(clang) + " " + clang_flags + " -x c -c " + src + " -o " + obj;
  });
}

// The small kernel the loader and cache benchmarks link: kernel(x) = x + 1
// and its argv entry point.
inline const char *kSmallKernel =
    "int kernel(int x) { return x + 1; }\n"
    "int kernel_argv(void **a) { *(int *)a[1] = kernel(*(int *)a[0]); return 0; }\n";

// About 150 KB of object code: many small functions behind one entry point.
inline std::string large_source() {
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

class MedianReporter : public benchmark::ConsoleReporter {
public:
  // Keyed by "function" or "function/args".
  std::map<std::string, double> median;
  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs)
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        double t = r.GetAdjustedRealTime();
        std::string name = r.run_name.function_name;
        if (!r.run_name.args.empty())
          name += "/" + r.run_name.args;
        median[r.run_name.function_name] = t;
        median[name] = t;
        for (const auto &[counter, value] : r.counters) // "name:counter"
          median[name + ":" + counter] = value.value;
      }
    ConsoleReporter::ReportRuns(runs);
  }
};
