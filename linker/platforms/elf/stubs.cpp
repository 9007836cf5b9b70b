// Shared libraries as the runtime environment's stubs see them: what a
// stub needs of a real library (its soname, versions and dynamic symbols),
// and the stub itself, an ELF shared object holding only the symbols one
// link names.
#include "linker/platforms/elf/runtime.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace hotlink::detail {

using llvm::StringRef;


namespace {

using ELFT = llvm::object::ELF64LE;

// The hash function of DT_GNU_HASH tables (the dynamic loader's dl_new_hash).
std::uint32_t gnu_hash(StringRef name) {
  std::uint32_t h = 5381;
  for (unsigned char c : name)
    h = h * 33 + c;
  return h;
}

} // namespace

// A named global (or weak) symbol: one that can define or reference a
// name (strtab_'s last byte is the NUL added on reading).
bool SharedLibrary::is_named_global(std::uint32_t i) const {
  const Sym &s = syms_[i];
  return i >= first_global_ && s.name < strtab_.size() - 1 && (s.info >> 4) != llvm::ELF::STB_LOCAL;
}

bool SharedLibrary::is_definition(std::uint32_t i) const {
  return is_named_global(i) && syms_[i].shndx != llvm::ELF::SHN_UNDEF;
}

StringRef SharedLibrary::name_of(std::uint32_t i) const {
  const char *p = strtab_.data() + syms_[i].name; // strtab_ ends with a NUL (checked on reading)
  return StringRef(p);
}

// Calls each(i) for every definition of `name`, in symbol-table order:
// those before the hash table's part, then its chain for the name.
template <class Each> void SharedLibrary::find(StringRef name, Each each) const {
  if (auto it = by_name_.find(name); it != by_name_.end())
    for (std::uint32_t i : it->second)
      each(i);
  if (buckets_.empty())
    return;
  std::uint32_t h = gnu_hash(name);
  std::uint32_t i = buckets_[h % buckets_.size()];
  if (i < symoffset_) // 0: an empty bucket
    return;
  for (; i < syms_.size() && i - symoffset_ < chains_.size(); ++i) {
    std::uint32_t c = chains_[i - symoffset_];
    if ((c | 1) == (h | 1) && is_definition(i) && name_of(i) == name)
      each(i);
    if (c & 1)
      return;
  }
}

std::vector<StubSymbol> SharedLibrary::definitions(StringRef name) const {
  std::vector<StubSymbol> out;
  find(name, [&](std::uint32_t i) {
    const Sym &s = syms_[i];
    out.push_back(StubSymbol{s.info, s.other, i < versyms_.size() ? versyms_[i] : std::uint16_t(1), s.value, s.size});
  });
  return out;
}

bool SharedLibrary::defines(StringRef name) const {
  bool found = false;
  find(name, [&](std::uint32_t) { found = true; });
  return found;
}

void SharedLibrary::each_defined(const std::function<void(StringRef)> &each) const {
  for (std::uint32_t i = first_global_; i < syms_.size(); ++i)
    if (is_definition(i))
      each(name_of(i));
}

void SharedLibrary::read_gnu_hash(llvm::ArrayRef<std::uint8_t> table) {
  std::size_t n = table.size() / 4;
  auto word = [&](std::size_t i) { return llvm::support::endian::read32le(table.data() + 4 * i); };
  if (n < 4)
    return;
  std::uint64_t nbuckets = word(0), symoffset = word(1);
  std::uint64_t buckets_at = 4 + std::uint64_t(word(2)) * 2; // after the 64-bit Bloom filter words
  if (!nbuckets || buckets_at + nbuckets > n || symoffset > syms_.size())
    return;
  symoffset_ = std::uint32_t(symoffset);
  for (std::size_t i = buckets_at; i < n; ++i)
    (i < buckets_at + nbuckets ? buckets_ : chains_).push_back(word(i));
}

void SharedLibrary::index_the_rest() {
  std::uint32_t hashed_from = buckets_.empty() ? std::uint32_t(syms_.size()) : symoffset_;
  for (std::uint32_t i = first_global_; i < syms_.size(); ++i) {
    if (!is_named_global(i))
      continue;
    if (syms_[i].shndx == llvm::ELF::SHN_UNDEF) {
      // lld names a versioned reference of a shared library NAME@VER,
      // which only meets a definition of that exact version.
      std::uint16_t ver = i < versyms_.size() ? versyms_[i] : 1;
      if ((ver & ~llvm::ELF::VERSYM_HIDDEN) <= llvm::ELF::VER_NDX_GLOBAL)
        undefined.insert(name_of(i));
    } else if (i < hashed_from) {
      by_name_[name_of(i)].push_back(i);
    }
  }
}

