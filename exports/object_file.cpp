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

Arch arch_of(Triple::ArchType a) {
  switch (a) {
  case Triple::x86_64: return Arch::X86_64;
  case Triple::x86: return Arch::X86;
  case Triple::aarch64: return Arch::AArch64;
  case Triple::wasm32: return Arch::Wasm32;
  case Triple::amdgcn: return Arch::AMDGCN;
  case Triple::nvptx64: return Arch::NVPTX64;
  default: return Arch::Unknown;
  }
}

Arch arch_of_coff_machine(uint16_t m) {
  switch (m) {
  case COFF::IMAGE_FILE_MACHINE_AMD64: return Arch::X86_64;
  case COFF::IMAGE_FILE_MACHINE_I386: return Arch::X86;
  case COFF::IMAGE_FILE_MACHINE_ARM64: return Arch::AArch64;
  default: return Arch::Unknown;
  }
}

Format format_of(const Binary &b) {
  if (b.isELF()) return Format::ELF;
  if (b.isCOFF() || b.isCOFFImportFile()) return Format::COFF;
  if (b.isMachO()) return Format::MachO;
  if (b.isWasm()) return Format::Wasm;
  return Format::Unknown;
}

FileKind kind_of(const ObjectFile &o) {
  if (auto *e = dyn_cast<ELFObjectFileBase>(&o)) {
    switch (e->getEType()) {
    case ELF::ET_REL: return FileKind::Object;
    case ELF::ET_DYN: return FileKind::SharedObject;
    case ELF::ET_EXEC: return FileKind::Executable;
    default: return FileKind::Other;
    }
  }
  if (auto *c = dyn_cast<COFFObjectFile>(&o)) {
    if (!c->getPE32Header() && !c->getPE32PlusHeader())
      return FileKind::Object;
    return (c->getCharacteristics() & COFF::IMAGE_FILE_DLL)
               ? FileKind::SharedObject
               : FileKind::Executable;
  }
  if (auto *m = dyn_cast<MachOObjectFile>(&o)) {
    switch (m->getHeader().filetype) {
    case MachO::MH_OBJECT: return FileKind::Object;
    case MachO::MH_DYLIB: return FileKind::SharedObject;
    case MachO::MH_EXECUTE: return FileKind::Executable;
    default: return FileKind::Other;
    }
  }
  if (auto *w = dyn_cast<WasmObjectFile>(&o)) {
    // A linked (non-relocatable) wasm module is what a runtime instantiates:
    // the wasm counterpart of a shared object.
    return w->isRelocatableObject() ? FileKind::Object : FileKind::SharedObject;
  }
  return FileKind::Other;
}

// Whether a section holds thread-local variables: ELF SHF_TLS, COFF .tls$*,
// Mach-O's thread-local section types.
bool section_thread_local(const ObjectFile &o, const SectionRef &sec) {
  if (isa<ELFObjectFileBase>(&o))
    return ELFSectionRef(sec).getFlags() & ELF::SHF_TLS;
  if (auto *c = dyn_cast<COFFObjectFile>(&o)) {
    auto name = c->getSectionName(c->getCOFFSection(sec));
    if (!name) {
      consumeError(name.takeError());
      return false;
    }
    return *name == ".tls" || name->starts_with(".tls$");
  }
  if (auto *m = dyn_cast<MachOObjectFile>(&o)) {
    unsigned type = (m->is64Bit() ? m->getSection64(sec.getRawDataRefImpl()).flags
                                  : m->getSection(sec.getRawDataRefImpl()).flags) &
                    MachO::SECTION_TYPE;
    return type == MachO::S_THREAD_LOCAL_REGULAR || type == MachO::S_THREAD_LOCAL_ZEROFILL ||
           type == MachO::S_THREAD_LOCAL_VARIABLES;
  }
  return false;
}

bool section_writable(const ObjectFile &o, const SectionRef &sec) {
  if (isa<ELFObjectFileBase>(&o))
    return ELFSectionRef(sec).getFlags() & ELF::SHF_WRITE;
  if (auto *c = dyn_cast<COFFObjectFile>(&o))
    return c->getCOFFSection(sec)->Characteristics &
           COFF::IMAGE_SCN_MEM_WRITE;
  if (auto *m = dyn_cast<MachOObjectFile>(&o)) {
    StringRef seg = m->getSectionFinalSegmentName(sec.getRawDataRefImpl());
    return seg == "__DATA";
  }
  if (isa<WasmObjectFile>(&o))
    return sec.isData() || sec.isBSS();
  return false;
}

std::string message_of(llvm::Error e) { return toString(std::move(e)); }

// The binaries hotlink hands to LLVM's parsers: the four formats it links
// (ELF, COFF incl. bigobj and import members, Mach-O, wasm) and archives.
// LLVM recognizes more (XCOFF, GOFF, bitcode, ...) whose parsers are not
// hardened against hostile bytes: fuzzing found XCOFF's reading out of
// bounds. Those are refused by their magic, before anything parses them.
bool readable_magic(StringRef bytes) {
  switch (identify_magic(bytes)) {
  case file_magic::archive:
  case file_magic::elf_relocatable:
  case file_magic::elf_executable:
  case file_magic::elf_shared_object:
  case file_magic::coff_object:
  case file_magic::coff_import_library:
  case file_magic::pecoff_executable:
  case file_magic::macho_object:
  case file_magic::macho_executable:
  case file_magic::macho_dynamically_linked_shared_lib:
  case file_magic::macho_bundle:
  case file_magic::wasm_object:
  case file_magic::bitcode:
    return true;
  default:
    return false;
  }
}

// Whether [p, p + n) lies inside `buf`. LLVM hands back some pointers
// into malformed files without checking them (found by fuzzing).
bool in_buffer(MemoryBufferRef buf, const void *p, std::uint64_t n) {
  auto *b = reinterpret_cast<const std::uint8_t *>(buf.getBufferStart());
  auto *q = static_cast<const std::uint8_t *>(p);
  std::uint64_t size = buf.getBufferSize();
  return q >= b && std::uint64_t(q - b) <= size && n <= size - std::uint64_t(q - b);
}

// A name LLVM read from a COFF or ELF file points into the file; LLVM's
// COFF reader does not check string-table offsets, so a name that does not
// is refused (found by fuzzing: names pointing into freed memory). Other
// formats and COFF import members build names of their own.
bool name_inside(const SymbolicFile &obj, StringRef s) {
  const auto *o = dyn_cast<ObjectFile>(&obj);
  if (!o || !(isa<COFFObjectFile>(o) || isa<ELFObjectFileBase>(o)))
    return true;
  return s.empty() || in_buffer(o->getMemoryBufferRef(), s.data(), s.size());
}

Error invalid(const std::string &name, std::string why) {
  return make_error(ErrorCode::InvalidInput, std::move(why), name, {},
                    "pass a relocatable object (.o/.obj) or an archive of them");
}

// What collect() asks of a symbol's section, computed once per section: a
// JIT object can carry 10^5 symbols in a handful of sections, and LLVM's
// generic getSection() re-reads the section table on every call.

} // namespace hotlink::exports
