#include "verify/structure.h"

#include "exports/recovery.h"

#include "llvm/BinaryFormat/Magic.h"

#include "llvm/BinaryFormat/MachO.h"
#include "llvm/Object/MachO.h"
#include "llvm/Support/SHA256.h"

namespace hotlink {

namespace {

std::uint32_t be32(const std::uint8_t *p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         p[3];
}

Error bad(const std::string &name, const std::string &what, const std::string &cmd) {
  return make_error(ErrorCode::InvalidInput, what, name, cmd,
                    "relink it with hotlink for a -apple-macos target; if it still fails, "
                    "please report it");
}

// Checks an ad-hoc code signature: the SuperBlob's CodeDirectory must
// cover the file up to the signature, with SHA-256 page hashes that match.
std::optional<Error> check_signature(const std::vector<std::uint8_t> &b, std::uint32_t off,
                                     std::uint32_t size, const std::string &name,
                                     MachOStructure &out) {
  const char *cmd = "LC_CODE_SIGNATURE";
  if (std::uint64_t(off) + size > b.size() || size < 12)
    return bad(name, "the code signature lies outside the file", cmd);
  const std::uint8_t *sb = b.data() + off;
  if (be32(sb) != 0xfade0cc0) // CSMAGIC_EMBEDDED_SIGNATURE
    return bad(name, "the code signature is not an embedded-signature SuperBlob", cmd);
  std::uint32_t count = be32(sb + 8);
  if (12 + std::uint64_t(count) * 8 > size)
    return bad(name, "the code signature's blob index is truncated", cmd);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t type = be32(sb + 12 + i * 8), boff = be32(sb + 16 + i * 8);
    if (type != 0) // CSSLOT_CODEDIRECTORY
      continue;
    if (std::uint64_t(boff) + 44 > size)
      return bad(name, "the CodeDirectory is truncated", cmd);
    const std::uint8_t *cd = sb + boff;
    if (be32(cd) != 0xfade0c02) // CSMAGIC_CODEDIRECTORY
      return bad(name, "the CodeDirectory has the wrong magic", cmd);
    std::uint32_t hash_offset = be32(cd + 16), n_slots = be32(cd + 28), code_limit = be32(cd + 32);
    std::uint8_t hash_size = cd[36], hash_type = cd[37], page_log2 = cd[39];
    if (hash_type != 2 || hash_size != 32) // CS_HASHTYPE_SHA256
      return bad(name, "the CodeDirectory does not use SHA-256 page hashes", cmd);
    if (code_limit != off)
      return bad(name, "the signature covers " + std::to_string(code_limit) +
                           " bytes, but the code runs up to the signature at " + std::to_string(off),
                 cmd);
    if (page_log2 < 10 || page_log2 > 16)
      return bad(name, "the CodeDirectory's page size is implausible", cmd);
    std::uint64_t page = 1ull << page_log2;
    if (n_slots != (code_limit + page - 1) / page)
      return bad(name, "the CodeDirectory has " + std::to_string(n_slots) + " page hashes for " +
                           std::to_string(code_limit) + " bytes",
                 cmd);
    if (std::uint64_t(boff) + hash_offset + std::uint64_t(n_slots) * 32 > size)
      return bad(name, "the CodeDirectory's hashes are truncated", cmd);
    for (std::uint32_t s = 0; s < n_slots; ++s) {
      std::uint64_t start = s * page, len = std::min<std::uint64_t>(page, code_limit - start);
      auto h = llvm::SHA256::hash(llvm::ArrayRef<std::uint8_t>(b.data() + start, len));
      if (!std::equal(h.begin(), h.end(), cd + hash_offset + s * 32))
        return bad(name, "page " + std::to_string(s) + "'s hash does not match the bytes (the "
                             "file changed after it was signed)",
                   cmd);
    }
    out.signed_adhoc = true;
    out.signed_pages = n_slots;
    return std::nullopt;
  }
  return bad(name, "the code signature has no CodeDirectory", cmd);
}

Expected<MachOStructure> check_unguarded(const std::vector<std::uint8_t> &bytes,
                                         const std::string &name) {
  llvm::MemoryBufferRef ref(
      llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size()), name);
  // Only Mach-O reaches LLVM's parser: the others' are not ours to fuzz.
  llvm::file_magic magic = llvm::identify_magic(ref.getBuffer());
  if (magic != llvm::file_magic::macho_dynamically_linked_shared_lib &&
      magic != llvm::file_magic::macho_object && magic != llvm::file_magic::macho_executable &&
      magic != llvm::file_magic::macho_bundle)
    return make_error(ErrorCode::NotASharedObject, "is not a Mach-O image", name);
  auto obj = llvm::object::ObjectFile::createObjectFile(ref);
  if (!obj) {
    std::string msg = llvm::toString(obj.takeError());
    return make_error(ErrorCode::NotASharedObject, "is not a readable Mach-O image: " + msg, name);
  }
  auto *m = llvm::dyn_cast<llvm::object::MachOObjectFile>(obj->get());
  if (!m || !m->is64Bit())
    return make_error(ErrorCode::FormatMismatch, "is not a 64-bit Mach-O image", name);
  MachOStructure out;
  const auto &h = m->getHeader64();
  if (h.filetype != llvm::MachO::MH_DYLIB)
    return make_error(ErrorCode::NotASharedObject, "is not a dylib (MH_DYLIB)", name);
  if (h.cputype == llvm::MachO::CPU_TYPE_X86_64)
    out.arch = "x86_64";
  else if (h.cputype == llvm::MachO::CPU_TYPE_ARM64)
    out.arch = "arm64";
  else
    return make_error(ErrorCode::ArchMismatch, "is neither x86_64 nor arm64", name);

