// trust/crypto.h over libgcrypt (the Windows runtime: Debian's
// libgcrypt-mingw-w64-dev), as RFC 8032 Ed25519: the keys and signatures
// are libsodium's bytes (crypto_sodium.cpp).
#include "trust/crypto.h"

#include <gcrypt.h>

#include <cstring>
#include <mutex>

namespace hotlink::trust::crypto {

namespace {

void init() {
  static std::once_flag once;
  std::call_once(once, [] {
    gcry_check_version(nullptr);
    gcry_control(GCRYCTL_DISABLE_SECMEM, 0);
    gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
  });
}

// Owns an S-expression.
struct Sexp {
  gcry_sexp_t s = nullptr;
  ~Sexp() { gcry_sexp_release(s); }
};

// The `len` bytes of token `name`'s value in `s`, right-aligned into `out`
// (libgcrypt drops leading zero bytes of some values, and may prefix a
// point with 0x40, its mark of EdDSA's native encoding); false without it.
bool token_bytes(gcry_sexp_t s, const char *name, std::uint8_t *out, std::size_t len) {
  Sexp t;
  t.s = gcry_sexp_find_token(s, name, 0);
  if (!t.s)
    return false;
  std::size_t n = 0;
  const char *d = gcry_sexp_nth_data(t.s, 1, &n);
  if (d && n == len + 1 && static_cast<unsigned char>(d[0]) == 0x40)
    ++d, --n;
  if (!d || n > len)
    return false;
  std::memset(out, 0, len - n);
  std::memcpy(out + (len - n), d, n);
  return true;
}

// The private key of `secret` (its seed as d, its public half as q).
bool private_key(Sexp &key, const std::uint8_t secret[64]) {
  return !gcry_sexp_build(&key.s, nullptr, "(private-key(ecc(curve Ed25519)(flags eddsa)(q %b)(d %b)))", 32,
                          secret + 32, 32, secret);
}

bool message_data(Sexp &data, const void *message, std::size_t size) {
  return !gcry_sexp_build(&data.s, nullptr, "(data(flags eddsa)(hash-algo sha512)(value %b))", static_cast<int>(size),
                          message);
}

} // namespace

void generate(std::uint8_t secret[64]) {
  init();
  Sexp params, pair;
  if (gcry_sexp_build(&params.s, nullptr, "(genkey(ecc(curve Ed25519)(flags eddsa)))") ||
      gcry_pk_genkey(&pair.s, params.s) || !token_bytes(pair.s, "d", secret, 32) ||
      !token_bytes(pair.s, "q", secret + 32, 32))
    std::memset(secret, 0, 64); // consistent() refuses it
}

bool consistent(const std::uint8_t secret[64]) {
  // libgcrypt derives no public key from a seed here: a signature made
  // with the seed and the stored half (A in RFC 8032's hash) verifies
  // against that half only when it is the seed's.
  static const char probe[] = "hotlink: does this key's public half belong to its seed?";
  std::uint8_t sig[64];
  sign(sig, probe, sizeof probe, secret);
  return verify(sig, probe, sizeof probe, secret + 32);
}

void sign(std::uint8_t signature[64], const void *message, std::size_t size, const std::uint8_t secret[64]) {
  init();
  Sexp key, data, sig;
  if (!private_key(key, secret) || !message_data(data, message, size) || gcry_pk_sign(&sig.s, data.s, key.s) ||
      !token_bytes(sig.s, "r", signature, 32) || !token_bytes(sig.s, "s", signature + 32, 32))
    std::memset(signature, 0, 64); // verifies against no key
}

bool verify(const std::uint8_t signature[64], const void *message, std::size_t size, const std::uint8_t pub[32]) {
  init();
  Sexp key, data, sig;
  return !gcry_sexp_build(&key.s, nullptr, "(public-key(ecc(curve Ed25519)(flags eddsa)(q %b)))", 32, pub) &&
         message_data(data, message, size) &&
         !gcry_sexp_build(&sig.s, nullptr, "(sig-val(eddsa(r %b)(s %b)))", 32, signature, 32, signature + 32) &&
         gcry_pk_verify(sig.s, data.s, key.s) == 0;
}

void wipe(void *p, std::size_t size) {
  volatile std::uint8_t *q = static_cast<volatile std::uint8_t *>(p);
  while (size--)
    *q++ = 0;
}

void sha256(std::uint8_t out[32], const void *data, std::size_t size) {
  init();
  gcry_md_hash_buffer(GCRY_MD_SHA256, out, data, size);
}

} // namespace hotlink::trust::crypto
