// Differential: the cache's manifest reader (cache/manifest.cpp: a SAX pass
// over nlohmann's parser straight into the fields, what a hit runs) against
// the same rules read from nlohmann's parsed document. The input is a
// manifest's JSON, sealed as a statement before it is read. Both must agree
// on whether it is a manifest and, when it is, on every field. A manifest
// comes from the cache's directory or a remote tier, before its signature
// is checked: this reader meets untrusted bytes.
#include "cache/manifest.h"
#include "base/json.h"
#include "hotlink/signature.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace {

using hotlink::cache::Manifest;
using hotlink::cache::manifest::kCompanions;
using Json = hotlink::base::json::Value;

// A number with no fractional part that fits an int64 (3.0 counts as 3).
std::optional<std::int64_t> integral(const Json *v) {
  if (!v || !v->is_number())
    return std::nullopt;
  if (v->is_number_unsigned()) {
    std::uint64_t u = v->get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(INT64_MAX) ? std::optional<std::int64_t>(static_cast<std::int64_t>(u))
                                                      : std::nullopt;
  }
  if (v->is_number_integer())
    return v->get<std::int64_t>();
  double d = v->get<double>();
  if (d >= -9.2e18 && d <= 9.2e18 && d == static_cast<double>(static_cast<std::int64_t>(d)))
    return static_cast<std::int64_t>(d);
  return std::nullopt;
}

const Json *field(const Json &o, const char *name) {
  auto it = o.find(name);
  return it == o.end() ? nullptr : &*it;
}

// The rules, from the document: true with the fields when it is a manifest.
bool reference(const std::string &json, Manifest &m) {
  Json o = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded() || !o.is_object())
    return false;
  auto str = [&](const char *name, std::string &out) {
    const Json *v = field(o, name);
    if (!v || !v->is_string())
      return false;
    out = v->get<std::string>();
    return true;
  };
  auto num = [&](const Json *v, auto &out) {
    auto i = integral(v);
    if (!i || *i < 0)
      return false;
    out = static_cast<std::remove_reference_t<decltype(out)>>(*i);
    return true;
  };
  if (!num(field(o, "format"), m.format) || m.format != hotlink::cache::manifest::kFormat)
    return false;
  if (!str("key", m.key) || !str("name", m.name) || !str("target", m.target) || !num(field(o, "size"), m.size) ||
      !str("blake3", m.blake3) || !num(field(o, "created"), m.created) ||
      !str("hotlink_version", m.hotlink_version) || !str("linker_version", m.linker_version))
    return false;
  if (auto us = integral(field(o, "build_us")))
    m.build_ms = static_cast<double>(*us) / 1000;
  else if (const Json *ms = field(o, "build_ms"); ms && ms->is_number())
    m.build_ms = ms->get<double>();
  const Json *exports = field(o, "exports");
  if (!exports || !exports->is_array())
    return false;
  for (const Json &e : *exports) {
    if (!e.is_string())
      return false;
    m.exports.push_back(e.get<std::string>());
  }
  for (const auto &c : kCompanions) {
    const Json *r = field(o, c.json);
    if (!r || !r->is_object())
      continue;
    const Json *blake3 = field(*r, "blake3");
    if (!num(field(*r, "size"), m.*c.size) || !blake3 || !blake3->is_string())
      return false;
    m.*c.blake3 = blake3->get<std::string>();
  }
  return true;
}

[[noreturn]] void differ(const std::string &json, const char *what) {
  std::fprintf(stderr, "fuzz_manifest: %s for %s\n", what, json.c_str());
  std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string json(reinterpret_cast<const char *>(data), size);
  if (json.find('\n') != std::string::npos)
    return 0; // a statement's JSON is one line (the next is its checksum)
  Manifest ours, theirs;
  bool ours_ok = hotlink::cache::manifest::decode_manifest(hotlink::signature::seal(json), ours).empty();
  bool theirs_ok = reference(json, theirs);
  if (ours_ok != theirs_ok)
    differ(json, ours_ok ? "read here, refused by the reference" : "refused here, read by the reference");
  if (!ours_ok)
    return 0;
  bool same = ours.format == theirs.format && ours.key == theirs.key && ours.name == theirs.name &&
              ours.target == theirs.target && ours.size == theirs.size && ours.blake3 == theirs.blake3 &&
              ours.exports == theirs.exports && ours.created == theirs.created &&
              ours.hotlink_version == theirs.hotlink_version && ours.linker_version == theirs.linker_version &&
              (ours.build_ms == theirs.build_ms || (ours.build_ms != ours.build_ms && theirs.build_ms != theirs.build_ms));
  for (const auto &c : kCompanions)
    same = same && ours.*c.size == theirs.*c.size && ours.*c.blake3 == theirs.*c.blake3;
  if (!same)
    differ(json, "a field differs");
  return 0;
}
