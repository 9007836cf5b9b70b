// What the planner needs of COFF objects beyond their symbols: which
// undefined functions are only ever called (a jump thunk may stand in), and
// the libraries their /DEFAULTLIB directives name.
#include "exports/object_file.h"
#include "exports/recovery.h"
#include "exports/targets.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/COFF.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MachO.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/LTO/LTO.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/COFF.h"
#include "llvm/Object/COFFImportFile.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/MachO.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/Wasm.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

using namespace llvm;
using namespace llvm::object;

namespace hotlink::exports {

// COFF: marks the undefined symbols (from out[first] on) that every
// relocation reaches through a call or a jump: x64/i386 REL32 after an E8
// (call) or E9 (jmp) opcode, arm64 BRANCH26. Debug sections do not count.
// LLVM aborts the process (report_fatal_error) when asked for the
// relocations of a section whose address is not 0; such a section is
// refused here instead (found by fuzzing).
std::optional<Error> mark_branch_only(const ObjectFile &obj, std::vector<Symbol> &out,
                                      std::size_t first, const std::string &name) {
  const auto *c = dyn_cast<COFFObjectFile>(&obj);
  if (!c)
    return std::nullopt;
  std::map<std::string, bool> branch; // name -> all references are branches
  for (const SectionRef &sec : c->sections()) {
    auto sname = sec.getName();
    if (!sname) {
      consumeError(sname.takeError());
      continue;
    }
    if (sname->starts_with(".debug"))
      continue;
    const coff_section *header = c->getCOFFSection(sec);
    if (!in_buffer(c->getMemoryBufferRef(), header, sizeof(coff_section)))
      return invalid(name, "section '" + sname->str() + "' has its header outside the file");
    if (header->VirtualAddress != 0 && header->NumberOfRelocations != 0)
      return invalid(name, "section '" + sname->str() +
                               "' has relocations but a non-zero address, which no "
                               "object file has");
    auto contents = sec.getContents();
    if (!contents) {
      consumeError(contents.takeError());
      continue;
    }
    for (const RelocationRef &r : sec.relocations()) {
      auto sym = r.getSymbol();
      if (sym == c->symbol_end())
        continue;
      auto nm = sym->getName();
      if (!nm) {
        consumeError(nm.takeError());
        continue;
      }
      if (!name_inside(*c, *nm))
        return invalid(name, "a relocation's symbol name lies outside the file");
      std::uint64_t off = r.getOffset(), type = r.getType();
      bool is_branch = false;
      auto opcode_before = [&]() -> int {
        return off >= 1 && off <= contents->size()
                   ? static_cast<unsigned char>((*contents)[off - 1])
                   : -1;
      };
      switch (c->getMachine()) {
      case COFF::IMAGE_FILE_MACHINE_AMD64:
        is_branch = type == COFF::IMAGE_REL_AMD64_REL32 &&
                    (opcode_before() == 0xE8 || opcode_before() == 0xE9);
        break;
      case COFF::IMAGE_FILE_MACHINE_I386:
        is_branch = type == COFF::IMAGE_REL_I386_REL32 &&
                    (opcode_before() == 0xE8 || opcode_before() == 0xE9);
        break;
      case COFF::IMAGE_FILE_MACHINE_ARM64:
        is_branch = type == COFF::IMAGE_REL_ARM64_BRANCH26;
        break;
      default:
        break;
      }
      auto [it, fresh] = branch.emplace(nm->str(), is_branch);
      if (!fresh)
        it->second = it->second && is_branch;
    }
  }
  for (std::size_t i = first; i < out.size(); ++i)
    if (!out[i].defined) {
      auto it = branch.find(out[i].name);
      out[i].branch_only = it != branch.end() && it->second;
    }
  return std::nullopt;
}

// COFF: the /DEFAULTLIB (or -defaultlib:) names in the .drectve section.
void collect_default_libs(const ObjectFile &obj, std::vector<std::string> &out) {
  const auto *c = dyn_cast<COFFObjectFile>(&obj);
  if (!c)
    return;
  for (const SectionRef &sec : c->sections()) {
    auto name = sec.getName();
    if (!name || *name != ".drectve") {
      if (!name)
        consumeError(name.takeError());
      continue;
    }
    auto contents = sec.getContents();
    if (!contents) {
      consumeError(contents.takeError());
      continue;
    }
    StringRef text = *contents;
    while (!text.empty()) {
      text = text.ltrim(" \t\r\n");
      if (text.empty())
        break;
      std::string token;
      bool quoted = false;
      std::size_t i = 0;
      for (; i < text.size(); ++i) {
        char ch = text[i];
        if (ch == '"') {
          quoted = !quoted;
          continue;
        }
        if (!quoted && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'))
          break;
        token += ch;
      }
      text = text.drop_front(i);
      std::string lower = StringRef(token).lower();
      for (const char *prefix : {"/defaultlib:", "-defaultlib:"}) {
        if (!StringRef(lower).starts_with(prefix))
          continue;
        std::string lib = lower.substr(std::strlen(prefix));
        if (StringRef(lib).ends_with(".lib"))
          lib.resize(lib.size() - 4);
        if (!lib.empty() && std::find(out.begin(), out.end(), lib) == out.end())
          out.push_back(lib);
      }
    }
  }
}

} // namespace hotlink::exports
