#include "cache/manifest.h"

#include "hotlink/blake3.h"
#include "hotlink/signature.h"

#include "base/json.h"
#include "trust/recent_digests.h"

#include <cmath>
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
      // Whole microseconds: reading a fraction costs a hit strtod, whose
      // first call in a process was 9% of a fresh hit's CPU (perf samples
      // of startup_c).
      {"build_us", static_cast<std::int64_t>(std::llround(m.build_ms * 1000))},
  };
  for (const Companion &c : kCompanions)
    if (!(m.*c.blake3).empty())
      o[c.json] = {{"size", static_cast<std::int64_t>(m.*c.size)}, {"blake3", m.*c.blake3}};
  return json::print(o);
}

namespace {

// The manifest's JSON, read by nlohmann's SAX parser straight into the
// fields it has (a hit reads one at every lookup: building the DOM of its
// ~400 bytes cost ~37K instructions). Each key's last value counts, as in
// a parsed object; a value of another type than the field's is as absent.
struct Scalar {
  bool string = false, integer = false, number = false;
  std::string text;
  std::int64_t i = 0;
  double d = 0;
};

// build_ms: what manifests written before build_us have.
enum Field { kFormatF, kKeyF, kNameF, kTargetF, kSizeF, kBlake3F, kCreatedF, kHotlinkF, kLinkerF, kBuildUsF, kBuildMsF, kFields };
constexpr const char *kFieldNames[kFields] = {"format",         "key",            "name",     "target",  "size",
                                              "blake3",         "created",        "hotlink_version",
                                              "linker_version", "build_us",       "build_ms"};

struct Parsed {
  bool object = false; // the value is an object
  Scalar top[kFields];
  enum class List { Absent, Strings, Bad } exports_list = List::Absent;
  std::vector<std::string> exports;
  struct Record {
    bool present = false;
    Scalar size, blake3;
  } companions[std::size(kCompanions)];
};

class Reader {
public:
  explicit Reader(Parsed &p) : p_(p) {}

  bool null() { return value(Scalar{}); }
  bool boolean(bool) { return value(Scalar{}); }
  bool number_integer(std::int64_t v) {
    Scalar s;
    s.integer = s.number = true;
    s.i = v;
    s.d = static_cast<double>(v);
    return value(std::move(s));
  }
  bool number_unsigned(std::uint64_t v) {
    Scalar s;
    s.number = true;
    s.d = static_cast<double>(v);
    s.integer = v <= static_cast<std::uint64_t>(INT64_MAX);
    s.i = s.integer ? static_cast<std::int64_t>(v) : 0;
    return value(std::move(s));
  }
  bool number_float(double v, const std::string &) {
    Scalar s;
    s.number = true;
    s.d = v;
    // A number with no fractional part that fits an integer (3.0 for 3).
    s.integer = v >= -9.2e18 && v <= 9.2e18 && v == static_cast<double>(static_cast<std::int64_t>(v));
    s.i = s.integer ? static_cast<std::int64_t>(v) : 0;
    return value(std::move(s));
  }
  bool string(std::string &v) {
    Scalar s;
    s.string = true;
    s.text = std::move(v);
    return value(std::move(s));
  }
  bool binary(json::Value::binary_t &) { return value(Scalar{}); }
  bool key(std::string &k) {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) { return false; }

private:
  // What the values of an open object or array are.
  enum class Role { Top, Exports, Companion, Ignored };
  struct Frame {
    Role role;
    std::size_t companion = 0;
  };

  int top_field() const {
    for (int f = 0; f < kFields; ++f)
      if (key_ == kFieldNames[f])
        return f;
    return -1;
  }
  int companion_field() const {
    for (std::size_t i = 0; i < std::size(kCompanions); ++i)
      if (key_ == kCompanions[i].json)
        return static_cast<int>(i);
    return -1;
  }
  Scalar *companion_scalar(std::size_t i) {
    Parsed::Record &r = p_.companions[i];
    return key_ == "size" ? &r.size : key_ == "blake3" ? &r.blake3 : nullptr;
  }

