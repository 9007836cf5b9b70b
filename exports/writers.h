// Internal. Export-list writers and .def reading. The writers of each
// platform's export file are public (hotlink/export_policy.h: their
// contract, per format, is there; exports::check_name applies it); the
// dynamic list, .def parsing and merging are the linker's.
#pragma once

#include "hotlink/error.h"
#include "exports/names.h"
#include "hotlink/export_policy.h"

#include <optional>
#include <string>
#include <vector>

namespace hotlink::exports {

// write_version_script, write_macho_list, write_def and write_wasm_flags
// are public: hotlink/export_policy.h.

// An ELF dynamic list ({ "name"; ... };): with it, lld keeps exactly these
// exports preemptible (interposable) and binds every other one inside the
// artifact.
Expected<std::string> write_dynamic_list(const std::vector<Export> &exports);

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
