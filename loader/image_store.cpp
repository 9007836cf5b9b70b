// loader/image_store.h on every host, over base/'s files and locks and
// image_store_host.h.
#include "loader/image_store.h"

#include "base/eviction.h"
#include "base/file_handle.h"
#include "base/files.h"
#include "loader/image_store_host.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

namespace hotlink::loader::store {

namespace {

using base::FileHandle;

constexpr std::string_view kPrefix = "hotlink-load-";
// The store is walked at a process's first use only when no process has
// pruned it for this long (as the artifact cache does): the walk reads
// every image's size and time, and a store near its bound holds ~100,000
// small images.
constexpr std::int64_t kPruneIntervalNs = 3600ll * 1000000000;
constexpr const char *kPruneStamp = ".pruned"; // its mtime: the last prune
// A process owns the first free slot: the store holds as many as
// processes ever used it at once.
constexpr int kMaxSlots = 4096;

std::mutex g_mu; // everything below
// What this process knows of a copy's bytes: their BLAKE3 (hex), and the
// file's identity when it compared them with its own (settled; exists
// false otherwise).
struct Seen {
  std::string blake3;
  base::FileIdentity identity;
};
// Made at the first load, not at start-up (a global map's constructor
// would write its page in every process that links hotlink), and never
// destroyed: loads and unloads happen during exit too.
struct Copies {
  std::map<std::string, Seen> mapped; // this process's mapped copies
  // Copies this process mapped and has unmapped since, by the process
  // that did (a forked child inherits the parent's, and may not reuse
  // them: the parent may map them again, and forwarding writes into a
  // mapped copy).
  struct Released {
    std::uint64_t process = 0;
    Seen seen;
  };
  std::map<std::string, Released> released;
  std::map<std::string, std::uint64_t> written_bytes; // per store, since its last prune
};
Copies &copies() {
  static Copies *c = new Copies;
  return *c;
}

// --- Directories ---------------------------------------------------------------------

// A path in `dir`, with the host's separator (a path the store makes is
// the same string as the one the loader records).
std::string join(const std::string &dir, const std::string &name) { return dir + host::separator() + name; }

// `path` with the host's separators.
std::string native(std::string path) {
  for (char &c : path)
    if (c == '/')
      c = host::separator();
  return path;
}

bool is_process_dir(const base::DirectoryEntry &e) {
  return e.directory && e.name.compare(0, kPrefix.size(), kPrefix) == 0;
}

// Takes DIR/.lock (making it, and with `make` the directory, where they
// are missing): held, or an empty handle when another process holds it,
// or is making or removing the directory at this moment (`error` 0), or
// when the file cannot be made (`error` set).
FileHandle take_lock(const std::string &dir, bool make, int &error) {
  error = 0;
  std::string lock = join(dir, ".lock");
  FileHandle f = FileHandle::open(lock, FileHandle::Access::ReadWrite);
  if (!f && make && f.error() == ENOENT) {
    if (int e = base::make_directory(dir); e != 0 && e != EEXIST) {
      error = e;
      return {};
    }
    f = FileHandle::open(lock, FileHandle::Access::ReadWrite);
  }
  if (!f) {
    // Removed by a prune between the two calls, or a stray file of the
    // directory's name: busy, not an error.
    if (f.error() != ENOENT && f.error() != ENOTDIR && f.error() != ELOOP)
      error = f.error();
    return {};
  }
  // A remover removes a dead directory's .lock while holding its lock: a
  // lock taken on a file that is no longer the .lock owns nothing.
  if (!f.try_lock(FileHandle::Lock::Exclusive) || !f.names(lock))
    return {};
  return f;
}

// Removes the directory `dir`, whose .lock `held` this process holds (its
// owner is gone), when nothing but the .lock is left in it. The .lock
// goes under its lock, so that no process takes the directory meanwhile
// (one that opened it before owns nothing: take_lock). What is left (an
// image) stays, and the next owner makes a .lock.
void remove_abandoned(const std::string &dir, FileHandle &held) {
  base::remove_file(join(dir, ".lock"));
  held.reset();
  base::remove_directory(dir);
}

// The store's directories are slots, STORE/hotlink-load-N (N = 0, 1, ...):
// a process owns the first whose .lock nobody holds, and keeps that lock
// for its life. A slot outlives its owners, so a process's start opens and
// locks a file instead of making a directory and a file, the costliest
// system calls of a load on a journaling file system.
bool adopt_slot(const std::string &store, CopyDirectory &out, std::string &error) {
  for (int n = 0; n < kMaxSlots; ++n) {
    std::string dir = join(store, std::string(kPrefix) + std::to_string(n));
    int e = 0;
    if (FileHandle held = take_lock(dir, /*make=*/true, e)) {
      out.path = dir;
      out.lock = std::move(held);
      return true;
    }
    if (e != 0) {
      error = "cannot open " + join(dir, ".lock") + ": " + std::strerror(e);
      return false;
    }
    // Held by a live process, or made or removed at this moment by
    // another: a slot further on.
  }
  error = "all " + std::to_string(kMaxSlots) + " of its directories are held by processes";
  return false;
}

// A process's directory in `base`, with its .lock held.
bool make_process_dir(const std::string &base, CopyDirectory &out, std::string &error) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string suffix = base::unique_suffix(); // ".tmp-PID-RANDOM"
    std::string dir = join(base, std::string(kPrefix) + suffix.substr(5));
    if (int e = base::make_directory(dir); e != 0) {
      if (e == EEXIST)
        continue;
      error = "cannot create a directory in " + base + ": " + std::strerror(e);
      return false;
    }
    int e = 0;
    if (FileHandle held = take_lock(dir, /*make=*/false, e)) {
      out.path = dir;
      out.lock = std::move(held);
      return true;
    }
    // Another process's sweep took the new directory before its .lock was held.
  }
  error = "cannot hold a directory in " + base + ": other processes keep removing them";
  return false;
}