Expected<SharedLibrary> read_shared_library(const std::string &path) {
  using namespace llvm::ELF;
  auto fail = [&](std::string why) {
    return make_error(ErrorCode::InvalidInput, std::move(why), path, {}, "reinstall the package that owns it");
  };
  auto buf = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buf)
    return fail("cannot read: " + buf.getError().message());
  StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() < 16 || bytes[EI_CLASS] != ELFCLASS64 || bytes[EI_DATA] != ELFDATA2LSB)
    return fail("not a 64-bit little-endian ELF shared object");
  auto file = llvm::object::ELFFile<ELFT>::create(bytes);
  if (!file)
    return fail(llvm::toString(file.takeError()));
  const auto &obj = *file;
  SharedLibrary lib;
  lib.path = path;
  std::memcpy(lib.ident, obj.getHeader().e_ident, 16);
  lib.machine = obj.getHeader().e_machine;
  lib.flags = obj.getHeader().e_flags;
  auto sections = obj.sections();
  if (!sections)
    return fail(llvm::toString(sections.takeError()));
  const ELFT::Shdr *dynsym = nullptr, *versym = nullptr, *verdef = nullptr, *dynamic = nullptr, *gnu_hash = nullptr;
  for (const ELFT::Shdr &s : *sections) {
    if (s.sh_type == SHT_DYNSYM) dynsym = &s;
    else if (s.sh_type == SHT_GNU_versym) versym = &s;
    else if (s.sh_type == SHT_GNU_verdef) verdef = &s;
    else if (s.sh_type == SHT_DYNAMIC) dynamic = &s;
    else if (s.sh_type == SHT_GNU_HASH) gnu_hash = &s;
  }
  if (!dynsym)
    return fail("has no dynamic symbol table");
  auto strtab = obj.getStringTableForSymtab(*dynsym);
  if (!strtab)
    return fail(llvm::toString(strtab.takeError()));
  auto syms = obj.symbols(dynsym);
  if (!syms)
    return fail(llvm::toString(syms.takeError()));
  if (versym) {
    auto v = obj.template getSectionContentsAsArray<ELFT::Versym>(*versym);
    if (!v)
      return fail(llvm::toString(v.takeError()));
    for (const ELFT::Versym &x : *v)
      lib.versyms_.push_back(x.vs_index);
  }
  if (verdef) {
    auto defs = obj.getVersionDefinitions(*verdef);
    if (!defs)
      return fail(llvm::toString(defs.takeError()));
    for (const llvm::object::VerDef &d : *defs)
      lib.versions.push_back({d.Ndx, d.Flags, d.Hash, d.Name});
  }
  if (dynamic) {
    auto dyn = obj.template getSectionContentsAsArray<ELFT::Dyn>(*dynamic);
    if (!dyn)
      return fail(llvm::toString(dyn.takeError()));
    for (const ELFT::Dyn &d : *dyn)
      if (d.d_tag == DT_SONAME && d.getVal() < strtab->size())
        lib.soname = strtab->data() + d.getVal();
  }
  if (lib.soname.empty())
    lib.soname = llvm::sys::path::filename(path).str();
  // The tables, copied: the file is not kept mapped (the string table
  // gets a NUL at its end, so that every name in it ends).
  lib.strtab_.assign(strtab->data(), strtab->size());
  lib.strtab_.push_back('\0');
  lib.first_global_ = std::uint32_t(std::min<std::uint64_t>(dynsym->sh_info, syms->size()));
  lib.syms_.reserve(syms->size());
  for (const ELFT::Sym &s : *syms)
    lib.syms_.push_back({s.st_name, s.st_info, s.st_other, s.st_shndx, s.st_value, s.st_size});
  // The GNU hash table, when it is whole and names this symbol table
  // (without one, every definition is indexed by name below).
  if (gnu_hash) {
    auto linked = obj.getSection(gnu_hash->sh_link);
    auto contents = obj.getSectionContents(*gnu_hash);
    if (linked && *linked == dynsym && contents)
      lib.read_gnu_hash(*contents);
    llvm::consumeError(linked.takeError()); // a broken table: the index below serves
    llvm::consumeError(contents.takeError());
  }
  lib.index_the_rest();
  return lib;
}

