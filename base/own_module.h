// Finding one of hotlink's own shared objects that a process loads only on
// first need (the linker, libhotlink-linker.so; clang's driver,
// libhotlink-driver.so; the x86 decoder and DWARF modules), so that a process that never needs it never maps
// it or what it links (libLLVM, libclang-cpp).
#pragma once

#include "hotlink/error.h"

#include <string>
#include <vector>

namespace hotlink {

struct OwnModule {
  std::string file;        // e.g. "libhotlink-linker-0.1.so"
  std::string env;         // a variable whose value, when set, is the one path tried
  const void *anchor;      // code of the library that asks: its directory is looked in first
  std::vector<std::string> dirs; // then these (the build's and the installation's lib/)
};

// Every place `m` is looked for, in order: $ENV alone when set; else the
// anchor's directory, its ../lib, then m.dirs.
std::vector<std::string> own_module_candidates(const OwnModule &m);

// The first candidate that exists, or an Internal error that names the
// module, every place looked and how to fix it.
Expected<std::string> find_own_module(const OwnModule &m, const std::string &why_needed);

// Finds `m` and loads it (RTLD_NOW: a missing dependency is reported here;
// RTLD_LOCAL: what it links stays its own; never closed), and returns its
// entry point `symbol`. An Internal error names the module and why: not
// found (find_own_module's error), refused by the dynamic loader (with
// `load_hint`), or without `symbol`.
struct OpenedModule {
  std::string path;
  void *entry = nullptr;
};
Expected<OpenedModule> open_own_module(const OwnModule &m, const std::string &why_needed, const char *symbol,
                                 const std::string &load_hint);

// The refusal of a module whose entry point answered but which is not this
// build's (another version of hotlink, or another build's types): names
// the module (`what`: "the linker module") and the variable that picks it.
Error foreign_module(const std::string &what, const std::string &path, const std::string &env);

} // namespace hotlink
