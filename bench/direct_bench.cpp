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
// That bare line (`ld.lld -shared IN -o OUT`) links no C library, startup
// objects or libgcc, and gives no --eh-frame-hdr: in what it makes, glibc
// binds libc's oldest symbol versions and a C++ throw terminates. So the same rows are also measured against lld given
// the line `clang-22 -shared -fuse-ld=lld` gives it, which is what hotlink's
// default link stands for.
//
// Then, each alternating with its reference in the same run:
// - the CLI (`hotlink link`) on the small kernel against an `ld.lld-22`
//   process;
// - an object of 100,000 functions exported (--policy all), in-process and
//   through the CLI, against a `clang-22 -shared -fuse-ld=lld` process
//   (which exports everything too);
// - resident memory after 1,000 and after 100,000 small links in one
//   process (--links N sets the second figure);
// - a process's first link on each path, in fresh processes, alternating
//   (`--first hotlink|direct|driver-line OBJECT DIR` is one such process: it prints
//   the ms of its one link).
//
//   direct_bench [--markdown FILE] [--rounds N] [--links N]
//                [--only hotlink|bare|direct|same-line[-large]|many N]
#include "bench/bench_support.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"

#include "lld/Common/Driver.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <optional>
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

// The linker line `clang-22 -shared -fuse-ld=lld IN -o OUT` runs (from its
// -### output), with "IN" and "OUT" where the paths go; empty on failure.
std::vector<std::string> clang_shared_line(const std::string &dir) {
  std::string in = dir + "/line-in.o", out = dir + "/line.txt";
  std::ofstream(in) << "";
  std::string cmd = std::string(HOTLINK_BENCH_CLANG) + " -### -shared -fuse-ld=lld " + in + " -o OUT 2> " + out;
  if (std::system(cmd.c_str()) != 0)
    return {};
  std::ifstream f(out);
  std::string line, last;
  while (std::getline(f, line))
    if (line.rfind(" \"", 0) == 0)
      last = line;
  std::vector<std::string> args; // -### quotes each argument, escaping " and \ with a backslash
  for (std::size_t i = 0; i < last.size(); ++i) {
    if (last[i] != '"')
      continue;
    std::string a;
    for (++i; i < last.size() && last[i] != '"'; ++i)
      a += last[i] == '\\' && i + 1 < last.size() ? last[++i] : last[i];
    args.push_back(a == in ? "IN" : a);
  }
  return args;
}

// lld used directly: what a JIT writes around lld::lldMain. By default the
// bare line Triton's AMD backend and comgr use; given `line` (from
// clang_shared_line), the line of the platform's compiler driver.
class LldDirect {
public:
  explicit LldDirect(std::string dir, std::vector<std::string> line = {})
      : dir_(std::move(dir)), line_(std::move(line)) {}
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
    if (!line_.empty()) {
      argv = {"ld.lld", "--threads=1"};
      for (std::size_t i = 1; i < line_.size(); ++i)
        argv.push_back(line_[i] == "IN" ? in.c_str() : line_[i] == "OUT" ? out.c_str() : line_[i].c_str());
    }
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
  std::vector<std::string> line_;
  int n_ = 0;
};

// hotlink's user path, with the service's defaults (`bare`: the inputs
// alone, Runtime::None, the line lld-direct gives lld).
class HotlinkUser {
public:
  explicit HotlinkUser(bool bare = false) : bare_(bare), entry_(module_.entry<int(void **)>("kernel_argv").value()) {}
  double link_and_call(const std::vector<std::uint8_t> &object, bool small) {
    hotlink::LinkRequest req;
    if (bare_)
      req.runtime = hotlink::Runtime::None;
    req.inputs = {hotlink::Input::memory("kernel.o", object)};
    req.exports = hotlink::ExportPolicy::list({"kernel", "kernel_argv"});
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc_.link(req);
    if (!r.ok() || module_.reload(r.artifact, "kernel.so"))
      return -1;
    command_ = std::move(r.command);
    int in = 41, out = 0;
    void *args[] = {&in, &out};
    int rc = entry_(args);
    double ms = ms_since(t0);
    module_.collect();
    return rc == 0 && (!small || out == 42) ? ms : -1;
  }

