// What the NVIDIA suites (nvptx_test, nvptx_separate_test) share: where
// the CUDA toolkit's programs and nvJitLink are. Linking this file also
// tells LeakSanitizer that nvJitLink's own allocations are not hotlink's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::test {

// Why nvJitLink cannot be used here, or "".
std::string nvjitlink_missing();

// The toolkit's root ($CUDA_HOME, else /usr/local/cuda) holding
// bin/NAME, or "".
std::string cuda_root_with(const std::string &name);

// A CUDA toolkit program (ptxas, nvcc, nvlink, fatbinary), or "".
std::string cuda_tool(const std::string &name);

// What a cubin's own sections record, sorted: the module's properties
// (arch, constant banks: "constant_bank_3=16") and each kernel with its
// registers, shared memory, frame and stack sizes and constant bank 0
// ("scale: arch=sm_90 registers=10 ...").
std::vector<std::string> resources(const std::vector<std::uint8_t> &cubin);

} // namespace hotlink::test
