#include "exports/writers.h"

#include "llvm/BinaryFormat/COFF.h"
#include "llvm/Object/COFFModuleDefinition.h"
#include "llvm/Support/MemoryBuffer.h"

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

namespace {

llvm::Expected<llvm::object::COFFModuleDefinition> parse_module_definition(const std::string &text,
                                                                           Arch arch) {
  llvm::COFF::MachineTypes m = arch == Arch::X86      ? llvm::COFF::IMAGE_FILE_MACHINE_I386
                               : arch == Arch::AArch64 ? llvm::COFF::IMAGE_FILE_MACHINE_ARM64
                                                       : llvm::COFF::IMAGE_FILE_MACHINE_AMD64;
  return llvm::object::parseCOFFModuleDefinition(llvm::MemoryBufferRef(text, "def"), m,
                                                 /*MingwDef=*/false, /*AddUnderscores=*/false);
}

} // namespace

std::size_t def_error_line(const std::string &text, Arch arch) {
  std::size_t line = 0, pos = 0;
  for (;;) {
    std::size_t nl = text.find('\n', pos);
    std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    ++line;
    auto prefix = parse_module_definition(text.substr(0, end), arch);
    if (!prefix) {
      llvm::consumeError(prefix.takeError());
      return line;
    }
    if (nl == std::string::npos)
      return 0;
    pos = end;
  }
}

Expected<DefFile> parse_def(const std::string &text, Arch arch, const std::string &input) {
  auto parsed = parse_module_definition(text, arch);
  if (!parsed)
    return make_error(ErrorCode::InvalidInput,
                      "line " + std::to_string(def_error_line(text, arch)) +
                          ": not a valid module-definition file: " +
                          llvm::toString(parsed.takeError()),
                      input, {}, "see the LIBRARY/EXPORTS syntax of MSVC .def files");
  DefFile def;
  def.library = parsed->OutputFile;
  for (const llvm::object::COFFShortExport &e : parsed->Exports) {
    DefExport x;
    x.name = e.Name;
    x.internal = e.ExtName;
    x.ordinal = e.Ordinal;
    x.data = e.Data;
    x.noname = e.Noname;
    x.priv = e.Private;
    def.exports.push_back(std::move(x));
  }
  return def;
}

DefMerge merge_def(const std::vector<Export> &synthesized, const DefFile &user) {
  DefMerge m;
  std::map<std::string, const DefExport *> theirs;
  for (const DefExport &u : user.exports)
    theirs.emplace(u.name, &u);
  for (const Export &e : synthesized) {
    auto it = theirs.find(e.name);
    if (it == theirs.end()) {
      m.exports.push_back(e);
      continue;
    }
    Export x = e;
    if (it->second->data != e.data) {
      m.conflicts.push_back("'" + e.name + "': the .def marks it " +
                            (it->second->data ? "DATA" : "code") + ", the object says " +
                            (e.data ? "data" : "code") + "; using the .def");
      x.data = it->second->data;
    }
    m.exports.push_back(x);
    theirs.erase(it);
  }
  for (const DefExport &u : user.exports)
    if (theirs.count(u.name))
      m.exports.push_back(Export{u.name, u.internal.empty() ? u.name : u.internal, u.data});
  return m;
}

} // namespace hotlink::exports
