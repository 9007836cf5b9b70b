// base/own_module_host.h on Windows.
#include "base/own_module_host.h"
#include "base/wide.h"

namespace hotlink::host {

std::string file_of_code(const void *address) {
  HMODULE module = nullptr;
  if (!address || !GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                                      static_cast<LPCWSTR>(address), &module))
    return {};
  std::wstring path(32768, L'\0');
  DWORD n = GetModuleFileNameW(module, path.data(), static_cast<DWORD>(path.size()));
  if (n == 0 || n >= path.size())
    return {};
  path.resize(n);
  return base::narrow(path);
}

std::string directory_of_code(const void *address) {
  std::string file = file_of_code(address);
  std::size_t slash = file.find_last_of("/\\");
  return slash == std::string::npos ? std::string() : file.substr(0, slash);
}

bool file_exists(const std::string &path) {
  DWORD a = GetFileAttributesW(base::widen(path).c_str());
  return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

// LOAD_WITH_ALTERED_SEARCH_PATH: the module's own directory is searched
// for what it imports, before the process's.
void *load_library(const std::string &path, std::string &why) {
  HMODULE m = LoadLibraryExW(base::widen(path).c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (!m) {
    why = base::system_message(GetLastError());
  }
  return reinterpret_cast<void *>(m);
}

void *library_symbol(void *library, const char *name) {
  return reinterpret_cast<void *>(GetProcAddress(static_cast<HMODULE>(library), name));
}

} // namespace hotlink::host
