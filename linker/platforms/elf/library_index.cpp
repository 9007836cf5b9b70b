// Which library of a search path defines a name (see library_index.h),
// answered from each library's own lookup structures: a shared object's
// GNU hash table, an archive's symbol table. Nothing is read ahead: a
// directory such as /usr/lib/llvm-22/lib holds millions of symbol names,
// and a link asks about the few it leaves undefined.
#include "linker/platforms/elf/library_index.h"
#include "linker/platforms/elf/runtime.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <functional>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

namespace hotlink::detail {

namespace {

using llvm::StringRef;
using ELF = llvm::object::ELF64LE;

// One library file, as lld would read it for -l NAME.
class LibraryFile {
public:
  virtual ~LibraryFile() = default;
  virtual bool defines(StringRef name) const = 0;
};

// A shared object: its dynamic symbols through DT_GNU_HASH.
class SharedFile final : public LibraryFile {
public:
  static std::unique_ptr<LibraryFile> open(std::unique_ptr<llvm::MemoryBuffer> buf, std::uint16_t machine) {
    auto elf = llvm::object::ELFFile<ELF>::create(buf->getBuffer());
    if (!elf) {
      llvm::consumeError(elf.takeError());
      return nullptr;
    }
    if (elf->getHeader().e_machine != machine)
      return nullptr;
    auto sections = elf->sections();
    if (!sections) {
      llvm::consumeError(sections.takeError());
      return nullptr;
    }
    auto file = std::unique_ptr<SharedFile>(new SharedFile);
    const char *base = buf->getBufferStart();
    std::size_t size = buf->getBufferSize();
    for (const ELF::Shdr &s : *sections) {
      bool in_place = s.sh_type == llvm::ELF::SHT_DYNSYM || s.sh_type == llvm::ELF::SHT_GNU_HASH;
      if (s.sh_offset + s.sh_size > size || (in_place && s.sh_offset % 8 != 0))
        return nullptr; // read in place: the tables must be where and as aligned as their types
      if (s.sh_type == llvm::ELF::SHT_DYNSYM) {
        file->symbols_ = reinterpret_cast<const ELF::Sym *>(base + s.sh_offset);
        file->count_ = s.sh_size / sizeof(ELF::Sym);
        if (s.sh_link >= sections->size())
          return nullptr;
        const ELF::Shdr &str = (*sections)[s.sh_link];
        if (str.sh_offset + str.sh_size > size)
          return nullptr;
        file->strings_ = StringRef(base + str.sh_offset, str.sh_size);
      } else if (s.sh_type == llvm::ELF::SHT_GNU_HASH && s.sh_size >= 16) {
        file->hash_ = reinterpret_cast<const std::uint32_t *>(base + s.sh_offset);
        file->hash_words_ = s.sh_size / 4;
      }
    }
    if (!file->symbols_)
      return nullptr;
    if (!file->hash_ || !file->hash_fits())
      file->read_all(); // no GNU hash table: a set of its names
    file->buf_ = std::move(buf);
    return file;
  }

  bool defines(StringRef name) const override {
    if (!hash_)
      return all_.count(name) != 0;
    // The GNU hash table: a Bloom filter, then one bucket's chain.
    std::uint32_t nbuckets = hash_[0], symndx = hash_[1], maskwords = hash_[2], shift2 = hash_[3];
    const auto *bloom = reinterpret_cast<const std::uint64_t *>(hash_ + 4);
    const std::uint32_t *buckets = hash_ + 4 + 2 * maskwords;
    const std::uint32_t *chains = buckets + nbuckets;
    std::uint32_t h = llvm::object::hashGnu(name);
    std::uint64_t word = bloom[(h / 64) % maskwords];
    std::uint64_t mask = (1ull << (h % 64)) | (1ull << ((h >> shift2) % 64));
    if ((word & mask) != mask)
      return false;
    for (std::uint32_t i = buckets[h % nbuckets]; i >= symndx && i < count_; ++i) {
      std::size_t c = i - symndx + (chains - hash_);
      if (c >= hash_words_)
        return false;
      std::uint32_t chain = hash_[c];
      if ((chain | 1) == (h | 1) && defined_here(symbols_[i], name))
        return true;
      if (chain & 1)
        return false;
    }
    return false;
  }

private:
  bool hash_fits() const {
    std::uint64_t nbuckets = hash_[0], maskwords = hash_[2];
    return maskwords != 0 && nbuckets != 0 && 4 + 2 * maskwords + nbuckets <= hash_words_;
  }
  bool defined_here(const ELF::Sym &s, StringRef name) const {
    if (s.st_shndx == llvm::ELF::SHN_UNDEF || s.st_name >= strings_.size())
      return false;
    unsigned char bind = s.getBinding();
    return (bind == llvm::ELF::STB_GLOBAL || bind == llvm::ELF::STB_WEAK) &&
           StringRef(strings_.data() + s.st_name).substr(0, strings_.size() - s.st_name) == name;
  }
  void read_all() {
    hash_ = nullptr;
    for (std::size_t i = 1; i < count_; ++i)
      if (symbols_[i].st_name < strings_.size() && symbols_[i].st_shndx != llvm::ELF::SHN_UNDEF)
        all_.insert(StringRef(strings_.data() + symbols_[i].st_name));
  }

