// Internal. Text for messages and identities: names in a message ("a, b,
// c and 4 more"), bytes as lowercase hex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hotlink::base {

// The first `most` of `names` (strings or string views), comma-separated,
// then how many more there are.
template <class Names> std::string list_some(const Names &names, std::size_t most) {
  std::string s;
  std::size_t i = 0;
  for (const auto &n : names) {
    if (i == most)
      return s + " and " + std::to_string(names.size() - most) + " more";
    s += (i++ ? ", " : "") + std::string(n);
  }
  return s;
}

// `size` bytes as 2*size lowercase hex digits.
inline std::string hex(const void *data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  const auto *p = static_cast<const std::uint8_t *>(data);
  std::string out(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

} // namespace hotlink::base
