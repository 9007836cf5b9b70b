#include "cache/manifest.h"

#include "hotlink/blake3.h"
#include "hotlink/signature.h"

#include "base/json.h"

#include <chrono>

#ifndef HOTLINK_VERSION
#define HOTLINK_VERSION "unknown"
#endif

namespace hotlink::cache::manifest {

namespace json = base::json;

namespace {

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

const Companion kCompanions[3] = {
    {"def", ".def", "d", ".def", &Manifest::def_size, &Manifest::def_blake3},
    {"implib", ".lib", "l", "import library", &Manifest::implib_size, &Manifest::implib_blake3},
    {"pdb", ".pdb", "p", "PDB", &Manifest::pdb_size, &Manifest::pdb_blake3},
};

// Companion i's bytes in an artifact (the .def is text).
std::pair<const std::uint8_t *, std::size_t> companion_bytes(const Artifact &a, std::size_t i) {
  switch (i) {
  case 0: return {reinterpret_cast<const std::uint8_t *>(a.def.data()), a.def.size()};
  case 1: return {a.implib.data(), a.implib.size()};
  default: return {a.pdb.data(), a.pdb.size()};
  }
}
void set_companion(Artifact &a, std::size_t i, std::vector<std::uint8_t> bytes) {
  switch (i) {
  case 0: a.def.assign(bytes.begin(), bytes.end()); break;
  case 1: a.implib = std::move(bytes); break;
  default: a.pdb = std::move(bytes); break;
  }
}

bool is_hex_key(const std::string &s) {
  if (s.size() != 64)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}


// The manifest's JSON (a statement: hotlink/signature.h).
std::string encode_manifest(const Manifest &m) {
  json::Value o = {
      {"format", m.format},
      {"key", m.key},
      {"name", m.name},
      {"target", m.target},
      {"size", static_cast<std::int64_t>(m.size)},
      {"blake3", m.blake3},
      {"exports", m.exports},
      {"created", m.created},
      {"hotlink_version", m.hotlink_version},
      {"linker_version", m.linker_version},
      {"build_ms", m.build_ms},
  };
  for (const Companion &c : kCompanions)
    if (!(m.*c.blake3).empty())
      o[c.json] = {{"size", static_cast<std::int64_t>(m.*c.size)}, {"blake3", m.*c.blake3}};
  return json::print(o);
}

// Returns the reason it is refused, or empty.
std::string decode_manifest(const std::string &text, Manifest &m) {
  auto st = signature::parse_statement(text, "manifest");
  if (!st)
    return st.error().message;
  json::Value o = json::parse(st->json);
  if (o.is_discarded())
    return "manifest is not valid JSON";
  if (!o.is_object())
    return "manifest is not a JSON object";
  auto str = [&](const char *k, std::string &out) {
    if (const json::Value *s = json::string_at(o, k)) {
      out = s->get<std::string>();
      return true;
    }
    return false;
  };
  auto num = [&](const json::Value &obj, const char *k, auto &out) {
    if (auto n = json::integer_at(obj, k)) {
      out = static_cast<std::remove_reference_t<decltype(out)>>(*n);
      return *n >= 0;
    }
    return false;
  };
  if (!num(o, "format", m.format) || m.format != kFormat)
    return "manifest has another format version";
  if (!str("key", m.key) || !str("name", m.name) || !str("target", m.target) ||
      !num(o, "size", m.size) || !str("blake3", m.blake3) ||
      !num(o, "created", m.created) || !str("hotlink_version", m.hotlink_version) ||
      !str("linker_version", m.linker_version))
    return "manifest lacks a field";
  if (auto b = json::number_at(o, "build_ms"))
    m.build_ms = *b;
  const json::Value *ex = json::array_at(o, "exports");
  if (!ex)
    return "manifest lacks its export list";
  for (const json::Value &e : *ex) {
    if (!e.is_string())
      return "manifest export list holds a non-string";
    m.exports.push_back(e.get<std::string>());
  }
  for (const Companion &comp : kCompanions) {
    if (const json::Value *c = json::object_at(o, comp.json)) {
      const json::Value *h = json::string_at(*c, "blake3");
      if (!num(*c, "size", m.*comp.size) || !h)
        return std::string("manifest's ") + comp.json + " record is incomplete";
      m.*comp.blake3 = h->get<std::string>();
    }
  }
  return {};
}

Manifest make_manifest(const Key &key, const Artifact &a) {
  Manifest m;
  m.format = kFormat;
  m.key = key.hex();
  m.name = a.name;
  m.target = a.target;
  m.size = a.bytes.size();
  m.blake3 = trust::blake3_hex(a.bytes.data(), a.bytes.size());
  m.exports = a.exports;
  m.created = now_seconds();
  m.hotlink_version = HOTLINK_VERSION;
  m.linker_version = a.linker_version;
  m.build_ms = a.build_ms;
  for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
    auto [data, size] = companion_bytes(a, i);
    if (size) {
      m.*kCompanions[i].size = size;
      m.*kCompanions[i].blake3 = trust::blake3_hex(data, size);
    }
  }
  return m;
}

} // namespace hotlink::cache::manifest
