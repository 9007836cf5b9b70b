// verify()'s import check on Windows hosts (imports.h): each DLL the image
// imports from, loaded as its own load would find it (the standard search;
// one this process has already is only referenced again), and each import,
// "DLL!name" or "DLL!#N" (image/pe.cpp), looked up in that DLL, as the PE
// loader binds it.
#include "verify/imports.h"
#include "base/wide.h"

#include <map>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

namespace hotlink {

namespace {

std::string system_message(DWORD code) {
  wchar_t *msg = nullptr;
  FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr,
                 code, 0, reinterpret_cast<wchar_t *>(&msg), 0, nullptr);
  std::string s = msg ? base::narrow(msg) : "error " + std::to_string(code);
  if (msg)
    LocalFree(msg);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' '))
    s.pop_back();
  return s;
}

} // namespace

std::optional<Unresolved> unresolved_import(const std::vector<std::string> &imports,
                                            const std::vector<std::string> &needed) {
  std::map<std::string, HMODULE> dlls;
  std::optional<Unresolved> missing;
  for (const std::string &dll : needed) {
    HMODULE h = LoadLibraryExW(base::widen(dll).c_str(), nullptr, 0);
    if (!h) {
      missing = Unresolved{{}, dll, system_message(GetLastError())};
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
      FARPROC p = symbol.size() > 1 && symbol[0] == '#'
                      ? GetProcAddress(it->second, MAKEINTRESOURCEA(std::stoul(symbol.substr(1)) & 0xffff))
                      : GetProcAddress(it->second, symbol.c_str());
      if (!p) {
        missing = Unresolved{imp, {}, {}};
        break;
      }
    }
  for (auto &[name, h] : dlls)
    FreeLibrary(h);
  return missing;
}

} // namespace hotlink