  bool id = false, version = false, dyld_info = false, text_at_zero = false;
  std::optional<std::pair<std::uint32_t, std::uint32_t>> signature;
  for (const auto &lc : m->load_commands()) {
    switch (lc.C.cmd) {
    case llvm::MachO::LC_SEGMENT_64: {
      auto seg = m->getSegment64LoadCommand(lc);
      if (seg.fileoff + seg.filesize > bytes.size())
        return bad(name, std::string("segment ") + seg.segname + " lies outside the file",
                   "LC_SEGMENT_64");
      if (llvm::StringRef(seg.segname) == "__TEXT")
        text_at_zero = seg.fileoff == 0;
      break;
    }
    case llvm::MachO::LC_ID_DYLIB: {
      auto d = m->getDylibIDLoadCommand(lc);
      if (d.dylib.name >= d.cmdsize)
        return bad(name, "the install name lies outside its command", "LC_ID_DYLIB");
      out.install_name = std::string(lc.Ptr + d.dylib.name);
      if (out.install_name.empty())
        return bad(name, "the install name is empty", "LC_ID_DYLIB");
      id = true;
      break;
    }
    case llvm::MachO::LC_BUILD_VERSION: {
      auto bv = m->getBuildVersionLoadCommand(lc);
      if (bv.platform != llvm::MachO::PLATFORM_MACOS)
        return bad(name, "the build version is not for macOS", "LC_BUILD_VERSION");
      out.min_os = std::to_string(bv.minos >> 16) + "." + std::to_string((bv.minos >> 8) & 0xff);
      version = true;
      break;
    }
    case llvm::MachO::LC_VERSION_MIN_MACOSX:
      version = true;
      break;
    case llvm::MachO::LC_DYLD_CHAINED_FIXUPS:
      out.chained_fixups = true;
      break;
    case llvm::MachO::LC_DYLD_INFO:
    case llvm::MachO::LC_DYLD_INFO_ONLY:
      dyld_info = true;
      break;
    case llvm::MachO::LC_CODE_SIGNATURE: {
      auto cs = m->getLinkeditDataLoadCommand(lc);
      signature = {cs.dataoff, cs.datasize};
      break;
    }
    default:
      break;
    }
  }
  if (!text_at_zero)
    return bad(name, "the __TEXT segment does not start at file offset 0", "LC_SEGMENT_64");
  if (!id)
    return bad(name, "has no install name", "LC_ID_DYLIB");
  if (!version)
    return bad(name, "has no minimum macOS version", "LC_BUILD_VERSION");
  if (!out.chained_fixups && !dyld_info)
    return bad(name, "has no binding information for dyld", "LC_DYLD_CHAINED_FIXUPS");
  if (signature) {
    if (auto err = check_signature(bytes, signature->first, signature->second, name, out))
      return *err;
  } else if (out.arch == "arm64") {
    return bad(name, "arm64 code must be signed (ad-hoc at least)", "LC_CODE_SIGNATURE");
  }
  return out;
}

} // namespace

Expected<MachOStructure> check_macho_dylib(const std::vector<std::uint8_t> &bytes,
                                           const std::string &name) {
  return exports::read_guarded<MachOStructure>(name, ErrorCode::NotASharedObject,
                                               [&] { return check_unguarded(bytes, name); });
}

} // namespace hotlink
