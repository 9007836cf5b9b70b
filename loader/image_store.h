// Internal. Where private copies are written, and the post-mortem image
// store: image_store.cpp on both hosts, over image_store_host.h (what
// differs: image_store_posix.cpp, image_store_windows.cpp).
//
// Contract:
// - Post-mortem is on by default: each process writes its private copies
//   into a directory of its own inside the per-user store
//   ($HOTLINK_KEEP_IMAGES, else on POSIX $XDG_CACHE_HOME/hotlink/images,
//   else ~/.cache/hotlink/images, mode 0700; on Windows
//   %LOCALAPPDATA%\hotlink\images), and leaves them there when they are
//   unmapped and when it exits. The directories are slots
//   (STORE/hotlink-load-N): a process holds the first whose .lock is free
//   for its life (base/files.h: liveness is a held lock), and the next
//   owner of a slot writes beside what the earlier ones left (or, for the
//   same bytes under the same name, uses their copy). So the path the
//   dynamic loader recorded still names the image after the process is
//   gone: `perf record` reads each mapped file's build-id when the
//   workload has exited (and copies it into ~/.debug), gdb opens a core
//   file's libraries by those paths, and a debugger reading a Windows
//   minidump finds the DLL with its PDB beside it.
// - On POSIX each image is also linked as STORE/.build-id/xx/REST[.debug],
//   for gdb's debug-file-directory and perf's --buildid-dir when the core
//   or the profile is read elsewhere. On Windows each copy sits in a
//   directory of its own (SLOT\NAME.vN.<hash>.dll\NAME.dll, its PDB
//   beside it), since the DLL keeps the name its PDB was linked for; the
//   directory's files are one image to the bound.
// - The store is bounded: past `keep_max_bytes`, or for images older than
//   `keep_max_age`, the oldest images are removed first, never one this
//   process has mapped (nor, on Windows, where a mapped file cannot be
//   removed, one in a slot a live process holds). Checked when a process
//   first writes to the store if no process did so in the last hour
//   (STORE/.pruned's mtime: the walk reads every image's size and time,
//   which a process's first load should not wait for), and whenever its
//   own writes pass a quarter of the bound.
// - Off (HOTLINK_KEEP_IMAGES=off, or LoadOptions::keep_images = "off"), or
//   when the store cannot be used (not ours, not writable, mounted noexec):
//   copies go to a per-process directory (POSIX: $HOTLINK_TMPDIR, else
//   /dev/shm, else $TMPDIR, else /tmp; Windows: $HOTLINK_TMPDIR, else
//   %TEMP%), removed at unmap and at exit; what a killed process left
//   there is removed by the next process that makes one (its .lock is
//   free). A store that cannot be used is one warning on stderr, never a
//   failed load.
#pragma once

#include "base/file_handle.h"
#include "hotlink/load.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hotlink::loader::store {

struct CopyDirectory {
  std::string path;  // the process's directory; empty when none could be made
  std::string error; // why not
  bool kept = false; // in the store: copies stay after unmap and exit
  std::string store; // the store it is in, when kept
  // When this process took the directory (the file system's clock, in ns
  // from the Unix epoch): a copy older than that is an earlier owner's.
  std::int64_t taken_ns = 0;
  base::FileHandle lock; // its .lock, held for the process's life
};

// The directory for `options`' copies (made once per store, per process).
const CopyDirectory &copy_directory(const LoadOptions &options);

// A copy at `path` was mapped: when it was `written` now (not reused),
// index it (POSIX: link it by build-id, the caller's `build_id`, read
// from the bytes when null; a reused copy has its links: they are names
// of its inode, which a prune removes together) and count it against the
// bound; protect it from pruning while it is mapped. `blake3` names its
// bytes (hex; empty when unknown) and `seen` is what reuse() found the
// file to be when it compared them (exists false when it did not).
void kept(const CopyDirectory &dir, const std::string &path, const std::vector<std::uint8_t> &bytes,
          const std::string *build_id, bool written, const LoadOptions &options, const std::string &blake3,
          const base::FileIdentity &seen);
// When the taken name `path`, in a directory of the store, holds a copy of
// these same bytes that an earlier owner of the directory left (names
// repeat from one owner to the next), or that this process mapped and has
// unmapped since, it serves as this load's copy: its time is set to now
// (when it is older than a minute), as a new copy's would be, and true is
// returned. So a program started over and over, or a process that loads
// the same bytes again and again (a JIT's cache hits), neither fills its
// directory with numbered duplicates nor writes the same file each time. A copy mapped now is
// never one (each load maps a copy of its own), nor one its parent made
// since it took the directory (the parent may still map it).
//
// The bytes are compared with the file's, except for a copy this process
// compared before (same `blake3`) whose identity still shows the same
// bytes (base::FileIdentity::holds_same_bytes): a JIT's hit then costs one
// stat, not an open and a read. `seen` is set for kept().
bool reuse(const CopyDirectory &dir, const std::string &path, const std::vector<std::uint8_t> &bytes,
           const std::string &blake3, base::FileIdentity &seen);
// It is unmapped: it may be pruned from now on.
void unmapped(const std::string &path);

} // namespace hotlink::loader::store
