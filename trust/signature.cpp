#include "hotlink/signature.h"

#include "base/files.h"
#include "base/text.h"
#include "hotlink/blake3.h"
#include "base/json.h"

#include "trust/crypto.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <filesystem>

namespace hotlink::signature {

namespace json = base::json;
namespace crypto = trust::crypto;

namespace {

constexpr const char *kDomain = "hotlink-statement-v1\n";
constexpr const char *kSecretTag = "hotlink-ed25519-secret-key";
constexpr const char *kPublicTag = "hotlink-ed25519";
constexpr std::size_t kMaxStatement = 16u << 20;

std::string hex(const std::uint8_t *p, std::size_t n) { return base::hex(p, n); }

template <std::size_t N> bool unhex(const std::string &text, std::array<std::uint8_t, N> &out) {
  if (text.size() != 2 * N)
    return false;
  for (std::size_t i = 0; i < N; ++i) {
    unsigned v = 0;
    for (int j = 0; j < 2; ++j) {
      char c = text[2 * i + j];
      unsigned d = c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : 16;
      if (d == 16)
        return false;
      v = v * 16 + d;
    }
    out[i] = static_cast<std::uint8_t>(v);
  }
  return true;
}

using trust::blake3_hex;

std::string signed_message(const std::string &json) { return kDomain + json; }

Error key_error(const std::string &path, std::string what, std::string hint = {}) {
  return make_error(ErrorCode::KeyError, std::move(what), path, {}, std::move(hint));
}

Expected<std::string> read_small_file(const std::string &path, const char *what) {
  std::vector<std::uint8_t> bytes;
  if (auto failed = base::read_file(path, bytes, 4096))
    return failed->errnum == EFBIG ? key_error(path, std::string("is too large to be a ") + what)
                                   : key_error(path, std::string("cannot read the ") + what + ": " +
                                                         std::strerror(failed->errnum),
                                               "create one with `hotlink keygen -o FILE`");
  return std::string(bytes.begin(), bytes.end());
}

// Writes `text` to `path` with `mode`, exclusively unless `overwrite`
// (an existing key is never replaced by accident).
std::optional<Error> write_file(const std::string &path, const std::string &text, unsigned mode,
                                bool overwrite) {
  base::Publish how;
  how.mode = mode;
  how.replace = overwrite;
  auto failed = base::write_file_atomically(path, text.data(), text.size(), how);
  if (!failed)
    return std::nullopt;
  bool exists = failed->errnum == EEXIST && !overwrite;
  return key_error(path, exists ? "already exists" : failed->to_string(),
                   exists ? "choose another path, or remove the old key first (every "
                            "consumer trusting it must be given the new .pub)"
                          : "");
}

} // namespace

std::string PublicKey::hex() const { return signature::hex(bytes.data(), bytes.size()); }

SecretKey SecretKey::generate() {
  SecretKey k;
  crypto::generate(k.bytes_.data());
  return k;
}

SecretKey::~SecretKey() { crypto::wipe(bytes_.data(), bytes_.size()); }
SecretKey::SecretKey(const SecretKey &o) : bytes_(o.bytes_) {}
SecretKey &SecretKey::operator=(const SecretKey &o) {
  bytes_ = o.bytes_;
  return *this;
}

PublicKey SecretKey::public_key() const {
  PublicKey p;
  std::memcpy(p.bytes.data(), bytes_.data() + 32, 32); // the secret key's second half
  return p;
}

std::string SecretKey::sign_line(const std::string &json) const {
  std::string m = signed_message(json);
  std::array<std::uint8_t, 64> sig;
  crypto::sign(sig.data(), m.data(), m.size(), bytes_.data());
  return std::string("ed25519 ") + public_key().hex() + " " + hex(sig.data(), sig.size());
}

std::optional<Error> write_key_pair(const SecretKey &key, const std::string &path,
                                    bool overwrite) {
  std::string base = path;
  if (std::size_t s = base.rfind('/'); s != std::string::npos)
    base = base.substr(s + 1);
  std::string pub = std::string(kPublicTag) + " " + key.public_key().hex() + " " + base + "\n";
  if (!overwrite)
    for (const std::string &p : {path, path + ".pub"})
      if (std::error_code ec; std::filesystem::exists(std::filesystem::symlink_status(p, ec)))
        return key_error(p, "already exists",
                         "choose another path, or remove the old key first (every consumer "
                         "trusting it must be given the new .pub)");
  // The .pub first: a secret key is never left without its public half.
  if (auto err = write_file(path + ".pub", pub, 0644, overwrite))
    return err;
  std::string secret = std::string(kSecretTag) + " " +
                       hex(key.bytes_.data(), key.bytes_.size()) + "\n";
  auto err = write_file(path, secret, 0600, overwrite);
  crypto::wipe(secret.data(), secret.size());
  if (err)
    std::remove((path + ".pub").c_str());
  return err;
}

Expected<SecretKey> read_secret_key(const std::string &path) {
  auto text = read_small_file(path, "signing key");
  if (!text)
    return text.take_error();
  if (text->compare(0, std::strlen(kPublicTag) + 1, std::string(kPublicTag) + " ") == 0)
    return key_error(path, "is a public key, not a signing key",
                     "pass the secret key file (KEY, not KEY.pub) that `hotlink keygen -o KEY` wrote");
  if (auto mode = base::open_to_others(path)) { // not known on Windows (docs/limits.md)
    crypto::wipe(text.value().data(), text.value().size());
    return key_error(path, "the signing key is accessible to its group or others (mode " + *mode + ")",
                     "whoever reads it can sign code every consumer will load: chmod 600 " + path +
                         ", and make a new key if others may have copied it");
  }
  std::string t = text.value();
  crypto::wipe(text.value().data(), text.value().size());
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
    t.pop_back();
  std::string prefix = std::string(kSecretTag) + " ";
  SecretKey k;
  bool ok = t.compare(0, prefix.size(), prefix) == 0 && unhex(t.substr(prefix.size()), k.bytes_);
  crypto::wipe(t.data(), t.size());
  if (!ok)
    return key_error(path, "is not a hotlink signing key", "create one with `hotlink keygen -o FILE`");
  // The stored public half must be the one the seed derives.
  if (!crypto::consistent(k.bytes_.data()))
    return key_error(path, "is damaged (its public half does not match its seed)",
                     "restore it from a backup or make a new key");
  return k;
}

Expected<PublicKey> parse_public_key(const std::string &text, const std::string &name) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' '))
    t.pop_back();
  std::string prefix = std::string(kPublicTag) + " ";
  if (t.compare(0, prefix.size(), prefix) != 0)
    return key_error(name, "is not a hotlink public key ('" + prefix + "<64 hex digits>')",
                     t.compare(0, std::strlen(kSecretTag), kSecretTag) == 0
                         ? "this is a secret key: pass its .pub file, never the secret"
                         : "use the KEY.pub file `hotlink keygen -o KEY` wrote");
  std::string rest = t.substr(prefix.size());
  std::size_t sp = rest.find(' ');
  PublicKey k;
  if (!unhex(rest.substr(0, sp), k.bytes))
    return key_error(name, "holds a malformed public key (64 hex digits expected)");
  if (sp != std::string::npos)
    k.comment = rest.substr(sp + 1);
  return k;
}

