// Internal. The one check of verify() that asks the running process: its
// imports. imports_posix.cpp or imports_windows.cpp implements it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hotlink {

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

// What to do about a needed library the host's loader cannot find.
const char *library_search_hint();

} // namespace hotlink
