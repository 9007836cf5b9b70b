// Internal. The runtime environment of a *-w64-mingw32 link: what
// `clang -shared -fuse-ld=lld --target=T` adds for a DLL (dllcrt2.o,
// crtbegin.o / crtend.o, libmingw32, libgcc and libgcc_s, libmoldname,
// libmingwex, the CRT's import library, the Win32 import libraries, and
// libstdc++ when the inputs use the C++ runtime), the entry point
// (DllMainCRTStartup) and the flags lld's MinGW driver reads (-m i386pep,
// --shared, --enable-auto-image-base). Computed by clang's driver, as for
// ELF (runtime.h); hotlink keeps no list of its own.
//
// Contract:
// - Computed once per (target, sysroot, C++ library) and process.
// - `found` is false when the driver's startup object does not exist (no
//   mingw-w64 toolchain for the target and no --sysroot): `missing` says
//   what was looked for; the planner then links bare and warns.
// - A --sysroot naming the <triple> folder of import libraries (as for the
//   -windows-msvc targets, /usr/x86_64-w64-mingw32) stands for the root
//   the driver expects (its parent, which holds lib/gcc/<triple>/ too).
// - Every -l of the line is resolved here, in the driver's search order
//   (coff_library_candidates in the line's -L folders), for the cache key's
//   fingerprints and LinkResult::runtime; lld's MinGW driver resolves the
//   same names the same way.
#pragma once

#include "hotlink/error.h"
#include "linker/platforms/elf/runtime.h"
#include "linker/platforms/platform.h"

#include <memory>
#include <string>
#include <vector>

namespace hotlink::detail {

struct MingwEnvironment {
  std::string triple, sysroot;
  CxxLibrary cxx = CxxLibrary::None;
  bool found = false;
  std::string missing;
  std::vector<std::string> before; // flags and startup objects: before the inputs
  std::vector<std::string> after;  // libraries and crtend.o: after them
  std::vector<std::string> lib_dirs;
  // What the line names that does not exist (an incomplete toolchain):
  // "-lstdc++", or a startup object's path.
  std::vector<std::string> unresolved;
  std::vector<std::string> summary;      // file names, in link order, each once
  std::vector<std::string> fingerprints; // "path size mtime" of each file
  double build_ms = 0;
};

Expected<std::shared_ptr<const MingwEnvironment>>
mingw_environment(const TargetInfo &target, const std::string &sysroot, CxxLibrary cxx);

// The Debian package that holds the mingw-w64 toolchain for `target`.
std::string mingw_package(const TargetInfo &target);

} // namespace hotlink::detail
