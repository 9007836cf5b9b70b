// Internal. Reading CUDA fat binaries (fatbinary's .fatbin, the
// .nv_fatbin section nvcc embeds): a container of PTX and cubin images,
// each for one SM architecture, which nvJitLink takes whole and picks
// from. NVIDIA documents no layout; this reads the one CUDA 12 and 13's
// fatbinary write (checked against it at test time): a 16-byte header
// (magic 0xBA55ED50, version 1, its own size, the size of what follows),
// then per image a header (kind: 1 PTX, 2 cubin, 8 LTO-IR; header size,
// payload size, compressed size, SM, flags, uncompressed size) and the
// payload, zstd-compressed when flag 0x8000 is set. Several containers may
// follow one another.
#pragma once

#include "hotlink/symbols.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotlink::exports {

struct FatbinImage {
  enum class Kind { Ptx, Cubin, LtoIr } kind;
  unsigned sm = 0;                 // the SM architecture it is for: 90 for sm_90 (LTO-IR: lto_90)
  std::vector<std::uint8_t> bytes; // uncompressed (PTX: its text); LTO-IR: none, never read
};

bool looks_like_fatbin(const void *data, std::size_t size);

// NVIDIA's LTO-IR (nvcc -dlto -ltoir, NVRTC with -dlto): its magic,
// 0x7F4E43ED. Nothing else of it is readable (NVIDIA encodes it).
bool looks_like_lto_ir(const void *data, std::size_t size);

// LTO-IR as an object: ELF, nvptx64, nvidia_lto, no symbols.
Expected<ObjectInfo> read_lto_ir(const void *data, std::size_t size, const std::string &name);

// Every image; an error names the input and what is wrong (a truncated
// header or payload, a compression this cannot read).
Expected<std::vector<FatbinImage>> read_fatbin_images(const void *data, std::size_t size, const std::string &name);

// The container as an object: ELF, nvptx64, what its images define and
// declare (each name once).
Expected<ObjectInfo> read_fatbin(const void *data, std::size_t size, const std::string &name);

// Images as an object, as read_fatbin reads a container's (LTO-IR's names
// are sealed: nvidia_lto).
Expected<ObjectInfo> read_images(const std::vector<FatbinImage> &images, const std::string &name);

// The NVIDIA images a host object carries in clang's offload section
// (.llvm.offloading: clang -fgpu-rdc with the new offload driver, LLVM's
// OffloadBinary), read by LLVM: cubins, PTX, fat binaries' images. Empty:
// none. Refused by name: clang's LLVM bitcode (-foffload-lto), which
// nvJitLink does not link.
Expected<std::vector<FatbinImage>> carried_offload_images(const void *data, std::size_t size, const std::string &name);

// The fat binary a host ELF object carries: nvcc -rdc=true -c writes its
// relocatable device code in __nv_relfatbin, nvcc -c its linked device
// code in .nv_fatbin (the first, when both are there). nullopt: not an
// ELF object of a CPU, or one that carries none. A view into `data`.
Expected<std::optional<std::string_view>> carried_fatbin(const void *data, std::size_t size, const std::string &name);

// The members of an archive that carry device code: a host object's fat
// binary (a view into `data`), a cubin or LTO-IR (the member itself).
// Members of host code alone are passed over; an archive with none is
// refused by name.
struct DeviceMember {
  std::string name;        // the member's
  std::string_view device; // a fat binary, cubin or LTO-IR
};
Expected<std::vector<DeviceMember>> device_members(const void *data, std::size_t size, const std::string &name);

// The device images a host object carries: its nvcc fat binary's
// (carried_fatbin), else clang's offload images. Empty: none, or not a
// host ELF object.
Expected<std::vector<FatbinImage>> carried_images(const void *data, std::size_t size, const std::string &name);

// An archive for a device link (libcudadevrt.a, an archive of nvcc
// -rdc=true -c objects or of cubins): as an object, ELF, nvptx64, kind
// Archive, what its members' device code defines and declares (each
// symbol names its member). Members without device code are passed
// over; an archive with none is refused by name.
Expected<ObjectInfo> read_device_archive(const void *data, std::size_t size, const std::string &name);

} // namespace hotlink::exports
