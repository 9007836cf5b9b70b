// ELF images (little-endian, ELFCLASS32 and ELFCLASS64): what read_elf()
// answers for verify and the loader, without LLVM. The fields and checks
// follow the ELF gABI and what LLVM Object does with them.
#include "image/bytes.h"
#include "image/image.h"

#include "base/text.h"

#include <algorithm>
#include <map>

namespace hotlink::image {

namespace {

constexpr unsigned kPtLoad = 1, kPtDynamic = 2, kPtNote = 4;
constexpr unsigned kShtSymtab = 2, kShtStrtab = 3, kShtDynamic = 6, kShtNobits = 8, kShtDynsym = 11,
                   kShtSymtabShndx = 18;
constexpr std::uint64_t kShfWrite = 1, kShfAlloc = 2, kShfExecinstr = 4, kShfTls = 0x400;
constexpr std::uint16_t kShnLoreserve = 0xff00, kShnCommon = 0xfff2, kShnXindex = 0xffff;
constexpr std::int64_t kDtNull = 0, kDtNeeded = 1, kDtStrtab = 5, kDtSymtab = 6, kDtStrsz = 10;
constexpr unsigned kSttObject = 1, kSttFunc = 2, kSttSection = 3, kSttFile = 4, kSttCommon = 5;
constexpr unsigned kStbLocal = 0, kStbWeak = 2;
constexpr unsigned kStvHidden = 2;
constexpr unsigned kEmX86 = 3, kEmIamcu = 6, kEmX86_64 = 62, kEmAArch64 = 183;
constexpr unsigned kNtGnuBuildId = 3;

struct Segment {
  std::uint32_t type = 0;
  std::uint64_t offset = 0, vaddr = 0, filesz = 0, align = 0;
};

struct Section {
  std::uint32_t name = 0, type = 0, link = 0;
  std::uint64_t addr = 0, offset = 0, size = 0, entsize = 0, flags = 0, addralign = 0;
};

struct Sym {
  std::uint32_t name = 0;
  unsigned type = 0, binding = 0, visibility = 0;
  std::uint16_t shndx = 0;
  std::uint64_t value = 0, size = 0;
};

Error damaged(const std::string &name, const std::string &why) {
  return make_error(ErrorCode::InvalidInput, "the ELF image is damaged: " + why, name);
}

// One ELF file's headers, read once, with the class's field layout.
class Elf {
public:
  Elf(Bytes bytes, const std::string &name) : b_(bytes), name_(name), wide_(bytes.data()[4] == 2) {}

  std::optional<Error> read_headers() {
    if (b_.size() < (wide_ ? 64u : 52u))
      return damaged(name_, "the file is smaller than an ELF header");
    type_ = static_cast<std::uint16_t>(half(16));
    machine_ = static_cast<std::uint16_t>(half(18));
    if (auto e = read_segments())
      return e;
    return read_sections();
  }

  std::uint16_t type() const { return type_; }
  std::uint16_t machine() const { return machine_; }
  bool wide() const { return wide_; }
  const std::vector<Section> &sections() const { return sections_; }
  const std::vector<Segment> &segments() const { return segments_; }

  const Section *first_of_type(std::uint32_t type) const {
    for (const Section &s : sections_)
      if (s.type == type)
        return &s;
    return nullptr;
  }

  // The string table a symbol table links to: SHT_STRTAB, inside the file,
  // non-empty and NUL-terminated (so every name in it ends inside it).
  Expected<std::pair<std::uint64_t, std::uint64_t>> string_table(const Section &symtab) const {
    if (symtab.link >= sections_.size())
      return damaged(name_, "a symbol table links to section " + std::to_string(symtab.link) + ", which does not exist");
    const Section &s = sections_[symtab.link];
    if (s.type != kShtStrtab)
      return damaged(name_, "a symbol table's string table is not of type SHT_STRTAB");
    if (!b_.has(s.offset, s.size))
      return damaged(name_, "a string table extends past the end of the file");
    if (s.size == 0 || b_.data()[s.offset + s.size - 1] != 0)
      return damaged(name_, "a string table is empty or not NUL-terminated");
    return std::make_pair(s.offset, s.size);
  }

