// Internal. JSON for the cache's manifests and signed statements:
// nlohmann/json (nlohmann-json3-dev, header-only), read without
// exceptions and printed the one way both hosts agree on.
//
// Contract:
// - print() writes one line: no newline, no space, object keys sorted
//   (std::map), integers as integers; a string that is not valid UTF-8
//   (an export name from a hostile object) prints with U+FFFD in place of
//   each bad sequence instead of failing.
// - parse() never throws: malformed text gives a value for which
//   is_discarded() is true.
// - The *_at() helpers answer nullptr (or nullopt) when `object` is not an
//   object, lacks the key, or holds a value of another type there.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace hotlink::base::json {

using Value = nlohmann::json;

inline Value parse(const std::string &text) { return Value::parse(text, nullptr, /*allow_exceptions=*/false); }

inline std::string print(const Value &v) { return v.dump(-1, ' ', false, Value::error_handler_t::replace); }

inline const Value *member(const Value &object, const char *key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

inline const Value *string_at(const Value &object, const char *key) {
  const Value *v = member(object, key);
  return v && v->is_string() ? v : nullptr;
}

inline const Value *array_at(const Value &object, const char *key) {
  const Value *v = member(object, key);
  return v && v->is_array() ? v : nullptr;
}

inline const Value *object_at(const Value &object, const char *key) {
  const Value *v = member(object, key);
  return v && v->is_object() ? v : nullptr;
}

// An integer, or a number with no fractional part that fits one (what
// another writer may print for 3 as 3.0).
inline std::optional<std::int64_t> integer_at(const Value &object, const char *key) {
  const Value *v = member(object, key);
  if (!v)
    return std::nullopt;
  if (v->is_number_unsigned())
    return v->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)
               ? std::optional<std::int64_t>(static_cast<std::int64_t>(v->get<std::uint64_t>()))
               : std::nullopt;
  if (v->is_number_integer())
    return v->get<std::int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (d >= -9.2e18 && d <= 9.2e18 && d == static_cast<double>(static_cast<std::int64_t>(d)))
      return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

inline std::optional<double> number_at(const Value &object, const char *key) {
  const Value *v = member(object, key);
  return v && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
}

} // namespace hotlink::base::json
