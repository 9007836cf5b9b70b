// Counts the instructions of one warm in-process link of the small kernel
// (object bytes to image bytes), for bench/instructions.sh: callgrind
// counts instructions, not seconds, so the figure does not depend on how
// busy the machine is. Run with HOTLINK_LLD_SPIN_US=0 (spinning threads
// would count their waiting).
//
//   link_instructions N [bare]   N warm links inside measured_links()
#include "bench/bench_support.h"
#include "hotlink/link_service.h"

#include <cstdio>

namespace {

std::vector<std::uint8_t> g_object;
hotlink::LinkService *g_service;
bool g_bare = false;

__attribute__((noinline)) void one_link() {
  hotlink::LinkRequest req;
  req.inputs = {hotlink::Input::memory("kernel.o", g_object)};
  req.exports = hotlink::ExportPolicy::list({"kernel", "kernel_argv"});
  if (g_bare)
    req.runtime = hotlink::Runtime::None;
  hotlink::LinkResult r = g_service->link(req);
  if (!r.ok()) {
    std::fprintf(stderr, "link_instructions: %s\n", r.error->to_string().c_str());
    std::exit(1);
  }
}

} // namespace

// callgrind --toggle-collect=measured_links counts the calling thread (lld
// runs on it).
extern "C" __attribute__((noinline)) void measured_links(int n) {
  for (int i = 0; i < n; ++i)
    one_link();
}

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 10;
  g_bare = argc > 2 && std::string(argv[2]) == "bare";
  g_object = compile_object(HOTLINK_BENCH_CLANG, kSmallKernel, "-O2 -fPIC");
  if (g_object.empty())
    return 1;
  hotlink::LinkService service;
  g_service = &service;
  for (int i = 0; i < 3; ++i) // warm: targets, runtime environment, memo
    one_link();
  measured_links(n);
  return 0;
}
