// A frame loop that hot-reloads its kernel from source as you edit it.
//
//   hot_engine COMPILE_COMMANDS KERNEL.c [--frames N] [--frame-ms MS]
//
// The kernel (samples/hot_engine/kernel.c) keeps a bouncing ball in
// HOTLINK_STATE variables. A Rebuilder compiles it with the command the
// compilation database records, links it in-process and reloads it; every
// frame prints the frame, the ball (the state, which survives each reload)
// and the version running. Edit the kernel while it runs: the next frames
// run the new code. A compile error or a state change that does not fit is
// printed once, and the old version keeps running until the next good save.
#include "hotlink/link_service.h"
#include "hotlink/hot_module.h"
#include "hotlink/rebuild.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s COMPILE_COMMANDS KERNEL.c [--frames N] [--frame-ms MS]\n", argv[0]);
    return 2;
  }
  long frames = -1; // forever
  int frame_ms = 100;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--frames")
      frames = std::atol(argv[i + 1]);
    else if (flag == "--frame-ms")
      frame_ms = std::atoi(argv[i + 1]);
  }
  hotlink::loader::HotModule module;
  auto step = module.entry<void(double)>("kernel_step").value();
  auto version = module.entry<int()>("kernel_version").value();
  auto counted = module.entry<long()>("kernel_frames").value();
  auto height = module.entry<double()>("kernel_height").value();
  auto bounces = module.entry<int()>("kernel_bounces").value();

  hotlink::LinkService service;
  hotlink::rebuild::Options o;
  o.compile_commands = argv[1];
  o.sources = {argv[2]};
  o.request.exports =
      hotlink::exports::ExportPolicy::list({"kernel_step", "kernel_version", "kernel_frames", "kernel_height",
                                            "kernel_bounces"});
  o.name = "kernel.so";
  hotlink::rebuild::Rebuilder rebuilder(module, service, o);
  if (auto err = rebuilder.last_error()) {
    std::fprintf(stderr, "hot_engine: the first build failed: %s\n", err->to_string().c_str());
    return 1;
  }
  std::printf("hot_engine: running %s; edit it and save\n", argv[2]);
  std::uint64_t reported = rebuilder.rebuilds() + rebuilder.failures();
  for (long frame = 1; frames < 0 || frame <= frames; ++frame) {
    if (std::uint64_t now = rebuilder.rebuilds() + rebuilder.failures(); now != reported) {
      reported = now;
      if (auto err = rebuilder.last_error())
        std::printf("hot_engine: kept the running version: %s\n", err->to_string().c_str());
      else
        std::printf("hot_engine: reloaded (v%llu)\n", static_cast<unsigned long long>(module.current()->number));
    }
    {
      auto pin = module.pin(); // one version for the whole frame
      pin.get(step)(frame_ms / 1000.0);
      std::printf("frame %ld  kernel frames %ld  height %6.2f  bounces %d  version %d (v%llu)\n", frame,
                  pin.get(counted)(), pin.get(height)(), pin.get(bounces)(), pin.get(version)(),
                  static_cast<unsigned long long>(pin.version()));
    }
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(frame_ms));
  }
  return 0;
}