  std::unique_ptr<llvm::MemoryBuffer> buf_;
  const ELF::Sym *symbols_ = nullptr;
  std::size_t count_ = 0;
  StringRef strings_;
  const std::uint32_t *hash_ = nullptr;
  std::size_t hash_words_ = 0;
  llvm::StringSet<> all_;
};

// An archive: the names of its symbol table, as lld's lazy symbols are.
// A GNU symbol table's names are one block of NUL-terminated strings
// after the count and the offsets.
void archive_names(const std::string &path, const std::function<void(StringRef)> &each) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return;
  auto archive = llvm::object::Archive::create((*buf)->getMemBufferRef());
  if (!archive) {
    llvm::consumeError(archive.takeError());
    return;
  }
  StringRef table = (*archive)->getSymbolTable();
  std::size_t word = (*archive)->kind() == llvm::object::Archive::K_GNU     ? 4
                     : (*archive)->kind() == llvm::object::Archive::K_GNU64 ? 8
                                                                            : 0;
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < word && i < table.size(); ++i) // big-endian
    count = (count << 8) | static_cast<unsigned char>(table[i]);
  if (word == 0 || count > table.size() / word || word * (count + 1) > table.size()) {
    for (const llvm::object::Archive::Symbol &s : (*archive)->symbols())
      each(s.getName());
    return;
  }
  StringRef names = table.drop_front(word * (count + 1));
  for (std::uint64_t i = 0; i < count && !names.empty(); ++i) {
    StringRef name(names.data(), ::strnlen(names.data(), names.size()));
    each(name);
    names = names.drop_front(std::min(name.size() + 1, names.size()));
  }
}

// A linker script (libc.so, libm.so, libgcc_s.so): what its members
// define, read once through the runtime environment's reader.
class ScriptFile final : public LibraryFile {
public:
  bool defines(StringRef name) const override { return names_.count(name) != 0; }
  llvm::StringSet<> names_;
};

std::unique_ptr<LibraryFile> open_library(const std::string &path, const std::string &sysroot,
                                          std::uint16_t machine) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return nullptr;
  switch (llvm::identify_magic((*buf)->getBuffer())) {
  case llvm::file_magic::elf_shared_object: return SharedFile::open(std::move(*buf), machine);
  case llvm::file_magic::unknown: {
    auto script = std::make_unique<ScriptFile>();
    if (!library_definitions(path, sysroot, machine, [&](StringRef n) { script->names_.insert(n); }))
      return nullptr;
    return script;
  }
  default: return nullptr;
  }
}

// The -l names a directory offers, each with the file lld takes for it
// (lib NAME .so before lib NAME .a), sorted by name. Sanitizer runtimes
// are left out: they define libc's and libm's functions as interceptors,
// and are nobody's home for them.
std::map<std::string, std::string> libraries_in(const std::string &dir) {
  std::map<std::string, std::string> by_name; // name -> file
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    StringRef file = llvm::sys::path::filename(it->path());
    if (!file.starts_with("lib"))
      continue;
    bool shared = file.ends_with(".so");
    if (!shared && !file.ends_with(".a"))
      continue;
    std::string name = file.drop_front(3).drop_back(shared ? 3 : 2).str();
    if (name.empty() || StringRef(name).ends_with("san") || StringRef(name).starts_with("clang_rt"))
      continue;
    auto [entry, inserted] = by_name.emplace(name, it->path());
    if (!inserted && shared)
      entry->second = it->path();
  }
  return by_name;
}

} // namespace

