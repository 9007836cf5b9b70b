// offload_cache_cuda: what an offload runtime's CUDA plugin does when it
// loads a JIT'd kernel (LLVM offload's doJITPostProcessing for CUDA), with
// hotlink as the device linker and cache: LLVM's NVPTX back end turns the
// JIT's IR into PTX in memory; hotlink links it with nvJitLink into a
// cubin for one GPU, verified as the CUDA driver would load it, and kept
// for the next process.
//
//   offload_cache_cuda [CACHE_DIR [ARCH]]
//
// CACHE_DIR defaults to $XDG_CACHE_HOME/hotlink-offload-cuda; ARCH is an
// SM architecture (sm_90 by default).
//
// The first run links in-process and stores the cubin; a second run (a new
// process) is a cache hit and loads no nvJitLink. Each run also does the
// plugin's own way with the same PTX (write it to a file, spawn `ptxas
// -m64 -O3 --gpu-name ARCH`, read the cubin back), times it, and checks
// that both cubins have the same kernels with the same registers and
// shared memory. No GPU is needed. Exits 77 (skipped) without nvJitLink or
// ptxas.
#include "hotlink/cache.h"
#include "hotlink/link.h"
#include "hotlink/link_service.h"
#include "hotlink/verify_target.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<std::uint8_t>;
const char *kTriple = "nvptx64-nvidia-cuda";

// The kernel a JIT would emit: y[i] = a * x[i] + y[i].
const char *kKernel = R"IR(
target triple = "nvptx64-nvidia-cuda"

define ptx_kernel void @saxpy(float %a, ptr addrspace(1) %x, ptr addrspace(1) %y) {
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %px = getelementptr float, ptr addrspace(1) %x, i32 %i
  %vx = load float, ptr addrspace(1) %px
  %py = getelementptr float, ptr addrspace(1) %y, i32 %i
  %vy = load float, ptr addrspace(1) %py
  %ax = fmul float %a, %vx
  %r = fadd float %ax, %vy
  store float %r, ptr addrspace(1) %py
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
)IR";

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int fail(const std::string &what) {
  std::fprintf(stderr, "offload_cache_cuda: %s\n", what.c_str());
  return 1;
}

// The JIT's half: IR -> PTX with LLVM's NVPTX back end, in memory.
std::optional<Bytes> jit_ptx(const std::string &arch, std::string &error) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  auto mod = llvm::parseIR(llvm::MemoryBufferRef(kKernel, "saxpy.ll"), diag, ctx);
  if (!mod) {
    error = "saxpy.ll:" + std::to_string(diag.getLineNo()) + ": " + diag.getMessage().str();
    return std::nullopt;
  }
  llvm::Triple triple(kTriple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return std::nullopt;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, arch, "", llvm::TargetOptions(), std::nullopt));
  mod->setDataLayout(tm->createDataLayout());
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    error = "LLVM's NVPTX back end cannot emit PTX";
    return std::nullopt;
  }
  pm.run(*mod);
  return Bytes(buffer.begin(), buffer.end());
}