// The process directories in `base`, but `mine`.
std::vector<std::string> process_dirs(const std::string &base, const std::string &mine) {
  std::vector<base::DirectoryEntry> entries;
  int error = 0;
  std::vector<std::string> out;
  if (base::list_directory(base, entries, error))
    for (const base::DirectoryEntry &e : entries)
      if (is_process_dir(e) && join(base, e.name) != mine)
        out.push_back(join(base, e.name));
  return out;
}

// The per-process directory used when the store is off: it removes itself
// at exit, with whatever copies are left (on POSIX a mapping outlives its
// file; on Windows what is still mapped stays, for the next process's
// sweep), and a forked child leaves its parent's alone.
struct TmpDirectory : CopyDirectory {
  std::uint64_t owner = host::process_id();
  ~TmpDirectory() {
    if (!path.empty() && host::process_id() == owner) {
      lock.reset();
      base::remove_tree(path);
    }
  }
};

void make_tmp_directory(TmpDirectory &d) {
  for (const std::string &given : host::temporary_bases()) {
    std::string b = native(given);
    if (!make_process_dir(b, d, d.error))
      continue;
    // What killed processes left: their .locks are free. Only this
    // user's: the base may be shared (/tmp).
    for (const std::string &other : process_dirs(b, d.path)) {
      int e = 0;
      if (base::writable_by_others(other))
        continue;
      if (FileHandle held = take_lock(other, /*make=*/false, e)) {
        held.reset();
        base::remove_tree(other);
      }
    }
    return;
  }
}

const CopyDirectory &tmp_directory() {
  static TmpDirectory dir;
  static std::once_flag made;
  std::call_once(made, [] { make_tmp_directory(dir); });
  return dir;
}

// --- The store --------------------------------------------------------------------------

std::string store_path(const LoadOptions &options) {
  std::string s = options.keep_images;
  if (s.empty())
    if (const char *e = std::getenv("HOTLINK_KEEP_IMAGES"))
      s = e;
  if (s == "off" || s == "0")
    return {};
  return native(s.empty() ? host::default_store() : s);
}

