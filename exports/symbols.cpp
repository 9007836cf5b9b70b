#include "hotlink/symbols.h"
#include "exports/object_file.h"
#include "exports/recovery.h"
#include "exports/fatbin.h"
#include "exports/ptx.h"
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

struct SectionProps {
  bool text = false, data = false, bss = false, writable = false, tls = false;
};

class SectionTable {
public:
  explicit SectionTable(const ObjectFile *obj) {
    if (!obj)
      return;
    for (const SectionRef &sec : obj->sections()) {
      std::uint64_t i = sec.getIndex();
      if (i >= props_.size())
        props_.resize(i + 1);
      props_[i] = {sec.isText(), sec.isData(), sec.isBSS(), section_writable(*obj, sec),
                   section_thread_local(*obj, sec)};
    }
  }
  // The properties of section `index` (as SectionRef::getIndex numbers it).
  const SectionProps &at(std::uint64_t index) const { return props_[index]; }
  std::size_t size() const { return props_.size(); }

private:
  std::vector<SectionProps> props_;
};

// ELF symbols read straight from the symbol table. LLVM's generic calls
// (getName, getSection) look the symbol table, string table and section
// table up again for every symbol: on an object with 10^5 symbols that was
// most of reading it. Whatever this cannot answer plainly (no table, a name
// offset past the string table, SHN_XINDEX, absolute, common, an index past
// the section table) returns nothing and goes down LLVM's generic path,
// with its checks and its messages.
class ElfSymbols {
public:
  virtual ~ElfSymbols() = default;
  virtual std::optional<StringRef> name(DataRefImpl d) = 0;
  virtual std::optional<std::uint64_t> section_index(DataRefImpl d, std::size_t sections) = 0;
  // How many entries the symbol table of `d` has (0 if it is unreadable):
  // a count the file backs, unlike iterating, which trusts a header's.
  virtual std::size_t table_size(DataRefImpl d) = 0;
};

template <class ELFT> class ElfSymbolsOf final : public ElfSymbols {
public:
  explicit ElfSymbolsOf(const ELFFile<ELFT> &file) : file_(file) {}
  std::optional<StringRef> name(DataRefImpl d) override {
    const typename ELFT::Sym *sym = get(d);
    if (!sym)
      return std::nullopt;
    auto n = sym->getName(strtab_);
    if (!n) {
      consumeError(n.takeError());
      return std::nullopt;
    }
    return *n;
  }
  std::optional<std::uint64_t> section_index(DataRefImpl d, std::size_t sections) override {
    const typename ELFT::Sym *sym = get(d);
    if (!sym)
      return std::nullopt;
    std::uint16_t ix = sym->st_shndx;
    if (ix == ELF::SHN_UNDEF || ix >= ELF::SHN_LORESERVE || ix >= sections)
      return std::nullopt;
    return ix;
  }
  std::size_t table_size(DataRefImpl d) override {
    get(d);
    return syms_.size();
  }

private:
  // DataRefImpl of an ELF symbol: d.a = its symbol table's section index,
  // d.b = its index in that table.
  const typename ELFT::Sym *get(DataRefImpl d) {
    if (d.d.a != table_) {
      table_ = d.d.a;
      syms_ = {};
      strtab_ = {};
      auto sec = file_.getSection(d.d.a);
      if (!sec)
        return consumeError(sec.takeError()), nullptr;
      auto syms = file_.symbols(*sec);
      auto strtab = file_.getStringTableForSymtab(**sec);
      if (!syms || !strtab) {
        if (!syms)
          consumeError(syms.takeError());
        if (!strtab)
          consumeError(strtab.takeError());
        return nullptr;
      }
      syms_ = *syms;
      strtab_ = *strtab;
    }
    return d.d.b < syms_.size() ? &syms_[d.d.b] : nullptr;
  }

  const ELFFile<ELFT> &file_;
  std::uint32_t table_ = ~0u;
  ArrayRef<typename ELFT::Sym> syms_;
  StringRef strtab_;
};

