// A host that hot-loads kernels, for the tests that run gdb, perf and
// valgrind on it (debugger_test.cpp). Each kernel defines
//   int kernel_work(int), int kernel_work_argv(void **),
//   void kernel_spin(const volatile int *stop), void kernel_abort(void),
//   int kernel_bad(const int *p).
//
//   hotlink-debug-host hot V1.so V2.so        HotModule: V1, one call, reload V2, one call
//   hotlink-debug-host private V.so           load_private, one call
//   hotlink-debug-host spin V.so READY STOP   HotModule: V, then spin inside the kernel until STOP exists
//   hotlink-debug-host loop V1 V2 MS READY STOP  V1 busy for MS ms, reload V2, busy MS ms,
//                                             then wait for STOP ("-" for none)
//   hotlink-debug-host step V1 V2 DIR          V1 busy until DIR/next exists, reload V2,
//                                             busy until DIR/stop exists (DIR/ready and
//                                             DIR/reloaded say when each phase began)
//   hotlink-debug-host abort V.so             the kernel calls abort()
//   hotlink-debug-host bad V.so               the kernel reads past a heap block
#include "hotlink/hot_module.h"
#include "hotlink/load.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace hotlink::loader;

namespace {

bool exists(const std::string &p) { return ::access(p.c_str(), F_OK) == 0; }

void touch(const std::string &p) {
  if (p != "-")
    std::ofstream(p) << "ready\n";
}

int fail(const hotlink::Error &e) {
  std::fprintf(stderr, "%s\n", e.to_string().c_str());
  return 3;
}

void busy_until(HotModule::Entry<int(int)> &work, const std::string &file) {
  volatile unsigned sink = 0;
  while (!exists(file))
    for (int i = 0; i < 64; ++i)
      sink = sink + static_cast<unsigned>(work(100000));
}

void busy(HotModule::Entry<int(int)> &work, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile unsigned sink = 0; // wraps: the sum is only kept alive
  while (std::chrono::steady_clock::now() < end)
    sink = sink + static_cast<unsigned>(work(100000));
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  std::string mode = argv[1];
  HotModule module;
  auto work = module.entry<int(int)>("kernel_work");
  auto spin = module.entry<void(const volatile int *)>("kernel_spin");
  auto abort_in_kernel = module.entry<void()>("kernel_abort");
  auto bad = module.entry<int(const int *)>("kernel_bad");
  if (!work || !spin || !abort_in_kernel || !bad)
    return 2;
  if (mode == "private") {
    auto bytes = hotlink::read_artifact_file(argv[2]);
    if (!bytes)
      return fail(bytes.error());
    auto lib = load_private(bytes.value(), argv[2]);
    if (!lib)
      return fail(lib.error());
    auto f = reinterpret_cast<int (*)(int)>(lib.value()->symbol("kernel_work"));
    std::printf("private %d\n", f(20));
    return 0;
  }
  if (auto err = module.reload(argv[2]))
    return fail(*err);
  if (mode == "hot" && argc >= 4) {
    std::printf("v1 %d\n", work.value()(20));
    if (auto err = module.reload(argv[3]))
      return fail(*err);
    std::printf("v2 %d\n", work.value()(20));
    return 0;
  }
  if (mode == "spin" && argc >= 5) {
    static volatile int stop = 0;
    std::string stop_file = argv[4];
    std::thread watcher([&] {
      while (!exists(stop_file))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      stop = 1;
    });
    touch(argv[3]);
    spin.value()(&stop);
    watcher.join();
    std::printf("spun\n");
    return 0;
  }
  if (mode == "loop" && argc >= 7) {
    int ms = std::atoi(argv[4]);
    touch(argv[5]);
    busy(work.value(), ms);
    if (auto err = module.reload(argv[3]))
      return fail(*err);
    busy(work.value(), ms);
    std::string stop = argv[6];
    while (stop != "-" && !exists(stop))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::printf("looped\n");
    return 0;
  }
  if (mode == "step" && argc >= 5) {
    std::string dir = argv[4];
    touch(dir + "/ready");
    busy_until(work.value(), dir + "/next");
    if (auto err = module.reload(argv[3]))
      return fail(*err);
    touch(dir + "/reloaded");
    busy_until(work.value(), dir + "/stop");
    std::printf("stepped\n");
    return 0;
  }
  if (mode == "abort") {
    abort_in_kernel.value()();
    return 0;
  }
  if (mode == "bad") {
    int *p = static_cast<int *>(std::malloc(4 * sizeof(int)));
    std::memset(p, 0, 4 * sizeof(int));
    std::printf("bad %d\n", bad.value()(p));
    std::free(p);
    return 0;
  }
  return 2;
}
