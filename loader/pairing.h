// Internal. Pairs the named things of two versions of an image (state
// variables, functions): first by key (the name, and for a local symbol
// its translation unit's source file), then a thing left on both sides
// whose name is unique among those left on each side, so a unit compiled
// from a file of another name (a JIT's temporary source) still pairs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hotlink::loader {

// T has `std::string name` and `std::string key() const`. Returns
// {old, fresh} with nullptr for a side that has none, fresh's order first,
// then what only old has.
template <class T>
std::vector<std::pair<const T *, const T *>> pair_up(const std::vector<T> &old, const std::vector<T> &fresh) {
  std::map<std::string, const T *> by_key;
  for (const T &v : old)
    by_key.emplace(v.key(), &v);
  std::vector<std::pair<const T *, const T *>> out;
  for (const T &f : fresh) {
    auto it = by_key.find(f.key());
    out.push_back({it == by_key.end() ? nullptr : it->second, &f});
    if (it != by_key.end())
      by_key.erase(it);
  }
  std::map<std::string, int> old_names, fresh_names;
  for (const auto &[key, v] : by_key)
    ++old_names[v->name];
  for (const auto &[o, f] : out)
    if (!o)
      ++fresh_names[f->name];
  std::map<std::string, const T *> old_by_name;
  for (const auto &[key, v] : by_key)
    if (old_names[v->name] == 1)
      old_by_name[v->name] = v;
  for (auto &[o, f] : out)
    if (!o && fresh_names[f->name] == 1 && old_by_name.count(f->name)) {
      o = old_by_name[f->name];
      by_key.erase(o->key());
    }
  for (const auto &[key, v] : by_key)
    out.push_back({v, nullptr});
  return out;
}

} // namespace hotlink::loader