// What a prune removes together: one inode's names (a copy and its
// build-id links), or a directory of one copy and its PDB (Windows).
struct Image {
  std::uint64_t size = 0;
  std::int64_t mtime = 0;
  bool mapped = false;
  std::vector<std::string> names;
  std::string directory; // removed with it, when the image is a directory
};

void add(std::map<std::string, Image> &images, const std::string &id, const std::string &path,
         const base::DirectoryEntry &e, bool whole, bool protect) {
  Image &im = images[id];
  im.size = whole ? e.size : im.size + e.size; // hard links: one inode's size
  im.mtime = std::max(im.mtime, e.mtime_ns);
  im.mapped = im.mapped || protect || copies().mapped.count(path);
  im.names.push_back(path);
}

// The images in `dir` (a slot, or a .build-id subdirectory), and in the
// directories of one copy inside it. `protect`: none may be removed.
void scan(const std::string &dir, std::map<std::string, Image> &images, bool protect) {
  std::vector<base::DirectoryEntry> entries;
  int error = 0;
  if (!base::list_directory(dir, entries, error))
    return;
  for (const base::DirectoryEntry &e : entries) {
    std::string p = join(dir, e.name);
    if (e.name[0] == '.')
      continue;
    if (e.regular) {
      add(images, e.inode ? "#" + std::to_string(e.inode) : p, p, e, /*whole=*/true, protect);
    } else if (e.directory) {
      std::vector<base::DirectoryEntry> files;
      if (!base::list_directory(p, files, error))
        continue;
      Image &im = images[p]; // removed with its files, or alone when it has none
      im.directory = p;
      im.mtime = std::max(im.mtime, e.mtime_ns);
      im.mapped = im.mapped || protect;
      for (const base::DirectoryEntry &f : files)
        if (f.regular)
          add(images, p, join(p, f.name), f, /*whole=*/false, protect);
    }
  }
}

// Removes the oldest images while the store holds more than the bound, and
// every image older than the age bound; then the empty directories of
// processes that are gone. Never an image this process has mapped, nor,
// where a mapped file cannot be removed, one in a live process's slot.
void prune_locked(const std::string &store, const std::string &mine, const LoadOptions &options) {
  std::map<std::string, Image> images;
  std::vector<std::pair<std::string, FileHandle>> abandoned; // held while this prune runs
  for (const std::string &dir : process_dirs(store, "")) {
    bool live = dir == mine;
    if (!live) {
      int e = 0;
      FileHandle held = take_lock(dir, /*make=*/false, e);
      live = !held;
      if (held)
        abandoned.emplace_back(dir, std::move(held));
    }
    scan(dir, images, /*protect=*/live && dir != mine && !host::removes_mapped_files());
  }
  std::vector<base::DirectoryEntry> ids;
  int error = 0;
  if (base::list_directory(join(store, ".build-id"), ids, error))
    for (const base::DirectoryEntry &e : ids)
      if (e.directory)
        scan(join(join(store, ".build-id"), e.name), images, /*protect=*/false);
  std::vector<const Image *> all;
  std::vector<base::Resident> residents;
  for (const auto &[id, im] : images) {
    all.push_back(&im);
    residents.push_back({im.size, im.mtime, im.mapped}); // a mapped image is never removed
  }
  base::EvictionLimits limits{options.keep_max_bytes, 0, options.keep_max_age, /*tenth_free=*/false};
  base::evict_least_recent(residents, limits, base::file_clock_ns(), [&](std::size_t i) {
    for (const std::string &n : all[i]->names)
      base::remove_file(n);
    if (!all[i]->directory.empty())
      base::remove_directory(all[i]->directory);
    return base::Evicted::Removed;
  });
  for (auto &[dir, held] : abandoned)
    remove_abandoned(dir, held);
  FileHandle stamp = FileHandle::open(join(store, kPruneStamp), FileHandle::Access::ReadWrite);
  if (stamp)
    stamp.touch();
}

bool pruned_lately(const std::string &store) {
  base::FileIdentity stamp = base::identify_file(join(store, kPruneStamp));
  return stamp.exists && base::file_clock_ns() - stamp.mtime_ns < kPruneIntervalNs;
}

