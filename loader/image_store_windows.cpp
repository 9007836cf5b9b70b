// image_store_host.h on Windows: the store under %LOCALAPPDATA%, copies in
// %TEMP% when it is off. A DLL keeps its PDB beside it (load_windows.cpp
// copies it), which is how a debugger finds it: nothing is indexed. A
// mapped DLL cannot be removed, so a prune leaves a live process's slot
// whole.
#include "loader/image_store_host.h"

#include "base/files.h"
#include "base/wide.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace hotlink::loader::store::host {

namespace {

// An environment variable, or "".
std::string variable(const wchar_t *name) {
  wchar_t value[32768];
  DWORD n = GetEnvironmentVariableW(name, value, sizeof value / sizeof value[0]);
  return n > 0 && n < sizeof value / sizeof value[0] ? base::narrow(std::wstring(value, n)) : std::string();
}

} // namespace

std::string default_store() {
  std::string local = variable(L"LOCALAPPDATA");
  return local.empty() ? std::string() : local + "\\hotlink\\images";
}

std::vector<std::string> temporary_bases() {
  std::vector<std::string> bases;
  if (std::string e = variable(L"HOTLINK_TMPDIR"); !e.empty())
    bases.push_back(e);
  wchar_t tmp[MAX_PATH + 1];
  DWORD n = GetTempPathW(MAX_PATH + 1, tmp);
  if (n > 0 && n <= MAX_PATH) {
    std::string t = base::narrow(std::wstring(tmp, n));
    while (t.size() > 3 && (t.back() == '\\' || t.back() == '/'))
      t.pop_back();
    bases.push_back(t);
  }
  return bases;
}

std::string unusable(const std::string &store) {
  base::FileIdentity id = base::identify_file(store); // the usual case: it is there
  if (!id.exists) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(base::widen(store)), ec);
    if (ec)
      return "cannot create it: " + ec.message();
    id = base::identify_file(store);
  }
  if (!id.directory)
    return "it is not a directory";
  return {};
}

bool removes_mapped_files() { return false; }

void index_copy(const std::string &, const std::string &, const std::vector<std::uint8_t> &, const std::string *) {}

char separator() { return '\\'; }

std::uint64_t process_id() { return GetCurrentProcessId(); }

} // namespace hotlink::loader::store::host
