// demangle() (export_policy.h): a file of its own, because LLVM's
// demanglers (Itanium, MSVC, Rust, D) are ~50 KiB of relocated tables that
// the runtime, which compiles export_policy.h's other functions in, should
// not relocate at every start; libhotlink.so's demangle() asks the linker
// module (linker/module/client.cpp).
#include "hotlink/export_policy.h"

#include "llvm/Demangle/Demangle.h"

namespace hotlink::exports {

std::string demangle(const std::string &name) { return llvm::demangle(name); }

} // namespace hotlink::exports