  // Symbol `i` of a symbol table whose entries were checked to lie in the
  // file (symbol_count).
  Sym symbol(const Section &table, std::uint64_t i) const {
    bool ok = true;
    Sym s;
    std::uint64_t at = table.offset + i * (wide_ ? 24 : 16);
    s.name = static_cast<std::uint32_t>(b_.u(at, 4, ok));
    unsigned info = static_cast<unsigned>(b_.u(at + (wide_ ? 4 : 12), 1, ok));
    s.type = info & 15;
    s.binding = info >> 4;
    s.visibility = static_cast<unsigned>(b_.u(at + (wide_ ? 5 : 13), 1, ok)) & 3;
    s.shndx = static_cast<std::uint16_t>(b_.u(at + (wide_ ? 6 : 14), 2, ok));
    s.value = b_.u(at + (wide_ ? 8 : 4), wide_ ? 8 : 4, ok);
    s.size = b_.u(at + (wide_ ? 16 : 8), wide_ ? 8 : 4, ok);
    return s;
  }

  // Whether a symbol table is whole: entries of the class's size, all in
  // the file, aligned (what LLVM Object checks of .symtab and .dynsym
  // whenever it reads a symbol of either).
  std::optional<Error> check_table(const Section *table) const {
    if (!table)
      return std::nullopt;
    std::uint64_t entry = wide_ ? 24 : 16;
    if (table->entsize != entry)
      return damaged(name_, "a symbol table's entry size is " + std::to_string(table->entsize) + ", not " +
                                std::to_string(entry));
    if (table->size % entry || !b_.has(table->offset, table->size) || table->offset % (wide_ ? 8 : 4))
      return damaged(name_, "a symbol table extends past the end of the file, is misaligned or ends inside an entry");
    return std::nullopt;
  }

  // How many symbols a table holds (0 and the null symbol need no check);
  // with more, both symbol tables must be whole.
  Expected<std::uint64_t> symbol_count(const Section &table) const {
    std::uint64_t n = table.size / (wide_ ? 24 : 16);
    if (n < 2)
      return n;
    for (const Section *t : {first_of_type(kShtSymtab), first_of_type(kShtDynsym)})
      if (auto e = check_table(t))
        return std::move(*e);
    return n;
  }

  // A symbol's name, from its table's string table.
  Expected<std::string> symbol_name(const Sym &s, std::pair<std::uint64_t, std::uint64_t> strtab) const {
    if (s.name >= strtab.second)
      return damaged(name_, "a symbol's name lies past the end of its string table");
    bool found = false;
    return std::string(b_.c_string(strtab.first + s.name, strtab.first + strtab.second, found));
  }

  // The file offset that the virtual address maps to, through the PT_LOAD
  // segment that holds it in the file (as the dynamic loader maps it);
  // nullopt when none does. The PT_LOAD entries must be in ascending
  // order of address (the gABI's rule, which the dynamic loader relies on).
  Expected<std::optional<std::uint64_t>> file_offset(std::uint64_t vaddr) const {
    std::vector<const Segment *> loads;
    for (const Segment &p : segments_)
      if (p.type == kPtLoad) {
        if (!loads.empty() && p.vaddr < loads.back()->vaddr)
          return damaged(name_, "its loadable segments (PT_LOAD) are not in ascending order of address");
        loads.push_back(&p);
      }
    auto it = std::upper_bound(loads.begin(), loads.end(), vaddr,
                               [](std::uint64_t v, const Segment *p) { return v < p->vaddr; });
    if (it == loads.begin())
      return std::optional<std::uint64_t>();
    const Segment &p = **--it;
    std::uint64_t delta = vaddr - p.vaddr;
    if (delta >= p.filesz || p.offset + delta < p.offset || p.offset + delta >= b_.size())
      return std::optional<std::uint64_t>();
    return std::optional<std::uint64_t>(p.offset + delta);
  }

  Bytes bytes() const { return b_; }