// One directory's libraries. Shared objects answer through their own hash
// tables, opened on first use. Archives are searched in the user's -L
// directories only: their names are hashed into one sorted table when the
// directory is first asked, and the toolchain's directories hold LLVM's
// static libraries (~400,000 names, ~250 ms to read here).
class DirectoryIndex {
public:
  DirectoryIndex(const std::string &dir, std::string sysroot, std::uint16_t machine, bool archives)
      : sysroot_(std::move(sysroot)), machine_(machine) {
    for (auto &[name, path] : libraries_in(dir)) {
      LibraryHome home{name, path};
      if (StringRef(path).ends_with(".a")) {
        if (archives)
          archives_.push_back(std::move(home));
      } else {
        shared_.emplace_back().home = std::move(home);
      }
    }
  }

  // A shared library first, then an archive; within each, by name.
  const LibraryHome *find(std::string_view symbol) const {
    StringRef name(symbol.data(), symbol.size());
    for (const Shared &lib : shared_) {
      std::call_once(lib.once, [&] { lib.file = open_library(lib.home.path, sysroot_, machine_); });
      if (lib.file && lib.file->defines(name))
        return &lib.home;
    }
    std::call_once(archive_once_, [&] { hash_archives(); });
    std::uint64_t h = llvm::xxh3_64bits(name);
    auto it = std::lower_bound(archive_names_.begin(), archive_names_.end(), std::make_pair(h, std::uint32_t(0)));
    return it != archive_names_.end() && it->first == h ? &archives_[it->second] : nullptr;
  }

private:
  // (hash of a name, the first archive defining it), sorted. Two names
  // with one 64-bit hash are not told apart.
  void hash_archives() const {
    for (std::uint32_t i = 0; i < archives_.size(); ++i)
      archive_names(archives_[i].path, [&](StringRef n) { archive_names_.emplace_back(llvm::xxh3_64bits(n), i); });
    std::sort(archive_names_.begin(), archive_names_.end());
    archive_names_.shrink_to_fit();
  }

  struct Shared {
    LibraryHome home;
    mutable std::once_flag once;
    mutable std::unique_ptr<LibraryFile> file;
  };
  std::string sysroot_;
  std::uint16_t machine_;
  std::deque<Shared> shared_;
  std::vector<LibraryHome> archives_;
  mutable std::once_flag archive_once_;
  mutable std::vector<std::pair<std::uint64_t, std::uint32_t>> archive_names_;
};

namespace {

std::mutex g_mutex;
std::map<std::tuple<std::string, std::string, std::uint16_t, bool>, std::shared_ptr<const DirectoryIndex>> g_dirs;

std::string resolve_prefix(const std::string &dir, const std::string &sysroot) {
  StringRef d(dir);
  if (d.starts_with("="))
    return sysroot + d.substr(1).str();
  if (d.starts_with("$SYSROOT"))
    return sysroot + d.substr(8).str();
  return dir;
}

} // namespace

LibrarySearch::LibrarySearch(const std::vector<std::string> &dirs, std::size_t user_dirs,
                             const std::string &sysroot, std::uint16_t machine) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const std::string &d = dirs[i];
    bool archives = i < user_dirs;
    llvm::SmallString<256> real;
    if (llvm::sys::fs::real_path(resolve_prefix(d, sysroot), real))
      continue; // no such directory
    if (!seen.insert(real.str().str()).second)
      continue; // /lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu
    std::lock_guard<std::mutex> lock(g_mutex);
    auto &slot = g_dirs[{real.str().str(), sysroot, machine, archives}];
    if (!slot)
      slot = std::make_shared<const DirectoryIndex>(real.str().str(), sysroot, machine, archives);
    dirs_.push_back(slot);
  }
}

const LibraryHome *LibrarySearch::home(std::string_view symbol) const {
  for (const auto &d : dirs_)
    if (const LibraryHome *h = d->find(symbol))
      return h;
  return nullptr;
}

} // namespace hotlink::detail
