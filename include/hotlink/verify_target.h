// Verifying an artifact for a target, on any host: what the loader checks
// before it maps an artifact (hotlink/load.h: format, arch, exports,
// hashes, a signature), for this host or for another target, and for
// another target the checks its platform's own loader would make without
// loading anything (Mach-O: what dyld needs). A build host can so refuse a
// Windows DLL or a macOS dylib it linked before shipping it.
#pragma once

#include "hotlink/error.h"
#include "hotlink/verify.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hotlink {

// `target`: a triple of supported_targets() ("" = this host). For this
// host's format and arch it is hotlink::verify; for another, its format and
// arch replace the host's, imports are not resolved, and the target's
// platform checks follow (nvptx64-nvidia-cuda: a fat binary, or a host
// object carrying device code, is verified by the cubin the CUDA driver
// would load from it for options.processor). Errors name the artifact
// (BadRequest naming --target for an unknown triple).
HOTLINK_API Expected<hotlink::Verified> verify_for_target(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const std::string &target, hotlink::VerifyOptions options = {});

// What an artifact's own metadata says of it and of each entry point, in
// the metadata's order (a GPU code object: "target_id" = "gfx90a",
// "code_object_version" = "4"; each kernel's "kernarg_segment_size" =
// "20", ...).
struct HOTLINK_API ExportDetails {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;
};
struct HOTLINK_API ArtifactDescription {
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<ExportDetails> exports;
};

// What an artifact or object says of itself; empty for formats that
// describe nothing (a host artifact is answered without loading the
// linker). Errors name the input.
// - amdgcn code objects and objects: the header's target ID and code
//   object version, and each kernel of the NT_AMDGPU_METADATA note;
// - NVIDIA: a cubin's kernels, each with its arch and the resources its
//   sections record; a PTX module's entries, each with its ptx_target; a
//   fat binary's images' kernels, each with its image's.
HOTLINK_API Expected<ArtifactDescription> describe_artifact(const std::vector<std::uint8_t> &bytes, const std::string &name);

// The device code an input holds for `target` (a GPU triple), as
// describe_artifact says it: for nvptx64-nvidia-cuda also the fat binary
// a host object carries (nvcc -rdc=true -c) and each archive member's
// (each kernel with its "member"); NVIDIA LTO-IR, whose names are sealed
// until a link compiles it, is the property "lto_ir" (lto_90), with no
// kernels. Errors name the input (BadRequest naming --target for a triple
// that is not a GPU's).
HOTLINK_API Expected<ArtifactDescription> describe_device_code(const std::vector<std::uint8_t> &bytes,
                                                               const std::string &name, const std::string &target);

// Whether `target` ("" = this host) is linked to this host's format and
// arch, so that its artifacts can be loaded here.
HOTLINK_API Expected<bool> loads_here(const std::string &target);

} // namespace hotlink
