#include "exports/writers.h"

#include <cstdio>
#include <cstring>
#include <map>

namespace hotlink::exports {

namespace {

// Checks the spelling each format writes (.def: the C name; the others:
// the symbol), then writes `head`, line(out, e) for every export and
// `tail` into one string: no string per line (JITs export 10^5 names).
template <class F>
Expected<std::string> each(const std::vector<Export> &exports, Format format, std::string head, F line,
                           const char *tail = "") {
  std::string out = std::move(head);
  std::size_t size = out.size() + std::strlen(tail);
  for (const Export &e : exports)
    size += e.symbol.size() + 16;
  out.reserve(size);
  for (const Export &e : exports) {
    if (auto err = check_name(format == Format::COFF ? e.name : e.symbol, format))
      return *err;
    line(out, e);
  }
  out.append(tail);
  return out;
}

// A .def name as LLVM's module-definition lexer (lld-link's) reads it: a
// bare word that is one of its keywords is the keyword, so a symbol named
// DATA or VERSION is quoted (a quoted token is always a name; check_name
// keeps '"' out of names). Found by fuzzing the writers.
std::string def_word(const std::string &name) {
  static const char *const kKeywords[] = {"BASE",     "CONSTANT", "DATA",    "EXPORTS",
                                          "EXPORTAS", "HEAPSIZE", "LIBRARY", "NAME",
                                          "NONAME",   "PRIVATE",  "STACKSIZE", "VERSION"};
  for (const char *k : kKeywords)
    if (name == k)
      return "\"" + name + "\"";
  return name;
}

} // namespace

Expected<std::string> write_version_script(const std::vector<Export> &exports) {
  return each(
      exports, Format::ELF, "{\n  global:\n",
      [](std::string &out, const Export &e) { out.append("    \"").append(e.symbol).append("\";\n"); },
      "  local: *;\n};\n");
}

Expected<std::string> write_dynamic_list(const std::vector<Export> &exports) {
  return each(
      exports, Format::ELF, "{\n",
      [](std::string &out, const Export &e) { out.append("  \"").append(e.symbol).append("\";\n"); }, "};\n");
}

Expected<std::string> write_macho_list(const std::vector<Export> &exports) {
  return each(exports, Format::MachO, "", [](std::string &out, const Export &e) { out.append(e.symbol).append("\n"); });
}

Expected<std::string> write_def(const std::vector<Export> &exports, const std::string &library,
                                unsigned first_ordinal) {
  if (auto err = check_name(library, Format::COFF))
    return *err;
  unsigned ordinal = first_ordinal;
  return each(exports, Format::COFF, "LIBRARY " + def_word(library) + "\nEXPORTS\n",
              [&](std::string &out, const Export &e) {
                out.append("    ").append(def_word(e.name));
                if (first_ordinal)
                  out.append(" @").append(std::to_string(ordinal++));
                if (e.data)
                  out.append(" DATA");
                out.append("\n");
              });
}

Expected<std::vector<std::string>> write_wasm_flags(const std::vector<Export> &exports) {
  std::vector<std::string> flags;
  for (const Export &e : exports) {
    if (auto err = check_name(e.symbol, Format::Wasm))
      return *err;
    flags.push_back("--export=" + e.symbol);
  }
  return flags;
}

} // namespace hotlink::exports