namespace {

template <class T> void put(std::vector<std::uint8_t> &out, std::size_t at, const T &v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}

std::size_t align_to(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

} // namespace

namespace {

// What a stub holds: its string table (the soname, every version name,
// then symbol names) and its dynamic symbols.
struct StubContent {
  struct Entry {
    std::uint32_t name;
    StubSymbol sym;
    bool defined;
  };
  std::string strtab = std::string(1, '\0');
  std::uint32_t soname = 0;
  std::vector<std::uint32_t> version_names;
  std::vector<Entry> entries;

  std::uint32_t add_str(const std::string &s) {
    std::uint32_t off = std::uint32_t(strtab.size());
    strtab += s;
    strtab += '\0';
    return off;
  }
  // `wanted` is sorted: the stub's bytes do not depend on a set's order.
  StubContent(const SharedLibrary &lib, const std::vector<std::string_view> &wanted) {
    using namespace llvm::ELF;
    soname = add_str(lib.soname);
    for (const SharedLibrary::Version &v : lib.versions)
      version_names.push_back(add_str(v.name));
    for (std::string_view n : wanted) {
      llvm::StringRef name(n.data(), n.size());
      std::vector<StubSymbol> defs = lib.definitions(name);
      if (!defs.empty()) {
        std::uint32_t off = add_str(name.str());
        for (const StubSymbol &s : defs)
          entries.push_back({off, s, true});
      } else if (lib.undefined.count(name)) {
        entries.push_back(
            {add_str(name.str()), StubSymbol{std::uint8_t((STB_GLOBAL << 4) | STT_NOTYPE), 0, 1, 0, 0}, false});
      }
    }
  }
};

const std::string kShstrtab =
    std::string("\0.dynsym\0.dynstr\0.gnu.version\0.gnu.version_d\0.dynamic\0.shstrtab\0", 64);
const std::uint32_t kShName[7] = {0, 1, 9, 17, 30, 45, 54};
constexpr std::size_t kVerdef = sizeof(ELFT::Verdef), kVerdaux = sizeof(ELFT::Verdaux);

// Where each part of the stub goes.
struct StubLayout {
  std::size_t nsyms, dynsym, dynstr, versym, verdef, verdef_size, dynamic, dynamic_size, shstrtab, shdrs, size;
  StubLayout(const SharedLibrary &lib, const StubContent &c) {
    nsyms = c.entries.size() + 1;
    dynsym = sizeof(ELFT::Ehdr);
    dynstr = dynsym + nsyms * sizeof(ELFT::Sym);
    versym = align_to(dynstr + c.strtab.size(), 2);
    verdef = align_to(versym + nsyms * 2, 8);
    verdef_size = lib.versions.size() * (kVerdef + kVerdaux);
    dynamic = align_to(verdef + verdef_size, 8);
    dynamic_size = 2 * sizeof(ELFT::Dyn);
    shstrtab = dynamic + dynamic_size;
    shdrs = align_to(shstrtab + kShstrtab.size(), 8);
    size = shdrs + 7 * sizeof(ELFT::Shdr);
  }
};

void write_header(const SharedLibrary &lib, const StubLayout &l, std::vector<std::uint8_t> &out) {
  using namespace llvm::ELF;
  ELFT::Ehdr eh{};
  std::memcpy(eh.e_ident, lib.ident, 16);
  eh.e_type = ET_DYN;
  eh.e_machine = lib.machine;
  eh.e_version = EV_CURRENT;
  eh.e_shoff = l.shdrs;
  eh.e_flags = lib.flags;
  eh.e_ehsize = sizeof(ELFT::Ehdr);
  eh.e_shentsize = sizeof(ELFT::Shdr);
  eh.e_shnum = 7;
  eh.e_shstrndx = 6;
  put(out, 0, eh);
}

void write_symbols(const StubContent &c, const StubLayout &l, std::vector<std::uint8_t> &out) {
  using namespace llvm::ELF;
  for (std::size_t i = 0; i < c.entries.size(); ++i) {
    ELFT::Sym s{};
    s.st_name = c.entries[i].name;
    s.st_info = c.entries[i].sym.info;
    s.st_other = c.entries[i].sym.other;
    s.st_shndx = c.entries[i].defined ? SHN_ABS : SHN_UNDEF;
    s.st_value = c.entries[i].sym.value;
    s.st_size = c.entries[i].sym.size;
    put(out, l.dynsym + (i + 1) * sizeof(ELFT::Sym), s);
    put(out, l.versym + (i + 1) * 2, std::uint16_t(c.entries[i].sym.versym));
  }
  std::memcpy(out.data() + l.dynstr, c.strtab.data(), c.strtab.size());
}

void write_versions_and_dynamic(const SharedLibrary &lib, const StubContent &c, const StubLayout &l,
                                std::vector<std::uint8_t> &out) {
  using namespace llvm::ELF;
  for (std::size_t i = 0; i < lib.versions.size(); ++i) {
    const SharedLibrary::Version &v = lib.versions[i];
    std::size_t at = l.verdef + i * (kVerdef + kVerdaux);
    ELFT::Verdef d{};
    d.vd_version = VER_DEF_CURRENT;
    d.vd_flags = v.flags;
    d.vd_ndx = v.ndx;
    d.vd_cnt = 1;
    d.vd_hash = v.hash;
    d.vd_aux = kVerdef;
    d.vd_next = i + 1 < lib.versions.size() ? kVerdef + kVerdaux : 0;
    put(out, at, d);
    ELFT::Verdaux a{};
    a.vda_name = c.version_names[i];
    a.vda_next = 0;
    put(out, at + kVerdef, a);
  }
  ELFT::Dyn dyn[2]{};
  dyn[0].d_tag = DT_SONAME;
  dyn[0].d_un.d_val = c.soname;
  dyn[1].d_tag = DT_NULL;
  std::memcpy(out.data() + l.dynamic, dyn, sizeof dyn);
}

void write_section_headers(const SharedLibrary &lib, const StubContent &c, const StubLayout &l,
                           std::vector<std::uint8_t> &out) {
  using namespace llvm::ELF;
  std::memcpy(out.data() + l.shstrtab, kShstrtab.data(), kShstrtab.size());
  auto shdr = [&](int index, std::uint32_t type, std::size_t offset, std::size_t size, std::uint32_t link,
                  std::uint32_t info, std::size_t align, std::size_t entsize) {
    ELFT::Shdr h{};
    h.sh_name = kShName[index];
    h.sh_type = type;
    h.sh_flags = (type == SHT_STRTAB && index == 6) ? 0u : unsigned(SHF_ALLOC);
    h.sh_offset = offset;
    h.sh_size = size;
    h.sh_link = link;
    h.sh_info = info;
    h.sh_addralign = align;
    h.sh_entsize = entsize;
    put(out, l.shdrs + index * sizeof(ELFT::Shdr), h);
  };
  shdr(1, SHT_DYNSYM, l.dynsym, l.nsyms * sizeof(ELFT::Sym), 2, 1, 8, sizeof(ELFT::Sym));
  shdr(2, SHT_STRTAB, l.dynstr, c.strtab.size(), 0, 0, 1, 0);
  shdr(3, SHT_GNU_versym, l.versym, l.nsyms * 2, 1, 0, 2, 2);
  shdr(4, SHT_GNU_verdef, l.verdef, l.verdef_size, 2, std::uint32_t(lib.versions.size()), 8, 0);
  shdr(5, SHT_DYNAMIC, l.dynamic, l.dynamic_size, 2, 0, 8, sizeof(ELFT::Dyn));
  shdr(6, SHT_STRTAB, l.shstrtab, kShstrtab.size(), 0, 0, 1, 0);
}

} // namespace

std::vector<std::uint8_t> write_stub(const SharedLibrary &lib, const std::vector<std::string_view> &wanted) {
  StubContent content(lib, wanted);
  StubLayout layout(lib, content);
  std::vector<std::uint8_t> out(layout.size, 0);
  write_header(lib, layout, out);
  write_symbols(content, layout, out);
  write_versions_and_dynamic(lib, content, layout, out);
  write_section_headers(lib, content, layout, out);
  return out;
}

} // namespace hotlink::detail
