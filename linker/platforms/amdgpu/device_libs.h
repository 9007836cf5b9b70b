// Internal. The link line of an AMDGPU code object and its device
// libraries, as clang's driver (its ROCm toolchain) computes them for a
// target ID and code object version; hotlink keeps no list of its own.
//
// Contract: each is computed once per (target ID[, version, folder]) and
// process; a failure names --mcpu or --device-libs and says what to do.
#pragma once

#include "hotlink/error.h"

#include "linker/platforms/clang_driver.h"

#include <string>
#include <vector>

namespace hotlink::detail::amdgpu {

// `ld.lld` arguments of `clang --target=amdgcn-amd-amdhsa -mcpu=TID
// -nogpulib`, split at the inputs (-o and its value left out):
// --no-undefined -shared -plugin-opt=mcpu=gfx90a | -plugin-opt=-mattr=...
using LinkLine = DriverLinkLine;
Expected<LinkLine> link_line(const std::string &triple, const std::string &target_id);

// The language the device code was compiled from, which picks the
// device libraries' set (clang's HIP line takes no opencl.bc and rounds
// sqrt correctly; its OpenCL line does the opposite).
enum class DeviceLanguage { OpenCL, Hip };

// The device libraries' bitcode files clang links for a kernel of this
// target ID, code object version and language (-mlink-builtin-bitcode of
// its OpenCL compile job, or of its HIP device compile job: ocml, ockl,
// oclc_*, and opencl for OpenCL), from `dir` or, when empty, the
// installed ones.
Expected<std::vector<std::string>> device_libraries(const std::string &triple, const std::string &target_id,
                                                    unsigned version, const std::string &dir,
                                                    DeviceLanguage language);

} // namespace hotlink::detail::amdgpu
