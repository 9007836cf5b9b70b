#include "exports/targets.h"

#include "llvm/Support/TargetSelect.h"

#include <mutex>

namespace hotlink::exports {

void initialize_llvm_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmParsers();
    llvm::InitializeAllAsmPrinters();
    llvm::InitializeAllDisassemblers(); // forwarding decodes the code it patches
  });
}

} // namespace hotlink::exports