  // The lld line of the last link, as LldDirect takes it: the input object
  // "IN", the output "OUT", without --threads (LldDirect gives its own);
  // empty when the line names another file hotlink wrote for lld (a
  // runtime stub, an export list), which lld-direct would not have.
  std::vector<std::string> line() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < command_.size(); ++i) {
      const std::string &a = command_[i];
      if (a.rfind("--threads=", 0) == 0)
        continue;
      if (a.rfind("<scratch>/", 0) == 0) {
        bool output = i > 0 && command_[i - 1] == "-o";
        if (!output && a != "<scratch>/in0-kernel.o")
          return {};
        out.push_back(output ? "OUT" : "IN");
        continue;
      }
      out.push_back(a);
    }
    return out;
  }

private:
  bool bare_;
  std::vector<std::string> command_;
  hotlink::LinkService svc_;
  hotlink::loader::HotModule module_;
  hotlink::loader::HotModule::Entry<int(void **)> entry_;
};

struct Row {
  std::string name;
  double hotlink = 0, direct = 0;
};

// Runs `argv` as a process; ms, or a negative number on failure.
double run_ms(const std::vector<std::string> &argv) {
  std::vector<llvm::StringRef> refs(argv.begin(), argv.end());
  std::optional<llvm::StringRef> quiet[] = {std::nullopt, llvm::StringRef("/dev/null"), llvm::StringRef("/dev/null")};
  auto t0 = Clock::now();
  int rc = llvm::sys::ExecuteAndWait(argv[0], refs, std::nullopt, quiet);
  return rc == 0 ? ms_since(t0) : -1;
}

// `rounds` alternating runs of two commands (each a function returning ms,
// negative on failure).
Row alternate(const std::string &name, int rounds, const std::function<double()> &a,
              const std::function<double()> &b) {
  std::vector<double> ta, tb;
  for (int i = 0; i < rounds; ++i)
    for (int side : {i % 2, 1 - i % 2}) {
      double ms = side == 0 ? a() : b();
      if (ms < 0) {
        std::fprintf(stderr, "direct_bench: %s: a run failed\n", name.c_str());
        std::exit(1);
      }
      (side == 0 ? ta : tb).push_back(ms);
    }
  return {name, median(ta), median(tb)};
}

// n exported functions, assembled (a compiler would take minutes).
std::string many_functions(int n) {
  std::string s = ".text\n";
  for (int i = 0; i < n; ++i) {
    std::string f = "f" + std::to_string(i);
    s += ".globl " + f + "\n.type " + f + ",@function\n" + f + ":\n  leal " + std::to_string(i % 1000) +
         "(%rdi), %eax\n  ret\n";
  }
  return s + ".section .note.GNU-stack,\"\",@progbits\n";
}

std::vector<std::uint8_t> many_functions_object() {
  return object_of(many_functions(100000), ".s", [](const std::string &s, const std::string &o) {
    return std::string(HOTLINK_BENCH_LLVM_MC) + " -triple=x86_64-linux-gnu -filetype=obj " + s + " -o " + o;
  });
}

hotlink::LinkRequest export_all(const std::vector<std::uint8_t> &object) {
  hotlink::LinkRequest all;
  all.inputs = {hotlink::Input::memory("many.o", object)};
  all.exports = hotlink::ExportPolicy::all();
  return all;
}

