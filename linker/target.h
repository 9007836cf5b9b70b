// Internal. What hotlink knows about each supported target: its object
// format and arch, lld's flavor, and the names of the support symbols a
// self-contained link of that target may need.
#pragma once

#include "exports/error.h"
#include "exports/symbols.h"

#include <string>

namespace hotlink::detail {

struct TargetInfo {
  std::string triple; // normalized
  exports::Format format = exports::Format::Unknown;
  exports::Arch arch = exports::Arch::Unknown;
  std::string flavor;    // ld.lld, lld-link, ld64.lld, wasm-ld
  std::string extension; // .so, .dll, .dylib, .wasm
  // COFF for the GNU environment (*-w64-mingw32): linked through lld's
  // MinGW driver (ld.lld -m i386pep) with the runtime a mingw driver links.
  bool mingw = false;
};

// Resolves a triple ("" = host). Errors name the triple and list the
// supported ones.
Expected<TargetInfo> resolve_target(const std::string &triple);

} // namespace hotlink::detail