  // A section's name, from the section name table; "" without one.
  Expected<std::string> section_name(std::uint64_t index) const {
    if (index == 0 || index >= 0xff00 || index >= sections_.size() || shstrndx_ == 0 ||
        sections_[index].name == 0)
      return std::string();
    if (shstrndx_ >= sections_.size())
      return damaged(name_, "its section name table (e_shstrndx) does not exist");
    const Section &names = sections_[shstrndx_];
    if (names.type != kShtStrtab || !b_.has(names.offset, names.size) || names.size == 0 ||
        b_.data()[names.offset + names.size - 1] != 0 || sections_[index].name >= names.size)
      return damaged(name_, "a section's name lies outside the section name table");
    bool found = false;
    return std::string(b_.c_string(names.offset + sections_[index].name, names.offset + names.size, found));
  }

private:
  std::uint64_t half(std::uint64_t at) const {
    bool ok = true;
    return b_.u(at, 2, ok);
  }
  std::uint64_t word(std::uint64_t at) const { // 4 or 8 bytes by class
    bool ok = true;
    return b_.u(at, wide_ ? 8 : 4, ok);
  }
  // The word at `at` plus the field's offset in the class's layout.
  std::uint64_t word(std::uint64_t at, unsigned off64, unsigned off32) const { return word(at + (wide_ ? off64 : off32)); }
  std::uint32_t u32(std::uint64_t at) const {
    bool ok = true;
    return static_cast<std::uint32_t>(b_.u(at, 4, ok));
  }
  std::uint32_t u32(std::uint64_t at, unsigned off64, unsigned off32) const { return u32(at + (wide_ ? off64 : off32)); }

  std::optional<Error> read_segments() {
    std::uint64_t off = word(wide_ ? 32 : 28);
    std::uint64_t entsize = half(wide_ ? 54 : 42), n = half(wide_ ? 56 : 44);
    std::uint64_t entry = wide_ ? 56 : 32;
    if (off > b_.size())
      return damaged(name_, "its program headers start past the end of the file");
    if (n == 0)
      return std::nullopt;
    if (entsize != entry)
      return damaged(name_, "its program header entry size is " + std::to_string(entsize));
    if (!b_.has(off, n * entry))
      return damaged(name_, "its program headers extend past the end of the file");
    for (std::uint64_t at = off; at < off + n * entry; at += entry)
      segments_.push_back({u32(at), word(at, 8, 4), word(at, 16, 8), word(at, 32, 16), word(at, 48, 28)});
    return std::nullopt;
  }

  std::optional<Error> read_sections() {
    std::uint64_t off = word(wide_ ? 40 : 32);
    if (off == 0)
      return std::nullopt;
    std::uint64_t entry = wide_ ? 64 : 40;
    if (half(wide_ ? 58 : 46) != entry)
      return damaged(name_, "its section header entry size is " + std::to_string(half(wide_ ? 58 : 46)));
    if (!b_.has(off, entry))
      return damaged(name_, "its section headers start past the end of the file");
    if (off % (wide_ ? 8 : 4))
      return damaged(name_, "its section headers are misaligned");
    std::uint64_t n = half(wide_ ? 60 : 48);
    if (n == 0) // extended numbering: the count is section 0's sh_size
      n = word(off + (wide_ ? 32 : 20));
    if (n > (b_.size() - off) / entry)
      return damaged(name_, "its section headers extend past the end of the file");
    for (std::uint64_t at = off; at < off + n * entry; at += entry)
      sections_.push_back({u32(at), u32(at + 4), u32(at, 40, 24), word(at, 16, 12), word(at, 24, 16), word(at, 32, 20),
                           word(at, 56, 36), word(at, 8, 8), word(at, 48, 32)});
    shstrndx_ = half(wide_ ? 62 : 50);
    if (shstrndx_ == 0xffff && !sections_.empty()) // SHN_XINDEX: in section 0's sh_link
      shstrndx_ = sections_[0].link;
    return std::nullopt;
  }