// The store's process directory, made on first use of each store.
const CopyDirectory *store_directory(const std::string &store, const LoadOptions &options) {
  static std::map<std::string, std::unique_ptr<CopyDirectory>> made;
  std::lock_guard<std::mutex> lock(g_mu);
  auto &entry = made[store];
  if (!entry) {
    entry = std::make_unique<CopyDirectory>();
    std::string why = host::unusable(store);
    if (!why.empty() || !adopt_slot(store, *entry, why)) {
      std::fprintf(stderr,
                   "hotlink: warning: the post-mortem image store %s cannot be used (%s); loaded images are "
                   "removed when the process exits, so perf and gdb cannot name their functions afterwards "
                   "(set HOTLINK_KEEP_IMAGES to another directory, or to off)\n",
                   store.c_str(), why.c_str());
      entry->error = why;
      return nullptr;
    }
    entry->taken_ns = base::file_clock_ns();
    entry->kept = true;
    entry->store = store;
    if (!pruned_lately(store))
      prune_locked(store, entry->path, options);
  }
  return entry->path.empty() ? nullptr : entry.get();
}

} // namespace

const CopyDirectory &copy_directory(const LoadOptions &options) {
  std::string store = store_path(options);
  if (!store.empty())
    if (const CopyDirectory *d = store_directory(store, options))
      return *d;
  return tmp_directory();
}

void kept(const CopyDirectory &dir, const std::string &path, const std::vector<std::uint8_t> &bytes,
          const std::string *build_id, bool written, const LoadOptions &options, const std::string &blake3,
          const base::FileIdentity &seen) {
  if (!dir.kept)
    return;
  if (written)
    host::index_copy(dir.store, path, bytes, build_id);
  std::lock_guard<std::mutex> lock(g_mu);
  copies().mapped[path] = {blake3, seen};
  if (!written)
    return;
  std::uint64_t &since = copies().written_bytes[dir.store];
  since += bytes.size();
  if (since > options.keep_max_bytes / 4) { // a quarter of the bound since the last look
    since = 0;
    prune_locked(dir.store, dir.path, options);
  }
}

bool reuse(const CopyDirectory &dir, const std::string &path, const std::vector<std::uint8_t> &bytes,
           const std::string &blake3, base::FileIdentity &seen) {
  seen = {};
  if (!dir.kept)
    return false;
  bool released = false;
  base::FileIdentity known;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (copies().mapped.count(path))
      return false; // mapped now: a second dlopen of it would be the same library
    auto r = copies().released.find(path);
    released = r != copies().released.end() && r->second.process == host::process_id();
    if (released && !blake3.empty() && r->second.seen.blake3 == blake3)
      known = r->second.seen.identity;
  }
  base::FileIdentity now;
  FileHandle f;
  if (known.exists && (now = base::identify_file(path)).holds_same_bytes(known)) {
    seen = known;
  } else {
    f = FileHandle::open(path, FileHandle::Access::Read);
    std::int64_t read_at = base::file_clock_ns();
    now = f.identity();
    std::vector<std::uint8_t> there;
    if (!f || !now.exists || !(released || now.mtime_ns < dir.taken_ns) || now.size != bytes.size() ||
        !f.read_all(there, now.size) || there != bytes)
      return false;
    if (now.settled(read_at))
      seen = now;
  }
  // Its time is its last use, to the prune; within a minute is close
  // enough (a JIT's hits would otherwise write it at each load). Setting
  // it changes the identity: the next reuse compares the bytes again.
  if (now.used_lately(base::file_clock_ns()))
    return true;
  seen = {};
  if (!f)
    f = FileHandle::open(path, FileHandle::Access::Read);
  return f && f.touch();
}

void unmapped(const std::string &path) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto m = copies().mapped.find(path);
  Copies::Released &r = copies().released[path];
  r.process = host::process_id();
  r.seen = m != copies().mapped.end() ? m->second : Seen{};
  if (m != copies().mapped.end())
    copies().mapped.erase(m);
}

} // namespace hotlink::loader::store
