// Internal. NVIDIA's in-process device linker, nvJitLink (the CUDA
// toolkit's libnvJitLink.so, or the nvidia-nvjitlink Python wheel),
// loaded with dlopen on the first link that needs it: hotlink builds and
// runs without it, and a cache hit never loads it.
#pragma once

#include "hotlink/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::detail::nvjitlink {

// Where the library is looked for, in order: $HOTLINK_NVJITLINK (alone
// when set), $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64,
// the dynamic loader's own path, then the Python wheel's
// nvidia/nvjitlink/lib in the site folders.
std::vector<std::string> candidates();

// The library's file (its real path), found without loading it: what the
// cache key fingerprints. An error names every place looked and what to
// install.
Expected<std::string> find_library();

// One input as nvJitLink takes it.
enum class InputKind { Ptx, Cubin, Fatbin, Object, Library, LtoIr };
struct Input {
  std::string name; // shown in its messages
  InputKind kind;
  std::vector<std::uint8_t> bytes;
};

struct Linked {
  bool ok = false;
  std::vector<std::uint8_t> cubin; // with "-ptx" among the options: none
  std::string ptx;                 // with "-ptx": the linked program as PTX (an LTO link's, before ptxas)
  std::string error_log, info_log; // nvJitLink's, as it wrote them
  std::string failure;             // why nvJitLink itself could not run
};

// Links `inputs` with `options` ("-arch=sm_90", ...) in this process. Each
// call has a handle of its own: calls may run on any number of threads.
Linked link(const std::vector<std::string> &options, const std::vector<Input> &inputs);

// "13.0": the version of the library find_library() names, once loaded;
// "" with a failure.
std::string version();

} // namespace hotlink::detail::nvjitlink
