// Internal. LLVM Object's reading of a linked artifact of any format hotlink
// links (symbols.h's read_artifact contract). The public read_artifact()
// reads its host's formats with image/'s own readers and asks this one,
// in the linker module, for the rest; the differential fuzzer
// (test/fuzz/fuzz_images.cpp) holds the two to the same answers.
#pragma once

#include "hotlink/symbols.h"

namespace hotlink::exports {

Expected<ArtifactInfo> read_artifact_with_llvm(const void *data, std::size_t size, const std::string &name);

// What read_artifact() asks for an artifact image/ does not read: in a
// program that links this archive, read_artifact_with_llvm (artifacts.cpp);
// in libhotlink.so, the linker module's, loaded on this first need
// (linker/module/client.cpp defines it there, and this archive's member
// stays out).
Expected<ArtifactInfo> read_foreign_artifact(const void *data, std::size_t size, const std::string &name);

} // namespace hotlink::exports
