// verify()'s import check on Windows hosts (imports.h): each DLL the image
// imports from, loaded as its own load would find it (the standard search;
// one this process has already is only referenced again), and each import,
// "DLL!name" or "DLL!#N" (image/pe.cpp), looked up in that DLL, as the PE
// loader binds it.
#include "verify/imports.h"
#include <cstdlib>
#include <map>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "base/wide.h"

namespace hotlink {

std::optional<Unresolved> unresolved_import(const std::vector<std::string> &imports,
                                            const std::vector<std::string> &needed) {
  std::map<std::string, HMODULE> dlls;
  std::optional<Unresolved> missing;
  for (const std::string &dll : needed) {
    HMODULE h = LoadLibraryExW(base::widen(dll).c_str(), nullptr, 0);
    if (!h) {
      missing = Unresolved{{}, dll, base::system_message(GetLastError())};
      break;
    }
    dlls.emplace(dll, h);
  }
  if (!missing)
    for (const std::string &imp : imports) {
      std::size_t bang = imp.find('!');
      auto it = bang == std::string::npos ? dlls.end() : dlls.find(imp.substr(0, bang));
      if (it == dlls.end())
        continue; // not an import of a listed DLL: the reader lists none such
      std::string symbol = imp.substr(bang + 1);
      // "#N": an ordinal (image/pe.cpp writes its digits).
      bool ordinal = symbol.size() > 1 && symbol[0] == '#';
      unsigned long n = ordinal ? std::strtoul(symbol.c_str() + 1, nullptr, 10) & 0xffff : 0;
      FARPROC p = ordinal ? GetProcAddress(it->second, MAKEINTRESOURCEA(n)) : GetProcAddress(it->second, symbol.c_str());
      if (!p) {
        missing = Unresolved{imp, {}, {}};
        break;
      }
    }
  for (auto &[name, h] : dlls)
    FreeLibrary(h);
  return missing;
}

const char *library_search_hint() { return "install it, or put it beside the program or in a directory on PATH"; }

} // namespace hotlink
