// verify()'s import check on Windows hosts (imports.h).
#include "verify/imports.h"

namespace hotlink {

std::optional<Unresolved> unresolved_import(const std::vector<std::string> &,
                                            const std::vector<std::string> &) {
  return std::nullopt; // the PE loader binds imports by DLL; LoadLibraryExW reports them
}

} // namespace hotlink
