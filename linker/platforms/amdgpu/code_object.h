// Internal. Reading AMDGPU ELF files (relocatable objects and code
// objects) and LLVM bitcode for amdgcn: the target ID and code object
// version they were built for, and the kernels their NT_AMDGPU_METADATA
// note lists, as the HSA loader and ROCm's comgr read them.
//
// Contract: never crashes on malformed bytes; every error names the input
// and says what is wrong (a truncated note, metadata that is not the
// msgpack map the HSA loader expects).
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::detail::amdgpu {

// One kernel of the metadata note (the fields hotlink reports).
struct Kernel {
  std::string name;   // .name
  std::string symbol; // .symbol: its descriptor, NAME.kd
  std::uint64_t kernarg_segment_size = 0, group_segment_fixed_size = 0, private_segment_fixed_size = 0;
  std::uint64_t sgpr_count = 0, vgpr_count = 0, agpr_count = 0, wavefront_size = 0;
};

struct CodeObject {
  bool shared = false;        // ET_DYN: a linked code object; else ET_REL
  std::string target_id;      // canonical: "gfx90a", "gfx90a:sramecc+:xnack-"
  unsigned version = 0;       // the code object version (4, 5, 6)
  std::string metadata_target; // amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx90a"
  std::vector<Kernel> kernels;
  bool has_metadata = false;
  // A linked code object's undefined dynamic symbols and dynamic
  // relocations of types the HSA loader cannot apply.
  std::vector<std::string> undefined;
  std::vector<std::string> bad_relocations;
};

// Reads an AMDGPU ELF file (object or code object).
Expected<CodeObject> read_code_object(const void *data, std::size_t size, const std::string &name);

// What a bitcode module for amdgcn says of its target: the processor of
// its functions ("" when none names one) and the code object version of
// its module flag (0 when it has none).
struct BitcodeTarget {
  std::string target_id;
  unsigned version = 0;
  std::vector<std::string> kernels; // its amdgpu_kernel functions
};
Expected<BitcodeTarget> read_bitcode_target(const void *data, std::size_t size, const std::string &name);

} // namespace hotlink::detail::amdgpu
