// base/files.h on Windows: UTF-8 paths as UTF-16 for the Win32 file API,
// MoveFileExW for the atomic publish and for removal. The descriptor-based
// helpers (write_all, read_exact, same_file) are POSIX only: shared code
// reads and writes through base/file_handle.h.
#include "base/files.h"
#include "base/file_handle.h"

#include <cerrno>
#include <filesystem>

#include "base/wide.h"

namespace hotlink::base {

std::optional<FileError> read_file(const std::string &path, std::vector<std::uint8_t> &out, std::uint64_t most) {
  HANDLE h = CreateFileW(widen(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                         nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return FileError{"cannot read", errno_of_windows(GetLastError()), path};
  std::optional<FileError> failed;
  LARGE_INTEGER size;
  if (!GetFileSizeEx(h, &size)) {
    failed = FileError{"cannot read", errno_of_windows(GetLastError()), path};
  } else if (static_cast<std::uint64_t>(size.QuadPart) > most) {
    failed = FileError{"cannot read", EFBIG, path};
  } else {
    out.resize(static_cast<std::size_t>(size.QuadPart));
    std::size_t done = 0;
    while (done < out.size() && !failed) {
      DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(out.size() - done, 1u << 30)), got = 0;
      if (!ReadFile(h, out.data() + done, chunk, &got, nullptr))
        failed = FileError{"cannot read", errno_of_windows(GetLastError()), path};
      else if (got == 0)
        failed = FileError{"cannot read", EIO, path}; // shorter than its size said
      done += got;
    }
  }
  CloseHandle(h);
  return failed;
}

std::optional<FileError> create_file(const std::string &path, const void *data, std::size_t size) {
  HANDLE h = CreateFileW(widen(path).c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr, CREATE_NEW,
                         FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return FileError{"cannot create", errno_of_windows(GetLastError()), path};
  DWORD wrote = 0;
  bool ok = size == 0 || (WriteFile(h, data, static_cast<DWORD>(size), &wrote, nullptr) && wrote == size);
  DWORD e = ok ? 0 : GetLastError();
  CloseHandle(h);
  if (!ok)
    return FileError{"cannot write", errno_of_windows(e), path};
  return std::nullopt;
}

void remove_tree(const std::string &dir) {
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(widen(dir)), ec);
}

// A live owner keeps its file locked (a pending file, a .lock): this one
// cannot lock it. A file open for its writer alone cannot even be opened.
bool remove_if_abandoned(const std::string &path) {
  FileHandle h = FileHandle::open(path, FileHandle::Access::Read);
  return h && h.try_lock(FileHandle::Lock::Exclusive) && remove_file(path) == 0;
}

FileIdentity identify_handle(HANDLE h) {
  FileIdentity id;
  BY_HANDLE_FILE_INFORMATION info;
  if (!GetFileInformationByHandle(h, &info))
    return id;
  id.exists = true;
  id.directory = (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
  id.device = info.dwVolumeSerialNumber;
  id.inode = (static_cast<unsigned long long>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  id.size = (static_cast<unsigned long long>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  id.mtime_ns = unix_ns(info.ftLastWriteTime);
  FILE_BASIC_INFO basic;
  if (GetFileInformationByHandleEx(h, FileBasicInfo, &basic, sizeof basic))
    id.ctime_ns = unix_ns(basic.ChangeTime.QuadPart);
  return id;
}

FileIdentity identify_file(const std::string &path) {
  // Attributes only: no access that a writer or a remover would meet.
  HANDLE h = CreateFileW(widen(path).c_str(), FILE_READ_ATTRIBUTES,
                         FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                         FILE_FLAG_BACKUP_SEMANTICS, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return {};
  FileIdentity id = identify_handle(h);
  CloseHandle(h);
  return id;
}

std::string absolute_path(const std::string &path) {
  std::wstring w = widen(path.empty() ? "." : path);
  DWORD n = GetFullPathNameW(w.c_str(), 0, nullptr, nullptr);
  if (n == 0) {
    errno = errno_of_windows(GetLastError());
    return {};
  }
  std::wstring full(n, L'\0');
  n = GetFullPathNameW(w.c_str(), n, full.data(), nullptr);
  full.resize(n);
  return narrow(full);
}

std::int64_t file_clock_ns() {
  FILETIME now;
  GetSystemTimeAsFileTime(&now); // the clock file times are set from
  return unix_ns(now);
}

std::optional<std::string> open_to_others(const std::string &) { return std::nullopt; }

// A file others hold open with FILE_SHARE_DELETE can be renamed but, once
// deleted, keeps its name until they close it: renamed aside first, its
// name is free at once.
int remove_file(const std::string &path) {
  std::wstring aside = widen(path + unique_suffix());
  if (!MoveFileExW(widen(path).c_str(), aside.c_str(), 0))
    return errno_of_windows(GetLastError());
  DeleteFileW(aside.c_str());
  return 0;
}

int make_directory(const std::string &path) {
  return CreateDirectoryW(widen(path).c_str(), nullptr) ? 0 : errno_of_windows(GetLastError());
}

int remove_directory(const std::string &path) {
  return RemoveDirectoryW(widen(path).c_str()) ? 0 : errno_of_windows(GetLastError());
}

bool list_directory(const std::string &dir, std::vector<DirectoryEntry> &out, int &error) {
  WIN32_FIND_DATAW f;
  HANDLE h = FindFirstFileW(widen(dir + "/*").c_str(), &f);
  if (h == INVALID_HANDLE_VALUE) {
    error = errno_of_windows(GetLastError());
    return false;
  }
  do {
    DirectoryEntry e;
    e.name = narrow(f.cFileName);
    if (e.name == "." || e.name == "..")
      continue;
    e.regular = !(f.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DEVICE));
    e.directory = (f.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !(f.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT);
    e.size = (static_cast<std::uint64_t>(f.nFileSizeHigh) << 32) | f.nFileSizeLow;
    e.mtime_ns = unix_ns(f.ftLastWriteTime);
    out.push_back(std::move(e));
  } while (FindNextFileW(h, &f));
  FindClose(h);
  return true;
}

std::optional<std::string> writable_by_others(const std::string &) { return std::nullopt; }

} // namespace hotlink::base
