#include "hotlink/blake3.h"
#include "base/text.h"
#include "trust/recent_digests.h"

#include <cstring>

#include "blake3.h"

namespace hotlink::trust {

std::string blake3_hex(const void *data, std::size_t size) {
  blake3_hasher hasher;
  blake3_hasher_init(&hasher);
  blake3_hasher_update(&hasher, data, size);
  std::uint8_t h[BLAKE3_OUT_LEN];
  blake3_hasher_finalize(&hasher, h, sizeof h);
  return base::hex(h, sizeof h);
}

std::string RecentDigests::blake3_hex(const void *data, std::size_t size) {
  if (size > largest_)
    return trust::blake3_hex(data, size);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[bytes, hex] : bytes_hex_)
      if (bytes.size() == size && std::memcmp(bytes.data(), data, size) == 0)
        return hex;
  }
  std::string hex = trust::blake3_hex(data, size);
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_hex_.size() >= count_)
    bytes_hex_.erase(bytes_hex_.begin());
  bytes_hex_.emplace_back(std::string(static_cast<const char *>(data), size), hex);
  return hex;
}

std::string artifact_blake3_hex(const void *data, std::size_t size) {
  static auto *recent = new RecentDigests(8, 256 << 10); // never destroyed: loads happen during exit
  return recent->blake3_hex(data, size);
}

} // namespace hotlink::trust
