// pipeline_cache: the Halide-style flow, "hash the pipeline and target; if
// it is on disk load it, else compile and store it", with a tiny JIT of our
// own (LLVM IR -> object in memory -> hotlink link -> cache -> loader).
//
//   pipeline_cache [CACHE_DIR]
//
// The first run compiles, links and stores; a second run (a new process) is
// a hit: nothing is compiled or linked, and it says how much time that saved.
#include "hotlink/cache.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/cache_entry.h"
#include "hotlink/load.h"
#include "samples/jit.h"

#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace {

// The "pipeline": out[i] = in[i] * s + 1, with the argv entry point that
// Halide-style callers use. Its text (plus target and options) is its
// identity.
const char *kPipeline = R"IR(
define void @scale(ptr %in, ptr %out, i32 %n, float %s) {
entry:
  %empty = icmp sle i32 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %pi = getelementptr float, ptr %in, i32 %i
  %x = load float, ptr %pi
  %y = fmul float %x, %s
  %z = fadd float %y, 1.0
  %po = getelementptr float, ptr %out, i32 %i
  store float %z, ptr %po
  %next = add i32 %i, 1
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}

define i32 @scale_argv(ptr %args) {
  %p0 = load ptr, ptr %args
  %a1 = getelementptr ptr, ptr %args, i32 1
  %p1 = load ptr, ptr %a1
  %a2 = getelementptr ptr, ptr %args, i32 2
  %p2 = load ptr, ptr %a2
  %a3 = getelementptr ptr, ptr %args, i32 3
  %p3 = load ptr, ptr %a3
  %in = load ptr, ptr %p0
  %out = load ptr, ptr %p1
  %n = load i32, ptr %p2
  %s = load float, ptr %p3
  call void @scale(ptr %in, ptr %out, i32 %n, float %s)
  ret i32 0
}
)IR";

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace

int main(int argc, char **argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  if (dir.empty()) {
    const char *xdg = std::getenv("XDG_CACHE_HOME"), *home = std::getenv("HOME");
    dir = xdg ? std::string(xdg) + "/hotlink-pipelines"
              : std::string(home ? home : "/tmp") + "/.cache/hotlink-pipelines";
  }
  auto opened = hotlink::cache::Cache::open({dir});
  if (!opened) {
    std::fprintf(stderr, "pipeline_cache: %s\n", opened.error().to_string().c_str());
    return 1;
  }
  std::shared_ptr<hotlink::cache::Cache> cache = opened.value();

  // The identity of the build, known before compiling anything.
  const std::string triple = llvm::sys::getDefaultTargetTriple();
  hotlink::cache::Key key = hotlink::cache::Key::of_caller(
      std::string("pipeline_cache/scale\n") + kPipeline + "\ntarget=" + triple + "\nopt=O2");

  auto t0 = std::chrono::steady_clock::now();
  double compile_ms = 0, link_ms = 0;
  hotlink::LinkService linker;
  auto fetched = cache->get_or_build(key, [&]() -> hotlink::Expected<hotlink::cache::Artifact> {
    auto tc = std::chrono::steady_clock::now();
    auto obj = samples::compile_ir(kPipeline, triple);
    if (!obj)
      return obj.take_error();
    compile_ms = ms_since(tc);
    hotlink::LinkRequest req;
    req.inputs.push_back(hotlink::Input::memory("scale.o", std::move(obj.value())));
    req.output_path = ""; // bytes back; the cache stores them
    hotlink::LinkResult r = linker.link(req);
    if (!r.ok())
      return *r.error;
    link_ms = r.timings.total_ms;
    hotlink::cache::Artifact a;
    a.bytes = std::move(r.artifact);
    a.name = "scale.so";
    a.target = r.target;
    a.exports = r.exports;
    a.linker_version = "lld (hotlink)";
    return a;
  });
  if (!fetched) {
    std::fprintf(stderr, "pipeline_cache: %s\n", fetched.error().to_string().c_str());
    return 1;
  }
  for (const std::string &w : fetched->warnings)
    std::fprintf(stderr, "warning: %s\n", w.c_str());

  // Loaded through the loader with the manifest's hash: bytes changed after
  // they were stored are refused before anything is mapped.
  auto lib = hotlink::loader::load(fetched->entry);
  if (!lib) {
    std::fprintf(stderr, "pipeline_cache: %s\n", lib.error().to_string().c_str());
    return 1;
  }
  double ready_ms = ms_since(t0);
  auto scale_argv = reinterpret_cast<int (*)(void **)>(lib.value()->symbol("scale_argv"));
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  float *pin = in, *pout = out;
  int n = 4;
  float s = 2.5f;
  void *args[] = {&pin, &pout, &n, &s};
  if (!scale_argv || scale_argv(args) != 0) {
    std::fprintf(stderr, "pipeline_cache: scale_argv is missing or failed\n");
    return 1;
  }
  std::printf("scale(1 2 3 4, 2.5) + 1 = %g %g %g %g\n", out[0], out[1], out[2], out[3]);
  const hotlink::cache::Manifest &m = fetched->entry.manifest;
  if (fetched->hit)
    std::printf("cache hit: key %.16s..., ready in %.2f ms; compiling and linking it took "
                "%.2f ms when it was stored, so this saved %.2f ms\n",
                key.hex().c_str(), ready_ms, m.build_ms, m.build_ms - ready_ms);
  else
    std::printf("cache miss: compiled in %.2f ms, linked in %.2f ms, stored as %.16s... "
                "(%llu bytes) in %s; run again for a hit\n",
                compile_ms, link_ms, key.hex().c_str(),
                static_cast<unsigned long long>(m.size), cache->config().dir.c_str());
  return out[3] == 11.0f ? 0 : 1;
}