  Bytes b_;
  const std::string &name_;
  bool wide_;
  std::uint16_t type_ = 0, machine_ = 0;
  std::uint64_t shstrndx_ = 0;
  std::vector<Segment> segments_;
  std::vector<Section> sections_;
};

exports::Arch arch_of(const Elf &elf) {
  switch (elf.machine()) {
  case kEmX86_64: return exports::Arch::X86_64;
  case kEmX86:
  case kEmIamcu: // Intel MCU: i386 code, as LLVM names it
    return exports::Arch::X86;
  case kEmAArch64: return exports::Arch::AArch64;
  default: return exports::Arch::Unknown;
  }
}

// Calls `each(symbol, name, unit)` for each symbol of the first section
// of `table_type` (SHT_SYMTAB or SHT_DYNSYM) but the null one. A section
// symbol comes with no name (its string is not read: it names nothing to
// export or pair). In .symtab, STT_FILE entries are not passed: `unit` is
// the one before the symbol.
template <class F> std::optional<Error> each_symbol(const Elf &elf, std::uint32_t table_type, F each) {
  const Section *table = elf.first_of_type(table_type);
  if (!table)
    return std::nullopt;
  auto n = elf.symbol_count(*table);
  if (!n)
    return n.take_error();
  if (*n < 2)
    return std::nullopt;
  auto strtab = elf.string_table(*table);
  if (!strtab)
    return strtab.take_error();
  std::string unit;
  for (std::uint64_t i = 1; i < *n; ++i) {
    Sym s = elf.symbol(*table, i);
    Expected<std::string> nm = s.type == kSttSection ? std::string() : elf.symbol_name(s, *strtab);
    if (!nm)
      return nm.take_error();
    if (s.type == kSttFile && table_type == kShtSymtab)
      unit = std::move(*nm);
    else if (auto e = each(s, std::move(*nm), unit))
      return e;
  }
  return std::nullopt;
}

// The dynamic symbols: defined ones are exports, undefined non-weak ones
// imports.
std::optional<Error> dynamic_symbols(const Elf &elf, exports::ArtifactInfo &info) {
  return each_symbol(elf, kShtDynsym, [&](const Sym &s, std::string nm, const std::string &) -> std::optional<Error> {
    if (nm.empty())
      return std::nullopt; // a section symbol, or unnamed
    if (s.shndx != 0)
      info.exports.push_back(std::move(nm));
    else if (s.binding != kStbWeak)
      info.imports.push_back(std::move(nm));
    return std::nullopt;
  });
}

// The GNU build-id note, in the PT_NOTE segments.
std::optional<Error> build_id(const Elf &elf, const std::string &name, exports::ArtifactInfo &info) {
  Bytes b = elf.bytes();
  for (const Segment &p : elf.segments()) {
    if (p.type != kPtNote)
      continue;
    if (!b.has(p.offset, p.filesz))
      return damaged(name, "a note segment extends past the end of the file");
    std::uint64_t align = std::max<std::uint64_t>(p.align, 4);
    if (align != 4 && align != 8)
      return damaged(name, "a note segment's alignment is " + std::to_string(p.align) + ", not 4 or 8");
    auto up = [](std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; };
    std::uint64_t at = p.offset, left = p.filesz;
    while (left > 0) {
      bool ok = true;
      if (left < 12)
        return damaged(name, "a note overflows its segment");
      std::uint64_t namesz = b.u(at, 4, ok), descsz = b.u(at + 4, 4, ok), type = b.u(at + 8, 4, ok);
      std::uint64_t desc_at = up(12 + up(namesz, 4), align);
      std::uint64_t total = desc_at + up(descsz, align);
      if (total > left)
        return damaged(name, "a note overflows its segment");
      std::string_view owner(reinterpret_cast<const char *>(b.data() + at + 12), namesz ? namesz - 1 : 0);
      if (type == kNtGnuBuildId && owner == "GNU")
        info.build_id = base::hex(b.data() + at + desc_at, descsz);
      at += total;
      left -= total;
    }
  }
  return std::nullopt;
}

// The DT_NEEDED libraries, named in the dynamic string table; and the
// check that the section headers agree with the dynamic section.
std::optional<Error> needed(const Elf &elf, const std::string &name, exports::ArtifactInfo &info) {
  Bytes b = elf.bytes();
  std::uint64_t entry = elf.wide() ? 16 : 8, off = 0, count = 0;
  bool found = false;
  for (const Segment &p : elf.segments())
    if (p.type == kPtDynamic && !b.has(p.offset, p.filesz))
      return damaged(name, "the dynamic segment (PT_DYNAMIC) extends past the end of the file");
  // The first PT_DYNAMIC, as the dynamic loader reads it; without one (or
  // an empty one), the SHT_DYNAMIC section.
  for (const Segment &p : elf.segments())
    if (p.type == kPtDynamic) {
      if (p.filesz < entry)
        return damaged(name, "its dynamic segment (PT_DYNAMIC) holds no entry");
      off = p.offset, count = p.filesz / entry, found = true;
      break;
    }
  if (!found)
    if (const Section *s = elf.first_of_type(kShtDynamic)) {
      if (!b.has(s->offset, s->size) || s->size % entry || s->entsize != entry)
        return damaged(name, "its dynamic section lies outside the file or has a partial entry");
      off = s->offset, count = s->size / entry, found = true;
      if (count == 0)
        return damaged(name, "its dynamic section is empty");
    }
  if (!found)
    return std::nullopt;
  bool ok = true;
  auto tag = [&](std::uint64_t i) {
    return static_cast<std::int64_t>(b.u(off + i * entry, entry / 2, ok));
  };
  auto value = [&](std::uint64_t i) { return b.u(off + i * entry + entry / 2, entry / 2, ok); };
  if (tag(count - 1) != kDtNull)
    return damaged(name, "its dynamic section does not end with DT_NULL");
  std::uint64_t strtab = 0, strsz = 0;
  bool symtab = false;
  std::vector<std::uint64_t> libs;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::int64_t t = tag(i);
    if (t == kDtStrtab) strtab = value(i);
    else if (t == kDtStrsz) strsz = value(i);
    else if (t == kDtNeeded) libs.push_back(value(i));
    else if (t == kDtSymtab) symtab = true;
  }
  if (symtab && !elf.first_of_type(kShtDynsym))
    return damaged(name, "its section headers are damaged: they describe no dynamic symbol table (.dynsym), "
                         "though its dynamic section has one (DT_SYMTAB)");
  if (libs.empty())
    return std::nullopt;
  auto mapped = elf.file_offset(strtab);
  if (!mapped)
    return mapped.take_error();
  auto table = *mapped;
  if (!table)
    return damaged(name, "its dynamic string table (DT_STRTAB) lies in no loaded segment");
  for (std::uint64_t lib : libs) {
    if (lib >= strsz || *table + lib >= b.size())
      return damaged(name, "corrupt DT_NEEDED entry");
    bool ended = false;
    std::string_view s = b.c_string(*table + lib, b.size(), ended);
    info.needed.emplace_back(ended ? s : std::string_view(reinterpret_cast<const char *>(b.data() + *table + lib),
                                                          b.size() - (*table + lib)));
  }
  return std::nullopt;
}

Expected<Elf> open_elf(const void *data, std::size_t size, const std::string &name) {
  if (image::kind_of(data, size) != Kind::Elf)
    return make_error(ErrorCode::InvalidInput, "is not an ELF image of a CPU", name);
  Elf elf(Bytes(data, size), name);
  if (auto e = elf.read_headers())
    return std::move(*e);
  return elf;
}

} // namespace