// The plugin's way: the PTX to a temporary file, `ptxas -m64 -O3
// --gpu-name ARCH --output-file OUT IN` as a process, the cubin read back.
std::optional<Bytes> assemble_like_the_plugin(const std::string &ptxas, const Bytes &ptx, const std::string &arch,
                                              std::string &error) {
  llvm::SmallString<128> in, out;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("offload-jit", "ptx", fd, in) ||
      llvm::sys::fs::createTemporaryFile("offload-jit", "cubin", out)) {
    error = "cannot create a temporary file";
    return std::nullopt;
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(reinterpret_cast<const char *>(ptx.data()), ptx.size());
  }
  std::vector<llvm::StringRef> argv = {ptxas, "-m64", "-O3", "--gpu-name", arch, "--output-file", out, in};
  int rc = llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, {}, 0, 0, &error);
  std::optional<Bytes> image;
  if (rc == 0) {
    if (auto buffer = llvm::MemoryBuffer::getFile(out))
      image = Bytes((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
  } else if (error.empty()) {
    error = ptxas + " exited with " + std::to_string(rc);
  }
  llvm::sys::fs::remove(in);
  llvm::sys::fs::remove(out);
  return image;
}

// "name: key=value ..." of each kernel.
std::vector<std::string> kernels(const hotlink::ArtifactDescription &d) {
  std::vector<std::string> out;
  for (const hotlink::ExportDetails &k : d.exports) {
    std::string line = k.name + ":";
    for (const auto &[key, value] : k.properties)
      line += " " + key + "=" + value;
    out.push_back(line);
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::string dir = argc > 1 ? argv[1] : "";
  if (dir.empty()) {
    const char *xdg = std::getenv("XDG_CACHE_HOME"), *home = std::getenv("HOME");
    dir = xdg ? std::string(xdg) + "/hotlink-offload-cuda"
              : std::string(home ? home : "/tmp") + "/.cache/hotlink-offload-cuda";
  }
  std::string arch = argc > 2 ? argv[2] : "sm_90";
  const char *cuda_home = std::getenv("CUDA_HOME");
  std::string ptxas = std::string(cuda_home ? cuda_home : "/usr/local/cuda") + "/bin/ptxas";
  auto cache = hotlink::cache::Cache::open({dir});
  if (!cache)
    return fail(cache.error().to_string());
  hotlink::ServiceConfig config;
  config.cache = *cache;
  hotlink::LinkService linker(std::move(config));

  // 1. The JIT hands over PTX.
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  std::optional<Bytes> ptx = jit_ptx(arch, error);
  if (!ptx)
    return fail(error);
  double jit_ms = ms_since(t0);

  // 2. hotlink: a hit, or an nvJitLink link that is verified and stored.
  hotlink::LinkRequest req;
  req.target = kTriple;
  req.gpu.processor = arch;
  req.inputs.push_back(hotlink::Input::memory("saxpy.ptx", *ptx));
  t0 = std::chrono::steady_clock::now();
  hotlink::LinkResult r = linker.link(req);
  double link_ms = ms_since(t0);
  if (!r.ok() && r.error->message.find("nvJitLink is not installed") != std::string::npos) {
    std::printf("offload_cache_cuda: skipped: %s\n", r.error->to_string().c_str());
    return 77;
  }
  if (!r.ok())
    return fail(r.error->to_string());

  // 3. Before the cubin goes to the driver: what the CUDA driver checks.
  hotlink::VerifyOptions verify;
  verify.processor = arch;
  verify.expected_exports = {"saxpy"};
  auto verified = hotlink::verify_for_target(r.artifact, "saxpy.cubin", kTriple, verify);
  if (!verified)
    return fail(verified.error().to_string());
  auto ours = hotlink::describe_artifact(r.artifact, "saxpy.cubin");
  if (!ours)
    return fail(ours.error().to_string());

  // 4. The plugin's way, on the same PTX, in the same run.
  if (!llvm::sys::fs::can_execute(ptxas)) {
    std::printf("offload_cache_cuda: skipped: no %s to compare with\n", ptxas.c_str());
    return 77;
  }
  t0 = std::chrono::steady_clock::now();
  std::optional<Bytes> theirs = assemble_like_the_plugin(ptxas, *ptx, arch, error);
  double plugin_ms = ms_since(t0);
  if (!theirs)
    return fail("the plugin's way: " + error);
  auto described = hotlink::describe_artifact(*theirs, "saxpy-ptxas.cubin");
  if (!described)
    return fail(described.error().to_string());

  std::printf("offload_cache_cuda: saxpy for %s, %zu bytes of PTX from the JIT in %.2f ms\n", arch.c_str(),
              ptx->size(), jit_ms);
  if (r.cache == hotlink::CacheUse::Hit)
    std::printf("hotlink: cache hit, a %zu-byte cubin in %.2f ms (no nvJitLink loaded)\n", r.artifact.size(),
                link_ms);
  else
    std::printf("hotlink: cache miss, linked in-process by nvJitLink in %.2f ms and stored in %s; run again for a "
                "cache hit\n",
                link_ms, (*cache)->config().dir.c_str());
  std::vector<std::string> a = kernels(*ours), b = kernels(*described);
  for (const std::string &k : a)
    std::printf("  kernel %s\n", k.c_str());
  bool same = a == b;
  std::printf("the plugin's way (write the PTX, spawn ptxas, read the cubin): %.2f ms, %.1fx hotlink's; "
              "same kernels and resources: %s\n",
              plugin_ms, plugin_ms / link_ms, same ? "yes" : "NO");
  return same ? 0 : 1;
}
