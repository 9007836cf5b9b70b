// Ed25519 signatures over artifact statements (libsodium).
//
// A *statement* says which bytes an artifact is: a JSON object with at
// least "blake3" (hex of the artifact), "size" and "exports" (the names it
// must export), plus whatever its producer records (the cache's manifest
// adds key, target, name and tool versions). Its text is
//
//   <JSON>\nblake3 <hex of the JSON>\n[ed25519 <public key hex> <signature hex>\n]...
//
// Each signature covers "hotlink-statement-v1\n" + the JSON, so neither the
// checksum line nor other signatures are signed, and a signature made for
// something else never verifies as a statement's.
//
// Contract:
// - check_statement() accepts a statement only when one of its signatures
//   was made by a trusted key and verifies; an unsigned statement is
//   Unsigned, one signed only by other keys UntrustedSigner, one whose
//   signature by a trusted key does not verify (or that is malformed)
//   BadSignature. A statement signed by a trusted key is then checked
//   against the artifact: a different BLAKE3 or size is HashMismatch.
// - Secret key files are created 0600 and refused when group or others can
//   read them (KeyError): a readable signing key lets anyone publish code
//   that every consumer trusting it will map.
#pragma once

#include "hotlink/error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::signature {

struct HOTLINK_API PublicKey {
  std::array<std::uint8_t, 32> bytes{};
  std::string comment; // from the .pub file (e.g. the key file's name)
  std::string hex() const;
  bool operator==(const PublicKey &o) const { return bytes == o.bytes; }
};

class HOTLINK_API SecretKey {
public:
  // A new random key pair.
  static SecretKey generate();
  ~SecretKey(); // wipes the key
  SecretKey(const SecretKey &);
  SecretKey &operator=(const SecretKey &);
  PublicKey public_key() const;
  // The signature line for `json` ("ed25519 <key> <signature>").
  std::string sign_line(const std::string &json) const;

private:
  friend Expected<SecretKey> read_secret_key(const std::string &);
  friend std::optional<Error> write_key_pair(const SecretKey &, const std::string &, bool);
  SecretKey() = default;
  std::array<std::uint8_t, 64> bytes_{}; // libsodium's seed + public key
};

// Writes KEY (the secret key, 0600, created exclusively unless `overwrite`)
// and KEY.pub. Errors name the path.
HOTLINK_API std::optional<Error> write_key_pair(const SecretKey &key, const std::string &path,
                                    bool overwrite = false);
// Reads a secret key file; refuses one that group or others can read.
HOTLINK_API Expected<SecretKey> read_secret_key(const std::string &path);
// Reads a public key file ("hotlink-ed25519 <64 hex> [comment]").
HOTLINK_API Expected<PublicKey> read_public_key(const std::string &path);
HOTLINK_API Expected<PublicKey> parse_public_key(const std::string &text, const std::string &name);

struct HOTLINK_API Statement {
  std::string json; // the signed part
  struct Signature {
    PublicKey key;
    std::array<std::uint8_t, 64> bytes{};
  };
  std::vector<Signature> signatures;
};

// JSON + checksum line (an unsigned statement).
HOTLINK_API std::string seal(const std::string &json);
// Appends a signature line by `key` to a sealed statement.
HOTLINK_API std::string add_signature(const std::string &statement, const SecretKey &key);
// Splits a statement and checks its checksum line. Errors: BadSignature
// (malformed or checksum mismatch), naming `name`.
HOTLINK_API Expected<Statement> parse_statement(const std::string &text, const std::string &name);

struct HOTLINK_API Checked {
  Statement statement;
  PublicKey signer;                 // the trusted key whose signature verified
  std::string blake3;               // what the statement says
  std::uint64_t size = 0;
  std::vector<std::string> exports; // what the statement says
};

// The signature checks above (not the artifact). `name` names the
// statement in errors.
HOTLINK_API Expected<Checked> check_statement(const std::string &text, const std::vector<PublicKey> &trusted,
                                  const std::string &name);
// check_statement(), then the artifact's BLAKE3 and size against it.
HOTLINK_API Expected<Checked> check_artifact(const std::vector<std::uint8_t> &artifact,
                                 const std::string &statement,
                                 const std::vector<PublicKey> &trusted, const std::string &name);

// A statement for a file signed outside the cache (`hotlink sign`): name,
// size, BLAKE3 and the export list.
HOTLINK_API std::string artifact_statement_json(const std::vector<std::uint8_t> &artifact,
                                    const std::string &name,
                                    const std::vector<std::string> &exports,
                                    const std::string &target);

} // namespace hotlink::signature
