// Cache keys: a canonical encoding of named fields, hashed with BLAKE3.
#include "hotlink/cache.h"
#include "cache/manifest.h"

#include "hotlink/blake3.h"
#include "trust/recent_digests.h"

#include <cctype>

namespace hotlink::cache {

Expected<Key> Key::parse(const std::string &hex) {
  std::string lower = hex;
  for (char &c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!manifest::is_hex_key(lower))
    return make_error(ErrorCode::BadRequest, "a cache key is 64 hex digits", hex, {},
                      "use Key::of_caller() to turn any other text into a key");
  Key k;
  k.hex_ = lower;
  return k;
}

Key Key::of_caller(const std::string &caller_key) {
  return KeyBuilder("hotlink caller key").add("key", caller_key).finish();
}

KeyBuilder::KeyBuilder(const std::string &domain) {
  encoding_.reserve(4096); // a link's key: about 1.5 KB
  add("domain", domain);
}

KeyBuilder &KeyBuilder::add(const std::string &field, const void *data, std::size_t size) {
  auto put_len = [&](std::uint64_t n) {
    char le[8];
    for (int i = 0; i < 8; ++i)
      le[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    encoding_.append(le, sizeof le);
  };
  put_len(field.size());
  encoding_ += field;
  put_len(size);
  encoding_.append(static_cast<const char *>(data), size);
  return *this;
}

KeyBuilder &KeyBuilder::add(const std::string &field, const std::string &value) {
  return add(field, value.data(), value.size());
}

KeyBuilder &KeyBuilder::add(const std::string &field, std::uint64_t value) {
  return add(field, std::to_string(value));
}

KeyBuilder &KeyBuilder::add_digest(const std::string &field, const void *data,
                                   std::size_t size) {
  return add(field, digest(data, size));
}

std::string KeyBuilder::digest(const void *data, std::size_t size) {
  return trust::blake3_hex(data, size);
}

namespace {

// Keys repeat (a JIT's cache hits ask for the same link again and again):
// a link's 1.5 KB encoding costs 17K instructions to hash.
trust::RecentDigests &recent_keys() {
  static auto *r = new trust::RecentDigests(16, 16 << 10); // never destroyed: keys are made during exit too
  return *r;
}

} // namespace

Key KeyBuilder::finish() const {
  Key k;
  k.hex_ = recent_keys().blake3_hex(encoding_.data(), encoding_.size());
  return k;
}

} // namespace hotlink::cache
