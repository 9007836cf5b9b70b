// hotlink against lld used directly, the way Triton's AMD backend and
// ROCm's comgr call it: the object written to a temporary file,
// lld::lldMain with --threads=1, the output to a temporary file, dlopen,
// dlsym and a call. hotlink's side is its user path: object bytes to a
// HotModule serving the new version (LinkService::link, HotModule::reload:
// verify, map, publish) and a first call through the module's entry.
//
// Both paths run in one process, alternating one link each (the order
// swapped every round), so that a busy moment of the shared machine hits
// both alike; every figure is a median of this run.
//
//   direct_bench [--markdown FILE] [--rounds N] [--only hotlink|direct N]
#include "bench/bench_support.h"
#include "linker/service.h"
#include "loader/hot_module.h"

#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

LLD_HAS_DRIVER(elf)

namespace {

using Clock = std::chrono::steady_clock;
using ArgvFn = int (*)(void **);

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool call_ok(ArgvFn fn, bool small) {
  int in = 41, out = 0;
  void *args[] = {&in, &out};
  return fn && fn(args) == 0 && (!small || out == 42);
}

// lld used directly: what a JIT writes around lld::lldMain.
class LldDirect {
public:
  explicit LldDirect(std::string dir) : dir_(std::move(dir)) {}
  // One link: ms, or a negative number on failure.
  double link_and_call(const std::vector<std::uint8_t> &object, bool small) {
    std::string in = dir_ + "/direct" + std::to_string(n_) + ".o";
    std::string out = dir_ + "/direct" + std::to_string(n_++) + ".so";
    auto t0 = Clock::now();
    {
      std::ofstream f(in, std::ios::binary);
      f.write(reinterpret_cast<const char *>(object.data()), static_cast<std::streamsize>(object.size()));
    }
    std::vector<const char *> argv = {"ld.lld", "-shared", "--threads=1", in.c_str(), "-o", out.c_str()};
    lld::Result r = lld::lldMain(argv, llvm::nulls(), llvm::errs(), {{lld::Gnu, &lld::elf::link}});
    void *h = r.retCode == 0 ? dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    auto fn = h ? reinterpret_cast<ArgvFn>(dlsym(h, "kernel_argv")) : nullptr;
    bool ok = call_ok(fn, small);
    double ms = ms_since(t0);
    if (h)
      dlclose(h);
    unlink(in.c_str());
    unlink(out.c_str());
    return ok ? ms : -1;
  }

private:
  std::string dir_;
  int n_ = 0;
};

// hotlink's user path, with the service's defaults.
class HotlinkUser {
public:
  HotlinkUser() : entry_(module_.entry<int(void **)>("kernel_argv").value()) {}
  double link_and_call(const std::vector<std::uint8_t> &object, bool small) {
    hotlink::LinkRequest req;
    req.inputs = {hotlink::Input::memory("kernel.o", object)};
    req.exports = hotlink::ExportPolicy::list({"kernel", "kernel_argv"});
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc_.link(req);
    if (!r.ok() || module_.reload(r.artifact, "kernel.so"))
      return -1;
    int in = 41, out = 0;
    void *args[] = {&in, &out};
    int rc = entry_(args);
    double ms = ms_since(t0);
    module_.collect();
    return rc == 0 && (!small || out == 42) ? ms : -1;
  }

private:
  hotlink::LinkService svc_;
  hotlink::loader::HotModule module_;
  hotlink::loader::HotModule::Entry<int(void **)> entry_;
};

struct Row {
  std::string name;
  double hotlink = 0, direct = 0;
};

// `rounds` alternating links of `object`, `gap_ms` apart (untimed).
Row compare(const std::string &name, HotlinkUser &hl, LldDirect &direct, const std::vector<std::uint8_t> &object,
            bool small, int rounds, int gap_ms) {
  std::vector<double> a, b;
  for (int i = 0; i < rounds; ++i) {
    for (int side : {i % 2, 1 - i % 2}) {
      if (gap_ms)
        usleep(static_cast<useconds_t>(gap_ms) * 1000);
      double ms = side == 0 ? hl.link_and_call(object, small) : direct.link_and_call(object, small);
      if (ms < 0) {
        std::fprintf(stderr, "direct_bench: %s: the %s link failed\n", name.c_str(), side ? "direct" : "hotlink");
        std::exit(1);
      }
      (side == 0 ? a : b).push_back(ms);
    }
  }
  return {name, median(a), median(b)};
}

} // namespace

// `--only hotlink|direct N`: N links of the small kernel on one path, for
// callgrind (--toggle-collect=measured_links*), perf or strace.
__attribute__((noinline)) void measured_links(HotlinkUser &hl, LldDirect &direct, const std::string &path, int n,
                                              const std::vector<std::uint8_t> &obj) {
  for (int i = 0; i < n; ++i)
    if ((path == "hotlink" ? hl.link_and_call(obj, true) : direct.link_and_call(obj, true)) < 0)
      std::exit(1);
}

int main(int argc, char **argv) {
  std::string markdown, only;
  int rounds = 200, only_n = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--markdown" && i + 1 < argc)
      markdown = argv[++i];
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--only" && i + 2 < argc) {
      only = argv[++i];
      only_n = std::atoi(argv[++i]);
    }
  }
  std::vector<std::uint8_t> small = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  std::vector<std::uint8_t> large = compile_object(HOTLINK_BENCH_CLANG, large_source(), "-O2 -fPIC");
  std::string dir = scratch_dir("direct");
  if (small.empty() || large.empty() || dir.empty())
    return 1;
  HotlinkUser hl;
  LldDirect direct(dir);
  for (int i = 0; i < 5; ++i) { // both warm: lld's first call, the runtime environment
    hl.link_and_call(small, true);
    direct.link_and_call(small, true);
  }
  if (!only.empty()) {
    measured_links(hl, direct, only, only_n, small);
    std::string rm = "rm -rf " + dir;
    return std::system(rm.c_str()) == 0 ? 0 : 1;
  }
  std::vector<Row> rows;
  rows.push_back(compare("small kernel, back to back", hl, direct, small, true, rounds, 0));
  rows.push_back(compare("small kernel, 10 ms apart", hl, direct, small, true, std::max(rounds / 5, 10), 10));
  rows.push_back(compare("~150 KB object, back to back", hl, direct, large, false, rounds / 2, 0));
  rows.push_back(compare("~150 KB object, 10 ms apart", hl, direct, large, false, std::max(rounds / 5, 10), 10));

  std::string md = "| pattern | hotlink (user path) | lld used directly | hotlink / direct |\n|---|---|---|---|\n";
  for (const Row &r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.3f ms | %.3f ms | %.2f× |\n", r.name.c_str(), r.hotlink, r.direct,
                  r.direct > 0 ? r.hotlink / r.direct : 0);
    md += line;
  }
  std::printf("%s", md.c_str());
  if (!markdown.empty())
    std::ofstream(markdown) << md;
  std::string rm = "rm -rf " + dir;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
