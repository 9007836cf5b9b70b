#include "linker/platforms/amdgpu/code_object.h"

#include "exports/recovery.h"
#include "linker/platforms/amdgpu/target_id.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

namespace hotlink::detail::amdgpu {

namespace {

using namespace llvm;
using ELFT = object::ELF64LE;

Error malformed(const std::string &name, const std::string &why) {
  return make_error(ErrorCode::InvalidInput, why, name, {},
                    "relink it from its objects; a code object the HSA loader can read has a well-formed note");
}

// The target ID of the header: the processor from e_flags' machine, and
// xnack/sramecc as code object v4+ encode them (on, off, or any: left out).
std::string header_target_id(const object::ELFObjectFileBase &obj, const ELFT::Ehdr &h) {
  std::map<std::string, bool> features;
  if (h.e_ident[ELF::EI_ABIVERSION] >= ELF::ELFABIVERSION_AMDGPU_HSA_V4) {
    auto setting = [&](unsigned mask, unsigned on, unsigned off, const char *feature) {
      unsigned v = h.e_flags & mask;
      if (v == on)
        features[feature] = true;
      else if (v == off)
        features[feature] = false;
    };
    setting(ELF::EF_AMDGPU_FEATURE_XNACK_V4, ELF::EF_AMDGPU_FEATURE_XNACK_ON_V4, ELF::EF_AMDGPU_FEATURE_XNACK_OFF_V4,
            "xnack");
    setting(ELF::EF_AMDGPU_FEATURE_SRAMECC_V4, ELF::EF_AMDGPU_FEATURE_SRAMECC_ON_V4,
            ELF::EF_AMDGPU_FEATURE_SRAMECC_OFF_V4, "sramecc");
  }
  return canonical_target_id(obj.tryGetCPUName().value_or(""), features);
}

unsigned version_of(std::uint8_t abi_version) {
  // ELFABIVERSION_AMDGPU_HSA_V2 is 0: code object version = abi + 2.
  return abi_version + 2u;
}

// One kernel's map of the note.
std::optional<Error> read_kernel(msgpack::DocNode node, const std::string &name, Kernel &k) {
  if (!node.isMap())
    return malformed(name, "an entry of amdhsa.kernels in the NT_AMDGPU_METADATA note is not a map");
  msgpack::MapDocNode &map = node.getMap();
  auto text = [&](const char *key, std::string &out) -> bool {
    auto it = map.find(key);
    if (it == map.end() || it->second.getKind() != msgpack::Type::String)
      return false;
    out = it->second.getString().str();
    return true;
  };
  auto number = [&](const char *key, std::uint64_t &out) {
    auto it = map.find(key);
    if (it == map.end())
      return;
    if (it->second.getKind() == msgpack::Type::UInt)
      out = it->second.getUInt();
    else if (it->second.getKind() == msgpack::Type::Int && it->second.getInt() >= 0)
      out = static_cast<std::uint64_t>(it->second.getInt());
  };
  if (!text(".name", k.name) || !text(".symbol", k.symbol))
    return malformed(name, "a kernel of the NT_AMDGPU_METADATA note has no .name or .symbol");
  number(".kernarg_segment_size", k.kernarg_segment_size);
  number(".group_segment_fixed_size", k.group_segment_fixed_size);
  number(".private_segment_fixed_size", k.private_segment_fixed_size);
  number(".sgpr_count", k.sgpr_count);
  number(".vgpr_count", k.vgpr_count);
  number(".agpr_count", k.agpr_count);
  number(".wavefront_size", k.wavefront_size);
  return std::nullopt;
}

// The msgpack map of the note (code object v3 and later).
std::optional<Error> read_metadata(StringRef blob, const std::string &name, CodeObject &co) {
  msgpack::Document doc;
  if (!doc.readFromBlob(blob, /*Multi=*/false))
    return malformed(name, "the NT_AMDGPU_METADATA note is not valid msgpack");
  if (!doc.getRoot().isMap())
    return malformed(name, "the NT_AMDGPU_METADATA note is not a msgpack map");
  msgpack::MapDocNode &root = doc.getRoot().getMap();
  co.has_metadata = true;
  auto target = root.find("amdhsa.target");
  if (target != root.end() && target->second.getKind() == msgpack::Type::String)
    co.metadata_target = target->second.getString().str();
  auto kernels = root.find("amdhsa.kernels");
  if (kernels == root.end())
    return std::nullopt;
  if (!kernels->second.isArray())
    return malformed(name, "amdhsa.kernels in the NT_AMDGPU_METADATA note is not an array");
  for (msgpack::DocNode &node : kernels->second.getArray()) {
    Kernel k;
    if (auto err = read_kernel(node, name, k))
      return err;
    co.kernels.push_back(std::move(k));
  }
  return std::nullopt;
}

std::optional<Error> read_notes(const object::ELFFile<ELFT> &file, const std::string &name, CodeObject &co) {
  auto sections = file.sections();
  if (!sections)
    return malformed(name, "its section headers cannot be read: " + toString(sections.takeError()));
  for (const ELFT::Shdr &sec : *sections) {
    if (sec.sh_type != ELF::SHT_NOTE)
      continue;
    if (sec.sh_offset > file.getBufSize() || sec.sh_size > file.getBufSize() - sec.sh_offset)
      return malformed(name, "a note section extends past the end of the file (truncated?)");
    llvm::Error err = llvm::Error::success();
    for (const auto &note : file.notes(sec, err)) {
      if (note.getName() != "AMDGPU" || note.getType() != ELF::NT_AMDGPU_METADATA)
        continue;
      ArrayRef<std::uint8_t> desc = note.getDesc(sec.sh_addralign);
      if (auto e = read_metadata(toStringRef(desc), name, co))
        return e;
    }
    if (err)
      return malformed(name, "a note section is malformed (truncated?): " + toString(std::move(err)));
  }
  return std::nullopt;
}

bool loader_applies(std::uint32_t type) {
  switch (type) {
  case ELF::R_AMDGPU_NONE:
  case ELF::R_AMDGPU_ABS32_LO:
  case ELF::R_AMDGPU_ABS32_HI:
  case ELF::R_AMDGPU_ABS64:
  case ELF::R_AMDGPU_ABS32:
  case ELF::R_AMDGPU_RELATIVE64: return true;
  default: return false;
  }
}

// A linked code object: what it leaves undefined, and dynamic relocations
// the HSA loader does not apply.
std::optional<Error> read_dynamic(const object::ELFObjectFile<ELFT> &obj, const std::string &name, CodeObject &co) {
  for (const object::ELFSymbolRef &s : obj.getDynamicSymbolIterators()) {
    auto flags = s.getFlags();
    auto nm = s.getName();
    if (!flags || !nm) {
      if (!flags) consumeError(flags.takeError());
      if (!nm) consumeError(nm.takeError());
      return malformed(name, "its dynamic symbol table cannot be read");
    }
    if ((*flags & object::SymbolRef::SF_Undefined) && !nm->empty())
      co.undefined.push_back(nm->str());
  }
  // Through ELFFile, which checks each table's bounds (RelocationRef's
  // accessors abort on a malformed one: found by fuzzing).
  const object::ELFFile<ELFT> &file = obj.getELFFile();
  auto sections = file.sections();
  if (!sections)
    return malformed(name, "its section headers cannot be read: " + toString(sections.takeError()));
  auto bad = [&](std::uint32_t type) {
    if (!loader_applies(type))
      co.bad_relocations.push_back(object::getELFRelocationTypeName(ELF::EM_AMDGPU, type).str());
  };
  for (const ELFT::Shdr &sec : *sections) {
    if (sec.sh_type == ELF::SHT_RELA) {
      auto relas = file.relas(sec);
      if (!relas)
        return malformed(name, "a relocation section is malformed: " + toString(relas.takeError()));
      for (const ELFT::Rela &r : *relas)
        bad(r.getType(false));
    } else if (sec.sh_type == ELF::SHT_REL) {
      auto rels = file.rels(sec);
      if (!rels)
        return malformed(name, "a relocation section is malformed: " + toString(rels.takeError()));
      for (const ELFT::Rel &r : *rels)
        bad(r.getType(false));
    }
  }
  return std::nullopt;
}

} // namespace

namespace {

Expected<CodeObject> read_unguarded(const void *data, std::size_t size, const std::string &name) {
  StringRef bytes(static_cast<const char *>(data), size);
  auto obj = object::ELFObjectFile<ELFT>::create(MemoryBufferRef(bytes, name));
  if (!obj)
    return malformed(name, "not a 64-bit ELF file: " + toString(obj.takeError()));
  const object::ELFFile<ELFT> &file = obj->getELFFile();
  const ELFT::Ehdr &h = file.getHeader();
  if (h.e_machine != ELF::EM_AMDGPU)
    return make_error(ErrorCode::ArchMismatch, "is not an AMDGPU ELF file (e_machine is not EM_AMDGPU)", name);
  if (h.e_ident[ELF::EI_OSABI] != ELF::ELFOSABI_AMDGPU_HSA)
    return make_error(ErrorCode::ArchMismatch, "is not for the HSA runtime (its OS ABI is not AMDGPU_HSA)", name, {},
                      "compile it for amdgcn-amd-amdhsa");
  // LLVM names a machine value it does not know with llvm_unreachable
  // (undefined behaviour in a release build: found by fuzzing).
  unsigned mach = h.e_flags & ELF::EF_AMDGPU_MACH;
  bool reserved = false;
  for (unsigned r : {ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X27, ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X40,
                     ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X4B, ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X4D,
                     ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X50, ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X56,
                     ELF::EF_AMDGPU_MACH_AMDGCN_RESERVED_0X57})
    reserved |= mach == r;
  // LLVM 22 leaves 0x5b..0x5e unnamed between GFX1251 and GFX9_4_GENERIC.
  reserved |= mach > ELF::EF_AMDGPU_MACH_AMDGCN_GFX1251 && mach < ELF::EF_AMDGPU_MACH_AMDGCN_GFX9_4_GENERIC;
  if (mach < ELF::EF_AMDGPU_MACH_AMDGCN_FIRST || mach > ELF::EF_AMDGPU_MACH_AMDGCN_LAST || reserved)
    return malformed(name, "its e_flags name no AMDGCN processor this LLVM knows");
  CodeObject co;
  co.shared = h.e_type == ELF::ET_DYN;
  co.version = version_of(h.e_ident[ELF::EI_ABIVERSION]);
  co.target_id = header_target_id(*obj, h);
  if (auto err = read_notes(file, name, co))
    return std::move(*err);
  if (co.shared)
    if (auto err = read_dynamic(*obj, name, co))
      return std::move(*err);
  return co;
}

} // namespace

// Under the readers' crash recovery: LLVM's msgpack reader crashes on some
// malformed notes (found by fuzzing).
Expected<CodeObject> read_code_object(const void *data, std::size_t size, const std::string &name) {
  return exports::read_guarded<CodeObject>(name, ErrorCode::InvalidInput,
                                           [&] { return read_unguarded(data, size, name); });
}

Expected<BitcodeTarget> read_bitcode_target(const void *data, std::size_t size, const std::string &name) {
  LLVMContext context;
  MemoryBufferRef buf(StringRef(static_cast<const char *>(data), size), name);
  auto module = getLazyBitcodeModule(buf, context);
  if (!module)
    return make_error(ErrorCode::InvalidInput, "cannot read the bitcode: " + toString(module.takeError()), name);
  BitcodeTarget t;
  if (auto *flag = mdconst::extract_or_null<ConstantInt>((*module)->getModuleFlag("amdhsa_code_object_version")))
    t.version = static_cast<unsigned>(flag->getZExtValue() / 100);
  for (const Function &f : **module)
    if (!f.isDeclaration() && f.getCallingConv() == CallingConv::AMDGPU_KERNEL)
      t.kernels.push_back(f.getName().str());
  for (const Function &f : **module) {
    Attribute cpu = f.getFnAttribute("target-cpu");
    if (!cpu.isValid() || cpu.getValueAsString().empty())
      continue;
    std::map<std::string, bool> features;
    SmallVector<StringRef, 8> list;
    f.getFnAttribute("target-features").getValueAsString().split(list, ',', -1, false);
    for (StringRef feature : list)
      if (feature.size() > 1 && (feature.drop_front() == "xnack" || feature.drop_front() == "sramecc"))
        features[feature.drop_front().str()] = feature.front() == '+';
    t.target_id = canonical_target_id(cpu.getValueAsString(), features);
    break;
  }
  return t;
}

} // namespace hotlink::detail::amdgpu
