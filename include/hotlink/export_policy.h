// Export policies: which defined symbols a linked artifact exports.
//
// Contract: select_exports() sees every input's symbols and returns the
// exports in a stable order (by C name), each with its symbol-table
// spelling and whether it is data. It never guesses silently: a literal
// name that no input defines is an error naming it, and so is an
// entry-point policy that finds no entry point.
#pragma once

#include "hotlink/error.h"
#include "hotlink/symbols.h"

#include <string>
#include <vector>

namespace hotlink::exports {

struct HOTLINK_API ExportPolicy {
  enum class Mode {
    EntryPoints, // f exports itself and f<suffix> companions, for each f
                 // that has at least one companion defined (Halide's f,
                 // f_argv, f_metadata)
    All,         // every defined external symbol, minus the machinery that
                 // CMake's WINDOWS_EXPORT_ALL_SYMBOLS and lld's MinGW
                 // auto-export leave out
    List,        // only `names` (and what `include` matches)
    None,        // no export list at all: lld's default applies
  };
  Mode mode = Mode::EntryPoints;
  std::vector<std::string> suffixes = {"_argv", "_metadata"};
  std::vector<std::string> names;   // literal C names, exported in any mode
  std::vector<std::string> include; // globs over C names: also export these
  std::vector<std::string> exclude; // globs over C names: never export these
                                    // (literal names win)

  static ExportPolicy list(std::vector<std::string> names) {
    ExportPolicy p;
    p.mode = Mode::List;
    p.names = std::move(names);
    return p;
  }
  static ExportPolicy all() {
    ExportPolicy p;
    p.mode = Mode::All;
    return p;
  }
  static ExportPolicy none() {
    ExportPolicy p;
    p.mode = Mode::None;
    return p;
  }
};

HOTLINK_API const char *to_string(ExportPolicy::Mode m);
// "entry-points", "all", "list" or "none"; false for anything else.
HOTLINK_API bool parse_mode(const std::string &s, ExportPolicy::Mode &out);

struct HOTLINK_API Export {
  std::string name;   // the C-level name (what a .def or dlsym uses)
  std::string symbol; // its symbol-table spelling in the inputs
  bool data = false;  // a variable: COFF exports it with DATA
};

// The C-level name of a symbol-table name: Mach-O drops one leading '_';
// i386 COFF drops the '_' of cdecl/stdcall names and '@N' stdcall/fastcall
// decoration (_f@8 -> f, @f@8 -> f); C++ (MSVC '?...') names are kept.
HOTLINK_API std::string undecorate(Format format, Arch arch, const std::string &symbol);

// Applies `policy` to the defined external symbols of `inputs`.
HOTLINK_API Expected<std::vector<Export>> select_exports(const std::vector<ObjectInfo> &inputs,
                                             Format format, Arch arch,
                                             const ExportPolicy &policy);

// The export file each platform's linker reads, for `exports` (what
// select_exports() chose). A writer returns text whose meaning is exactly
// "export these names" (each name parses back as itself), or refuses with
// an error naming the first name it cannot write safely:
// - ELF version script: names are quoted ('*', '?', ';', '#', braces and
//   spaces are literal); refused: '"', '\\', control bytes.
// - Mach-O exported-symbols list: one '_'-prefixed name per line; refused:
//   whitespace, '#', the glob characters '*?[]', control bytes.
// - COFF .def: `library` is the DLL's file name (the LIBRARY line);
//   ordinals are assigned from `first_ordinal` in order when it is not 0;
//   DATA marks data symbols; refused: whitespace, ';', ',', '=', '"', a
//   leading '@', control bytes.
// - wasm: wasm-ld's --export=NAME flags; refused: control bytes, ','.
// Every format refuses empty names, non-ASCII bytes and names over 4096
// bytes.
HOTLINK_API Expected<std::string> write_version_script(const std::vector<Export> &exports);
HOTLINK_API Expected<std::string> write_macho_list(const std::vector<Export> &exports);
HOTLINK_API Expected<std::string> write_def(const std::vector<Export> &exports, const std::string &library,
                                            unsigned first_ordinal = 0);
HOTLINK_API Expected<std::vector<std::string>> write_wasm_flags(const std::vector<Export> &exports);

// The C++ demangling of a name (Itanium or MSVC), or the name itself.
HOTLINK_API std::string demangle(const std::string &name);

} // namespace hotlink::exports
