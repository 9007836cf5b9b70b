// Reading and merging module-definition (.def) files (writers.h): LLVM's
// parser, the linker's (a .def given to a COFF link, an import library
// made from one); the writers beside it (writers.cpp) need no LLVM.
#include "exports/writers.h"

#include "llvm/BinaryFormat/COFF.h"
#include "llvm/Object/COFFModuleDefinition.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

namespace hotlink::exports {

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