std::unique_ptr<ElfSymbols> elf_symbols(const SymbolicFile &f) {
  if (auto *e = dyn_cast<ELF64LEObjectFile>(&f))
    return std::make_unique<ElfSymbolsOf<ELF64LE>>(e->getELFFile());
  if (auto *e = dyn_cast<ELF32LEObjectFile>(&f))
    return std::make_unique<ElfSymbolsOf<ELF32LE>>(e->getELFFile());
  if (auto *e = dyn_cast<ELF64BEObjectFile>(&f))
    return std::make_unique<ElfSymbolsOf<ELF64BE>>(e->getELFFile());
  if (auto *e = dyn_cast<ELF32BEObjectFile>(&f))
    return std::make_unique<ElfSymbolsOf<ELF32BE>>(e->getELFFile());
  return nullptr;
}

// Touches every section's contents so that a truncated or corrupt file (or
// archive member) is caught here with its name, rather than inside the
// linker; it also means every table collect() walks lies inside the file.
std::optional<Error> check_sections(const ObjectFile &obj, const std::string &name,
                                    const std::string &member) {
  for (const SectionRef &sec : obj.sections()) {
    auto contents = sec.getContents();
    if (!contents && !sec.isBSS())
      return invalid(name, (member.empty() ? std::string() : "archive member '" + member + "': ") +
                               "truncated or corrupt section: " + message_of(contents.takeError()));
    if (!contents)
      consumeError(contents.takeError());
  }
  return std::nullopt;
}

// Appends the global and undefined symbols of one symbolic file.
// A COFF weak external has no section of its own: it names a default
// definition (clang's .weak.NAME.default.*) that has one.
void classify_weak_external(const COFFObjectFile &coff, const SymbolRef &sr, Symbol &sym) {
  COFFSymbolRef cs = coff.getCOFFSymbol(sr);
  if (!cs.isWeakExternal() || cs.getNumberOfAuxSymbols() == 0)
    return;
  const auto *aux = cs.getAux<coff_aux_weak_external>();
  auto def = coff.getSymbol(aux->TagIndex);
  if (!def) {
    consumeError(def.takeError());
    return;
  }
  if (def->getSectionNumber() <= 0)
    return;
  auto dsec = coff.getSection(def->getSectionNumber());
  if (!dsec) {
    consumeError(dsec.takeError());
    return;
  }
  uint32_t ch = (*dsec)->Characteristics;
  sym.function = ch & COFF::IMAGE_SCN_CNT_CODE;
  sym.data = !sym.function;
  sym.writable = ch & COFF::IMAGE_SCN_MEM_WRITE;
}

// What a symbol defined in `sec` is: function or data, writable, TLS.
void classify_by_section(const ObjectFile &obj, const SymbolRef &sr, SymbolRef::Type type,
                         const SectionProps &sec, Symbol &sym) {
  if (!sym.function && (type == SymbolRef::ST_Data || sec.data || sec.bss))
    sym.data = true;
  sym.writable = sec.writable;
  sym.tls = sec.tls;
  if (auto *w = dyn_cast<WasmObjectFile>(&obj)) {
    // wasm memory is all writable; the toolchain marks constants by
    // placing them in .rodata.* data segments.
    const WasmSymbol &ws = w->getWasmSymbol(sr);
    if (ws.isTypeData() && ws.isDefined() && ws.Info.DataRef.Segment < w->dataSegments().size())
      sym.writable = !StringRef(w->dataSegments()[ws.Info.DataRef.Segment].Data.Name).starts_with(".rodata");
  }
  // COFF symbols often carry no type record (assembler output, some JITs),
  // and LLVM then reports ST_Data even in code: the section decides there.
  if (sec.text && (type != SymbolRef::ST_Data || isa<COFFObjectFile>(&obj)))
    sym.function = true, sym.data = false;
}

