// Internal. The cryptography of signed statements (signature.cpp) and of
// verify's SHA-256, one interface over each host's library: libsodium on Linux
// (crypto_sodium.cpp), libgcrypt on Windows (crypto_gcrypt.cpp; Debian's
// libsodium has no mingw-w64 build, its libgcrypt has). Ed25519 is
// deterministic: both sign a message with a key into the same 64 bytes,
// which the Windows tests check against statements signed on Linux.
//
// A secret key is libsodium's 64 bytes: the 32-byte seed, then the public
// key it derives.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hotlink::trust::crypto {

// A fresh secret key from the system's random source.
void generate(std::uint8_t secret[64]);

// Whether `secret`'s second half is the public key its seed derives.
bool consistent(const std::uint8_t secret[64]);

void sign(std::uint8_t signature[64], const void *message, std::size_t size, const std::uint8_t secret[64]);

bool verify(const std::uint8_t signature[64], const void *message, std::size_t size, const std::uint8_t pub[32]);

// Zeroes `size` bytes where the compiler cannot drop the writes.
void wipe(void *p, std::size_t size);

// SHA-256 of the bytes.
void sha256(std::uint8_t out[32], const void *data, std::size_t size);

} // namespace hotlink::trust::crypto
