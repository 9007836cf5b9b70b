// Internal. The file operations every module needs, written once.
//
// Contract: nothing here reports by itself; each call returns what failed
// (the step and errno) and the caller builds its own Error, with its own
// code and hint, naming its own input or output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::base {

// Writes all `size` bytes to `fd`, retrying short writes and EINTR: at its
// offset, or from `at` (pwrite, the offset untouched). False (errno set)
// when the file refused more.
bool write_all(int fd, const void *data, std::size_t size, std::optional<std::uint64_t> at = std::nullopt);

// Reads exactly `size` bytes from the start of `fd` into `out` (pread,
// retrying short reads and EINTR). False when the file holds fewer.
bool read_exact(int fd, std::vector<std::uint8_t> &out, std::uint64_t size);

// True when `fd` is still the file that `path` names (it was not unlinked
// or replaced after it was opened): the check after taking a lock file's
// lock, which a remover takes before it unlinks the file.
bool same_file(int fd, const std::string &path);

// base::FileIdentity (below) of the file `fd` has open (fstat).
struct FileIdentity;
FileIdentity identify_open_file(int fd);

// Liveness, told one way for every file a live process owns (a cache
// temporary, a link's named temporary, a load directory's .lock): its
// owner holds it locked (flock; on Windows, LockFileEx) for as long as
// it lives, and the system drops the lock however the owner ends.
// Neither a process id (reused, and meaningless across containers that
// share a directory) nor an age (a guess) is asked.
//
// Takes ownership of `fd`, just opened at `path` (POSIX): its exclusive
// lock, held until `fd` is closed. False when another holds it, or when
// `path` no longer names it (remove_if_abandoned took it between the open
// and the lock): make it again.
bool own_file(int fd, const std::string &path);
// Removes `path` when no owner holds it; true when it was removed. The
// removal happens under the lock, so that an owner that opened the file a
// moment before finds it gone from its path when it locks it (own_file).
bool remove_if_abandoned(const std::string &path);

// Removes a directory and everything in it, FIFOs and sockets included
// (llvm::sys::fs::remove_directories leaves those behind).
void remove_tree(const std::string &dir);

// ".tmp-PID-XXXXXXXXXXXXXXXX", unique within and across processes: the
// suffix of a temporary written beside its destination.
std::string unique_suffix();

// How a file is published (base/pending_file.h, write_file_atomically).
struct Publish {
  unsigned mode = 0600;  // the published file's mode (POSIX)
  bool umask = false;    // less the process's umask, as a linker's outputs are
  bool replace = true;   // false: an existing path is refused (EEXIST)
};

struct FileError {
  const char *step; // "cannot create", "cannot write", "cannot rename into place"
  int errnum;
  std::string path; // the file that step failed on (the temporary, or the path)
  std::string to_string() const; // "cannot write: No space left on device"
};

// Writes `size` bytes to `path` so that it appears complete or not at all
// (base/pending_file.h, in one call): `how`'s mode, replacing what is
// there unless !how.replace (EEXIST then).
std::optional<FileError> write_file_atomically(const std::string &path, const void *data, std::size_t size,
                                               Publish how = {});

// Creates `path` only when nothing has that name (EEXIST otherwise: of
// several processes creating it at once, exactly one does), owner-only,
// and writes `size` bytes into it. Not atomic for readers of its bytes:
// for a file whose existence is what counts.
std::optional<FileError> create_file(const std::string &path, const void *data, std::size_t size);

// Reads the whole of `path` into `out`; a file of more than `most` bytes
// is refused (EFBIG) without reading it.
std::optional<FileError> read_file(const std::string &path, std::vector<std::uint8_t> &out,
                                   std::uint64_t most = UINT64_MAX);