Expected<PublicKey> read_public_key(const std::string &path) {
  auto text = read_small_file(path, "public key");
  if (!text)
    return text.take_error();
  return parse_public_key(text.value(), path);
}

std::string seal(const std::string &json) {
  return json + "\nblake3 " + blake3_hex(json) +
         "\n";
}

std::string add_signature(const std::string &statement, const SecretKey &key) {
  auto parsed = parse_statement(statement, "statement");
  std::string json = parsed ? parsed->json : statement;
  return statement + key.sign_line(json) + "\n";
}

Expected<Statement> parse_statement(const std::string &text, const std::string &name) {
  auto bad = [&](std::string what) {
    return make_error(ErrorCode::BadSignature, std::move(what), name, {},
                      "the statement was damaged or forged; fetch or sign the artifact again");
  };
  if (text.size() > kMaxStatement)
    return bad("statement is implausibly large");
  // The checksum line is the first line that starts with "blake3 " after
  // the JSON; the JSON itself is one line (base/json.h prints no newlines).
  std::size_t nl = text.find("\nblake3 ");
  if (nl == std::string::npos || text.size() < nl + 8 + 64 + 1 || text[nl + 8 + 64] != '\n')
    return bad("statement has no checksum line (truncated?)");
  Statement s;
  s.json = text.substr(0, nl);
  if (text.compare(nl + 8, 64, blake3_hex(s.json)) != 0)
    return bad("statement's checksum does not match its contents");
  std::size_t pos = nl + 8 + 64 + 1;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      return bad("statement ends inside a signature line (truncated?)");
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    Statement::Signature sig;
    // "ed25519 " + 64 hex + " " + 128 hex
    if (line.size() != 8 + 64 + 1 + 128 || line.compare(0, 8, "ed25519 ") != 0 || line[72] != ' ' ||
        !unhex(line.substr(8, 64), sig.key.bytes) || !unhex(line.substr(73), sig.bytes))
      return bad("statement holds a malformed signature line");
    s.signatures.push_back(sig);
  }
  return s;
}

