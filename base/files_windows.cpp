// base/files.h on Windows: UTF-8 paths as UTF-16 for the Win32 file API,
// MoveFileExW for the atomic publish (the Windows runtime, issue 51). The
// descriptor-based helpers (write_all, read_exact, same_file) are POSIX
// only: the Windows modules that need them are still to come.
#include "base/files.h"

#include <cerrno>
#include <filesystem>

#include "base/wide.h"

namespace hotlink::base {

namespace {

// The errno that says what GetLastError() says, for FileError.
int errno_of(DWORD e) {
  switch (e) {
  case ERROR_FILE_NOT_FOUND:
  case ERROR_PATH_NOT_FOUND:
  case ERROR_INVALID_DRIVE: return ENOENT;
  case ERROR_ACCESS_DENIED:
  case ERROR_SHARING_VIOLATION:
  case ERROR_LOCK_VIOLATION: return EACCES;
  case ERROR_FILE_EXISTS:
  case ERROR_ALREADY_EXISTS: return EEXIST;
  case ERROR_DISK_FULL:
  case ERROR_HANDLE_DISK_FULL: return ENOSPC;
  case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
  default: return EIO;
  }
}

} // namespace

std::optional<FileError> read_file(const std::string &path, std::vector<std::uint8_t> &out, std::uint64_t most) {
  HANDLE h = CreateFileW(widen(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                         nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return FileError{"cannot read", errno_of(GetLastError()), path};
  std::optional<FileError> failed;
  LARGE_INTEGER size;
  if (!GetFileSizeEx(h, &size)) {
    failed = FileError{"cannot read", errno_of(GetLastError()), path};
  } else if (static_cast<std::uint64_t>(size.QuadPart) > most) {
    failed = FileError{"cannot read", EFBIG, path};
  } else {
    out.resize(static_cast<std::size_t>(size.QuadPart));
    std::size_t done = 0;
    while (done < out.size() && !failed) {
      DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(out.size() - done, 1u << 30)), got = 0;
      if (!ReadFile(h, out.data() + done, chunk, &got, nullptr))
        failed = FileError{"cannot read", errno_of(GetLastError()), path};
      else if (got == 0)
        failed = FileError{"cannot read", EIO, path}; // shorter than its size said
      done += got;
    }
  }
  CloseHandle(h);
  return failed;
}

void remove_tree(const std::string &dir) {
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(widen(dir)), ec);
}

std::optional<FileError> write_file_atomically(const std::string &path, const void *data, std::size_t size,
                                               AtomicWrite how) {
  // The mode has no Windows meaning: the file gets its directory's ACL.
  std::string temp = path + unique_suffix();
  std::wstring wtemp = widen(temp), wpath = widen(path);
  // FILE_SHARE_DELETE: a locked temporary (how.lock) is renamed while open.
  HANDLE h = CreateFileW(wtemp.c_str(), GENERIC_WRITE, FILE_SHARE_DELETE, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL,
                         nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return FileError{"cannot create", errno_of(GetLastError()), temp};
  const auto *p = static_cast<const std::uint8_t *>(data);
  bool ok = true;
  DWORD e = 0;
  for (std::size_t done = 0; ok && done < size;) {
    DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(size - done, 1u << 30)), wrote = 0;
    ok = WriteFile(h, p + done, chunk, &wrote, nullptr) && wrote > 0;
    e = ok ? 0 : GetLastError();
    done += wrote;
  }
  if (!how.lock)
    CloseHandle(h);
  if (!ok) {
    if (how.lock)
      CloseHandle(h);
    DeleteFileW(wtemp.c_str());
    return FileError{"cannot write", errno_of(e), path};
  }
  // Without MOVEFILE_REPLACE_EXISTING an existing path is refused, as
  // link() refuses it on POSIX.
  bool moved = MoveFileExW(wtemp.c_str(), wpath.c_str(), how.replace ? MOVEFILE_REPLACE_EXISTING : 0);
  e = moved ? 0 : GetLastError();
  if (how.lock)
    CloseHandle(h);
  if (!moved) {
    DeleteFileW(wtemp.c_str());
    return FileError{how.replace ? "cannot rename into place" : "cannot create", errno_of(e), path};
  }
  return std::nullopt;
}

FileIdentity identify_file(const std::string &path) {
  FileIdentity id;
  WIN32_FILE_ATTRIBUTE_DATA a;
  if (!GetFileAttributesExW(widen(path).c_str(), GetFileExInfoStandard, &a))
    return id;
  id.exists = true;
  id.size = (static_cast<unsigned long long>(a.nFileSizeHigh) << 32) | a.nFileSizeLow;
  id.mtime_ns = static_cast<long long>((static_cast<unsigned long long>(a.ftLastWriteTime.dwHighDateTime) << 32) |
                                       a.ftLastWriteTime.dwLowDateTime) * 100;
  return id;
}

std::optional<std::string> open_to_others(const std::string &) { return std::nullopt; }

} // namespace hotlink::base
