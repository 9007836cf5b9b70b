#include "linker/platforms/nvptx/cubin.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELF.h"
#include "llvm/Support/Error.h"

#include <map>

namespace hotlink::detail::cubin {

namespace {

using llvm::object::ELF64LE;
using llvm::object::ELFFile;

// .nv.info's attribute formats and the attributes read here (the values
// NVIDIA's tools write; cuobjdump -elf names them EIATTR_*).
constexpr std::uint8_t kFormatNoValue = 1, kFormatByte = 2, kFormatHalf = 3, kFormatSized = 4;
constexpr std::uint8_t kFrameSize = 0x11, kMinStackSize = 0x12, kRegCount = 0x2f;
// st_other of a kernel's symbol (STO_CUDA_ENTRY).
constexpr std::uint8_t kEntry = 0x10;

Error damaged(const std::string &name, const std::string &what) {
  return make_error(ErrorCode::InvalidInput, "is a damaged cubin: " + what, name, {}, "link it again");
}

// The SM number in e_flags: ABI version 8 (CUDA 12.8 on) keeps it in bits
// 8-15, earlier ones in bits 0-7.
unsigned sm_of(const ELF64LE::Ehdr &h) {
  unsigned flags = h.e_flags;
  return h.e_ident[llvm::ELF::EI_ABIVERSION] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

// .nv.info's per-symbol attributes: attribute -> symbol index -> value.
using Attributes = std::map<std::uint8_t, std::map<std::uint32_t, std::uint64_t>>;

bool read_attributes(llvm::ArrayRef<std::uint8_t> bytes, Attributes &out) {
  std::size_t at = 0;
  while (at + 2 <= bytes.size()) {
    std::uint8_t format = bytes[at], attr = bytes[at + 1];
    at += 2;
    if (format == kFormatNoValue)
      continue;
    if (format == kFormatByte || format == kFormatHalf) {
      at += 2;
      continue;
    }
    if (format != kFormatSized || at + 2 > bytes.size())
      return false;
    std::size_t size = bytes[at] | (bytes[at + 1] << 8);
    at += 2;
    if (at + size > bytes.size())
      return false;
    if (size == 8) { // symbol index, value
      auto u32 = [&](std::size_t o) {
        return std::uint32_t(bytes[o]) | std::uint32_t(bytes[o + 1]) << 8 | std::uint32_t(bytes[o + 2]) << 16 |
               std::uint32_t(bytes[o + 3]) << 24;
      };
      out[attr][u32(at)] = u32(at + 4);
    }
    at += size;
  }
  return at == bytes.size();
}

} // namespace

bool is_cubin(const void *data, std::size_t size) {
  const auto *b = static_cast<const unsigned char *>(data);
  return size >= 20 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F' &&
         (b[18] | (b[19] << 8)) == llvm::ELF::EM_CUDA;
}

Expected<Cubin> read(const void *data, std::size_t size, const std::string &name) {
  auto file = ELFFile<ELF64LE>::create(llvm::StringRef(static_cast<const char *>(data), size));
  if (!file) {
    std::string why = llvm::toString(file.takeError());
    return make_error(ErrorCode::InvalidInput, "is not a 64-bit ELF image: " + why, name);
  }
  const auto &h = file->getHeader();
  if (h.e_machine != llvm::ELF::EM_CUDA)
    return make_error(ErrorCode::ArchMismatch, "is not for an NVIDIA GPU (ELF machine " +
                                                   std::to_string(h.e_machine) + ", not EM_CUDA)",
                      name, {}, "link it with --target nvptx64-nvidia-cuda");
  Cubin c;
  c.sm = sm_of(h);
  c.executable = h.e_type == llvm::ELF::ET_EXEC;
  auto sections = file->sections();
  if (!sections)
    return damaged(name, llvm::toString(sections.takeError()));
  Attributes attrs;
  std::map<std::string, std::uint64_t> shared, params;
  const ELF64LE::Shdr *symtab = nullptr;
  for (const auto &sh : *sections) {
    auto sname = file->getSectionName(sh);
    if (!sname)
      return damaged(name, llvm::toString(sname.takeError()));
    if (sh.sh_type == llvm::ELF::SHT_SYMTAB)
      symtab = &sh;
    if (*sname == ".nv.info") {
      auto bytes = file->getSectionContents(sh);
      if (!bytes || !read_attributes(*bytes, attrs))
        return damaged(name, "its .nv.info section cannot be read");
    } else if (sname->starts_with(".nv.shared.")) {
      shared[sname->substr(11).str()] = sh.sh_size;
    } else if (sname->starts_with(".nv.constant0.")) {
      params[sname->substr(14).str()] = sh.sh_size;
    } else if (unsigned bank = 0; sname->starts_with(".nv.constant") && !sname->substr(12).getAsInteger(10, bank)) {
      c.constant_banks[bank] += sh.sh_size;
    }
  }
  if (!symtab)
    return c;
  auto symbols = file->symbols(symtab);
  if (!symbols)
    return damaged(name, llvm::toString(symbols.takeError()));
  auto strtab = file->getStringTableForSymtab(*symtab);
  if (!strtab)
    return damaged(name, llvm::toString(strtab.takeError()));
  std::uint32_t index = 0;
  for (const auto &sym : *symbols) {
    std::uint32_t i = index++;
    if (sym.getBinding() == llvm::ELF::STB_LOCAL)
      continue;
    auto sname = sym.getName(*strtab);
    if (!sname)
      return damaged(name, llvm::toString(sname.takeError()));
    if (sym.isUndefined()) {
      // The driver's own, resolved when it loads the cubin: .nv.reservedSmem.*,
      // and the device runtime's calls into it (__cuda_syscall_*: a kernel
      // that launches kernels, linked with libcudadevrt.a).
      if (!sname->starts_with(".nv.") && !sname->starts_with("__cuda_syscall_"))
        c.undefined.push_back(sname->str());
      continue;
    }
    if (sym.getType() != llvm::ELF::STT_FUNC || !(sym.st_other & kEntry))
      continue;
    Kernel k;
    k.name = sname->str();
    k.registers = attrs[kRegCount][i];
    k.frame_size = attrs[kFrameSize][i];
    k.min_stack_size = attrs[kMinStackSize][i];
    k.shared_bytes = shared[k.name];
    k.param_bytes = params[k.name];
    c.kernels.push_back(std::move(k));
  }
  return c;
}

} // namespace hotlink::detail::cubin
