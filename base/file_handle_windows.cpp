// base/file_handle.h on Windows: a HANDLE, LockFileEx on one byte past any
// data, positioned ReadFile/WriteFile, and file IDs for names().
#include "base/file_handle.h"
#include "base/files.h"
#include "base/wide.h"

#include <cerrno>

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

namespace hotlink::base {

namespace {

constexpr DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

HANDLE as_handle(std::intptr_t h) { return reinterpret_cast<HANDLE>(h); }

OVERLAPPED at(std::uint64_t offset) {
  OVERLAPPED o = {};
  o.Offset = static_cast<DWORD>(offset);
  o.OffsetHigh = static_cast<DWORD>(offset >> 32);
  return o;
}

bool same_id(HANDLE a, HANDLE b) {
  BY_HANDLE_FILE_INFORMATION x, y;
  return GetFileInformationByHandle(a, &x) && GetFileInformationByHandle(b, &y) &&
         x.dwVolumeSerialNumber == y.dwVolumeSerialNumber && x.nFileIndexHigh == y.nFileIndexHigh &&
         x.nFileIndexLow == y.nFileIndexLow;
}

} // namespace

FileHandle FileHandle::open(const std::string &path, Access access) {
  FileHandle f;
  std::wstring w = widen(path);
  HANDLE h = access == Access::Read
                 ? CreateFileW(w.c_str(), GENERIC_READ | FILE_WRITE_ATTRIBUTES, kShareAll, nullptr, OPEN_EXISTING,
                               FILE_ATTRIBUTE_NORMAL, nullptr)
                 : CreateFileW(w.c_str(), GENERIC_READ | GENERIC_WRITE, kShareAll, nullptr, OPEN_ALWAYS,
                               FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE && access == Access::Read && GetLastError() == ERROR_ACCESS_DENIED)
    h = CreateFileW(w.c_str(), GENERIC_READ, kShareAll, nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    f.error_ = errno_of_windows(GetLastError());
    return f;
  }
  f.native_ = reinterpret_cast<std::intptr_t>(h);
  return f;
}

void FileHandle::reset() {
  if (native_ != -1)
    CloseHandle(as_handle(native_));
  native_ = -1;
}

bool FileHandle::try_lock(Lock lock) {
  OVERLAPPED o = at(kWindowsLockOffset);
  DWORD flags = LOCKFILE_FAIL_IMMEDIATELY | (lock == Lock::Exclusive ? LOCKFILE_EXCLUSIVE_LOCK : 0);
  if (LockFileEx(as_handle(native_), flags, 0, 1, 0, &o))
    return true;
  DWORD e = GetLastError();
  error_ = e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING ? EWOULDBLOCK : errno_of_windows(e);
  return false;
}

bool FileHandle::lock(Lock lock) {
  OVERLAPPED o = at(kWindowsLockOffset);
  if (LockFileEx(as_handle(native_), lock == Lock::Exclusive ? LOCKFILE_EXCLUSIVE_LOCK : 0, 0, 1, 0, &o))
    return true;
  error_ = errno_of_windows(GetLastError());
  return false;
}

void FileHandle::unlock() {
  OVERLAPPED o = at(kWindowsLockOffset);
  UnlockFileEx(as_handle(native_), 0, 1, 0, &o);
}

bool FileHandle::names(const std::string &path) const {
  HANDLE other = CreateFileW(widen(path).c_str(), FILE_READ_ATTRIBUTES, kShareAll, nullptr, OPEN_EXISTING,
                             FILE_ATTRIBUTE_NORMAL, nullptr);
  if (other == INVALID_HANDLE_VALUE)
    return false;
  bool same = same_id(as_handle(native_), other);
  CloseHandle(other);
  return same;
}

FileIdentity FileHandle::identity() const { return identify_handle(as_handle(native_)); }

long long FileHandle::read_at(void *data, std::size_t size, std::uint64_t offset) const {
  OVERLAPPED o = at(offset);
  DWORD got = 0, chunk = static_cast<DWORD>(std::min<std::size_t>(size, 1u << 30));
  if (!ReadFile(as_handle(native_), data, chunk, &got, &o))
    return GetLastError() == ERROR_HANDLE_EOF ? 0 : -1;
  return got;
}

bool FileHandle::read_all(std::vector<std::uint8_t> &out, std::uint64_t size) const {
  out.resize(size);
  for (std::uint64_t done = 0; done < size;) {
    long long n = read_at(out.data() + done, size - done, done);
    if (n <= 0)
      return false;
    done += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool FileHandle::write_at(const void *data, std::size_t size, std::uint64_t offset) {
  const auto *p = static_cast<const std::uint8_t *>(data);
  for (std::size_t done = 0; done < size;) {
    OVERLAPPED o = at(offset + done);
    DWORD wrote = 0, chunk = static_cast<DWORD>(std::min<std::size_t>(size - done, 1u << 30));
    if (!WriteFile(as_handle(native_), p + done, chunk, &wrote, &o) || wrote == 0) {
      error_ = errno_of_windows(GetLastError());
      return false;
    }
    done += wrote;
  }
  return true;
}

bool FileHandle::touch() {
  FILETIME now;
  GetSystemTimeAsFileTime(&now);
  return SetFileTime(as_handle(native_), nullptr, nullptr, &now) != 0;
}

} // namespace hotlink::base
