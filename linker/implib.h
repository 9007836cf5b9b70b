// Import libraries from a .def, for any DLL: link against a system or
// third-party DLL without its SDK.
//
// Contract: the .def is parsed with LLVM's module-definition parser (the
// one lld-link and llvm-lib use) and the import library is written with
// LLVM's import-library writer, as `llvm-lib /def:` does. A syntax error
// names the .def and the line. Nothing is written on error.
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink {

struct ImportLibrary {
  std::vector<std::uint8_t> bytes; // an archive of short import objects
  std::string dll_name;            // what the importing image will load
  std::vector<std::string> exports; // the names it declares, in .def order
};

// `machine`: x64 (amd64, x86_64), x86 (i386, i686) or arm64 (aarch64).
// `dll_name` overrides the .def's LIBRARY name (needed when it has none).
// `mingw`: read the .def as llvm-dlltool does (mingw-w64's own .def files):
// on i386, `ExitProcess@4` gets its C underscore (`_ExitProcess@4`); by
// default it is read as llvm-lib does, where it stays `ExitProcess@4`.
Expected<ImportLibrary> import_library_from_def(const std::string &def_text,
                                                const std::string &def_name,
                                                const std::string &machine,
                                                const std::string &dll_name = {},
                                                bool mingw = false);

} // namespace hotlink
