// Internal. Names in a message: "a, b, c and 4 more".
#pragma once

#include <cstddef>
#include <string>

namespace hotlink::base {

// The first `most` of `names` (strings or string views), comma-separated,
// then how many more there are.
template <class Names> std::string list_some(const Names &names, std::size_t most) {
  std::string s;
  std::size_t i = 0;
  for (const auto &n : names) {
    if (i == most)
      return s + " and " + std::to_string(names.size() - most) + " more";
    s += (i++ ? ", " : "") + std::string(n);
  }
  return s;
}

} // namespace hotlink::base
