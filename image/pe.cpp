// PE images (PE32 and PE32+, "MZ" and "PE\0\0"): what read_pe() answers for
// verify and the loader, without LLVM. The fields and checks follow
// Microsoft's PE format specification and what LLVM Object does with them.
#include "image/bytes.h"
#include "image/image.h"

#include <algorithm>

namespace hotlink::image {

namespace {

constexpr std::uint16_t kPe32 = 0x10b, kPe32Plus = 0x20b;
constexpr std::uint16_t kImageFileDll = 0x2000;

Error damaged(const std::string &name, const std::string &why) {
  return make_error(ErrorCode::InvalidInput, "the PE image is damaged: " + why, name);
}

struct PeSection {
  std::uint64_t vaddr = 0, vsize = 0, raw_size = 0, raw_offset = 0;
};

exports::Arch arch_of_machine(std::uint64_t m) {
  switch (m) {
  case 0x8664: return exports::Arch::X86_64;
  case 0x14c: return exports::Arch::X86;
  case 0xaa64: // ARM64
  case 0xa641: // ARM64EC
  case 0xa64e: // ARM64X
    return exports::Arch::AArch64;
  default: return exports::Arch::Unknown;
  }
}

// The file offset of an RVA: inside the section whose virtual range holds
// it, and inside that section's bytes in the file.
std::optional<std::uint64_t> rva_offset(const std::vector<PeSection> &sections, const Bytes &b, std::uint64_t rva) {
  for (const PeSection &s : sections)
    if (s.vaddr <= rva && rva < s.vaddr + s.vsize) {
      if (rva - s.vaddr >= s.raw_size)
        return std::nullopt;
      std::uint64_t off = s.raw_offset + (rva - s.vaddr);
      return off < b.size() ? std::optional<std::uint64_t>(off) : std::nullopt;
    }
  return std::nullopt;
}

// The import directory (data directory 1): each imported DLL in `needed`,
// in the directory's order, and each of its symbols in `imports` as
// "DLL!name", or "DLL!#N" for one imported by ordinal N. Bound by a lookup
// table of PE32 (4-byte) or PE32+ (8-byte) entries, ending at a zero one.
// The directory ends, as the PE loader ends it, at the first descriptor
// without a name or without an address table.
std::optional<Error> read_imports(const Bytes &b, const std::vector<PeSection> &sections, std::uint64_t rva,
                                  bool plus, const std::string &name, exports::ArtifactInfo &info) {
  auto dir = rva_offset(sections, b, rva);
  if (!dir)
    return damaged(name, "its import directory lies outside its sections");
  const unsigned entry = plus ? 8 : 4;
  const std::uint64_t ordinal_flag = plus ? 1ull << 63 : 1ull << 31;
  bool ok = true;
  // Each descriptor takes 20 bytes of the file, each lookup entry 4 or 8:
  // a directory cannot hold more than that, and is refused, not walked.
  for (std::uint64_t at = *dir;; at += 20) {
    if (!b.has(at, 20))
      return damaged(name, "its import directory runs past the end of the file");
    std::uint64_t lookup = b.u(at, 4, ok), dll_rva = b.u(at + 12, 4, ok), thunks = b.u(at + 16, 4, ok);
    if (dll_rva == 0 || thunks == 0)
      return std::nullopt;
    auto dll_at = rva_offset(sections, b, dll_rva);
    bool ended = false;
    std::string_view dll = dll_at ? b.c_string(*dll_at, b.size(), ended) : std::string_view();
    if (!ended || dll.empty())
      return damaged(name, "an imported DLL's name lies outside the file");
    info.needed.emplace_back(dll);
    auto table = rva_offset(sections, b, lookup ? lookup : thunks);
    if (!table)
      return damaged(name, "the import table of " + std::string(dll) + " lies outside its sections");
    for (std::uint64_t t = *table;; t += entry) {
      if (!b.has(t, entry))
        return damaged(name, "the import table of " + std::string(dll) + " runs past the end of the file");
      std::uint64_t e = b.u(t, entry, ok);
      if (e == 0)
        break;
      if (e & ordinal_flag) {
        info.imports.push_back(std::string(dll) + "!#" + std::to_string(e & 0xffff));
        continue;
      }
      auto hint = rva_offset(sections, b, e & 0x7fffffff);
      std::string_view symbol = hint ? b.c_string(*hint + 2, b.size(), ended) : std::string_view();
      if (!hint || !ended || symbol.empty())
        return damaged(name, "a name imported from " + std::string(dll) + " lies outside the file");
      info.imports.push_back(std::string(dll) + "!" + std::string(symbol));
    }
  }
}

} // namespace

Expected<exports::ArtifactInfo> read_pe(const void *data, std::size_t size, const std::string &name) {
  Bytes b(data, size);
  bool ok = true;
  std::uint64_t pe = b.u(0x3c, 4, ok);
  if (!ok || !b.has(pe, 24) || std::string_view(reinterpret_cast<const char *>(b.data() + pe), 4) !=
                                   std::string_view("PE\0\0", 4))
    return damaged(name, "it has no PE signature where its DOS header points");
  exports::ArtifactInfo info;
  info.format = exports::Format::COFF;
  info.arch = arch_of_machine(b.u(pe + 4, 2, ok));
  std::uint64_t nsections = b.u(pe + 6, 2, ok), optional_size = b.u(pe + 20, 2, ok);
  std::uint64_t characteristics = b.u(pe + 22, 2, ok);
  info.kind = characteristics & kImageFileDll ? exports::FileKind::SharedObject : exports::FileKind::Executable;
  std::uint64_t opt = pe + 24;
  std::uint64_t magic = b.u(opt, 2, ok);
  if (!ok || (magic != kPe32 && magic != kPe32Plus))
    return damaged(name, "its optional header is neither PE32 nor PE32+");
  bool plus = magic == kPe32Plus;
  std::uint64_t ndirs = b.u(opt + (plus ? 108 : 92), 4, ok);
  std::uint64_t dirs = opt + (plus ? 112 : 96);
  if (!ok || !b.has(dirs, ndirs * 8))
    return damaged(name, "its data directories extend past the end of the file");
  std::uint64_t table = opt + optional_size;
  if (!b.has(table, nsections * 40))
    return damaged(name, "its section table extends past the end of the file");
  std::vector<PeSection> sections(nsections);
  for (std::uint64_t i = 0; i < nsections; ++i) {
    std::uint64_t at = table + i * 40;
    sections[i] = {b.u(at + 12, 4, ok), b.u(at + 8, 4, ok), b.u(at + 16, 4, ok), b.u(at + 20, 4, ok)};
  }
  std::uint64_t import_rva = ndirs > 1 ? b.u(dirs + 8, 4, ok) : 0;
  if (import_rva != 0)
    if (auto err = read_imports(b, sections, import_rva, plus, name, info))
      return *err;
  std::uint64_t export_rva = ndirs > 0 ? b.u(dirs, 4, ok) : 0;
  if (export_rva == 0)
    return info;
  auto dir = rva_offset(sections, b, export_rva);
  if (!dir || !b.has(*dir, 40))
    return damaged(name, "its export directory lies outside its sections");
  std::uint64_t addresses = b.u(*dir + 20, 4, ok), names = b.u(*dir + 24, 4, ok);
  // Each export takes at least 4 bytes of the file: a directory that
  // claims more is refused instead of walked.
  if (addresses > size / 4 || names > size / 4)
    return make_error(ErrorCode::InvalidInput, "the export directory claims more entries than the file can hold", name);
  if (names == 0)
    return info;
  auto name_table = rva_offset(sections, b, b.u(*dir + 32, 4, ok));
  auto ordinal_table = rva_offset(sections, b, b.u(*dir + 36, 4, ok));
  if (!name_table || !ordinal_table || !b.has(*name_table, names * 4) || !b.has(*ordinal_table, names * 2))
    return damaged(name, "its export name or ordinal table lies outside the file");
  for (std::uint64_t i = 0; i < names; ++i) {
    if (b.u(*ordinal_table + 2 * i, 2, ok) >= addresses)
      continue; // names no entry of the address table
    auto at = rva_offset(sections, b, b.u(*name_table + 4 * i, 4, ok));
    bool ended = false;
    std::string_view n = at ? b.c_string(*at, size, ended) : std::string_view();
    if (!ended)
      return make_error(ErrorCode::InvalidInput, "an export's name lies outside the file", name);
    if (!n.empty())
      info.exports.emplace_back(n);
  }
  std::sort(info.exports.begin(), info.exports.end());
  info.exports.erase(std::unique(info.exports.begin(), info.exports.end()), info.exports.end());
  return info;
}

} // namespace hotlink::image
