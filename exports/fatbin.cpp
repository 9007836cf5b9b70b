#include "exports/fatbin.h"

#include "exports/object_file.h"
#include "exports/ptx.h"
#include "exports/recovery.h"

#include "llvm/Object/Archive.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/OffloadBinary.h"

#include "llvm/Support/Compression.h"
#include "llvm/Support/Error.h"

#include <cstring>
#include <map>

namespace hotlink::exports {

namespace {

constexpr std::uint32_t kMagic = 0xBA55ED50;
constexpr std::size_t kHeader = 16;      // the container's header
constexpr std::size_t kImageHeader = 64; // an image's, at least
constexpr std::uint16_t kPtx = 1, kElf = 2, kLtoIr = 8;
constexpr std::uint32_t kLtoIrMagic = 0x7F4E43ED;
constexpr std::size_t kLtoIrHeader = 16; // less is not LTO-IR nvJitLink could read
constexpr std::uint64_t kZstd = 0x8000;   // the payload is zstd-compressed
constexpr std::uint64_t kOlderLz = 0x2000; // CUDA 11's own compression
constexpr std::uint64_t kMaxImage = std::uint64_t(1) << 30;

template <class T> T read_le(const std::uint8_t *p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= T(p[i]) << (8 * i);
  return v;
}

constexpr unsigned kEmCuda = 190;

// An ELF file's e_machine (little-endian), or -1 for anything else.
int elf_machine(const void *data, std::size_t size) {
  const auto *b = static_cast<const unsigned char *>(data);
  return size >= 20 && std::memcmp(b, "\x7f" "ELF", 4) == 0 ? (b[18] | b[19] << 8) : -1;
}

Error bad(const std::string &name, const std::string &what) {
  return make_error(ErrorCode::InvalidInput, "is not a fat binary hotlink can read: " + what, name, {},
                    "make it with CUDA 12 or 13's fatbinary, or give its PTX or cubins as inputs");
}

// One image at `p` (`left` bytes to the container's end): its header size
// and payload size through `used`.
Expected<FatbinImage> read_image(const std::uint8_t *p, std::uint64_t left, const std::string &name,
                                 std::uint64_t &used) {
  if (left < kImageHeader)
    return bad(name, "an image header is cut short");
  std::uint16_t kind = read_le<std::uint16_t>(p);
  std::uint32_t header = read_le<std::uint32_t>(p + 4);
  std::uint64_t padded = read_le<std::uint64_t>(p + 8);
  std::uint32_t compressed = read_le<std::uint32_t>(p + 16);
  std::uint32_t sm = read_le<std::uint32_t>(p + 28);
  std::uint64_t flags = read_le<std::uint64_t>(p + 40);
  std::uint64_t plain = read_le<std::uint64_t>(p + 56);
  if (header < kImageHeader || header > left || padded > left - header)
    return bad(name, "an image runs past the end of its container");
  used = header + padded;
  if (kind != kPtx && kind != kElf && kind != kLtoIr)
    return bad(name, "an image of kind " + std::to_string(kind) + " (neither PTX, a cubin nor LTO-IR)");
  FatbinImage image{kind == kPtx    ? FatbinImage::Kind::Ptx
                    : kind == kElf ? FatbinImage::Kind::Cubin
                                   : FatbinImage::Kind::LtoIr,
                    sm,
                    {}};
  const std::uint8_t *payload = p + header;
  if (image.kind == FatbinImage::Kind::LtoIr)
    return image; // sealed: hotlink reads its kind and architecture, never its bytes (nor their compression)
  if (flags & kOlderLz)
    return bad(name, "the sm_" + std::to_string(sm) + " image uses CUDA 11's compression");
  if (!(flags & kZstd)) {
    image.bytes.assign(payload, payload + padded);
    if (image.kind == FatbinImage::Kind::Ptx) // PTX is padded with NULs
      while (!image.bytes.empty() && image.bytes.back() == 0)
        image.bytes.pop_back();
    return image;
  }
  if (compressed > padded || plain > kMaxImage)
    return bad(name, "the sm_" + std::to_string(sm) + " image's sizes do not hold together");
  if (!llvm::compression::zstd::isAvailable())
    return bad(name, "its images are zstd-compressed and this LLVM has no zstd");
  llvm::SmallVector<std::uint8_t, 0> out;
  if (llvm::Error e = llvm::compression::zstd::decompress(llvm::ArrayRef<std::uint8_t>(payload, compressed), out,
                                                          static_cast<std::size_t>(plain)))
    return bad(name, "the sm_" + std::to_string(sm) + " image does not decompress: " + llvm::toString(std::move(e)));
  image.bytes.assign(out.begin(), out.end());
  return image;
}

} // namespace

bool looks_like_fatbin(const void *data, std::size_t size) {
  return size >= kHeader && read_le<std::uint32_t>(static_cast<const std::uint8_t *>(data)) == kMagic;
}

bool looks_like_lto_ir(const void *data, std::size_t size) {
  return size >= 4 && read_le<std::uint32_t>(static_cast<const std::uint8_t *>(data)) == kLtoIrMagic;
}

Expected<ObjectInfo> read_lto_ir(const void *data, std::size_t size, const std::string &name) {
  if (!looks_like_lto_ir(data, size) || size < kLtoIrHeader)
    return make_error(ErrorCode::InvalidInput, "is not NVIDIA LTO-IR: it is cut short or its magic is not 0x7F4E43ED",
                      name, {}, "make it with nvcc -dlto -ltoir, or give its cubin or PTX instead");
  ObjectInfo info = nvptx_object();
  info.nvidia_lto = true;
  return info;
}

Expected<std::vector<FatbinImage>> read_fatbin_images(const void *data, std::size_t size, const std::string &name) {
  const auto *p = static_cast<const std::uint8_t *>(data);
  std::vector<FatbinImage> images;
  std::uint64_t at = 0;
  while (at < size) {
    if (size - at < kHeader || read_le<std::uint32_t>(p + at) != kMagic)
      return bad(name, "bytes after its last container are not another one");
    std::uint16_t version = read_le<std::uint16_t>(p + at + 4), header = read_le<std::uint16_t>(p + at + 6);
    std::uint64_t body = read_le<std::uint64_t>(p + at + 8);
    if (version != 1 || header != kHeader)
      return bad(name, "a container of version " + std::to_string(version) + " (header " + std::to_string(header) +
                           " bytes)");
    if (body > size - at - kHeader)
      return bad(name, "a container runs past the end of the file");
    const std::uint8_t *q = p + at + kHeader;
    for (std::uint64_t off = 0; off < body;) {
      std::uint64_t used = 0;
      auto image = read_image(q + off, body - off, name, used);
      if (!image)
        return image.take_error();
      images.push_back(std::move(*image));
      off += used;
    }
    at += kHeader + body;
  }
  if (images.empty())
    return bad(name, "it holds no image");
  return images;
}

Expected<ObjectInfo> read_images(const std::vector<FatbinImage> &images, const std::string &name) {
  ObjectInfo info = nvptx_object();
  std::map<std::string, std::size_t> at; // each name once; a definition wins over a declaration
  for (const FatbinImage &image : images) {
    if (image.kind == FatbinImage::Kind::LtoIr) { // its names are sealed
      info.nvidia_lto = true;
      continue;
    }
    auto one = image.kind == FatbinImage::Kind::Ptx ? read_ptx(image.bytes.data(), image.bytes.size(), name)
                                                    : read_object(image.bytes.data(), image.bytes.size(), name);
    if (!one) { // the error names the input; its message, the image
      Error e = one.take_error();
      e.message = "its sm_" + std::to_string(image.sm) +
                  (image.kind == FatbinImage::Kind::Ptx ? " PTX image " : " cubin image ") + e.message;
      return e;
    }
    for (Symbol &s : one->symbols) {
      auto [it, fresh] = at.emplace(s.name, info.symbols.size());
      if (fresh)
        info.symbols.push_back(std::move(s));
      else if (s.defined && !info.symbols[it->second].defined)
        info.symbols[it->second] = std::move(s);
    }
  }
  return info;
}

Expected<ObjectInfo> read_fatbin(const void *data, std::size_t size, const std::string &name) {
  auto images = read_fatbin_images(data, size, name);
  if (!images)
    return images.take_error();
  return read_images(*images, name);
}

Expected<std::vector<FatbinImage>> carried_offload_images(const void *data, std::size_t size, const std::string &name) {
  int machine = elf_machine(data, size);
  if (machine < 0 || machine == int(kEmCuda))
    return std::vector<FatbinImage>();
  return read_guarded<std::vector<FatbinImage>>(name, ErrorCode::InvalidInput, [&]() -> Expected<std::vector<FatbinImage>> {
    llvm::MemoryBufferRef buf(llvm::StringRef(static_cast<const char *>(data), size), name);
    llvm::SmallVector<llvm::object::OffloadFile> files;
    if (llvm::Error e = llvm::object::extractOffloadBinaries(buf, files))
      return make_error(ErrorCode::InvalidInput, "its offload section cannot be read: " + llvm::toString(std::move(e)),
                        name, {}, "compile it again with clang -fgpu-rdc");
    std::vector<FatbinImage> images;
    for (const llvm::object::OffloadFile &f : files) {
      const llvm::object::OffloadBinary &ob = *f.getBinary();
      if (!ob.getTriple().starts_with("nvptx64"))
        continue;
      llvm::StringRef arch = ob.getArch();
      unsigned sm = 0;
      if (!arch.consume_front("sm_") || arch.consumeInteger(10, sm))
        sm = 0;
      llvm::StringRef image = ob.getImage();
      switch (ob.getImageKind()) {
      case llvm::object::IMG_Object:
      case llvm::object::IMG_Cubin:
        images.push_back({FatbinImage::Kind::Cubin, sm, {image.bytes_begin(), image.bytes_end()}});
        break;
      case llvm::object::IMG_PTX:
        images.push_back({FatbinImage::Kind::Ptx, sm, {image.bytes_begin(), image.bytes_end()}});
        break;
      case llvm::object::IMG_Fatbinary: {
        auto inner = read_fatbin_images(image.data(), image.size(), name);
        if (!inner)
          return inner.take_error();
        for (FatbinImage &i : *inner)
          images.push_back(std::move(i));
        break;
      }
      default:
        return make_error(ErrorCode::InvalidInput,
                          "carries clang's LLVM bitcode for " + ob.getArch().str() +
                              " (-foffload-lto), which nvJitLink does not link",
                          name, {}, "compile it without -foffload-lto, or link it with clang-linker-wrapper");
      }
    }
    return images;
  });
}

Expected<std::optional<std::string_view>> carried_fatbin(const void *data, std::size_t size, const std::string &name) {
  const auto *b = static_cast<const unsigned char *>(data);
  int machine = elf_machine(data, size);
  if (machine < 0 || machine == int(kEmCuda) || b[5] != 1 || (b[16] | b[17] << 8) != 1) // little-endian, ET_REL
    return std::optional<std::string_view>();
  return read_guarded<std::optional<std::string_view>>(name, ErrorCode::InvalidInput, [&]() -> Expected<std::optional<std::string_view>> {
    llvm::MemoryBufferRef buf(llvm::StringRef(static_cast<const char *>(data), size), name);
    auto obj = llvm::object::ObjectFile::createELFObjectFile(buf);
    if (!obj)
      return make_error(ErrorCode::InvalidInput, "cannot read it as an ELF object: " + llvm::toString(obj.takeError()),
                        name);
    std::optional<std::string_view> found;
    for (const llvm::object::SectionRef &sec : (*obj)->sections()) {
      auto sec_name = sec.getName();
      if (!sec_name) {
        llvm::consumeError(sec_name.takeError());
        continue;
      }
      bool rel = *sec_name == "__nv_relfatbin";
      if (!rel && (*sec_name != ".nv_fatbin" || found))
        continue;
      auto contents = sec.getContents();
      if (!contents) {
        llvm::consumeError(contents.takeError());
        continue;
      }
      found = std::string_view(contents->data(), contents->size());
      if (rel)
        break;
    }
    return found;
  });
}

Expected<std::vector<DeviceMember>> device_members(const void *data, std::size_t size, const std::string &name) {
  auto refused = [&](const std::string &why) {
    return make_error(ErrorCode::InvalidInput, why, name, {},
                      "give an archive of nvcc -rdc=true -c objects or cubins (ar rcs libNAME.a ...)");
  };
  return read_guarded<std::vector<DeviceMember>>(name, ErrorCode::InvalidInput, [&]() -> Expected<std::vector<DeviceMember>> {
    llvm::MemoryBufferRef buf(llvm::StringRef(static_cast<const char *>(data), size), name);
    auto archive = llvm::object::Archive::create(buf);
    if (!archive)
      return refused("cannot read it as an archive: " + llvm::toString(archive.takeError()));
    std::vector<DeviceMember> members;
    llvm::Error err = llvm::Error::success();
    for (const llvm::object::Archive::Child &c : (*archive)->children(err)) {
      auto member = c.getName();
      auto bytes = c.getBuffer();
      if (!member || !bytes) {
        llvm::consumeError(member ? bytes.takeError() : member.takeError());
        llvm::consumeError(std::move(err));
        return refused("a member cannot be read");
      }
      // LLVM returns the ranges the headers claim, unchecked.
      if (!in_buffer(buf, member->data(), member->size()) || !in_buffer(buf, bytes->data(), bytes->size())) {
        llvm::consumeError(std::move(err));
        return refused("a member, or its name, runs past the end of the archive");
      }
      std::string label = name + "(" + member->str() + ")";
      auto fatbin = carried_fatbin(bytes->data(), bytes->size(), label);
      if (!fatbin) {
        llvm::consumeError(std::move(err));
        return fatbin.take_error();
      }
      bool cubin = elf_machine(bytes->data(), bytes->size()) == int(kEmCuda);
      if (*fatbin)
        members.push_back({member->str(), **fatbin});
      else if (cubin || looks_like_lto_ir(bytes->data(), bytes->size()))
        members.push_back({member->str(), std::string_view(bytes->data(), bytes->size())});
      // else: host code alone
    }
    if (err)
      return refused("corrupt archive: " + llvm::toString(std::move(err)));
    if (members.empty())
      return refused("the archive has no member with device code");
    return members;
  });
}

Expected<std::vector<FatbinImage>> carried_images(const void *data, std::size_t size, const std::string &name) {
  auto fatbin = carried_fatbin(data, size, name);
  if (!fatbin)
    return fatbin.take_error();
  return *fatbin ? read_fatbin_images((*fatbin)->data(), (*fatbin)->size(), name)
                 : carried_offload_images(data, size, name);
}

Expected<ObjectInfo> read_device_archive(const void *data, std::size_t size, const std::string &name) {
  auto members = device_members(data, size, name);
  if (!members)
    return members.take_error();
  ObjectInfo info = nvptx_object();
  info.kind = FileKind::Archive;
  for (const DeviceMember &m : *members) {
    std::string label = name + "(" + m.name + ")";
    auto one = read_object(m.device.data(), m.device.size(), label); // a fat binary, LTO-IR or cubin
    if (!one)
      return one.take_error();
    info.nvidia_lto = info.nvidia_lto || one->nvidia_lto;
    for (Symbol &s : one->symbols) {
      s.member = m.name;
      info.symbols.push_back(std::move(s));
    }
  }
  return info;
}

} // namespace hotlink::exports
