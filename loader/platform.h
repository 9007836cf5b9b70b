// Internal. Shared by the platform parts of loading (load_posix.cpp,
// load_windows.cpp) and load_verified: how a private copy is named.
#pragma once

#include "hotlink/load.h"

#include <cstdint>
#include <string>
#include <utility>

namespace hotlink::loader {

// "kernel.so" -> {"kernel", ".so"}; "libz.so.1" -> {"libz", ".so.1"}.
std::pair<std::string, std::string> split_extension(const std::string &file);

// A private copy's file name: NAME.vN.<hash>.EXT for a HotModule's version
// N (LoadOptions::version), else NAME.<hash>.EXT; the first 8 hex digits
// of `hash`, the artifact's identity. A name that is taken gets .K before
// its extension (K = 2, 3, ...), unless its copy can serve again
// (store::reuse).
std::string copy_file_name(const std::string &name, std::uint64_t version, const std::string &hash);

// `s` with what a file name may not hold in a path or a debugger's output
// replaced by '_', at most 96 characters; "artifact" when empty.
std::string clean_file_name(const std::string &s);

// load_private, given the image's build-id and BLAKE3 (hex) when the
// caller has them already (load_verified: verify read them); nullptr:
// found here, where the post-mortem store links copies by the build-id and
// names them by the hash.
Expected<std::unique_ptr<Library>> load_copy(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const LoadOptions &options, const std::string *build_id,
                                             const std::string *blake3);


} // namespace hotlink::loader
