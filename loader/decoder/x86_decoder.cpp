// libhotlink-x86-decoder-X.Y.so (decoder.h): LLVM's x86-64 disassembler
// and instruction analysis behind the decoder table. LLVM's static MC
// libraries are linked in and hidden: only the entry point is exported.
#include "loader/decoder/decoder.h"

#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstrAnalysis.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <mutex>

namespace hotlink::loader::decoder {

namespace {

class Decoder {
public:
  Decoder() {
    // x86-64's description and disassembler alone, not LLVM's code
    // generators.
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86Disassembler();
    llvm::Triple triple("x86_64-unknown-linux-gnu");
    std::string error;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target)
      return;
    mri_.reset(target->createMCRegInfo(triple));
    llvm::MCTargetOptions options;
    mai_.reset(target->createMCAsmInfo(*mri_, triple, options));
    sti_.reset(target->createMCSubtargetInfo(triple, "", ""));
    mii_.reset(target->createMCInstrInfo());
    if (!mri_ || !mai_ || !sti_ || !mii_)
      return;
    ctx_ = std::make_unique<llvm::MCContext>(triple, mai_.get(), mri_.get(), sti_.get());
    dis_.reset(target->createMCDisassembler(*sti_, *ctx_));
    mia_.reset(target->createMCInstrAnalysis(mii_.get()));
  }
  bool ready() const { return dis_ && mia_; }

  std::uint64_t first_hazard(const std::uint8_t *code, std::uint64_t size, std::string &why) const {
    std::lock_guard<std::mutex> lock(mu_); // one decoder for every module
    std::uint64_t hazard = size;
    for (std::uint64_t at = 0; at < size;) {
      llvm::MCInst inst;
      std::uint64_t length = 0;
      auto status = dis_->getInstruction(inst, length, llvm::ArrayRef<std::uint8_t>(code + at, size - at), at,
                                         llvm::nulls());
      if (status != llvm::MCDisassembler::Success || length == 0) {
        note(hazard, at, why, "its code cannot be decoded from byte " + std::to_string(at));
        break;
      }
      std::uint64_t to = 0;
      if (mia_->isCall(inst) && at + length < size)
        note(hazard, at + length, why, "a call returns to its byte " + std::to_string(at + length));
      else if (mia_->isBranch(inst) && mia_->evaluateBranch(inst, at, length, to) && to > 0 && to < size)
        note(hazard, to, why, "a branch of its own lands on its byte " + std::to_string(to));
      at += length;
    }
    return hazard;
  }

  bool padding(const std::uint8_t *code, std::uint64_t size, std::uint64_t room) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::uint64_t at = 0; at < size;) {
      llvm::MCInst inst;
      std::uint64_t length = 0;
      auto status = dis_->getInstruction(inst, length, llvm::ArrayRef<std::uint8_t>(code + at, room - at), at,
                                         llvm::nulls());
      if (status != llvm::MCDisassembler::Success || length == 0)
        return false;
      llvm::StringRef op = mii_->getName(inst.getOpcode());
      if (op != "INT3" && !op.starts_with("NOOP") && op != "NOP")
        return false;
      at += length;
    }
    return true;
  }

private:
  static void note(std::uint64_t &hazard, std::uint64_t at, std::string &why, const std::string &what) {
    if (at < hazard) {
      hazard = at;
      why = what;
    }
  }
  std::unique_ptr<llvm::MCRegisterInfo> mri_;
  std::unique_ptr<llvm::MCAsmInfo> mai_;
  std::unique_ptr<llvm::MCSubtargetInfo> sti_;
  std::unique_ptr<llvm::MCInstrInfo> mii_;
  std::unique_ptr<llvm::MCContext> ctx_;
  std::unique_ptr<llvm::MCDisassembler> dis_;
  std::unique_ptr<llvm::MCInstrAnalysis> mia_;
  mutable std::mutex mu_;
};

const Decoder &decoder() {
  static const Decoder d;
  return d;
}

std::uint64_t first_hazard(const std::uint8_t *code, std::uint64_t size, std::string &why) {
  return decoder().first_hazard(code, size, why);
}

bool padding(const std::uint8_t *code, std::uint64_t size, std::uint64_t room) {
  return decoder().padding(code, size, room);
}

} // namespace

} // namespace hotlink::loader::decoder

// The entry point: the table, or null when LLVM's x86 target could not be
// set up (the loader reports that as the module's error).
extern "C" __attribute__((visibility("default"))) const hotlink::loader::decoder::Table *hotlink_x86_decoder_v1() {
  using namespace hotlink::loader::decoder;
  static const Table table{HOTLINK_VERSION_STRING, first_hazard, padding};
  return decoder().ready() ? &table : nullptr;
}