// The CLI and the many-symbol rows.
std::vector<Row> process_rows(const std::string &bin, const std::string &dir, const std::vector<std::uint8_t> &small,
                              int rounds) {
  std::string k = dir + "/k.o", many = dir + "/many.o", out = dir + "/out.so";
  std::ofstream(k, std::ios::binary).write(reinterpret_cast<const char *>(small.data()),
                                           static_cast<std::streamsize>(small.size()));
  std::vector<std::uint8_t> many_bytes = many_functions_object();
  std::ofstream(many, std::ios::binary).write(reinterpret_cast<const char *>(many_bytes.data()),
                                              static_cast<std::streamsize>(many_bytes.size()));
  std::string cli = bin + "/hotlink";
  std::vector<Row> rows;
  rows.push_back(alternate("CLI on the small kernel: `hotlink link` / an `ld.lld-22 -shared` process", rounds,
                           [&] { return run_ms({cli, "link", "-o", out, k}); },
                           [&] { return run_ms({HOTLINK_BENCH_LD_LLD, "-shared", "-o", out, k}); }));
  auto clang_shared = [&] { return run_ms({HOTLINK_BENCH_CLANG, "-shared", "-fuse-ld=lld", "-o", out, many}); };
  hotlink::LinkService svc;
  hotlink::LinkRequest all = export_all(many_bytes);
  int few = std::max(3, rounds / 4);
  rows.push_back(alternate("100,000 functions exported: in-process `--policy all` / a `clang-22 -shared` process",
                           few, [&] {
                             auto t0 = Clock::now();
                             return svc.link(all).ok() ? ms_since(t0) : -1;
                           }, clang_shared));
  rows.push_back(alternate("100,000 functions exported: the CLI `--policy all` / a `clang-22 -shared` process", few,
                           [&] { return run_ms({cli, "link", "--policy", "all", "-o", out, many}); }, clang_shared));
  return rows;
}

// Resident memory (KiB) after 1,000 and after `links` small links.
std::pair<long, long> rss_over_links(const std::vector<std::uint8_t> &small, int links) {
  auto rss = [] {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("VmRSS:", 0) == 0)
        return std::atol(line.c_str() + 6);
    return 0L;
  };
  hotlink::LinkService svc;
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", small)};
  req.exports = hotlink::ExportPolicy::list({"kernel", "kernel_argv"});
  long at1000 = 0;
  for (int i = 1; i <= links; ++i) {
    if (!svc.link(req).ok())
      return {-1, -1};
    if (i == 1000)
      at1000 = rss();
  }
  return {at1000, rss()};
}

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

// `--first hotlink|direct|driver-line OBJECT DIR`: the first link of this process on
// one path (the service and module made first, as a host makes them at
// start); prints its ms.
int first_link(const std::string &path, const std::string &object_path, const std::string &dir) {
  std::ifstream in(object_path, std::ios::binary);
  std::vector<std::uint8_t> object((std::istreambuf_iterator<char>(in)), {});
  if (object.empty())
    return 1;
  double ms = -1;
  if (path == "hotlink") {
    HotlinkUser hl;
    ms = hl.link_and_call(object, true);
  } else {
    LldDirect direct(dir, path == "driver-line" ? clang_shared_line(dir) : std::vector<std::string>{});
    ms = direct.link_and_call(object, true);
  }
  if (ms < 0)
    return 1;
  std::printf("%.3f\n", ms);
  return 0;
}

// Medians of `runs` fresh processes' first links, hotlink's and
// `reference`'s ("direct" or "driver-line") in turn.
Row first_link_row(const std::string &self, const std::string &dir, const std::vector<std::uint8_t> &small,
                   int runs, const std::string &reference, const std::string &name) {
  std::string k = dir + "/first.o", out = dir + "/first.txt";
  std::ofstream(k, std::ios::binary).write(reinterpret_cast<const char *>(small.data()),
                                           static_cast<std::streamsize>(small.size()));
  auto one = [&](const char *path) {
    std::vector<llvm::StringRef> argv = {self, "--first", path, k, dir};
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out), std::nullopt};
    if (llvm::sys::ExecuteAndWait(self, argv, std::nullopt, redirects, 60) != 0)
      return -1.0;
    double ms = -1;
    std::ifstream(out) >> ms;
    return ms;
  };
  return alternate(name, runs, [&] { return one("hotlink"); }, [&] { return one(reference.c_str()); });
}

// `--only PATH[-large] N`: N links of the small kernel (the ~150 KB object)
// on one path, for callgrind (--toggle-collect=measured_links*), perf or
// strace. `link` is one link on that path: ms, or negative on failure.
__attribute__((noinline)) void measured_links(const std::string &path, int n,
                                              const std::function<double()> &link) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    ms.push_back(link());
    if (ms.back() < 0)
      std::exit(1);
  }
  double sum = 0;
  for (double m : ms)
    sum += m;
  if (n)
    std::fprintf(stderr, "%s: %d links, median %.3f ms, mean %.3f ms\n", path.c_str(), n, median(ms), sum / n);
}

