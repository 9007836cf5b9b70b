// What the samples' tiny JIT shares: LLVM IR text -> an object file in
// memory, with LLVM's TargetMachine, for any triple this LLVM can target.
#pragma once

#include "hotlink/error.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace samples {

// Compiles `ir` for `triple` at -O2 into an object file.
inline hotlink::Expected<std::vector<std::uint8_t>> compile_ir(const std::string &ir,
                                                               const std::string &triple) {
  llvm::InitializeAllTargetInfos();
  llvm::InitializeAllTargets();
  llvm::InitializeAllTargetMCs();
  llvm::InitializeAllAsmPrinters();
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  auto mod = llvm::parseIR(llvm::MemoryBufferRef(ir, "kernel.ll"), diag, ctx);
  if (!mod)
    return hotlink::make_error(hotlink::ErrorCode::InvalidInput,
                               "line " + std::to_string(diag.getLineNo()) + ": " +
                                   diag.getMessage().str(),
                               "kernel.ll");
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), err);
  if (!t)
    return hotlink::make_error(hotlink::ErrorCode::BadRequest, err, triple);
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      llvm::Triple(triple), "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Default));
  mod->setDataLayout(tm->createDataLayout());
  mod->setTargetTriple(llvm::Triple(triple));
  llvm::SmallVector<char, 0> obj;
  llvm::raw_svector_ostream os(obj);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return hotlink::make_error(hotlink::ErrorCode::Internal, "cannot emit an object", triple);
  pm.run(*mod);
  return std::vector<std::uint8_t>(obj.begin(), obj.end());
}

} // namespace samples