Expected<SymbolTable> read_elf_symbols(const void *data, std::size_t size, const std::string &name,
                                       const std::string &state_section, bool with_functions) {
  auto opened = open_elf(data, size, name);
  if (!opened)
    return opened.take_error();
  const Elf &elf = *opened;
  SymbolTable out;
  out.code.arch = arch_of(elf);
  out.code.wide = elf.wide();
  // Each section's role: code that forwarding may patch (.text, .text.*),
  // or the state section.
  std::vector<bool> code(elf.sections().size()), in_state(elf.sections().size());
  for (std::size_t i = 0; i < code.size(); ++i) {
    auto n = elf.section_name(i);
    if (!n)
      return n.take_error();
    code[i] = with_functions && (*n == ".text" || n->rfind(".text.", 0) == 0);
    in_state[i] = !state_section.empty() && *n == state_section;
  }
  auto in_code = [&](const Sym &s) { return s.shndx < code.size() && code[s.shndx]; };
  std::vector<std::uint64_t> bounds; // where a function's room ends
  for (std::size_t i = 0; i < code.size(); ++i)
    if (code[i])
      bounds.push_back(elf.sections()[i].addr + elf.sections()[i].size);
  std::map<std::uint64_t, std::size_t> at_address; // address -> index in out.code.functions
  std::vector<Function> &functions = out.code.functions;
  auto e = each_symbol(elf, kShtSymtab, [&](const Sym &s, std::string nm, const std::string &unit) -> std::optional<Error> {
    bool local = s.binding == kStbLocal;
    if (s.type == kSttObject && s.shndx < in_state.size() && in_state[s.shndx]) {
      out.state.push_back({std::move(nm), local ? unit : std::string(), s.value, s.size});
      return std::nullopt;
    }
    if (in_code(s))
      bounds.push_back(s.value);
    if (s.type != kSttFunc || nm.empty() || !in_code(s) || s.size == 0 || (local && unit == "crtstuff.c"))
      return std::nullopt;
    auto mapped = elf.file_offset(s.value);
    if (!mapped)
      return mapped.take_error();
    if (!*mapped)
      return std::nullopt;
    Function f{std::move(nm), local ? unit : std::string(), s.value, s.size, **mapped, 0};
    auto [it, fresh] = at_address.emplace(s.value, functions.size());
    if (fresh)
      functions.push_back(std::move(f));
    else if (!local && !functions[it->second].unit.empty())
      functions[it->second] = std::move(f); // the global name of an alias
    return std::nullopt;
  });
  if (e)
    return std::move(*e);
  std::sort(bounds.begin(), bounds.end());
  for (Function &f : functions) {
    auto next = std::upper_bound(bounds.begin(), bounds.end(), f.address);
    f.room = next == bounds.end() ? f.size : *next - f.address;
  }
  return out;
}