// `--only`'s paths: hotlink (the default user path), bare (Runtime::None),
// direct (lld with the bare line), same-line (lld with bare's own line).
int only_path(const std::string &only, int n, const std::vector<std::uint8_t> &small,
              const std::vector<std::uint8_t> &large, const std::string &dir) {
  bool big = only.size() > 6 && only.compare(only.size() - 6, 6, "-large") == 0;
  std::string path = big ? only.substr(0, only.size() - 6) : only;
  const std::vector<std::uint8_t> &obj = big ? large : small;
  HotlinkUser hl(path == "bare" || path == "same-line");
  for (int i = 0; i < 5; ++i) // warm: lld's first call, the runtime environment
    if (hl.link_and_call(small, true) < 0)
      return 1;
  LldDirect direct(dir, path == "same-line" ? hl.line() : std::vector<std::string>{});
  for (int i = 0; i < 5; ++i)
    if (direct.link_and_call(small, true) < 0)
      return 1;
  if (path == "hotlink" || path == "bare")
    measured_links(only, n, [&] { return hl.link_and_call(obj, !big); });
  else if (path == "direct" || path == "same-line")
    measured_links(only, n, [&] { return direct.link_and_call(obj, !big); });
  else
    return std::fprintf(stderr, "direct_bench: --only takes hotlink, bare, direct or same-line (-large)\n"), 1;
  return 0;
}

// `--only many N`: N in-process links of the 100,000-function object
// (`--policy all`), after one untimed; prints the medians of each step.
int measured_many_links(int n) {
  std::vector<std::uint8_t> object = many_functions_object();
  hotlink::LinkService svc;
  hotlink::LinkRequest all = export_all(object);
  std::vector<double> total, validate, prepare, lld, publish;
  for (int i = 0; i <= n; ++i) {
    auto t0 = Clock::now();
    hotlink::LinkResult r = svc.link(all);
    if (!r.ok())
      return 1;
    if (i == 0)
      continue;
    total.push_back(ms_since(t0));
    validate.push_back(r.timings.validate_ms);
    prepare.push_back(r.timings.prepare_ms);
    lld.push_back(r.timings.link_ms);
    publish.push_back(r.timings.publish_ms);
  }
  std::fprintf(stderr, "many: %d links, median %.3f ms (validate %.3f, prepare %.3f, lld %.3f, publish %.3f)\n", n,
               median(total), median(validate), median(prepare), median(lld), median(publish));
  return 0;
}

