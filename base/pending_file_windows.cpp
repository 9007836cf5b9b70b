// base/pending_file.h on Windows: a temporary named PATH.tmp-PID-RANDOM,
// held by a lock where base/file_handle.h locks (so remove_if_abandoned
// leaves it), renamed into place by MoveFileExW while open, then closed.
// Its share mode lets readers open it (FILE_SHARE_READ): once renamed it
// is the published file while this handle is still open, and a reader
// refused then (a sharing violation) would take a fresh entry for a
// broken one. No one else may write it. The mode has no Windows meaning:
// the file takes its directory's ACL.
#include "base/pending_file.h"

#include "base/file_handle.h"
#include "base/wide.h"

#include <algorithm>

namespace hotlink::base {

namespace {
HANDLE as_handle(std::intptr_t native) { return reinterpret_cast<HANDLE>(native); }
} // namespace

void PendingFile::drop() {
  if (native_ != -1)
    CloseHandle(as_handle(native_));
  native_ = -1;
  if (!temp_.empty())
    DeleteFileW(widen(temp_).c_str());
  temp_.clear();
}

std::optional<FileError> PendingFile::reserve(const std::string &path, Publish how, PendingFile &out) {
  out.drop();
  out.path_ = path;
  out.how_ = how;
  std::string temp = path + unique_suffix();
  HANDLE h = CreateFileW(widen(temp).c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                         CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE)
    return FileError{"cannot create", errno_of_windows(GetLastError()), temp};
  out.native_ = reinterpret_cast<std::intptr_t>(h);
  out.temp_ = temp;
  // Nobody else knows the name yet: the lock cannot be taken first.
  OVERLAPPED o = {};
  o.Offset = static_cast<DWORD>(kWindowsLockOffset);
  o.OffsetHigh = static_cast<DWORD>(kWindowsLockOffset >> 32);
  if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &o)) {
    FileError e{"cannot lock", errno_of_windows(GetLastError()), temp};
    out.drop();
    return e;
  }
  return std::nullopt;
}

std::optional<FileError> PendingFile::write(const void *data, std::size_t size) {
  const auto *p = static_cast<const std::uint8_t *>(data);
  for (std::size_t done = 0; done < size;) {
    DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(size - done, 1u << 30)), wrote = 0;
    if (!WriteFile(as_handle(native_), p + done, chunk, &wrote, nullptr) || wrote == 0)
      return FileError{"cannot write", errno_of_windows(GetLastError()), path_};
    done += wrote;
  }
  return std::nullopt;
}

std::optional<FileError> PendingFile::commit() {
  // Renamed while still open (held), then closed. Without
  // MOVEFILE_REPLACE_EXISTING an existing path is refused, as link()
  // refuses it on POSIX.
  bool moved = MoveFileExW(widen(temp_).c_str(), widen(path_).c_str(), how_.replace ? MOVEFILE_REPLACE_EXISTING : 0);
  DWORD e = moved ? 0 : GetLastError();
  CloseHandle(as_handle(native_));
  native_ = -1;
  if (!moved)
    return FileError{how_.replace ? "cannot rename into place" : "cannot create", errno_of_windows(e), path_};
  temp_.clear();
  return std::nullopt;
}

} // namespace hotlink::base