// A defined symbol's kind, from its type and its section.
std::optional<Error> classify(const ObjectFile &obj, const SymbolRef &sr, ElfSymbols *elf,
                              const SectionTable &sections, const std::string &name, Symbol &sym) {
  auto type = sr.getType();
  if (!type)
    return invalid(name, "cannot read the type of symbol '" + sym.name + "': " + message_of(type.takeError()));
  sym.function = *type == SymbolRef::ST_Function;
  constexpr std::uint64_t kNone = ~std::uint64_t(0);
  std::uint64_t index = kNone;
  if (auto fast = elf ? elf->section_index(sr.getRawDataRefImpl(), sections.size()) : std::nullopt) {
    index = *fast;
  } else {
    auto sec = sr.getSection();
    if (!sec)
      return invalid(name, "symbol '" + sym.name + "' names a bad section: " + message_of(sec.takeError()));
    if (*sec != obj.section_end())
      index = (*sec)->getIndex();
  }
  if (index < sections.size())
    classify_by_section(obj, sr, *type, sections.at(index), sym);
  else if (sym.common)
    sym.data = sym.writable = true;
  else if (auto *coff = dyn_cast<COFFObjectFile>(&obj))
    classify_weak_external(*coff, sr, sym);
  return std::nullopt;
}

// A symbol's name, read fast from an ELF string table when possible.
std::optional<Error> symbol_name(const SymbolicFile &f, const ObjectFile *obj, ElfSymbols *elf,
                                 const BasicSymbolRef &s, const std::string &name, std::string &out) {
  if (!obj) {
    raw_string_ostream os(out);
    if (llvm::Error e = s.printName(os))
      return invalid(name, "cannot read a symbol name: " + message_of(std::move(e)));
    return std::nullopt;
  }
  std::optional<StringRef> fast = elf ? elf->name(s.getRawDataRefImpl()) : std::nullopt;
  auto nm = fast ? llvm::Expected<StringRef>(*fast) : SymbolRef(s.getRawDataRefImpl(), obj).getName();
  if (!nm)
    return invalid(name, "cannot read a symbol name: " + message_of(nm.takeError()));
  if (!name_inside(*obj, *nm))
    return invalid(name, "a symbol name lies outside the file");
  out = nm->str();
  return std::nullopt;
}

Expected<bool> collect(const SymbolicFile &f, const std::string &member,
                       const std::string &name, std::vector<Symbol> &out) {
  auto *obj = dyn_cast<ObjectFile>(&f);
  const SectionTable sections(obj);
  std::unique_ptr<ElfSymbols> elf = elf_symbols(f);
  if (elf && f.symbol_begin() != f.symbol_end()) {
    // One allocation instead of a doubling series (each step moves every
    // Symbol). The count is the table's, which lies inside the file; never
    // count by iterating: a hostile header can claim 2^32 symbols (found by
    // fuzzing: minutes spent counting).
    out.reserve(out.size() + elf->table_size(f.symbol_begin()->getRawDataRefImpl()));
  }
  for (const BasicSymbolRef &s : f.symbols()) {
    auto flags = s.getFlags();
    if (!flags)
      return invalid(name, "cannot read symbol flags: " + message_of(flags.takeError()));
    uint32_t fl = *flags;
    if (fl & BasicSymbolRef::SF_FormatSpecific)
      continue;
    bool undefined = fl & BasicSymbolRef::SF_Undefined;
    if (!undefined && !(fl & BasicSymbolRef::SF_Global))
      continue;
    Symbol sym;
    if (auto e = symbol_name(f, obj, elf.get(), s, name, sym.name))
      return std::move(*e);
    if (sym.name.empty())
      continue;
    sym.defined = !undefined;
    sym.weak = fl & BasicSymbolRef::SF_Weak;
    sym.common = fl & BasicSymbolRef::SF_Common;
    // wasm objects mark every symbol hidden unless told otherwise; wasm-ld
    // still exports them by name, so only ELF and Mach-O hide for real.
    sym.hidden = (fl & BasicSymbolRef::SF_Hidden) && !isa<WasmObjectFile>(&f);
    sym.member = member;
    if (obj && sym.defined)
      if (auto e = classify(*obj, SymbolRef(s.getRawDataRefImpl(), obj), elf.get(), sections, name, sym))
        return std::move(*e);
    out.push_back(std::move(sym));
  }
  return true;
}

