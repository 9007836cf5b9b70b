// Export-list writers, one per format, and .def reading.
//
// Contract: a writer either returns text whose meaning is exactly "export
// these names" (each name parses back as itself), or refuses with an error
// naming the first name it cannot write safely (exports::check_name, whose
// rules per format are:
// - ELF version script: names are quoted (so '*', '?', ';', '#', braces and
//   spaces are literal); a name with '"', '\\' or a control byte is refused.
// - Mach-O exported-symbols list: one '_'-prefixed name per line; refused:
//   whitespace, '#', glob characters '*?[]', control bytes.
// - COFF .def: refused: whitespace, ';', ',', '=', '"', a leading '@',
//   control bytes. DATA marks data symbols.
// - wasm --export flags: refused: control bytes, ','.
// All: empty names, non-ASCII bytes and names over kMaxNameLength are refused.)
#pragma once

#include "hotlink/error.h"
#include "exports/names.h"
#include "hotlink/export_policy.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::exports {

Expected<std::string> write_version_script(const std::vector<Export> &exports);
// An ELF dynamic list ({ "name"; ... };): with it, lld keeps exactly these
// exports preemptible (interposable) and binds every other one inside the
// artifact.
Expected<std::string> write_dynamic_list(const std::vector<Export> &exports);
Expected<std::string> write_macho_list(const std::vector<Export> &exports);
// `library` is the DLL's file name (LIBRARY line); ordinals are assigned
// from `first_ordinal` in order when it is non-zero.
Expected<std::string> write_def(const std::vector<Export> &exports,
                                const std::string &library,
                                unsigned first_ordinal = 0);
Expected<std::vector<std::string>> write_wasm_flags(const std::vector<Export> &exports);

struct DefExport {
  std::string name;          // exported name
  std::string internal;      // "name=internal": the symbol it refers to
  unsigned ordinal = 0;      // 0 = none
  bool data = false, noname = false, priv = false;
};

struct DefFile {
  std::string library;
  std::vector<DefExport> exports;
};

// Parses a module-definition file with LLVM's parser. Errors name `input`.
Expected<DefFile> parse_def(const std::string &text, Arch arch, const std::string &input);

// The 1-based line at which LLVM's module-definition parser first fails on
// `text` (its errors do not say where): the first line whose prefix of the
// file does not parse. 0 if the whole text parses.
std::size_t def_error_line(const std::string &text, Arch arch);

struct DefMerge {
  std::vector<Export> exports;       // the merged list
  std::vector<std::string> conflicts; // one sentence per conflict
};

// Merges a user's .def into the synthesized exports: the user's entries win
// (their DATA mark replaces ours), entries only in the user's file are
// added, and each disagreement is reported.
DefMerge merge_def(const std::vector<Export> &synthesized, const DefFile &user);

} // namespace hotlink::exports