Expected<std::string> read_elf_build_id(const void *data, std::size_t size, const std::string &name) {
  auto opened = open_elf(data, size, name);
  if (!opened)
    return opened.take_error();
  exports::ArtifactInfo info;
  if (opened->wide())
    if (auto e = build_id(*opened, name, info))
      return std::move(*e);
  return info.build_id;
}

namespace {

// What a symbol of a relocatable object is, by the section it is defined
// in (as LLVM's ELFObjectFile answers isText, isData, isBSS and the flags).
void classify_by_section(const Section &sec, bool data_type, exports::Symbol &sym) {
  bool text = sec.flags & kShfExecinstr;
  bool data = (sec.flags & kShfAlloc) && !text && sec.type != kShtNobits;
  bool bss = (sec.flags & kShfAlloc) && sec.type == kShtNobits;
  if (!sym.function && (data_type || data || bss))
    sym.data = true;
  sym.writable = sec.flags & kShfWrite;
  sym.tls = sec.flags & kShfTls;
  if (text && !data_type)
    sym.function = true, sym.data = false;
}

// The symbols read_object lists of a relocatable object's .symtab: global
// and undefined, without the format's own (the null symbol, files,
// sections, AArch64's mapping symbols $d/$x). False: something is not
// plain (a name past the string table, an extended section index, a
// section index past the table): LLVM's reader answers that.
bool object_symbols(const Elf &elf, std::vector<exports::Symbol> &out) {
  const Section *table = elf.first_of_type(kShtSymtab);
  if (!table)
    return true;
  if (table->size == 0 || table->entsize != 24 || table->size % 24 || table->offset % 8 ||
      !elf.bytes().has(table->offset, table->size))
    return false;
  auto strtab = elf.string_table(*table);
  if (!strtab)
    return false;
  bool aarch64 = elf.machine() == kEmAArch64;
  const std::vector<Section> &sections = elf.sections();
  std::uint64_t n = table->size / 24;
  out.reserve(n);
  for (std::uint64_t i = 1; i < n; ++i) {
    Sym s = elf.symbol(*table, i);
    if (s.name >= strtab->second || s.shndx == kShnXindex)
      return false;
    if (s.type == kSttFile || s.type == kSttSection)
      continue;
    bool found = false;
    std::string_view nm = elf.bytes().c_string(strtab->first + s.name, strtab->first + strtab->second, found);
    if (aarch64 && (nm.rfind("$d", 0) == 0 || nm.rfind("$x", 0) == 0))
      continue;
    bool undefined = s.shndx == 0;
    if ((!undefined && s.binding == kStbLocal) || nm.empty())
      continue;
    exports::Symbol sym;
    sym.name = std::string(nm);
    sym.defined = !undefined;
    sym.weak = s.binding == kStbWeak;
    sym.common = s.type == kSttCommon || s.shndx == kShnCommon;
    sym.hidden = s.visibility == kStvHidden;
    if (sym.defined) {
      sym.function = s.type == kSttFunc;
      bool data_type = s.type == kSttObject || s.type == kSttCommon;
      if (s.shndx < kShnLoreserve) {
        if (s.shndx >= sections.size())
          return false;
        classify_by_section(sections[s.shndx], data_type, sym);
      } else if (sym.common) {
        sym.data = sym.writable = true;
      }
    }
    if (sym.name == "__gnu_lto_slim")
      return false; // a GCC LTO object: LLVM's reader refuses it by name
    out.push_back(std::move(sym));
  }
  return true;
}

} // namespace

