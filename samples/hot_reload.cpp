// hot_reload: a loop keeps calling a kernel while new versions of it are
// compiled (C, clang-22, at run time), linked in-process by hotlink and
// swapped in. A deliberately broken version is refused and the loop keeps
// running on the old one.
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// What a JIT front end would produce: here, C compiled to an object.
std::vector<std::uint8_t> compile(const std::string &source, const std::string &dir) {
  std::string src = dir + "/kernel.c", obj = dir + "/kernel.o";
  std::ofstream(src) << source;
  std::string cmd = std::string(HOTLINK_SAMPLE_CLANG) + " -O2 -fPIC -c " + src + " -o " + obj;
  if (std::system(cmd.c_str()) != 0)
    return {};
  std::ifstream in(obj, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string kernel_source(int version, bool broken) {
  std::string name = broken ? "kernel_typo" : "kernel"; // the broken one lacks `kernel`
  return "int " + name + "(int x) { return x * " + std::to_string(version) + " + " + std::to_string(version) +
         "; }\nint " + name + "_argv(void **a) { *(int *)a[1] = " + name + "(*(int *)a[0]); return 0; }\n";
}

} // namespace

int main() {
  char tmpl[] = "/tmp/hotlink-hot-reload-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  hotlink::LinkService linker;
  hotlink::loader::HotModule module;
  auto kernel = module.entry<int(int)>("kernel");
  if (!kernel) {
    std::fprintf(stderr, "hot_reload: %s\n", kernel.error().to_string().c_str());
    return 1;
  }

  // Builds one version and swaps it in: compile, link in-process, reload.
  auto build_and_swap = [&](int version, bool broken) {
    auto t0 = Clock::now();
    auto object = compile(kernel_source(version, broken), dir);
    auto t1 = Clock::now();
    hotlink::LinkRequest req;
    req.inputs = {hotlink::Input::memory("kernel-v" + std::to_string(version) + ".o", object)};
    hotlink::LinkResult linked = linker.link(req); // exports: the entry points
    auto t2 = Clock::now();
    if (!linked.ok()) {
      std::printf("[swap] v%d: link refused: %s\n", version, linked.error->to_string().c_str());
      return false;
    }
    auto err = module.reload(linked.artifact, "kernel-v" + std::to_string(version) + ".so");
    auto t3 = Clock::now();
    if (err) {
      std::printf("[swap] v%d refused, still serving v%llu: %s\n", version,
                  (unsigned long long)module.current()->number, err->to_string().c_str());
      return false;
    }
    std::printf("[swap] v%d serving: compile %.1f ms, link %.2f ms, verify+map+publish %.2f ms\n", version,
                ms(t0, t1), ms(t1, t2), ms(t2, t3));
    return true;
  };

  if (!build_and_swap(1, false))
    return 1;
  std::atomic<bool> stop{false};
  std::mutex seen_mu;
  std::set<int> seen;
  std::thread loop([&] {
    long calls = 0;
    int last = -1;
    while (!stop) {
      int out = (*kernel)(10);
      ++calls;
      if (out != last) {
        std::printf("[loop] kernel(10) = %d (after %ld calls)\n", out, calls);
        last = out;
        std::lock_guard<std::mutex> lock(seen_mu);
        seen.insert(out);
      }
    }
    std::printf("[loop] %ld calls, never stopped\n", calls);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bool ok = build_and_swap(2, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bool refused = !build_and_swap(3, /*broken=*/true);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ok = build_and_swap(4, false) && ok;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  loop.join();
  std::string cleanup = "rm -rf '" + dir + "'";
  (void)std::system(cleanup.c_str());
  // v1: 11, v2: 22, v4: 44 were served; the broken v3 never was.
  bool right = seen == std::set<int>{11, 22, 44};
  std::printf("%s\n", ok && refused && right ? "hot_reload: ok" : "hot_reload: FAILED");
  return ok && refused && right ? 0 : 1;
}
