// Edit to running: how long after an editor saves a kernel's source the
// running module returns the new value (Rebuilder: inotify, the database's
// compile command, an in-process link, reload with state), against one
// `clang-22 -c` of the same file with the same command, alternating, in one
// run. The goal: edit-to-running <= clang -c + 25 ms.
//   usage: rebuild_bench [EDITS] [--markdown FILE]
#include "bench/bench_support.h"
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"
#include "hotlink/rebuild.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A kernel of some substance (a few dozen functions), returning `value`.
std::string kernel(int value) {
  std::string s = "#include <hotlink/state.h>\nstatic int HOTLINK_STATE frames = 0;\n";
  for (int i = 0; i < 40; ++i)
    s += "double f" + std::to_string(i) + "(double x) { for (int k = 0; k < " + std::to_string(i + 3) +
         "; ++k) x = x * 0.5 + k; return x; }\n";
  s += "int value(void) { ++frames; return " + std::to_string(value) + "; }\n";
  return s;
}

void save(const std::string &path, const std::string &text) {
  std::ofstream(path + ".tmp") << text;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

} // namespace

int main(int argc, char **argv) {
  int edits = argc > 1 && argv[1][0] != '-' ? std::atoi(argv[1]) : 5;
  std::string markdown;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--markdown")
      markdown = argv[i + 1];
  std::string dir = scratch_dir("rebuild-bench");
  std::string src = dir + "/k.c";
  save(src, kernel(0));
  std::string command = std::string(HOTLINK_BENCH_CLANG) + " -I" HOTLINK_BENCH_SOURCE_DIR "/include -O2 -fPIC";
  std::ofstream(dir + "/compile_commands.json")
      << "[{\"directory\": \"" << dir << "\", \"command\": \"" << command << " -o k.o -c " << src
      << "\", \"file\": \"" << src << "\"}]\n";
  hotlink::loader::HotModule module;
  auto value = module.entry<int()>("value").value();
  hotlink::LinkService service;
  hotlink::rebuild::Options o;
  o.compile_commands = dir + "/compile_commands.json";
  o.sources = {src};
  o.request.exports = hotlink::exports::ExportPolicy::list({"value"});
  hotlink::rebuild::Rebuilder rb(module, service, o);
  if (auto err = rb.last_error()) {
    std::fprintf(stderr, "%s\n", err->to_string().c_str());
    return 1;
  }
  std::vector<double> compile_ms, edit_ms;
  std::string cc = command + " -c " + src + " -o " + dir + "/alone.o";
  for (int e = 1; e <= edits; ++e) {
    auto t0 = Clock::now();
    if (std::system(cc.c_str()) != 0)
      return 1;
    compile_ms.push_back(ms_since(t0));
    std::uint64_t seen = rb.rebuilds() + rb.failures();
    t0 = Clock::now();
    save(src, kernel(e));
    // Blocks (no polling thread competing with the compiler) until the
    // build is done, then the first call must be the new version's.
    if (!rb.wait_past(seen, std::chrono::seconds(30)) || value() != e) {
      std::fprintf(stderr, "edit %d never arrived: %s\n", e,
                   rb.last_error() ? rb.last_error()->to_string().c_str() : "no error");
      return 1;
    }
    edit_ms.push_back(ms_since(t0));
  }
  double c = median(compile_ms), t = median(edit_ms);
  char row[512];
  std::snprintf(row, sizeof row,
                "| edit to running (save -> new value), %d edits | %.1f ms | one `clang-22 -c` of the file | %.1f ms | "
                "+%.1f ms (goal: <= +25 ms) |\n",
                edits, t, c, t - c);
  std::printf("| what | median | against | median | difference |\n|---|---|---|---|---|\n%s", row);
  if (!markdown.empty())
    std::ofstream(markdown, std::ios::app) << row;
  return 0;
}
