// Internal. BLAKE3 digests of bytes that come back: a JIT's cache hits
// hash the same link key and load the same artifact again and again. The
// last few inputs are kept with their digests (a pure function of the
// bytes), and bytes met again are compared, not hashed: memcmp reads 2 KB
// in about 50 ns, BLAKE3 hashes it in about 3 us.
//
// Contract: thread-safe; bounded (`count` inputs of at most `largest`
// bytes each; larger inputs are hashed every time).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hotlink::trust {

class RecentDigests {
public:
  RecentDigests(std::size_t count, std::size_t largest) : count_(count), largest_(largest) {}
  // blake3_hex(data, size), from memory when these bytes came lately.
  std::string blake3_hex(const void *data, std::size_t size);

private:
  std::size_t count_, largest_;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> bytes_hex_; // oldest first
};

// The BLAKE3 (hex) of an artifact's bytes, from the process's memory of
// the last 8 artifacts of up to 256 KB: a hit's artifact is hashed by the
// cache's read, the verified load and the private copy's name, and the
// same bytes are hashed once.
std::string artifact_blake3_hex(const void *data, std::size_t size);

} // namespace hotlink::trust