  // A value where it stands (an object or array opening there is Scalar{}).
  bool value(Scalar s) {
    if (stack_.empty())
      return true; // a scalar manifest: not an object
    Frame &f = stack_.back();
    switch (f.role) {
    case Role::Top:
      if (int t = top_field(); t >= 0)
        p_.top[t] = std::move(s);
      else if (key_ == "exports")
        p_.exports_list = Parsed::List::Absent; // replaced below when an array
      else if (int c = companion_field(); c >= 0)
        p_.companions[c] = {}; // replaced below when an object
      break;
    case Role::Exports:
      if (s.string)
        p_.exports.push_back(std::move(s.text));
      else
        p_.exports_list = Parsed::List::Bad;
      break;
    case Role::Companion:
      if (Scalar *to = companion_scalar(f.companion))
        *to = std::move(s);
      break;
    case Role::Ignored:
      break;
    }
    return true;
  }

  bool open(bool array) {
    if (stack_.empty()) {
      p_.object = !array;
      stack_.push_back({array ? Role::Ignored : Role::Top});
      return true;
    }
    value(Scalar{});
    Frame f{Role::Ignored};
    if (stack_.back().role == Role::Top) {
      if (array && key_ == "exports") {
        p_.exports_list = Parsed::List::Strings;
        p_.exports.clear();
        f.role = Role::Exports;
      } else if (int c = companion_field(); !array && c >= 0) {
        p_.companions[c].present = true;
        f = {Role::Companion, static_cast<std::size_t>(c)};
      }
    }
    stack_.push_back(f);
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  Parsed &p_;
  std::string key_;
  std::vector<Frame> stack_;
};

// Reads the JSON body of a manifest; returns why it is refused, or empty.
std::string decode_body(const std::string &text, Manifest &m) {
  Parsed p;
  Reader reader(p);
  if (!json::Value::sax_parse(text, &reader))
    return "manifest is not valid JSON";
  if (!p.object)
    return "manifest is not a JSON object";
  auto str = [&](Field f, std::string &out) {
    if (!p.top[f].string)
      return false;
    out = p.top[f].text;
    return true;
  };
  auto num = [&](const Scalar &s, auto &out) {
    if (!s.integer)
      return false;
    out = static_cast<std::remove_reference_t<decltype(out)>>(s.i);
    return s.i >= 0;
  };
  if (!num(p.top[kFormatF], m.format) || m.format != kFormat)
    return "manifest has another format version";
  if (!str(kKeyF, m.key) || !str(kNameF, m.name) || !str(kTargetF, m.target) || !num(p.top[kSizeF], m.size) ||
      !str(kBlake3F, m.blake3) || !num(p.top[kCreatedF], m.created) || !str(kHotlinkF, m.hotlink_version) ||
      !str(kLinkerF, m.linker_version))
    return "manifest lacks a field";
  if (p.top[kBuildUsF].integer)
    m.build_ms = static_cast<double>(p.top[kBuildUsF].i) / 1000;
  else if (p.top[kBuildMsF].number)
    m.build_ms = p.top[kBuildMsF].d;
  if (p.exports_list == Parsed::List::Absent)
    return "manifest lacks its export list";
  if (p.exports_list == Parsed::List::Bad)
    return "manifest export list holds a non-string";
  m.exports = std::move(p.exports);
  for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
    const Parsed::Record &r = p.companions[i];
    if (!r.present)
      continue;
    if (!num(r.size, m.*kCompanions[i].size) || !r.blake3.string)
      return std::string("manifest's ") + kCompanions[i].json + " record is incomplete";
    m.*kCompanions[i].blake3 = r.blake3.text;
  }
  return {};
}

} // namespace

// Returns the reason it is refused, or empty.
std::string decode_manifest(const std::string &text, Manifest &m) {
  auto st = signature::parse_statement(text, "manifest");
  if (!st)
    return st.error().message;
  return decode_body(st->json, m);
}

Manifest make_manifest(const Key &key, const Artifact &a) {
  Manifest m;
  m.format = kFormat;
  m.key = key.hex();
  m.name = a.name;
  m.target = a.target;
  m.size = a.bytes.size();
  m.blake3 = trust::artifact_blake3_hex(a.bytes.data(), a.bytes.size());
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
