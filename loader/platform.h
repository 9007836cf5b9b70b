// Internal. What loading needs from the platform: load_posix.cpp or
// load_windows.cpp implements it, and Library's mapping.
#pragma once

#include <optional>
#include <string>

namespace hotlink::loader {

#include <vector>

// The first import of `imports` that neither this process nor the
// libraries in `needed` (DT_NEEDED names, found as the dynamic loader finds
// them) define, as an Error naming it (or the library that cannot be
// found); nullopt when every import resolves.
struct Unresolved {
  std::string symbol;  // the import, or empty when a library is missing
  std::string library; // the DT_NEEDED library that cannot be loaded
  std::string why;     // the dynamic loader's words
};
std::optional<Unresolved> unresolved_import(const std::vector<std::string> &imports,
                                            const std::vector<std::string> &needed);

} // namespace hotlink::loader
