// Internal. Little-endian fields of untrusted bytes, read with bounds
// checks: the one way image/'s readers touch a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace hotlink::image {

class Bytes {
public:
  Bytes(const void *data, std::size_t size) : p_(static_cast<const std::uint8_t *>(data)), size_(size) {}

  std::size_t size() const { return size_; }
  const std::uint8_t *data() const { return p_; }

  // Whether [offset, offset + n) lies inside the bytes (no overflow).
  bool has(std::uint64_t offset, std::uint64_t n) const { return offset <= size_ && n <= size_ - offset; }

  // The unsigned little-endian field of `n` (1, 2, 4 or 8) bytes at
  // `offset`; `ok` turns false (and 0 is returned) when it is outside.
  std::uint64_t u(std::uint64_t offset, unsigned n, bool &ok) const {
    if (!has(offset, n)) {
      ok = false;
      return 0;
    }
    std::uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // One load of the field's width (byte by byte, this was most of what
    // reading a small image's headers cost).
    switch (n) {
    case 1: return p_[offset];
    case 2: { std::uint16_t h; std::memcpy(&h, p_ + offset, 2); return h; }
    case 4: { std::uint32_t w; std::memcpy(&w, p_ + offset, 4); return w; }
    case 8: std::memcpy(&v, p_ + offset, 8); return v;
    default: break;
    }
#endif
    for (unsigned i = 0; i < n; ++i)
      v |= std::uint64_t(p_[offset + i]) << (8 * i);
    return v;
  }

  // The NUL-terminated string at `offset` within [offset, limit); empty
  // `found` false when no NUL comes before the limit (or the bytes' end).
  std::string_view c_string(std::uint64_t offset, std::uint64_t limit, bool &found) const {
    if (limit > size_)
      limit = size_;
    found = false;
    if (offset >= limit)
      return {};
    const void *nul = std::memchr(p_ + offset, 0, limit - offset);
    if (!nul)
      return {};
    found = true;
    return std::string_view(reinterpret_cast<const char *>(p_ + offset),
                            static_cast<const std::uint8_t *>(nul) - (p_ + offset));
  }

private:
  const std::uint8_t *p_;
  std::size_t size_;
};

} // namespace hotlink::image