int main(int argc, char **argv) {
  std::string markdown, only;
  int rounds = 200, only_n = 0, links = 100000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--markdown" && i + 1 < argc)
      markdown = argv[++i];
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--links" && i + 1 < argc)
      links = std::max(1000, std::atoi(argv[++i]));
    else if (a == "--only" && i + 2 < argc) {
      only = argv[++i];
      only_n = std::atoi(argv[++i]);
    }
  }
  if (only == "many")
    return measured_many_links(only_n);
  if (argc == 5 && std::string(argv[1]) == "--first")
    return first_link(argv[2], argv[3], argv[4]);
  std::vector<std::uint8_t> small = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  std::vector<std::uint8_t> large = compile_object(HOTLINK_BENCH_CLANG, large_source(), "-O2 -fPIC");
  std::string dir = scratch_dir("direct");
  if (small.empty() || large.empty() || dir.empty())
    return 1;
  if (!only.empty()) {
    int rc = only_path(only, only_n, small, large, dir);
    std::string rm = "rm -rf " + dir;
    return std::system(rm.c_str()) == 0 ? rc : 1;
  }
  HotlinkUser hl;
  LldDirect direct(dir);
  for (int i = 0; i < 5; ++i) { // both warm: lld's first call, the runtime environment
    hl.link_and_call(small, true);
    direct.link_and_call(small, true);
  }
  std::vector<Row> rows;
  rows.push_back(compare("small kernel, back to back", hl, direct, small, true, rounds, 0));
  rows.push_back(compare("small kernel, 10 ms apart", hl, direct, small, true, std::max(rounds / 5, 10), 10));
  rows.push_back(compare("~150 KB object, back to back", hl, direct, large, false, rounds / 2, 0));
  rows.push_back(compare("~150 KB object, 10 ms apart", hl, direct, large, false, std::max(rounds / 5, 10), 10));

  // Both given the bare line: hotlink's own cost around lld.
  HotlinkUser bare(true);
  for (int i = 0; i < 5; ++i)
    bare.link_and_call(small, true);
  rows.push_back(compare("small kernel, back to back, hotlink with `Runtime::None` (the same bare line)", bare, direct,
                         small, true, rounds, 0));
  // Both making the same library: lld given the line hotlink's
  // Runtime::None link gives it (--build-id, --eh-frame-hdr, -soname,
  // -Bsymbolic-non-weak as well), so the ratio is hotlink's own work around
  // lld (reading the inputs, collecting the image, verify, the post-mortem
  // copy, reload) and nothing the line adds.
  std::vector<std::string> own_line = bare.line();
  if (own_line.empty()) {
    std::fprintf(stderr, "direct_bench: hotlink's Runtime::None line names files lld-direct does not have\n");
    return 1;
  }
  LldDirect same_line(dir, own_line);
  rows.push_back(compare("small kernel, back to back, hotlink with `Runtime::None` against lld given hotlink's own line",
                         bare, same_line, small, true, rounds, 0));
  rows.push_back(compare("~150 KB object, back to back, hotlink with `Runtime::None` against lld given hotlink's own line",
                         bare, same_line, large, false, rounds / 2, 0));
  // Against lld given what `clang -shared` gives it (startup objects, -lc,
  // libgcc, --eh-frame-hdr, --build-id), as hotlink's default link does.
  std::vector<std::string> driver_args = clang_shared_line(dir);
  if (driver_args.empty()) {
    std::fprintf(stderr, "direct_bench: no linker line from %s -###\n", HOTLINK_BENCH_CLANG);
    return 1;
  }
  LldDirect driver_line(dir, driver_args);
  rows.push_back(compare("small kernel, back to back, against lld with `clang -shared`'s line", hl, driver_line, small,
                         true, rounds, 0));
  rows.push_back(compare("~150 KB object, back to back, against lld with `clang -shared`'s line", hl, driver_line,
                         large, false, rounds / 2, 0));

  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
  std::string bin = llvm::sys::path::parent_path(self).str();
  int fresh = std::max(rounds / 20, 5);
  rows.push_back(first_link_row(self, dir, small, fresh, "direct", "a process's first link (small kernel, fresh processes)"));
  rows.push_back(first_link_row(self, dir, small, fresh, "driver-line",
                                "a process's first link, against lld with `clang -shared`'s line"));
  std::vector<Row> others = process_rows(bin, dir, small, std::max(rounds / 10, 8));
  auto [rss1k, rss_n] = rss_over_links(small, links);

  std::string md = "| pattern | hotlink (user path) | lld used directly | hotlink / direct |\n|---|---|---|---|\n";
  auto add = [&md](const Row &r) {
    char line[512];
    std::snprintf(line, sizeof line, "| %s | %.3f ms | %.3f ms | %.2f× |\n", r.name.c_str(), r.hotlink, r.direct,
                  r.direct > 0 ? r.hotlink / r.direct : 0);
    md += line;
  };
  for (const Row &r : rows)
    add(r);
  md += "\n| hotlink / reference (same run, alternating, medians) | hotlink | reference | ratio |\n|---|---|---|---|\n";
  for (const Row &r : others)
    add(r);
  char line[256];
  std::snprintf(line, sizeof line,
                "\nResident memory of one process linking the small kernel in-process: %ld KiB after 1,000 links, "
                "%ld KiB after %d (%+ld KiB).\n",
                rss1k, rss_n, links, rss_n - rss1k);
  md += line;
  std::printf("%s", md.c_str());
  if (!markdown.empty())
    std::ofstream(markdown) << md;
  std::string rm = "rm -rf " + dir;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
