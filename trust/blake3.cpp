#include "hotlink/blake3.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/BLAKE3.h"

namespace hotlink::trust {

std::string blake3_hex(const void *data, std::size_t size) {
  auto h = llvm::BLAKE3::hash(llvm::ArrayRef<std::uint8_t>(static_cast<const std::uint8_t *>(data), size));
  return llvm::toHex(llvm::ArrayRef<std::uint8_t>(h.data(), h.size()), /*LowerCase=*/true);
}

} // namespace hotlink::trust
