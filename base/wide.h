// Internal, Windows only. Paths and messages cross the Win32 API as
// UTF-16; hotlink's strings are UTF-8. What a Win32 error code says, as a
// message and as the errno hotlink's file errors carry; and file times.
#pragma once

#include <cerrno>
#include <cstdint>
#include <string>

#include <windows.h>

namespace hotlink::base {

inline std::wstring widen(const std::string &s) {
  if (s.empty())
    return {};
  int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), nullptr, 0);
  std::wstring w(static_cast<std::size_t>(n > 0 ? n : 0), L'\0');
  if (n > 0)
    MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), w.data(), n);
  return w;
}

inline std::string narrow(const std::wstring &w) {
  if (w.empty())
    return {};
  int n = WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0, nullptr, nullptr);
  std::string s(static_cast<std::size_t>(n > 0 ? n : 0), '\0');
  if (n > 0)
    WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), s.data(), n, nullptr, nullptr);
  return s;
}

// The system's message for a GetLastError() code, on one line.
inline std::string system_message(DWORD code) {
  wchar_t *msg = nullptr;
  FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr,
                 code, 0, reinterpret_cast<wchar_t *>(&msg), 0, nullptr);
  std::string s = msg ? narrow(msg) : "error " + std::to_string(code);
  if (msg)
    LocalFree(msg);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '.'))
    s.pop_back();
  return s;
}

// FILETIME counts 100 ns steps from 1601; hotlink's times count ns from 1970.
inline std::int64_t unix_ns(std::int64_t ticks) { return (ticks - 116444736000000000LL) * 100; }
inline std::int64_t unix_ns(const FILETIME &t) {
  return unix_ns(static_cast<std::int64_t>((static_cast<std::uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime));
}

// base::FileIdentity of the file `h` has open (files_windows.cpp).
struct FileIdentity;
FileIdentity identify_handle(HANDLE h);

// The errno that says what a GetLastError() code says.
inline int errno_of_windows(DWORD e) {
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
  case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
  default: return EIO;
  }
}

} // namespace hotlink::base
