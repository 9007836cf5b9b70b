#include "hotlink/blake3.h"
#include "base/text.h"

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

} // namespace hotlink::trust
