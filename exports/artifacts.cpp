// Reading linked artifacts with LLVM Object: what an ELF .so, PE DLL,
// Mach-O dylib, wasm module or GPU code object exports, imports and needs
// (exports/artifacts.h).
#include "exports/artifacts.h"
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

namespace {

Error corrupt_table(const std::string &name, llvm::Error e) {
  return make_error(ErrorCode::InvalidInput, "corrupt export table: " + message_of(std::move(e)), name);
}

// ELF: the dynamic symbols, defined (exports) and undefined non-weak
// (imports).
std::optional<Error> elf_dynamic_symbols(const ELFObjectFileBase &e, const std::string &name, ArtifactInfo &info) {
  for (const ELFSymbolRef &s : e.getDynamicSymbolIterators()) {
    // A section symbol names no export or import; LLVM names one by its
    // section, and for an undefined one reads a section header past the
    // table (found by fuzz_images).
    if (s.getELFType() == ELF::STT_SECTION)
      continue;
    auto fl = s.getFlags();
    if (!fl)
      return corrupt_table(name, fl.takeError());
    auto nm = s.getName();
    if (!nm)
      return corrupt_table(name, nm.takeError());
    if (!name_inside(e, *nm))
      return make_error(ErrorCode::InvalidInput, "a dynamic symbol's name lies outside the file", name);
    if (nm->empty())
      continue;
    if (!(*fl & SymbolRef::SF_Undefined))
      info.exports.push_back(nm->str());
    else if (!(*fl & SymbolRef::SF_Weak))
      info.imports.push_back(nm->str());
  }
  return std::nullopt;
}

// ELF64: the GNU build-id note and the DT_NEEDED libraries.
std::optional<Error> elf_notes_and_needed(const ELFFile<ELF64LE> &file, const std::string &name,
                                          ArtifactInfo &info) {
  // LLVM's dynamicEntries() takes PT_DYNAMIC's offset and size as they are
  // and reads its last entry: a segment past the end of the file is
  // refused before it is asked (found by fuzzing).
  auto phdrs = file.program_headers();
  if (!phdrs)
    return corrupt_table(name, phdrs.takeError());
  for (const auto &ph : *phdrs)
    if (ph.p_type == ELF::PT_DYNAMIC &&
        (ph.p_offset > file.getBufSize() || ph.p_filesz > file.getBufSize() - ph.p_offset))
      return make_error(ErrorCode::InvalidInput, "the dynamic segment (PT_DYNAMIC) extends past the end of the file",
                        name);
  for (const auto &ph : *phdrs) {
    if (ph.p_type != ELF::PT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    // The descriptor lies at the note alignment notes() walks with (4 for a
    // p_align below 4): given p_align 0 itself, LLVM reads it from the
    // note header (found by fuzz_images).
    for (const auto &note : file.notes(ph, err))
      if (note.getType() == ELF::NT_GNU_BUILD_ID && note.getName() == "GNU")
        info.build_id = toHex(note.getDesc(std::max<uint64_t>(ph.p_align, 4)), /*LowerCase=*/true);
    if (err)
      return corrupt_table(name, std::move(err));
  }
  auto dyn = file.dynamicEntries();
  if (!dyn)
    return corrupt_table(name, dyn.takeError());
  uint64_t strtab = 0, strsz = 0;
  bool symtab = false;
  std::vector<uint64_t> needed;
  for (const auto &d : *dyn) {
    if (d.d_tag == ELF::DT_STRTAB) strtab = d.getPtr();
    else if (d.d_tag == ELF::DT_STRSZ) strsz = d.getVal();
    else if (d.d_tag == ELF::DT_NEEDED) needed.push_back(d.getVal());
    else if (d.d_tag == ELF::DT_SYMTAB) symtab = true;
  }
  // The exports are read through the section headers (.dynsym); the
  // loader reads the dynamic section. When they disagree the headers are
  // damaged, which must not read as "exports nothing".
  if (symtab) {
    auto sections = file.sections();
    if (!sections)
      return corrupt_table(name, sections.takeError());
    if (std::none_of(sections->begin(), sections->end(),
                     [](const auto &sh) { return sh.sh_type == ELF::SHT_DYNSYM; }))
      return make_error(ErrorCode::InvalidInput,
                        "its section headers are damaged: they describe no dynamic symbol table (.dynsym), "
                        "though its dynamic section has one (DT_SYMTAB)",
                        name);
  }
  if (needed.empty())
    return std::nullopt;
  // DT_NEEDED names are offsets into the dynamic string table.
  auto base = file.toMappedAddr(strtab);
  if (!base)
    return corrupt_table(name, base.takeError());
  const char *end = reinterpret_cast<const char *>(file.base() + file.getBufSize());
  const char *tab = reinterpret_cast<const char *>(*base);
  for (uint64_t off : needed) {
    if (off >= strsz || tab + off >= end)
      return make_error(ErrorCode::InvalidInput, "corrupt DT_NEEDED entry", name);
    info.needed.push_back(std::string(tab + off, strnlen(tab + off, end - (tab + off))));
  }
  return std::nullopt;
}

// PE: the export directory's names.
std::optional<Error> coff_exports(const COFFObjectFile &c, std::size_t size, const std::string &name,
                                  ArtifactInfo &info) {
  // Each export takes at least 4 bytes of the file: a directory that
  // claims more entries than that is refused instead of walked (a count of
  // 2^32 kept the fuzzer busy for minutes).
  if (const export_directory_table_entry *table = c.getExportTable()) {
    std::uint64_t room = size / 4;
    if (!in_buffer(c.getMemoryBufferRef(), table, sizeof(*table)) || table->AddressTableEntries > room ||
        table->NumberOfNamePointers > room)
      return make_error(ErrorCode::InvalidInput, "the export directory claims more entries than the file can hold",
                        name);
  }
  for (const ExportDirectoryEntryRef &x : c.export_directories()) {
    StringRef nm;
    if (llvm::Error err = x.getSymbolName(nm))
      return corrupt_table(name, std::move(err));
    if (!name_inside(c, nm))
      return make_error(ErrorCode::InvalidInput, "an export's name lies outside the file", name);
    if (!nm.empty())
      info.exports.push_back(nm.str());
  }
  return std::nullopt;
}

// PE: the import directory, as image/pe.cpp lists it ("DLL!name",
// "DLL!#N"): the DLLs in `needed`, each symbol from the lookup table (the
// address table when there is none).
std::optional<Error> coff_imports(const COFFObjectFile &c, const std::string &name, ArtifactInfo &info) {
  for (const ImportDirectoryEntryRef &d : c.import_directories()) {
    StringRef dll;
    if (llvm::Error err = d.getName(dll))
      return corrupt_table(name, std::move(err));
    // LLVM reads a name up to its NUL, past the file's end where it has none.
    if (!name_inside(c, dll) || dll.empty())
      return make_error(ErrorCode::InvalidInput, "an imported DLL's name lies outside the file", name);
    info.needed.push_back(dll.str());
    std::uint32_t lookup = 0;
    if (llvm::Error err = d.getImportLookupTableRVA(lookup))
      return corrupt_table(name, std::move(err));
    for (const ImportedSymbolRef &s : lookup ? d.lookup_table_symbols() : d.imported_symbols()) {
      bool by_ordinal = false;
      if (llvm::Error err = s.isOrdinal(by_ordinal))
        return corrupt_table(name, std::move(err));
      if (by_ordinal) {
        std::uint16_t ordinal = 0;
        if (llvm::Error err = s.getOrdinal(ordinal))
          return corrupt_table(name, std::move(err));
        info.imports.push_back(dll.str() + "!#" + std::to_string(ordinal));
        continue;
      }
      StringRef sym;
      if (llvm::Error err = s.getSymbolName(sym))
        return corrupt_table(name, std::move(err));
      if (!name_inside(c, sym) || sym.empty())
        return make_error(ErrorCode::InvalidInput, "a name imported from " + dll.str() + " lies outside the file",
                          name);
      info.imports.push_back(dll.str() + "!" + sym.str());
    }
  }
  return std::nullopt;
}

// A cubin (ELF for EM_CUDA, loaded by the CUDA driver as a module): no
// dynamic symbols; what it exports are its kernels, the global functions
// marked as entries (STO_CUDA_ENTRY: what cuModuleGetFunction finds; a
// global __device__ function is not one), and an undefined global is what
// the link left unresolved.
constexpr std::uint8_t kCudaEntry = 0x10; // STO_CUDA_ENTRY in st_other

std::optional<Error> cubin_symbols(const ELFObjectFileBase &e, const std::string &name, ArtifactInfo &info) {
  for (const ELFSymbolRef &s : e.symbols()) {
    auto fl = s.getFlags();
    if (!fl)
      return corrupt_table(name, fl.takeError());
    if (!(*fl & SymbolRef::SF_Global))
      continue;
    auto nm = s.getName();
    if (!nm)
      return corrupt_table(name, nm.takeError());
    if (nm->empty())
      continue;
    if (*fl & SymbolRef::SF_Undefined)
      info.imports.push_back(nm->str());
    else if (s.getELFType() == ELF::STT_FUNC && (s.getOther() & kCudaEntry))
      info.exports.push_back(nm->str());
  }
  return std::nullopt;
}

std::optional<Error> table_of(const ObjectFile &obj, std::size_t size, const std::string &name, ArtifactInfo &info) {
  if (auto *e = dyn_cast<ELFObjectFileBase>(&obj); e && e->getEMachine() == ELF::EM_CUDA)
    return cubin_symbols(*e, name, info);
  if (auto *e = dyn_cast<ELFObjectFileBase>(&obj)) {
    if (auto err = elf_dynamic_symbols(*e, name, info))
      return err;
    if (auto *e64 = dyn_cast<ELF64LEObjectFile>(&obj))
      return elf_notes_and_needed(e64->getELFFile(), name, info);
  } else if (auto *c = dyn_cast<COFFObjectFile>(&obj)) {
    if (auto err = coff_imports(*c, name, info))
      return err;
    return coff_exports(*c, size, name, info);
  } else if (auto *m = dyn_cast<MachOObjectFile>(&obj)) {
    llvm::Error err = llvm::Error::success();
    for (const ExportEntry &x : m->exports(err))
      info.exports.push_back(x.name().str());
    if (err)
      return corrupt_table(name, std::move(err));
  } else if (auto *w = dyn_cast<WasmObjectFile>(&obj)) {
    for (const wasm::WasmExport &x : w->exports())
      if (x.Kind == wasm::WASM_EXTERNAL_FUNCTION || x.Kind == wasm::WASM_EXTERNAL_GLOBAL)
        info.exports.push_back(x.Name.str());
  }
  return std::nullopt;
}

Expected<ArtifactInfo> read_artifact_unguarded(const void *data, std::size_t size, const std::string &name) {
  if (size == 0)
    return make_error(ErrorCode::InvalidInput, "the file is empty", name);
  MemoryBufferRef buf(StringRef(static_cast<const char *>(data), size), name);
  if (!readable_magic(buf.getBuffer()))
    return make_error(ErrorCode::InvalidInput, "not an ELF, PE, Mach-O or wasm image", name);
  if (identify_magic(buf.getBuffer()) == file_magic::bitcode)
    return make_error(ErrorCode::InvalidInput, "is LLVM bitcode, not a linked image", name);
  // ObjectFile, not createBinary: the runtime reads linked images only,
  // and createBinary's archives, IR and offload bundles would bring
  // LLVM's IR libraries (and their start-up constructors) into it.
  file_magic magic = identify_magic(buf.getBuffer());
  if (magic == file_magic::archive || magic == file_magic::coff_import_library)
    return make_error(ErrorCode::InvalidInput, "not a shared object, DLL, dylib or wasm module", name);
  auto bin = ObjectFile::createObjectFile(buf);
  if (!bin)
    return make_error(ErrorCode::InvalidInput, "not a binary: " + message_of(bin.takeError()), name);
  ObjectFile *obj = bin->get();
  ArtifactInfo info;
  info.format = format_of(*obj);
  info.arch = arch_of(obj->getArch());
  info.kind = kind_of(*obj);
  // A linked cubin is ET_EXEC: the CUDA driver's unit of loading, what a
  // shared object is to the host's loader.
  if (auto *e = dyn_cast<ELFObjectFileBase>(obj); e && e->getEMachine() == ELF::EM_CUDA &&
                                                   info.kind == FileKind::Executable)
    info.kind = FileKind::SharedObject;
  if (auto err = table_of(*obj, size, name, info))
    return std::move(*err);
  std::sort(info.exports.begin(), info.exports.end());
  info.exports.erase(std::unique(info.exports.begin(), info.exports.end()), info.exports.end());
  return info;
}

} // namespace

Expected<ArtifactInfo> read_artifact_with_llvm(const void *data, std::size_t size, const std::string &name) {
  return read_guarded<ArtifactInfo>(name, ErrorCode::InvalidInput, [&] { return read_artifact_unguarded(data, size, name); });
}

} // namespace hotlink::exports

namespace hotlink::exports {

Expected<ArtifactInfo> read_foreign_artifact(const void *data, std::size_t size, const std::string &name) {
  return read_artifact_with_llvm(data, size, name);
}

} // namespace hotlink::exports
