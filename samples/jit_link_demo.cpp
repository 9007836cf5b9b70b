// jit_link_demo: what a JIT does with hotlink, step by step.
//
// 1. Build a kernel as LLVM IR in memory (as a JIT front end would).
// 2. Compile it to an object file in memory with LLVM's TargetMachine.
// 3. Link the bytes in-process into a shared object with hotlink.
// 4. dlopen the shared object, call the kernel, print the result.
// Each step's time is printed.
#include "hotlink/link.h"
#include "hotlink/link_service.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <cstdio>
#include <dlfcn.h>
#include <string>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// int32_t scale_add(int32_t x, int32_t y) { return x * 3 + y; }
// int scale_add_argv(void **args) {              // Halide-style entry point
//   *(int32_t *)args[2] = scale_add(*(int32_t *)args[0], *(int32_t *)args[1]);
//   return 0;
// }
std::unique_ptr<llvm::Module> build_kernel(llvm::LLVMContext &ctx) {
  auto m = std::make_unique<llvm::Module>("kernel", ctx);
  llvm::IRBuilder<> b(ctx);
  auto *i32 = b.getInt32Ty();
  auto *ptr = b.getPtrTy();
  auto *fn = llvm::Function::Create(llvm::FunctionType::get(i32, {i32, i32}, false),
                                    llvm::Function::ExternalLinkage, "scale_add", *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
  b.CreateRet(b.CreateAdd(b.CreateMul(fn->getArg(0), b.getInt32(3)), fn->getArg(1)));

  auto *argv = llvm::Function::Create(llvm::FunctionType::get(i32, {ptr}, false),
                                      llvm::Function::ExternalLinkage,
                                      "scale_add_argv", *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", argv));
  auto arg = [&](int i) {
    auto *slot = b.CreateConstGEP1_32(ptr, argv->getArg(0), i);
    return b.CreateLoad(ptr, slot);
  };
  auto *x = b.CreateLoad(i32, arg(0));
  auto *y = b.CreateLoad(i32, arg(1));
  b.CreateStore(b.CreateCall(fn, {x, y}), arg(2));
  b.CreateRet(b.getInt32(0));
  return m;
}

} // namespace

int main() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  auto t0 = Clock::now();
  llvm::LLVMContext ctx;
  auto module = build_kernel(ctx);
  if (llvm::verifyModule(*module, &llvm::errs()))
    return 1;
  auto t1 = Clock::now();

  std::string triple = llvm::sys::getDefaultTargetTriple();
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), err);
  if (!target) {
    std::fprintf(stderr, "demo: no LLVM target for %s: %s\n", triple.c_str(), err.c_str());
    return 1;
  }
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      llvm::Triple(triple), "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(llvm::Triple(triple));
  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      std::fprintf(stderr, "demo: the target cannot emit objects\n");
      return 1;
    }
    pm.run(*module);
  }
  auto t2 = Clock::now();

  hotlink::LinkService service;
  hotlink::LinkRequest req;
  req.inputs.push_back(hotlink::Input::memory("kernel.o", object.data(), object.size()));
  // No export list: hotlink finds the entry points (scale_add has a
  // scale_add_argv companion) and exports exactly those.
  std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  req.output_path = dir + "/hotlink-demo-" + std::to_string(getpid()) + ".so";
  // The first link pays one-time costs (lld's tables, page faults); a JIT
  // links many times per process, so the demo shows both.
  hotlink::LinkResult first = service.link(req);
  auto t3 = Clock::now();
  if (!first.ok()) {
    std::fprintf(stderr, "demo: %s\n", first.error->to_string().c_str());
    return 1;
  }
  hotlink::LinkResult warm = service.link(req);
  auto t4 = Clock::now();
  if (!warm.ok()) {
    std::fprintf(stderr, "demo: %s\n", warm.error->to_string().c_str());
    return 1;
  }

  void *h = dlopen(req.output_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "demo: dlopen failed: %s\n", dlerror());
    return 1;
  }
  auto scale_add = reinterpret_cast<int (*)(int, int)>(dlsym(h, "scale_add"));
  auto scale_add_argv = reinterpret_cast<int (*)(void **)>(dlsym(h, "scale_add_argv"));
  auto t5 = Clock::now();
  if (!scale_add || !scale_add_argv) {
    std::fprintf(stderr, "demo: an export is missing\n");
    return 1;
  }
  int direct = scale_add(14, 0);
  int x = 10, y = 12, out = 0;
  void *args[] = {&x, &y, &out};
  int rc = scale_add_argv(args);
  auto t6 = Clock::now();

  std::printf("hotlink demo (%s)\n", first.target.c_str());
  std::printf("  build IR                 %8.3f ms\n", ms(t0, t1));
  std::printf("  compile to object        %8.3f ms  (%zu bytes, in memory)\n",
              ms(t1, t2), object.size());
  std::printf("  link in-process (first)  %8.3f ms  (lld %.3f ms)\n", ms(t2, t3),
              first.timings.link_ms);
  std::printf("  link in-process (warm)   %8.3f ms  (lld %.3f ms) -> %s\n",
              ms(t3, t4), warm.timings.link_ms, req.output_path.c_str());
  std::printf("  dlopen + dlsym           %8.3f ms\n", ms(t4, t5));
  std::printf("  call                     %8.3f ms\n", ms(t5, t6));
  std::printf("scale_add(14, 0) = %d\n", direct);
  std::printf("scale_add_argv({10, 12}) = %d (status %d)\n", out, rc);
  dlclose(h);
  unlink(req.output_path.c_str());
  return direct == 42 && out == 42 && rc == 0 ? 0 : 1;
}
