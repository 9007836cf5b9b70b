// Internal. Linking COFF against a Windows sysroot: a mingw-w64 sysroot
// (lib<name>.a import libraries, e.g. /usr/x86_64-w64-mingw32) or an
// MSVC / Windows SDK layout (<name>.lib under um/<arch>, ucrt/<arch>,
// lib/<arch>, ...). Chooses the CRT's import library for the flavour, adds
// kernel32 and the libraries /DEFAULTLIB directives name when the sysroot
// has them, works out which library resolves each undefined symbol, and
// which directly called functions exist only as __imp_ entries (mingw-w64
// declares e.g. cosf that way) and need a jump thunk.
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"
#include "hotlink/link.h"
#include "linker/platforms/platform.h"

#include <string>
#include <vector>

namespace hotlink::detail {

struct WindowsLibraries {
  std::string layout;                    // "mingw-w64" or "msvc"
  std::string crt;                       // "ucrt" or "msvcrt"
  std::vector<std::string> lib_dirs;     // searched for -l names too
  std::vector<std::string> link;         // libraries for lld-link, in order
  std::vector<std::string> used;         // file names of those that resolve a symbol
  std::vector<std::string> thunks;       // symbols needing a jump thunk
  std::vector<Diagnostic> diagnostics;   // /DEFAULTLIB notes and warnings
  std::vector<std::string> fingerprints; // path, size and mtime of each library
};

// Where `-l NAME` is for a COFF link, in the order a mingw driver looks:
// NAME itself when it is a path; else in each -L folder, then the
// sysroot's library folders (when a sysroot is given), the first of
// libNAME.dll.a, NAME.dll.a, libNAME.a, NAME.lib, libNAME.lib (NAME alone
// when it already has an extension). Empty when none exists; `looked`
// receives the folders searched.
// The file names `-l NAME` may stand for, in the order they are tried.
std::vector<std::string> coff_library_candidates(const std::string &name);
std::string find_coff_library(const std::string &name, const std::vector<std::string> &library_paths,
                              const std::string &sysroot, exports::Arch arch,
                              std::vector<std::string> *looked = nullptr);

// "mingw-w64" or "msvc" for a sysroot with import libraries for `arch`,
// else empty.
std::string sysroot_layout(const std::string &sysroot, exports::Arch arch);

// The library of `sysroot` (a mingw-w64 or MSVC layout) whose symbol table
// defines `symbol` or its __imp_ entry, as a file name ("libmingwex.a");
// empty when none does. Reads every library's symbol table once per
// process (for an error message: only failing links pay it).
std::string sysroot_library_defining(const std::string &sysroot, exports::Arch arch, const std::string &symbol);

// `inputs[i]` was read from the input named `names[i]`. `provided` are
// symbols hotlink's support objects define.
Expected<WindowsLibraries> plan_windows_libraries(const TargetInfo &target,
                                                  const LinkRequest &request,
                                                  const std::vector<exports::ObjectInfo> &inputs,
                                                  const std::vector<std::string> &names,
                                                  const std::vector<std::string> &provided);

// Where Debian's mingw-w64 packages put the sysroot for `arch`
// ("/usr/x86_64-w64-mingw32", "/usr/i686-w64-mingw32",
// "/usr/aarch64-w64-mingw32"): the one spelling of every hint that names it.
std::string mingw_sysroot(exports::Arch arch);

} // namespace hotlink::detail
