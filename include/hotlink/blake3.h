// The one BLAKE3 helper: content identities for the cache's keys and
// manifests, the loader's expected hashes and signed statements.
#pragma once

#include "hotlink/error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::trust {

// BLAKE3-256 of the bytes, as 64 lowercase hex digits.
HOTLINK_API std::string blake3_hex(const void *data, std::size_t size);
HOTLINK_API inline std::string blake3_hex(const std::string &s) { return blake3_hex(s.data(), s.size()); }
HOTLINK_API inline std::string blake3_hex(const std::vector<std::uint8_t> &v) { return blake3_hex(v.data(), v.size()); }

} // namespace hotlink::trust
