// trust/crypto.h over libsodium (the Linux runtime).
#include "trust/crypto.h"

#include <sodium.h>

namespace hotlink::trust::crypto {

namespace {
void init() {
  // Thread-safe and idempotent; fails only without an entropy source.
  static const int ok = sodium_init();
  (void)ok;
}
} // namespace

void generate(std::uint8_t secret[64]) {
  init();
  std::uint8_t pub[32];
  crypto_sign_keypair(pub, secret);
}

bool consistent(const std::uint8_t secret[64]) {
  std::uint8_t seed[32], pub[32], derived[64];
  crypto_sign_ed25519_sk_to_seed(seed, secret);
  crypto_sign_seed_keypair(pub, derived, seed);
  bool same = sodium_memcmp(derived, secret, 64) == 0;
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(derived, sizeof derived);
  return same;
}

void sign(std::uint8_t signature[64], const void *message, std::size_t size, const std::uint8_t secret[64]) {
  init();
  crypto_sign_detached(signature, nullptr, static_cast<const unsigned char *>(message), size, secret);
}

bool verify(const std::uint8_t signature[64], const void *message, std::size_t size, const std::uint8_t pub[32]) {
  init();
  return crypto_sign_verify_detached(signature, static_cast<const unsigned char *>(message), size, pub) == 0;
}

void wipe(void *p, std::size_t size) { sodium_memzero(p, size); }

void sha256(std::uint8_t out[32], const void *data, std::size_t size) {
  crypto_hash_sha256(out, static_cast<const unsigned char *>(data), size);
}

} // namespace hotlink::trust::crypto
