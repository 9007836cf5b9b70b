// offload_cache: what an offload runtime's AMDGPU plugin does when it loads
// a JIT'd kernel (LLVM offload's doJITPostProcessing), with hotlink as the
// device linker and cache: the device bitcode the JIT produced, in memory,
// becomes a code object for one GPU, verified as the HSA loader would
// before it is handed to the driver, and kept for the next process.
//
//   offload_cache [CACHE_DIR [PROCESSOR]]
//
// CACHE_DIR defaults to $XDG_CACHE_HOME/hotlink-offload (~/.cache/...);
// PROCESSOR is an AMD target ID (gfx90a by default).
//
// The first run links in-process (LTO: the bitcode is compiled there) and
// stores the image; a second run (a new process) is a cache hit and
// compiles nothing. Each run also does the plugin's own way on the same
// bitcode (write it to a file, spawn ld.lld, read the image back), times
// it, and checks that both images are the same bytes. No GPU is needed.
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/verify_target.h"
#include "hotlink/cache.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;
const char *kTriple = "amdgcn-amd-amdhsa";

// The kernel a JIT would emit: y[i] = a * x[i] + y[i], for code object
// version 5 (what offload builds by default).
const char *kKernel = R"IR(
target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @saxpy(float %a, ptr addrspace(1) %x, ptr addrspace(1) %y) {
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr float, ptr addrspace(1) %x, i32 %i
  %vx = load float, ptr addrspace(1) %px
  %py = getelementptr float, ptr addrspace(1) %y, i32 %i
  %vy = load float, ptr addrspace(1) %py
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %vy
  store float %r, ptr addrspace(1) %py
  ret void
}

declare i32 @llvm.amdgcn.workitem.id.x()

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
)IR";

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int fail(const std::string &what) {
  std::fprintf(stderr, "offload_cache: %s\n", what.c_str());
  return 1;
}

// The JIT's half: IR -> bitcode, in memory.
std::optional<Bytes> jit_bitcode(std::string &error) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  auto mod = llvm::parseIR(llvm::MemoryBufferRef(kKernel, "saxpy.ll"), diag, ctx);
  if (!mod) {
    error = "saxpy.ll:" + std::to_string(diag.getLineNo()) + ": " + diag.getMessage().str();
    return std::nullopt;
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::WriteBitcodeToFile(*mod, os);
  return Bytes(buffer.begin(), buffer.end());
}

