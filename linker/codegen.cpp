// Assembling and compiling support code in-process (LLVM MC and CodeGen).
#include "linker/codegen.h"

#include "exports/targets.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCAsmBackend.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCCodeEmitter.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCObjectFileInfo.h"
#include "llvm/MC/MCObjectWriter.h"
#include "llvm/MC/MCParser/MCAsmParser.h"
#include "llvm/MC/MCParser/MCTargetAsmParser.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCStreamer.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <map>
#include <mutex>

namespace hotlink::detail {

Expected<std::vector<std::uint8_t>> assemble(const std::string &triple_name,
                                             const std::string &source) {
  exports::initialize_llvm_targets(); // once, guarded: lld registers them too
  llvm::Triple triple(triple_name);
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return make_error(ErrorCode::Internal,
                      "no LLVM target for '" + triple_name + "': " + err);
  llvm::MCTargetOptions opts;
  std::unique_ptr<llvm::MCRegisterInfo> mri(t->createMCRegInfo(triple));
  std::unique_ptr<llvm::MCAsmInfo> mai(t->createMCAsmInfo(*mri, triple, opts));
  std::unique_ptr<llvm::MCInstrInfo> mii(t->createMCInstrInfo());
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      t->createMCSubtargetInfo(triple, "", ""));
  if (!mri || !mai || !mii || !sti)
    return make_error(ErrorCode::Internal,
                      "LLVM MC is incomplete for '" + triple_name + "'");

  std::string diags;
  llvm::raw_string_ostream diag_os(diags);
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, "support.s"),
                        llvm::SMLoc());
  sm.setDiagHandler(
      [](const llvm::SMDiagnostic &d, void *os) {
        d.print("support.s", *static_cast<llvm::raw_ostream *>(os), false);
      },
      &diag_os);
  llvm::MCContext ctx(triple, mai.get(), mri.get(), sti.get(), &sm, &opts);
  std::unique_ptr<llvm::MCObjectFileInfo> mofi(
      t->createMCObjectFileInfo(ctx, /*PIC=*/false));
  ctx.setObjectFileInfo(mofi.get());

  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  std::unique_ptr<llvm::MCAsmBackend> mab(t->createMCAsmBackend(*sti, *mri, opts));
  std::unique_ptr<llvm::MCCodeEmitter> mce(t->createMCCodeEmitter(*mii, ctx));
  if (!mab || !mce)
    return make_error(ErrorCode::Internal,
                      "LLVM MC has no assembler backend for '" + triple_name + "'");
  auto writer = mab->createObjectWriter(os);
  std::unique_ptr<llvm::MCStreamer> streamer(t->createMCObjectStreamer(
      triple, ctx, std::move(mab), std::move(writer), std::move(mce), *sti));
  std::unique_ptr<llvm::MCAsmParser> parser(
      llvm::createMCAsmParser(sm, ctx, *streamer, *mai));
  std::unique_ptr<llvm::MCTargetAsmParser> tap(
      t->createMCAsmParser(*sti, *parser, *mii, opts));
  if (!tap)
    return make_error(ErrorCode::Internal,
                      "LLVM has no assembly parser for '" + triple_name + "'");
  parser->setTargetParser(*tap);
  if (parser->Run(/*NoInitialTextSection=*/false)) {
    diag_os.flush();
    return make_error(ErrorCode::Internal,
                      "assembling a support object failed: " + diags);
  }
  streamer->finish();
  return std::vector<std::uint8_t>(out.begin(), out.end());
}

Expected<std::vector<std::uint8_t>> compile_ir(const std::string &triple_name, const std::string &ir,
                                               const std::string &name) {
  exports::initialize_llvm_targets();
  llvm::Triple triple(triple_name);
  std::string err;
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t)
    return make_error(ErrorCode::Internal, "no LLVM target for '" + triple_name + "': " + err);
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(triple, "", "", llvm::TargetOptions(),
                                                                 std::nullopt, std::nullopt,
                                                                 llvm::CodeGenOptLevel::None));
  if (!tm)
    return make_error(ErrorCode::Internal, "LLVM has no code generator for '" + triple_name + "'");
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir, diag, ctx);
  if (!m) {
    std::string text;
    llvm::raw_string_ostream os(text);
    diag.print(name.c_str(), os, false);
    return make_error(ErrorCode::Internal, "support code " + name + " does not parse: " + text);
  }
  m->setTargetTriple(triple);
  m->setDataLayout(tm->createDataLayout());
  std::string broken;
  llvm::raw_string_ostream broken_os(broken);
  if (llvm::verifyModule(*m, &broken_os))
    return make_error(ErrorCode::Internal, "support code " + name + " is invalid: " + broken);
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return make_error(ErrorCode::Internal, "LLVM cannot emit objects for '" + triple_name + "'");
  pm.run(*m);
  return std::vector<std::uint8_t>(out.begin(), out.end());
}

} // namespace hotlink::detail
