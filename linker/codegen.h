// Internal. Support code made in-process: assembled with LLVM MC or
// compiled from LLVM IR with LLVM's code generator (platforms use it for
// the few objects a self-contained link needs).
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::detail {

// Assembles `source` for `triple` with LLVM MC into an object file. Errors
// carry the assembler's message.
Expected<std::vector<std::uint8_t>> assemble(const std::string &triple,
                                             const std::string &source);

// Compiles LLVM IR text for `triple` (the module's data layout is set from
// the target) into an object file with LLVM's code generator, without
// optimization: support code says exactly what it does. Errors carry the
// parser's message.
Expected<std::vector<std::uint8_t>> compile_ir(const std::string &triple,
                                               const std::string &ir, const std::string &name);

} // namespace hotlink::detail