Expected<Checked> check_statement(const std::string &text, const std::vector<PublicKey> &trusted,
                                  const std::string &name) {
  auto parsed = parse_statement(text, name);
  if (!parsed)
    return parsed.take_error();
  Checked c;
  c.statement = std::move(parsed.value());
  const Statement &s = c.statement;
  if (s.signatures.empty())
    return make_error(ErrorCode::Unsigned, "is not signed, and a signature by a trusted key is required",
                      name, {}, "sign it (hotlink sign, or link with --sign-key) or fetch a signed copy");
  std::string m = signed_message(s.json);
  bool by_trusted = false, verified = false;
  for (const Statement::Signature &sig : s.signatures) {
    if (std::find(trusted.begin(), trusted.end(), sig.key) == trusted.end())
      continue;
    by_trusted = true;
    c.signer = *std::find(trusted.begin(), trusted.end(), sig.key);
    if (crypto::verify(sig.bytes.data(), m.data(), m.size(), sig.key.bytes.data())) {
      verified = true;
      break;
    }
  }
  if (!by_trusted) {
    std::string signers;
    for (const Statement::Signature &sig : s.signatures)
      signers += (signers.empty() ? "" : ", ") + sig.key.hex().substr(0, 16);
    return make_error(ErrorCode::UntrustedSigner, "is signed only by keys this host does not trust",
                      name, signers,
                      "trust the publisher's public key (--trusted-key KEY.pub) if you trust them");
  }
  if (!verified)
    return make_error(ErrorCode::BadSignature,
                      "has a signature by a trusted key that does not verify (the statement was "
                      "changed after it was signed)",
                      name, c.signer.hex().substr(0, 16), "do not use it; fetch or rebuild the artifact");
  json::Value v = json::parse(s.json);
  if (v.is_discarded() || !v.is_object())
    return make_error(ErrorCode::BadSignature, "signed statement is not a JSON object", name);
  const json::Value *b = json::string_at(v, "blake3");
  auto size = json::integer_at(v, "size");
  const json::Value *ex = json::array_at(v, "exports");
  if (!b || !size || *size < 0 || !ex)
    return make_error(ErrorCode::BadSignature,
                      "signed statement lacks its artifact's blake3, size or exports", name);
  c.blake3 = b->get<std::string>();
  c.size = static_cast<std::uint64_t>(*size);
  for (const json::Value &e : *ex) {
    if (!e.is_string())
      return make_error(ErrorCode::BadSignature, "signed statement's export list holds a non-string",
                        name);
    c.exports.push_back(e.get<std::string>());
  }
  return c;
}

Expected<Checked> check_artifact(const std::vector<std::uint8_t> &artifact,
                                 const std::string &statement,
                                 const std::vector<PublicKey> &trusted, const std::string &name) {
  auto c = check_statement(statement, trusted, name);
  if (!c)
    return c.take_error();
  if (artifact.size() != c->size || blake3_hex(artifact) != c->blake3)
    return make_error(ErrorCode::HashMismatch,
                      "is not the artifact its signed statement describes (" +
                          std::to_string(artifact.size()) + " bytes, BLAKE3 " +
                          blake3_hex(artifact).substr(0, 16) + "...; signed: " +
                          std::to_string(c->size) + " bytes, " + c->blake3.substr(0, 16) + "...)",
                      name, {}, "the artifact changed after it was signed; do not load it");
  return c;
}

std::string artifact_statement_json(const std::vector<std::uint8_t> &artifact,
                                    const std::string &name,
                                    const std::vector<std::string> &exports,
                                    const std::string &target) {
  json::Value o = {{"format", 1},
                   {"kind", "artifact"},
                   {"name", name},
                   {"target", target},
                   {"size", static_cast<std::int64_t>(artifact.size())},
                   {"blake3", blake3_hex(artifact)},
                   {"exports", exports}};
  return json::print(o);
}

} // namespace hotlink::signature
