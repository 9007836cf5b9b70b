// Internal. An entry's manifest: what the cache records of an artifact and
// its companions (size and BLAKE3 of each), encoded as a statement
// (hotlink/signature.h: JSON, then "blake3 <hex of the JSON>", then any
// signatures). The local store, the remote tier and `hotlink cache` read
// and write it through these calls only.
#pragma once

#include "hotlink/cache.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hotlink::cache::manifest {

// The manifest's format version; another is a miss (never a wrong hit).
constexpr int kFormat = 1;

// The files that travel with an artifact, each in the manifest (size and
// BLAKE3), in the cache directory (KEY + ext) and in Redis (KEY:part).
struct Companion {
  const char *json, *ext, *remote_part, *what;
  std::uint64_t Manifest::*size;
  std::string Manifest::*blake3;
};
extern const Companion kCompanions[3];

// Companion i's bytes in an artifact (the .def is text), and setting them.
std::pair<const std::uint8_t *, std::size_t> companion_bytes(const Artifact &a, std::size_t i);
void set_companion(Artifact &a, std::size_t i, std::vector<std::uint8_t> bytes);

// 64 lowercase hex digits.
bool is_hex_key(const std::string &s);

// The manifest's JSON (the body of a statement).
std::string encode_manifest(const Manifest &m);
// Reads a statement's manifest; returns why it is refused, or empty.
std::string decode_manifest(const std::string &text, Manifest &m);
// The manifest of an artifact stored under `key` now.
Manifest make_manifest(const Key &key, const Artifact &a);

} // namespace hotlink::cache::manifest
