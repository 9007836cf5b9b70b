// Internal. The layouts of HOTLINK_STATE variables from an image's DWARF
// (state.cpp): LLVM's DWARF and object readers, which bring most of LLVM's
// Object library with them (its IR symbol tables included), so they live
// in a module of their own, libhotlink-dwarf-X.Y.so, loaded with dlopen
// on the first reload of an image that has state variables: a process
// that only loads, or reloads code without state, never maps it.
//
// Both sides come from one build and one C++ runtime (as the decoder
// module's, decoder/decoder.h): the table carries hotlink's version, and
// the loader refuses a module of another.
#pragma once

#include "hotlink/error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::loader::dwarf {

inline constexpr const char *kSymbol = "hotlink_dwarf_layouts_v1";
inline constexpr const char *kEnv = "HOTLINK_DWARF_MODULE";

struct Table {
  const char *version; // hotlink's
  // For each of `count` link-time addresses of variables, its type's
  // layout as state carry compares it (state_carry.h), or "" where the
  // debug info describes none. False, with `why`, when the image cannot
  // be read as an object file.
  bool (*layouts)(const std::uint8_t *bytes, std::size_t size, const std::uint64_t *addresses, std::size_t count,
                  std::vector<std::string> &out, std::string &why);
};

// The module's table, loaded once per process; a failure is kept, and
// every later call returns the same error (it names the module, the places
// looked and how to fix it).
Expected<const Table *> module();

using EntryFn = const Table *(*)();

} // namespace hotlink::loader::dwarf
