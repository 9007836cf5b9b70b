// Loading on Windows hosts: the bytes are written to a directory of their
// own in the process's directory of the image store (image_store.h:
// SLOT\NAME.vN.<hash>.dll\NAME.dll), under the DLL's own name, and loaded
// from there with LoadLibraryExW, so the published DLL is never locked (a
// writer can replace it) and each version is a different module to the
// loader. If a PDB sits next to the source artifact, it is copied into
// that directory under its own name: a debugger that does not find the
// PDB the DLL's CodeView record names looks beside the DLL for that file
// name, and finds exactly this version's. In the store they stay for
// post-mortem debugging (a minidump names the DLL by that path); with the
// store off, the directory is removed when the Library is destroyed.
//
// Built only on Windows; a test compiles it here with clang-22
// --target=x86_64-w64-mingw32 (-fsyntax-only) to keep it honest.
#include "hotlink/load.h"
#include "base/files.h"
#include "loader/image_store.h"
#include "loader/platform.h"
#include "trust/recent_digests.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "base/wide.h"

#include "hotlink/symbols.h"

#include <cstring>

namespace hotlink::loader {

namespace {

using base::narrow;
using base::widen;

std::string last_error() { return base::system_message(GetLastError()); }

std::wstring without_extension(const std::wstring &path) {
  std::size_t dot = path.rfind(L'.'), slash = path.find_last_of(L"\\/");
  return dot != std::wstring::npos && (slash == std::wstring::npos || dot > slash) ? path.substr(0, dot) : path;
}

} // namespace

Library::~Library() {
  if (handle_)
    FreeLibrary(static_cast<HMODULE>(handle_));
  if (copy_path_.empty())
    return;
  if (kept_) {
    store::unmapped(copy_path_); // stays for post-mortem tools
    return;
  }
  std::wstring copy = widen(copy_path_);
  DeleteFileW(copy.c_str());
  DeleteFileW((without_extension(copy) + L".pdb").c_str());
  std::size_t slash = copy.find_last_of(L"\\/");
  if (slash != std::wstring::npos)
    RemoveDirectoryW(copy.substr(0, slash).c_str());
}

void *Library::symbol(const std::string &name) const {
  return reinterpret_cast<void *>(GetProcAddress(static_cast<HMODULE>(handle_), name.c_str()));
}

Expected<std::unique_ptr<Library>> load_private(const std::vector<std::uint8_t> &bytes,
                                                const std::string &name, const LoadOptions &options) {
  return load_copy(bytes, name, options, nullptr, nullptr);
}

// No build-id indexes a PE image: `build_id` is unused.
Expected<std::unique_ptr<Library>> load_copy(const std::vector<std::uint8_t> &bytes, const std::string &name,
                                             const LoadOptions &options, const std::string *,
                                             const std::string *known_blake3) {
  const store::CopyDirectory &dir = store::copy_directory(options);
  if (dir.path.empty())
    return make_error(ErrorCode::LoadFailed, "no directory for private copies: " + dir.error, name, {},
                      "make %TEMP% writable, or set HOTLINK_TMPDIR");
  std::unique_ptr<Library> lib(new Library);
  lib->name_ = name;
  // The directory carries the version's name (NAME.vN.<hash>.dll); the DLL
  // keeps its own, which its PDB matches. A directory whose DLL is another
  // copy gets .K before its extension (K = 2, 3, ...), unless that copy can
  // serve again (store::reuse).
  std::string blake3 = known_blake3 ? *known_blake3 : trust::artifact_blake3_hex(bytes.data(), bytes.size());
  std::string file = clean_file_name(options.file_name.empty() ? copy_file_name(name, options.version, blake3)
                                                               : options.file_name);
  std::string own = name.substr(name.find_last_of("\\/") + 1);
  auto [stem, ext] = split_extension(file);
  bool written = false, reused = false;
  base::FileIdentity seen;
  std::string why;
  for (int attempt = 1; attempt <= 1000 && !written && !reused && why.empty(); ++attempt) {
    // Backslashes, as in the store's paths: LoadLibraryExW's altered search path wants them.
    std::string version_dir = dir.path + "\\" + (attempt == 1 ? file : stem + "." + std::to_string(attempt) + ext);
    lib->copy_path_ = version_dir + "\\" + own;
    // The copy that serves again is looked for first, as on POSIX.
    if ((reused = store::reuse(dir, lib->copy_path_, bytes, blake3, seen)))
      break;
    if (int e = base::make_directory(version_dir); e != 0 && e != EEXIST) {
      why = std::strerror(e);
    } else {
      // A partly written copy is removed with `lib` (not yet kept).
      auto failed = base::create_file(lib->copy_path_, bytes.data(), bytes.size());
      written = !failed;
      if (failed && failed->errnum != EEXIST)
        why = failed->to_string();
    }
  }
  if (!written && !reused) {
    std::string where = lib->copy_path_;
    lib->copy_path_.clear();
    return make_error(ErrorCode::LoadFailed,
                      "cannot write the private copy " + where + ": " + (why.empty() ? "every name is taken" : why),
                      name);
  }
  std::wstring copy = widen(lib->copy_path_);
  // The PDB, if the artifact has one beside it, under the name the DLL's
  // CodeView record gives (the artifact's own, for a DLL hotlink linked).
  std::wstring pdb = without_extension(widen(name)) + L".pdb";
  if (written && GetFileAttributesW(pdb.c_str()) != INVALID_FILE_ATTRIBUTES)
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
  lib->kept_ = dir.kept;
  store::kept(dir, lib->copy_path_, bytes, nullptr, written, options, blake3, seen);
  return lib;
}

} // namespace hotlink::loader
