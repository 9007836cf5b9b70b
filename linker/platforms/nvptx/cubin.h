// Internal. Reading a cubin (ELF for EM_CUDA) as the CUDA driver would:
// the SM architecture in its header, its kernels with their resources
// from its own sections (the registers, frame and stack sizes of
// .nv.info, the shared memory of .nv.shared.KERNEL), the module's constant
// banks, and what it leaves unresolved.
#pragma once

#include "hotlink/error.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hotlink::detail::cubin {

struct Kernel {
  std::string name;
  std::uint64_t registers = 0;
  std::uint64_t frame_size = 0;   // bytes of stack frame
  std::uint64_t min_stack_size = 0;
  std::uint64_t shared_bytes = 0; // static shared memory (.nv.shared.NAME)
  std::uint64_t param_bytes = 0;  // the kernel's constant bank 0 (.nv.constant0.NAME)
};

struct Cubin {
  unsigned sm = 0;        // 90 for sm_90
  bool executable = false; // linked (ET_EXEC), not relocatable (ET_REL)
  std::vector<Kernel> kernels;
  // The module's constant banks (.nv.constantN: __constant__ data in bank
  // 3, the compiler's literals in bank 2), bank -> bytes.
  std::map<unsigned, std::uint64_t> constant_banks;
  std::vector<std::string> undefined; // but the names the driver resolves at load (.nv.*, __cuda_syscall_*)
};

// Whether `data` begins as an ELF file for EM_CUDA: a cubin, linked or
// relocatable (ptxas -c, nvcc -rdc).
bool is_cubin(const void *data, std::size_t size);

// An error names the input when it is not a well-formed cubin.
Expected<Cubin> read(const void *data, std::size_t size, const std::string &name);

} // namespace hotlink::detail::cubin