std::optional<exports::ObjectInfo> read_elf_object(const void *data, std::size_t size, const std::string &name) {
  if (kind_of(data, size) != Kind::Elf || size < 64 || static_cast<const std::uint8_t *>(data)[4] != 2)
    return std::nullopt;
  Bytes b(data, size);
  bool ok = true;
  std::uint64_t type = b.u(16, 2, ok), machine = b.u(18, 2, ok), shnum = b.u(60, 2, ok), shstrndx = b.u(62, 2, ok);
  if (type != 1 || (machine != kEmX86_64 && machine != kEmAArch64) || shnum == 0 || shstrndx == 0 ||
      shstrndx >= shnum)
    return std::nullopt;
  auto opened = open_elf(data, size, name);
  if (!opened)
    return std::nullopt;
  const Elf &elf = *opened;
  exports::ObjectInfo info;
  info.format = exports::Format::ELF;
  info.arch = arch_of(elf);
  info.kind = exports::FileKind::Object;
  for (std::size_t i = 0; i < elf.sections().size(); ++i) {
    const Section &sec = elf.sections()[i];
    if (sec.type == kShtSymtabShndx || sec.type == kShtDynsym)
      return std::nullopt;
    if (sec.type != kShtNobits && !b.has(sec.offset, sec.size))
      return std::nullopt; // LLVM's reader names the truncated section
    auto n = elf.section_name(i);
    if (!n)
      return std::nullopt;
    info.startup_sections |= *n == ".init" || *n == ".fini" || *n == ".tm_clone_table" || *n == ".ctors" ||
                             *n == ".dtors" || n->rfind(".ctors.", 0) == 0 || n->rfind(".dtors.", 0) == 0;
    // As LLVM's Align takes sh_addralign: 0 is 1, else its highest power of two.
    std::uint64_t align = 1;
    while (sec.addralign >> 1 >= align)
      align <<= 1;
    info.alignment_padding += align;
  }
  if (!object_symbols(elf, info.symbols))
    return std::nullopt;
  return info;
}

Expected<exports::ArtifactInfo> read_elf(const void *data, std::size_t size, const std::string &name) {
  Elf elf(Bytes(data, size), name);
  if (auto e = elf.read_headers())
    return std::move(*e);
  exports::ArtifactInfo info;
  info.format = exports::Format::ELF;
  info.arch = arch_of(elf);
  info.kind = elf.type() == 1   ? exports::FileKind::Object
              : elf.type() == 2 ? exports::FileKind::Executable
                                : exports::FileKind::SharedObject;
  if (auto e = dynamic_symbols(elf, info))
    return std::move(*e);
  if (elf.wide()) {
    if (auto e = build_id(elf, name, info))
      return std::move(*e);
    if (auto e = needed(elf, name, info))
      return std::move(*e);
  }
  std::sort(info.exports.begin(), info.exports.end());
  info.exports.erase(std::unique(info.exports.begin(), info.exports.end()), info.exports.end());
  return info;
}

} // namespace hotlink::image
