// Structural checks of artifacts for targets this host cannot load.
//
// Contract: check_macho_dylib() reads a Mach-O image and never maps it. It
// refuses, naming the artifact and the load command, what a macOS dynamic
// loader would refuse or could not bind:
// - not a 64-bit MH_DYLIB for x86_64 or arm64;
// - a segment outside the file, or __TEXT not starting at offset 0;
// - no LC_ID_DYLIB (or an empty install name);
// - no LC_BUILD_VERSION (nor LC_VERSION_MIN_MACOSX) for macOS;
// - imports with no way to bind them: neither LC_DYLD_CHAINED_FIXUPS nor
//   LC_DYLD_INFO(_ONLY);
// - arm64 without LC_CODE_SIGNATURE (the kernel refuses unsigned arm64
//   code), or a signature whose CodeDirectory does not cover the file up to
//   the signature or whose page hashes (SHA-256) do not match the bytes.
// What it does not check: that the imports exist on a real macOS, that the
// code runs, or any signature beyond the ad-hoc code directory.
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink {

struct MachOStructure {
  std::string arch;          // "x86_64" or "arm64"
  std::string install_name;  // LC_ID_DYLIB
  std::string min_os;        // e.g. "13.0"
  bool chained_fixups = false;
  bool signed_adhoc = false;  // LC_CODE_SIGNATURE with matching page hashes
  std::uint32_t signed_pages = 0;
};

Expected<MachOStructure> check_macho_dylib(const std::vector<std::uint8_t> &bytes,
                                           const std::string &name);

} // namespace hotlink
