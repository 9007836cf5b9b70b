// Internal. Support objects: the few symbols a self-contained COFF link
// needs from the MSVC static CRT (_fltused, __chkstk), assembled in-process
// with LLVM MC. Each symbol is its own tiny object so that only what an
// input references is added.
#pragma once

#include "hotlink/error.h"
#include "linker/platforms/platform.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::detail {

// The support symbols known for a target, by symbol-table name.
std::vector<std::string> support_symbols(const TargetInfo &target);

// The object defining `symbol` for `target` (memoized: assembled once per
// process).
Expected<std::vector<std::uint8_t>> support_object(const TargetInfo &target,
                                                   const std::string &symbol);

// One object with a jump thunk `S: jmp *__imp_S` for each symbol (COFF
// x64, i386, arm64), for functions an import library offers only as __imp_.
Expected<std::vector<std::uint8_t>> import_thunks(const TargetInfo &target,
                                                  const std::vector<std::string> &symbols);

} // namespace hotlink::detail
