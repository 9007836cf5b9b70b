// verify()'s import check on POSIX hosts: dlsym, as the dynamic loader
// would resolve them (imports.h).
#include "verify/imports.h"

#include <dlfcn.h>

namespace hotlink {

std::optional<Unresolved> unresolved_import(const std::vector<std::string> &imports,
                                            const std::vector<std::string> &needed) {
  // The needed libraries, opened as the artifact's own load would open
  // them (a library the process has already is only referenced again).
  std::vector<void *> handles;
  std::optional<Unresolved> missing;
  for (const std::string &lib : needed) {
    void *h = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
      const char *why = dlerror();
      missing = Unresolved{{}, lib, why ? why : "not found"};
      break;
    }
    handles.push_back(h);
  }
  if (!missing)
    for (const std::string &imp : imports) {
      bool found = dlsym(RTLD_DEFAULT, imp.c_str()) != nullptr;
      for (void *h : handles)
        found = found || dlsym(h, imp.c_str()) != nullptr;
      if (!found) {
        missing = Unresolved{imp, {}, {}};
        break;
      }
    }
  for (void *h : handles)
    dlclose(h);
  return missing;
}

const char *library_search_hint() { return "install it, or add its directory to LD_LIBRARY_PATH"; }

} // namespace hotlink
