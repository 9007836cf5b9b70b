// Internal. An open file and its whole-file lock, on each host's own
// primitives: a descriptor and flock(2) on POSIX (file_handle_posix.cpp),
// a HANDLE and LockFileEx on Windows (file_handle_windows.cpp). The
// cache's store is written over it, once for both hosts.
//
// Contract:
// - A lock is advisory and belongs to the open file: two handles conflict
//   even within one process; closing the handle releases it; a process
//   that dies releases its locks. On Windows the locked range lies past
//   any data (a byte at offset 2^62), so a lock keeps other lockers out,
//   never readers or writers.
// - Files opened here can be renamed over and removed while open
//   (FILE_SHARE_DELETE on Windows), as on POSIX. On POSIX a symbolic link
//   is not followed (ELOOP): every file opened here is one hotlink made.
// - Failures set error() to an errno value (Windows errors are mapped).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/files.h"

namespace hotlink::base {

// Where a lock lies on Windows: one byte at 2^62, past any data.
constexpr std::uint64_t kWindowsLockOffset = std::uint64_t(1) << 62;

class FileHandle {
public:
  enum class Access {
    Read,      // an existing file, for reading (and touch())
    ReadWrite, // created (owner-only on POSIX) when missing
  };
  enum class Lock { Shared, Exclusive };

  FileHandle() = default;
  static FileHandle open(const std::string &path, Access access);
  FileHandle(FileHandle &&o) noexcept;
  FileHandle &operator=(FileHandle &&o) noexcept;
  FileHandle(const FileHandle &) = delete;
  FileHandle &operator=(const FileHandle &) = delete;
  ~FileHandle() { reset(); }
  void reset();
  explicit operator bool() const;
  int error() const { return error_; }

  // Takes the lock now, or false (EWOULDBLOCK) when another holder has it.
  bool try_lock(Lock lock);
  // Waits for it.
  bool lock(Lock lock);
  // Polls for it until `deadline` (false with ETIMEDOUT past it).
  bool lock_until(Lock lock, std::chrono::steady_clock::time_point deadline);
  void unlock();

  // True when `path` still names this file (it was not removed or replaced
  // since it was opened): checked after taking a lock that a remover takes
  // before it removes the file.
  bool names(const std::string &path) const;

  // Its size in bytes, or false.
  bool size(std::uint64_t &out) const;
  // What the file is now (base/files.h); exists is false when it cannot
  // be asked.
  FileIdentity identity() const;
  // Reads exactly `size` bytes from its start into `out`.
  bool read_all(std::vector<std::uint8_t> &out, std::uint64_t size) const;
  // Reads up to `size` bytes at `offset`; how many were read, or -1.
  long long read_at(void *data, std::size_t size, std::uint64_t offset) const;
  bool write_at(const void *data, std::size_t size, std::uint64_t offset);
  // Sets its modification time to now (a cache entry's last use).
  bool touch();

private:
  // The host's own: a descriptor, or a HANDLE; -1 (INVALID_HANDLE_VALUE on
  // Windows) when none is open.
  std::intptr_t native_ = -1;
  int error_ = 0;
};

} // namespace hotlink::base
