// Loading on Windows hosts: the bytes are written to a directory of their
// own in the temporary directory (%TEMP%\hotlink-PID-N\) under the DLL's
// own name and loaded from there with LoadLibraryExW, so the published DLL
// is never locked (a writer can replace it) and each version is a different
// module to the loader. If a PDB sits next to the source artifact, it is
// copied into that directory under its own name: a debugger that does not
// find the PDB the DLL's CodeView record names looks beside the DLL for
// that file name, and finds exactly this version's. The directory is
// deleted when the Library is destroyed.
//
// Built only on Windows; a test compiles it here with clang-22
// --target=x86_64-w64-mingw32 (-fsyntax-only) to keep it honest.
#include "hotlink/load.h"
#include "loader/platform.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "base/wide.h"

#include <atomic>

namespace hotlink::loader {

namespace {

using base::narrow;
using base::widen;

std::string last_error() { return base::system_message(GetLastError()); }

bool write_all(const std::wstring &path, const void *data, std::size_t size) {
  HANDLE h = CreateFileW(path.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_TEMPORARY, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return false;
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    DWORD chunk = size > (1u << 30) ? (1u << 30) : static_cast<DWORD>(size), wrote = 0;
    if (!WriteFile(h, p, chunk, &wrote, nullptr) || wrote == 0) {
      CloseHandle(h);
      DeleteFileW(path.c_str());
      return false;
    }
    p += wrote;
    size -= wrote;
  }
  return CloseHandle(h) != 0;
}

std::wstring without_extension(const std::wstring &path) {
  std::size_t dot = path.rfind(L'.'), slash = path.find_last_of(L"\\/");
  return dot != std::wstring::npos && (slash == std::wstring::npos || dot > slash) ? path.substr(0, dot) : path;
}

} // namespace

Library::~Library() {
  if (handle_)
    FreeLibrary(static_cast<HMODULE>(handle_));
  if (!copy_path_.empty()) {
    std::wstring copy = widen(copy_path_);
    DeleteFileW(copy.c_str());
    DeleteFileW((without_extension(copy) + L".pdb").c_str());
    std::size_t slash = copy.find_last_of(L"\\/");
    if (slash != std::wstring::npos)
      RemoveDirectoryW(copy.substr(0, slash).c_str());
  }
}

void *Library::symbol(const std::string &name) const {
  return reinterpret_cast<void *>(GetProcAddress(static_cast<HMODULE>(handle_), name.c_str()));
}

Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name, const LoadOptions &options) {
  return load_copy(bytes, name, options, nullptr);
}

// No post-mortem store links copies by build-id here: `build_id` is unused.
Expected<std::unique_ptr<Library>> load_copy(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const LoadOptions &options, const std::string *) {
  static std::atomic<unsigned> counter{0};
  std::unique_ptr<Library> lib(new Library);
  lib->name_ = name;
  wchar_t tmp[MAX_PATH + 1];
  DWORD n = GetTempPathW(MAX_PATH + 1, tmp);
  if (n == 0 || n > MAX_PATH)
    return make_error(ErrorCode::LoadFailed, "no temporary directory: " + last_error(), name);
  // The directory carries the version's name (options.file_name, e.g.
  // kernel.v3.9f2c41d0.dll); the DLL keeps its own, which its PDB matches.
  std::wstring dir = std::wstring(tmp) + L"hotlink-" + std::to_wstring(GetCurrentProcessId()) + L"-" +
                     std::to_wstring(counter++) + (options.file_name.empty() ? L"" : L"-" + widen(options.file_name));
  if (!CreateDirectoryW(dir.c_str(), nullptr))
    return make_error(ErrorCode::LoadFailed, "cannot create " + narrow(dir) + ": " + last_error(), name);
  std::string base = name.substr(name.find_last_of("\\/") + 1);
  std::wstring copy = dir + L"\\" + widen(base);
  if (!write_all(copy, bytes.data(), bytes.size())) {
    RemoveDirectoryW(dir.c_str());
    return make_error(ErrorCode::LoadFailed, "cannot write the private copy: " + last_error(), name);
  }
  lib->copy_path_ = narrow(copy);
  // The PDB, if the artifact has one beside it, under the name the DLL's
  // CodeView record gives (the artifact's own, for a DLL hotlink linked).
  std::wstring pdb = without_extension(widen(name)) + L".pdb";
  if (GetFileAttributesW(pdb.c_str()) != INVALID_FILE_ATTRIBUTES)
    CopyFileW(pdb.c_str(), (without_extension(copy) + L".pdb").c_str(), FALSE);
  HMODULE h = LoadLibraryExW(copy.c_str(), nullptr, LOAD_WITH_ALTERED_SEARCH_PATH);
  if (!h)
    return make_error(ErrorCode::LoadFailed, "LoadLibraryExW refused it: " + last_error(), name, {},
                      "verify() it first; a missing dependent DLL is the usual cause");
  lib->handle_ = h;
  // The image is one range: the module's base up to its SizeOfImage.
  auto *dos = reinterpret_cast<const IMAGE_DOS_HEADER *>(h);
  auto *nt = reinterpret_cast<const IMAGE_NT_HEADERS *>(reinterpret_cast<const char *>(h) + dos->e_lfanew);
  lib->base_ = reinterpret_cast<std::uintptr_t>(h);
  lib->ranges_.push_back({lib->base_, lib->base_ + nt->OptionalHeader.SizeOfImage});
  return lib;
}

} // namespace hotlink::loader
