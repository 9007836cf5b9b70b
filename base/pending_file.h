// Internal. A file published whole or not at all, the one way every module
// publishes one: the cache's entries, key files, a link's outputs (and
// base/files.h's write_file_atomically, which is this in one call).
//
// Contract:
// - reserve() makes the file beside its path, where readers never see it:
//   unnamed (O_TMPFILE) where the file system allows, else a temporary
//   named PATH.tmp-PID-RANDOM (unique_suffix); either way held by this
//   process until it is published or dropped (locked: base/files.h's
//   own_file; on Windows, LockFileEx where base/file_handle.h locks), so
//   that no cleaner (remove_if_abandoned) takes it. Readers may open it
//   once it has its path, while it is still held. A process killed
//   before commit() leaves nothing (unnamed) or a temporary nobody holds.
// - commit() gives it its mode and publishes it at the path: by rename
//   (replacing what is there), or, without `replace`, only if nothing has
//   the name (EEXIST otherwise). An unnamed file gets a temporary name
//   just before, and is held locked until it has its path.
// - A PendingFile destroyed before commit() removes what it made.
// - Failures return the step and errno (FileError); the caller builds its
//   own Error, naming its own path.
#pragma once

#include "base/files.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hotlink::base {

class PendingFile {
public:
  PendingFile() = default;
  PendingFile(PendingFile &&o) noexcept;
  PendingFile &operator=(PendingFile &&o) noexcept;
  PendingFile(const PendingFile &) = delete;
  PendingFile &operator=(const PendingFile &) = delete;
  ~PendingFile() { drop(); }

  // Reserves the file that commit() publishes at `path`.
  static std::optional<FileError> reserve(const std::string &path, Publish how, PendingFile &out);

  // POSIX: its descriptor, for a writer that writes through it (lld).
  int fd() const { return static_cast<int>(native_); }
  // The temporary's path while it has a name; "" while it is unnamed.
  const std::string &temporary() const { return temp_; }

  std::optional<FileError> write(const void *data, std::size_t size);
  std::optional<FileError> commit();

private:
  void drop();
  std::string path_, temp_;
  Publish how_;
  // The host's own: a descriptor, or a HANDLE; -1 when none is open.
  std::intptr_t native_ = -1;
};

} // namespace hotlink::base