// What a file is now, to tell that it changed (a Watcher polls it): on
// POSIX its device, inode, size, mtime and ctime; on Windows its volume,
// file index, size, last write and change times (100 ns steps), where the
// file system reports them. Times count from the Unix epoch on both. Two
// identities differ (!=) when the file was replaced or rewritten.
//
// holds_same_bytes: a file whose identity is equal in every field to one
// taken when its bytes were read has those bytes still, provided that
// identity was settled() when they were read: every write, rename or
// chmod sets the ctime to the clock, and a ctime older than the clock by
// more than a tick (kSettledNs) cannot be set again by a later change.
// Not proof against a file system whose clock is coarser than that (1 s
// timestamps), nor against a writer who sets the clock back; hotlink's own
// files are never rewritten in place, so what this tells apart is
// replacement, removal and tampering.
constexpr std::int64_t kSettledNs = 50'000'000;
// A file whose time records its last use (a cache entry's manifest, a kept
// image) has it set again only when it is older than this: the prunes that
// read it order by it, and a JIT's hits would otherwise write it (and
// change its identity) at each use.
constexpr std::int64_t kLastUseGrainNs = 60'000'000'000;
struct FileIdentity {
  bool exists = false;
  bool directory = false;
  unsigned long long device = 0, inode = 0, size = 0;
  long long mtime_ns = 0, ctime_ns = 0;
  bool operator!=(const FileIdentity &o) const {
    return exists != o.exists || inode != o.inode || size != o.size || mtime_ns != o.mtime_ns;
  }
  bool settled(std::int64_t now_ns) const { return exists && ctime_ns != 0 && ctime_ns <= now_ns - kSettledNs; }
  // The same file (not its bytes: one replaced by rename is another).
  bool same_file(const FileIdentity &o) const {
    return exists && o.exists && device == o.device && inode == o.inode;
  }
  bool holds_same_bytes(const FileIdentity &then) const {
    return same_file(then) && size == then.size && mtime_ns == then.mtime_ns && ctime_ns == then.ctime_ns;
  }
  // Its mtime, a last use, is recent enough not to be set again now.
  bool used_lately(std::int64_t now_ns) const { return now_ns - mtime_ns < kLastUseGrainNs; }
};
// Following a symbolic link; exists is false when there is nothing there
// or it cannot be read.
FileIdentity identify_file(const std::string &path);
// `path` made absolute against the working directory (POSIX: as it is when
// it starts with '/'; Windows: GetFullPathNameW), or empty with errno set.
// Not through std::filesystem, whose code a process that opens a cache
// would otherwise fault in at start-up.
std::string absolute_path(const std::string &path);

// The file system's clock now, ns from the Unix epoch.
std::int64_t file_clock_ns();

// The file's mode ("0644") when its group or others may read or write it;
// nullopt when only its owner may, or where this is not known (Windows:
// its ACL is not read).
std::optional<std::string> open_to_others(const std::string &path);

// Removes the file `path`: 0 when its name is gone, else the errno. On
// Windows a file that others hold open (FileHandle opens let them) is
// renamed aside first (PATH.tmp-..., unique_suffix()) and deleted when the
// last of them closes it, so the name is free at once, as unlink frees it.
int remove_file(const std::string &path);

// Makes the directory `path` for its owner alone (mode 0700 on POSIX; on
// Windows it takes its parent's ACL): 0, or the errno (EEXIST when
// something has the name).
int make_directory(const std::string &path);

// Removes the directory `path` when it is empty: 0, or the errno
// (ENOTEMPTY when it is not).
int remove_directory(const std::string &path);

struct DirectoryEntry {
  std::string name;
  bool regular = false;   // a plain file (not a directory, link or device)
  bool directory = false; // a real directory (not a link to one)
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0; // from the Unix epoch
  std::uint64_t inode = 0;   // POSIX: its inode, which its hard links share; 0 on Windows
};
// The entries of `dir` but "." and ".."; false, with the errno in
// `error`, when it cannot be read.
bool list_directory(const std::string &dir, std::vector<DirectoryEntry> &out, int &error);

// Why a directory that holds code this process will load is not its
// user's alone: "belongs to another user (uid 1001)", "is writable by its
// group (mode 0775)"; nullopt when it is, or where this is not known
// (Windows: its ACL is not read).
std::optional<std::string> writable_by_others(const std::string &dir);

} // namespace hotlink::base