struct Member {
  Format format;
  Arch arch;
};

Expected<Member> describe(const Binary &b, const std::string &name) {
  Member m{format_of(b), Arch::Unknown};
  if (auto *o = dyn_cast<ObjectFile>(&b))
    m.arch = arch_of(o->getArch());
  else if (auto *imp = dyn_cast<COFFImportFile>(&b))
    m.arch = arch_of_coff_machine(imp->getMachine());
  return m;
}

} // namespace

namespace {

Format format_of_triple(const Triple &t) {
  switch (t.getObjectFormat()) {
  case Triple::ELF: return Format::ELF;
  case Triple::COFF: return Format::COFF;
  case Triple::MachO: return Format::MachO;
  case Triple::Wasm: return Format::Wasm;
  default: return Format::Unknown;
  }
}

std::string where(const std::string &name, const std::string &member) {
  return member.empty() ? name : name + "(" + member + ")";
}

// LLVM bitcode: its symbols from the module's symbol table (what lld's LTO
// reads too), and its format and arch from its triple.
Expected<Member> collect_bitcode(MemoryBufferRef buf, const std::string &member,
                                 const std::string &name, std::vector<Symbol> &out) {
  // The identification block first: LLVM's symbol table reader does not
  // look at its epoch, which lld's LTO then refuses.
  initialize_llvm_targets(); // reading bitcode may look its target up (module asm)
  auto producer = getBitcodeProducerString(buf);
  llvm::Expected<std::unique_ptr<lto::InputFile>> in =
      producer ? lto::InputFile::create(buf)
               : llvm::Expected<std::unique_ptr<lto::InputFile>>(producer.takeError());
  if (!in)
    return make_error(ErrorCode::InvalidInput,
                      "LLVM bitcode that this hotlink's LLVM 22 cannot read (" +
                          message_of(in.takeError()) + ")",
                      where(name, member), {},
                      "compile it with clang-22 (or an LLVM no newer than 22), or to a native "
                      "object (-fno-lto)");
  Triple t((*in)->getTargetTriple());
  Member m{format_of_triple(t), arch_of(t.getArch())};
  for (const lto::InputFile::Symbol &s : (*in)->symbols()) {
    if (s.isFormatSpecific() || s.getName().empty())
      continue;
    Symbol sym;
    sym.name = s.getName().str();
    sym.defined = !s.isUndefined();
    sym.weak = s.isWeak();
    sym.common = s.isCommon();
    sym.function = sym.defined && s.isExecutable();
    sym.data = sym.defined && !sym.function;
    sym.writable = sym.data; // bitcode does not say; COFF then marks it DATA
    sym.hidden = s.getVisibility() == GlobalValue::HiddenVisibility;
    sym.member = member;
    out.push_back(std::move(sym));
  }
  return m;
}

bool has_codeview(const ObjectFile &obj) {
  if (!isa<COFFObjectFile>(&obj))
    return false;
  for (const SectionRef &sec : obj.sections()) {
    auto n = sec.getName();
    if (n && *n == ".debug$S")
      return true;
    if (!n)
      consumeError(n.takeError());
  }
  return false;
}

bool has_startup_sections(const ObjectFile &obj) {
  bool coff = isa<COFFObjectFile>(&obj);
  if (!isa<ELFObjectFileBase>(&obj) && !coff)
    return false;
  for (const SectionRef &sec : obj.sections()) {
    auto n = sec.getName();
    if (!n) {
      consumeError(n.takeError());
      continue;
    }
    if (coff) {
      // Initializers the CRT's DLL entry point runs (static constructors).
      if (n->starts_with(".CRT$XC") || n->starts_with(".CRT$XI"))
        return true;
      continue;
    }
    if (*n == ".init" || *n == ".fini" || *n == ".tm_clone_table" || *n == ".ctors" ||
        *n == ".dtors" || n->starts_with(".ctors.") || n->starts_with(".dtors."))
      return true;
  }
  return false;
}

std::uint64_t alignment_padding(const ObjectFile &obj) {
  std::uint64_t sum = 0;
  for (const SectionRef &sec : obj.sections())
    sum += sec.getAlignment().value();
  return sum;
}

// GCC's -flto objects hold GIMPLE in .gnu.lto_* sections; a slim one (the
// default) holds nothing else and marks itself with __gnu_lto_slim.
std::optional<Error> refuse_gcc_lto(const std::vector<Symbol> &symbols, std::size_t first,
                                    const std::string &name, const std::string &member) {
  for (std::size_t i = first; i < symbols.size(); ++i)
    if (symbols[i].name == "__gnu_lto_slim")
      return make_error(ErrorCode::InvalidInput,
                        "is a GCC LTO object: it holds GCC's intermediate code (GIMPLE) and no "
                        "machine code, which lld cannot compile",
                        where(name, member), {},
                        "compile it with -fno-lto, or with -ffat-lto-objects to keep machine "
                        "code beside the GIMPLE");
  return std::nullopt;
}

// Sets an archive's format and arch from a member, refusing a member of
// another.
std::optional<Error> member_format(ObjectInfo &info, bool &any, Format format, Arch arch, const std::string &name,
                                   const std::string &member) {
  if (any && (format != info.format || arch != info.arch))
    return make_error(ErrorCode::MixedFormats,
                      std::string("archive mixes ") + to_string(info.format) + "/" + to_string(info.arch) + " and " +
                          to_string(format) + "/" + to_string(arch) + " members (member '" + member + "')",
                      name);
  info.format = format;
  info.arch = arch;
  any = true;
  return std::nullopt;
}

// An object's (or member's) symbols and what else the planner needs of it.
std::optional<Error> add_symbols(const SymbolicFile &sf, const std::string &member, const std::string &name,
                                 bool branch_info, ObjectInfo &info) {
  std::size_t first = info.symbols.size();
  auto ok = collect(sf, member, name, info.symbols);
  if (!ok)
    return ok.take_error();
  if (auto e = refuse_gcc_lto(info.symbols, first, name, member))
    return e;
  const auto *o = dyn_cast<ObjectFile>(&sf);
  if (!o)
    return std::nullopt;
  info.startup_sections |= has_startup_sections(*o);
  info.codeview |= has_codeview(*o);
  info.alignment_padding += alignment_padding(*o);
  collect_default_libs(*o, info.default_libs);
  if (branch_info)
    return mark_branch_only(*o, info.symbols, first, name);
  return std::nullopt;
}

// One archive member; members lld would not link are skipped as lld skips them.
std::optional<Error> add_member(MemoryBufferRef buf, const Archive::Child &c, const std::string &name,
                                bool branch_info, bool &any, ObjectInfo &info) {
  auto cname = c.getName();
  if (cname && !in_buffer(buf, cname->data(), cname->size()))
    return invalid(name, "an archive member's name lies outside the archive");
  std::string member = cname ? cname->str() : std::string("?");
  auto mbuf = c.getMemoryBufferRef();
  if (!mbuf)
    return invalid(name, "archive member '" + member + "' is unreadable: " + message_of(mbuf.takeError()));
  if (!in_buffer(buf, mbuf->getBufferStart(), mbuf->getBufferSize()))
    return invalid(name, "archive member '" + member + "' extends past the end of the archive");
  if (!readable_magic(mbuf->getBuffer()))
    return std::nullopt; // as for lone files: lld ignores what it cannot link too
  if (identify_magic(mbuf->getBuffer()) == file_magic::bitcode) {
    auto d = collect_bitcode(*mbuf, member, name, info.symbols);
    if (!d)
      return d.take_error();
    info.bitcode = true;
    return member_format(info, any, d->format, d->arch, name, member);
  }
  auto child = createBinary(*mbuf);
  if (!child) {
    // Archives may carry non-object members (e.g. symbol tables of other
    // tools); lld ignores them too.
    consumeError(child.takeError());
    return std::nullopt;
  }
  auto *sf = dyn_cast<SymbolicFile>(child->get());
  if (!sf)
    return std::nullopt;
  if (auto *o = dyn_cast<ObjectFile>(sf))
    if (auto e = check_sections(*o, name, member))
      return e;
  auto d = describe(*sf, name);
  if (!d)
    return d.take_error();
  if (auto e = member_format(info, any, d->format, d->arch, name, member))
    return e;
  return add_symbols(*sf, member, name, branch_info, info);
}

Expected<ObjectInfo> read_archive(MemoryBufferRef buf, const Archive &a, const std::string &name,
                                  bool branch_info) {
  ObjectInfo info;
  info.kind = FileKind::Archive;
  llvm::Error err = llvm::Error::success();
  bool any = false;
  for (const Archive::Child &c : a.children(err))
    if (auto e = add_member(buf, c, name, branch_info, any, info)) {
      consumeError(std::move(err));
      return std::move(*e);
    }
  if (err)
    return invalid(name, "corrupt archive: " + message_of(std::move(err)));
  if (!any)
    return invalid(name, "the archive has no object members");
  return info;
}

Expected<ObjectInfo> read_bitcode(MemoryBufferRef buf, const std::string &name) {
  ObjectInfo info;
  auto d = collect_bitcode(buf, {}, name, info.symbols);
  if (!d)
    return d.take_error();
  info.format = d->format;
  info.arch = d->arch;
  info.kind = FileKind::Object;
  info.bitcode = true;
  if (info.format == Format::Unknown)
    return invalid(name, "LLVM bitcode for a target with no object format hotlink links");
  return info;
}

Expected<ObjectInfo> read_relocatable(const ObjectFile &obj, const std::string &name, bool branch_info) {
  ObjectInfo info;
  info.format = format_of(obj);
  info.arch = arch_of(obj.getArch());
  info.kind = kind_of(obj);
  if (info.format == Format::Unknown)
    return invalid(name, "unsupported object format");
  if (info.kind != FileKind::Object)
    return invalid(name, "this is a linked image, not a relocatable object");
  if (auto e = check_sections(obj, name, {}))
    return std::move(*e);
  if (auto e = add_symbols(obj, {}, name, branch_info, info))
    return std::move(*e);
  return info;
}

Expected<ObjectInfo> read_object_unguarded(const void *data, std::size_t size, const std::string &name,
                                           bool branch_info) {
  if (size == 0)
    return invalid(name, "the file is empty");
  MemoryBufferRef buf(StringRef(static_cast<const char *>(data), size), name);
  if (looks_like_ptx(data, size))
    return read_ptx(data, size, name);
  if (looks_like_fatbin(data, size))
    return read_fatbin(data, size, name);
  if (looks_like_lto_ir(data, size))
    return read_lto_ir(data, size, name);
  if (!readable_magic(buf.getBuffer()))
    return invalid(name, "not an ELF, COFF, Mach-O or wasm object, nor LLVM bitcode, PTX, a CUDA fat binary, "
                         "NVIDIA LTO-IR, nor an archive of them");
  if (identify_magic(buf.getBuffer()) == file_magic::bitcode)
    return read_bitcode(buf, name);
  auto bin = createBinary(buf);
  if (!bin)
    return invalid(name, "not an object file or archive: " + message_of(bin.takeError()));
  if (auto *a = dyn_cast<Archive>(bin->get()))
    return read_archive(buf, *a, name, branch_info);
  auto *obj = dyn_cast<ObjectFile>(bin->get());
  if (!obj)
    return invalid(name, "not a relocatable object (unsupported binary kind)");
  return read_relocatable(*obj, name, branch_info);
}

} // namespace

Expected<ObjectInfo> read_object(const void *data, std::size_t size, const std::string &name,
                                 bool branch_info) {
  return read_guarded<ObjectInfo>(name, ErrorCode::InvalidInput, [&] { return read_object_unguarded(data, size, name, branch_info); });
}

} // namespace hotlink::exports
