// halide_cache: a persistent cache of compiled Halide pipelines (Halide's
// "serializing JIT compilation" request), with Halide's C++ API (Debian's
// libhalide14-0-dev) in the same process as hotlink.
//
//   build/bin/halide_cache [CACHE_DIR]     (default $XDG_CACHE_HOME/hotlink)
//
// The key is known before compiling: the pipeline's version (bump
// kPipelineVersion when define_blur changes), Halide's version and the
// target. On a miss, Halide compiles the pipeline to an object, hotlink
// links it in-process and the cache stores it; on a hit, the stored shared
// object is loaded and neither runs. The pipeline is then called through
// blur_argv with real buffers and compared with Halide's own realize().
//
// Halide 14 runs on LLVM 14 and hotlink on LLVM 22: both libraries version
// their symbols (LLVM_14, LLVM_22), so each finds its own in one process.
#include "Halide.h"

#include "hotlink/cache.h"
#include "hotlink/link_service.h"
#include "hotlink/cache_entry.h"
#include "hotlink/load.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

constexpr int kWidth = 640, kHeight = 480;
constexpr const char *kPipelineVersion = "blur-3x3-v1";

// A 3x3 box blur of a 16-bit image: parallel over rows, vectorized.
struct Blur {
  Halide::ImageParam input{Halide::UInt(16), 2, "input"};
  Halide::Func blur{"blur"};
  Blur() {
    Halide::Var x("x"), y("y"), xi("xi"), yi("yi");
    Halide::Func clamped = Halide::BoundaryConditions::repeat_edge(input);
    Halide::Func blur_x("blur_x");
    blur_x(x, y) = (clamped(x - 1, y) + clamped(x, y) + clamped(x + 1, y)) / 3;
    blur(x, y) = (blur_x(x, y - 1) + blur_x(x, y) + blur_x(x, y + 1)) / 3;
    blur.tile(x, y, xi, yi, 64, 32).vectorize(xi, 8).parallel(y);
    blur_x.compute_at(blur, x).vectorize(x, 8);
  }
};

// The host, without the feature Halide 14 assumes on CPUs that report most
// of AVX-512 but not AVX512-FP16 (an illegal instruction otherwise).
Halide::Target target() {
  return Halide::get_host_target().without_feature(Halide::Target::AVX512_SapphireRapids);
}

std::string cache_dir(int argc, char **argv) {
  if (argc > 1)
    return argv[1];
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/hotlink";
  const char *home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/hotlink";
}

uint16_t pixel(int i, int j) { return static_cast<uint16_t>((i * 7 + j * 13 + (i * j) % 31) % 4096); }

// A miss: Halide compiles the pipeline to an object, hotlink links it.
hotlink::Expected<hotlink::cache::Artifact> compile_and_link(Blur &pipeline, const Halide::Target &t,
                                                              double &compile_ms, double &link_ms) {
  char dir[] = "/tmp/halide-cache-XXXXXX";
  if (!::mkdtemp(dir))
    return hotlink::make_error(hotlink::ErrorCode::OutputError, "cannot make a scratch directory", "/tmp");
  std::string obj = std::string(dir) + "/blur.o";
  auto t0 = Clock::now();
  pipeline.blur.compile_to_object(obj, {pipeline.input}, "blur", t);
  compile_ms = ms_since(t0);
  std::ifstream in(obj, std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  ::unlink(obj.c_str());
  ::rmdir(dir);

  auto t1 = Clock::now();
  hotlink::LinkRequest req;
  req.inputs.push_back(hotlink::Input::memory("blur.o", std::move(bytes)));
  hotlink::LinkService linker;
  auto artifact = hotlink::cache_artifact(linker.link(req));
  link_ms = ms_since(t1);
  return artifact;
}

} // namespace

int main(int argc, char **argv) {
  Blur pipeline;
  Halide::Target t = target();
  std::string key = std::string("halide:") + kPipelineVersion + ":halide-" + HOTLINK_HALIDE_VERSION + ":" +
                    t.to_string();

  hotlink::cache::Config config;
  config.dir = cache_dir(argc, argv);
  auto cache = hotlink::cache::Cache::open(config);
  if (!cache) {
    std::fprintf(stderr, "halide_cache: %s\n", cache.error().to_string().c_str());
    return 2;
  }

  double compile_ms = 0, link_ms = 0;
  auto t0 = Clock::now();
  auto fetched = cache.value()->get_or_build(hotlink::cache::Key::of_caller(key), [&] {
    return compile_and_link(pipeline, t, compile_ms, link_ms);
  });
  if (!fetched) {
    std::fprintf(stderr, "halide_cache: %s\n", fetched.error().to_string().c_str());
    return 1;
  }
  const hotlink::cache::Entry &entry = fetched->entry;
  auto library = hotlink::loader::load(entry, cache.value()->trust());
  if (!library) {
    std::fprintf(stderr, "halide_cache: %s\n", library.error().to_string().c_str());
    return 1;
  }
  double ready_ms = ms_since(t0);
  if (fetched->hit)
    std::printf("cache hit: loaded in %.2f ms; compiling and linking took %.1f ms when it was built, so this start "
                "saved %.1f ms\n",
                ready_ms, entry.manifest.build_ms, entry.manifest.build_ms - ready_ms);
  else
    std::printf("cache miss: Halide compiled in %.1f ms, hotlink linked in %.2f ms, stored and loaded in %.1f ms in "
                "all\n",
                compile_ms, link_ms, ready_ms);
  std::printf("  %s (%zu bytes) in %s\n", entry.artifact.name.c_str(), entry.artifact.bytes.size(),
              config.dir.c_str());

  // Call it through blur_argv: one pointer per argument, each a
  // halide_buffer_t (the input, then the output).
  Halide::Buffer<uint16_t> input(kWidth, kHeight), output(kWidth, kHeight);
  for (int j = 0; j < kHeight; ++j)
    for (int i = 0; i < kWidth; ++i)
      input(i, j) = pixel(i, j);
  auto blur_argv = reinterpret_cast<int (*)(void **)>(library.value()->symbol("blur_argv"));
  void *args[] = {input.raw_buffer(), output.raw_buffer()};
  auto t1 = Clock::now();
  int rc = blur_argv(args);
  std::printf("  blur_argv: %d in %.2f ms\n", rc, ms_since(t1));

  // Halide's own answer, JIT-compiled (LLVM 14) in this process.
  pipeline.input.set(input);
  Halide::Buffer<uint16_t> expected = pipeline.blur.realize({kWidth, kHeight}, t);
  int wrong = 0;
  for (int j = 0; j < kHeight; ++j)
    for (int i = 0; i < kWidth; ++i)
      wrong += output(i, j) != expected(i, j);
  std::printf("  %dx%d pixels, %d differ from Halide's realize()\n", kWidth, kHeight, wrong);
  return rc == 0 && wrong == 0 ? 0 : 1;
}
