// Internal. x86-64 instruction decoding for forwarding (forward.cpp): how
// many first bytes of a function may be replaced by a jump, and whether
// bytes after it are padding. It is LLVM's x86 disassembler, which carries
// the whole x86 MC description (its tables alone are ~70 KiB of relocated
// data and ~400 KiB of code), so it lives in a module of its own,
// libhotlink-x86-decoder-X.Y.so, loaded with dlopen on the first forward:
// a process that only loads cached artifacts never maps or relocates it.
//
// Both sides come from one build and one C++ runtime (as the linker
// module's, linker/module/plugin.h): the table carries hotlink's version,
// and the loader refuses a module of another.
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>

namespace hotlink::loader::decoder {

inline constexpr const char *kSymbol = "hotlink_x86_decoder_v1";
inline constexpr const char *kEnv = "HOTLINK_DECODER_MODULE";

struct Table {
  const char *version; // hotlink's
  // The first offset in (0, size) that a branch of the function at `code`
  // lands on, or a call returns to; `size` when there is none. `why` says
  // which.
  std::uint64_t (*first_hazard)(const std::uint8_t *code, std::uint64_t size, std::string &why);
  // Whether `size` bytes at `code` are padding nothing runs: int3 or NOP
  // instructions (the last may run past `size`, up to `room`).
  bool (*padding)(const std::uint8_t *code, std::uint64_t size, std::uint64_t room);
};

// The module's table, loaded once per process; a failure is kept, and
// every later call returns the same error (it names the module, the places
// looked and how to fix it).
Expected<const Table *> x86();

using EntryFn = const Table *(*)();

} // namespace hotlink::loader::decoder