// The plugin's way: the input to a temporary file, `lld -flavor gnu
// --no-undefined -shared -plugin-opt=mcpu=X -o OUT IN` as a process, the
// image read back, the files removed.
std::optional<Bytes> link_like_the_plugin(const Bytes &bitcode, const std::string &processor, std::string &error) {
  llvm::SmallString<128> in, out;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("offload-jit", "bc", fd, in) ||
      llvm::sys::fs::createTemporaryFile("offload-jit", "hsaco", out)) {
    error = "cannot create a temporary file";
    return std::nullopt;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(bitcode.data()), bitcode.size());
  }
  std::string mcpu = "-plugin-opt=mcpu=" + processor;
  std::vector<llvm::StringRef> argv = {HOTLINK_SAMPLE_LD_LLD, "--no-undefined", "-shared", mcpu, "-o", out, in};
  int rc = llvm::sys::ExecuteAndWait(HOTLINK_SAMPLE_LD_LLD, argv, std::nullopt, {}, 0, 0, &error);
  std::optional<Bytes> image;
  if (rc == 0) {
    if (auto buffer = llvm::MemoryBuffer::getFile(out))
      image = Bytes((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
    else
      error = "cannot read " + std::string(out);
  } else if (error.empty()) {
    error = std::string(HOTLINK_SAMPLE_LD_LLD) + " exited with " + std::to_string(rc);
  }
  llvm::sys::fs::remove(in);
  llvm::sys::fs::remove(out);
  return image;
}

std::string property(const std::vector<std::pair<std::string, std::string>> &properties, const std::string &key) {
  for (const auto &[k, v] : properties)
    if (k == key)
      return v;
  return "?";
}

void print_kernels(const hotlink::ArtifactDescription &d) {
  for (const hotlink::ExportDetails &k : d.exports) {
    std::printf("  kernel %s:", k.name.c_str());
    for (const auto &[key, value] : k.properties)
      std::printf(" %s=%s", key.c_str(), value.c_str());
    std::printf("\n");
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  if (dir.empty()) {
    const char *xdg = std::getenv("XDG_CACHE_HOME"), *home = std::getenv("HOME");
    dir = xdg ? std::string(xdg) + "/hotlink-offload" : std::string(home ? home : "/tmp") + "/.cache/hotlink-offload";
  }
  std::string processor = argc > 2 ? argv[2] : "gfx90a";
  auto cache = hotlink::cache::Cache::open({dir});
  if (!cache)
    return fail(cache.error().to_string());
  hotlink::ServiceConfig config;
  config.cache = *cache;
  hotlink::LinkService linker(std::move(config));

  // 1. The JIT hands over device bitcode.
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  std::optional<Bytes> bitcode = jit_bitcode(error);
  if (!bitcode)
    return fail(error);
  double jit_ms = ms_since(t0);

  // 2. hotlink: a hit, or an in-process LTO link that is verified and stored.
  hotlink::LinkRequest req;
  req.target = kTriple;
  req.gpu.processor = processor;
  req.inputs.push_back(hotlink::Input::memory("saxpy.bc", *bitcode));
  t0 = std::chrono::steady_clock::now();
  hotlink::LinkResult r = linker.link(req);
  double link_ms = ms_since(t0);
  if (!r.ok())
    return fail(r.error->to_string());

  // 3. Before the image goes to the driver: what the HSA loader checks.
  t0 = std::chrono::steady_clock::now();
  hotlink::VerifyOptions verify;
  verify.processor = processor;
  verify.expected_exports = {"saxpy"};
  auto verified = hotlink::verify_for_target(r.artifact, "saxpy.hsaco", kTriple, verify);
  double verify_ms = ms_since(t0);
  if (!verified)
    return fail(verified.error().to_string());
  auto described = hotlink::describe_artifact(r.artifact, "saxpy.hsaco");
  if (!described)
    return fail(described.error().to_string());

  // 4. The plugin's way, on the same bitcode, in the same run.
  t0 = std::chrono::steady_clock::now();
  std::optional<Bytes> theirs = link_like_the_plugin(*bitcode, processor, error);
  double plugin_ms = ms_since(t0);
  if (!theirs)
    return fail("the plugin's way: " + error);

  std::printf("offload_cache: saxpy for %s, %zu bytes of device bitcode from the JIT in %.2f ms\n",
              processor.c_str(), bitcode->size(), jit_ms);
  if (r.cache == hotlink::CacheUse::Hit)
    std::printf("hotlink: cache hit, a %zu-byte code object in %.2f ms (nothing compiled or linked)\n",
                r.artifact.size(), link_ms);
  else
    std::printf("hotlink: cache miss, linked in-process (LTO) in %.2f ms and stored in %s; run again for a "
                "cache hit\n",
                link_ms, (*cache)->config().dir.c_str());
  std::printf("verified as the HSA loader would in %.2f ms: target ID %s, code object version %s\n", verify_ms,
              property(described->properties, "target_id").c_str(),
              property(described->properties, "code_object_version").c_str());
  print_kernels(*described);
  bool same = *theirs == r.artifact;
  std::printf("the plugin's way (write the bitcode, spawn ld.lld, read the image): %.2f ms, %.1fx hotlink's; "
              "same bytes: %s\n",
              plugin_ms, plugin_ms / link_ms, same ? "yes" : "NO");
  return same ? 0 : 1;
}
