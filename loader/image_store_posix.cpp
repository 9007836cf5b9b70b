#include "loader/image_store.h"

#include "base/eviction.h"

#include "base/files.h"
#include "image/image.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace hotlink::loader::store {

namespace {

constexpr const char *kPrefix = "hotlink-load-";
// The store is walked at a process's first use only when no process has
// pruned it for this long (as the artifact cache does): the walk stats
// every image, and a store near its bound holds ~100,000 small images.
constexpr std::time_t kPruneInterval = 3600;
constexpr const char *kPruneStamp = "/.pruned"; // its mtime: the last prune

std::mutex g_mu; // everything below
std::set<std::string> g_mapped;                       // this process's mapped copies
// Copies this process mapped and has unmapped since, by the process that
// did (a forked child inherits the parent's, and may not reuse them: the
// parent may map them again, and forwarding writes into a mapped copy).
std::map<std::string, pid_t> g_released;
std::map<std::string, std::uint64_t> g_written_bytes; // per store, since its last prune

// --- Directories ---------------------------------------------------------------------

// This process's user, asked once (a load would otherwise ask at each copy).
uid_t my_uid() {
  static const uid_t uid = ::getuid();
  return uid;
}

bool make_dirs(const std::string &path, mode_t mode) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) // the usual case: one system call
    return true;
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      std::string p = path.substr(0, i);
      if (::mkdir(p.c_str(), mode) != 0 && errno != EEXIST)
        return false;
    }
  return true;
}

// A process's directory is owned by its .lock, which its owner holds for
// its life (base::own_file). Takes `dir`'s .lock, making it where an owner
// died before it made one: the descriptor, held while the caller removes
// what it owned; -1 when a live owner holds it. An owner that made the
// directory a moment before finds its .lock taken or gone, and makes
// another (make_process_dir, lock_slot).
int take_lock(const std::string &dir) {
  std::string lock = dir + "/.lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0 && base::own_file(fd, lock))
    return fd;
  if (fd >= 0)
    ::close(fd);
  return -1;
}

// make_dirs once per directory and process (a reload would otherwise make
// a system call for each component of the store's path).
bool made_once(const std::string &path) {
  static std::mutex mu;
  static std::set<std::string> made;
  std::lock_guard<std::mutex> lock(mu);
  if (made.count(path))
    return true;
  if (!make_dirs(path, 0700))
    return false;
  made.insert(path);
  return true;
}

// The process directories in `base` that are not `mine`, ours, real directories.
std::vector<std::pair<std::string, struct stat>> process_dirs(const std::string &base, const std::string &mine) {
  std::vector<std::pair<std::string, struct stat>> out;
  DIR *d = ::opendir(base.c_str());
  if (!d)
    return out;
  while (struct dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    std::string dir = base + "/" + n;
    struct stat st;
    if (n.rfind(kPrefix, 0) != 0 || dir == mine || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != my_uid())
      continue;
    out.push_back({dir, st});
  }
  ::closedir(d);
  return out;
}

// A process's directory in `base` (mkdtemp: mode 0700), with its .lock held.
std::string make_process_dir(const std::string &base, std::string &error) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string templ = base + "/" + kPrefix + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) {
      error = "cannot create a directory in " + base + ": " + std::strerror(errno);
      return {};
    }
    std::string path = buf.data(), lock = path + "/.lock";
    int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0 && base::own_file(fd, lock))
      return path; // held (the fd stays open) for the process's life
    if (fd >= 0)
      ::close(fd);
    // Another process's sweep took the new directory before its .lock was held.
  }
  error = "cannot hold a directory in " + base + ": other processes keep removing them";
  return {};
}

// The store's directories are slots, STORE/hotlink-load-N (N = 0, 1, ...):
// a process owns the first whose .lock nobody holds, and keeps that lock
// for its life. A slot outlives its owners, so a process's start opens and
// locks a file instead of making a directory and a file, the costliest
// system calls of a load on a journaling file system; the store holds as
// many slots as processes ever used it at once.
constexpr int kMaxSlots = 4096;

// Takes slot `dir`: opens (making them if need be) the directory and its
// .lock, and locks it if nobody holds it. The lock's descriptor (kept open
// for the process's life), -1 when another process holds the slot or is
// making or removing it (`busy`), or -1 with `error` set when the store
// refuses the directory or the file.
int lock_slot(const std::string &dir, bool &busy, std::string &error) {
  std::string lock = dir + "/.lock";
  busy = false;
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == ENOENT) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      error = "cannot create " + dir + ": " + std::strerror(errno);
      return -1;
    }
    fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  }
  if (fd < 0) {
    // Removed by a prune between the two calls, or a stray file of a
    // slot's name: a slot further on.
    busy = errno == ENOENT || errno == ENOTDIR || errno == ELOOP;
    if (!busy)
      error = "cannot open " + lock + ": " + std::strerror(errno);
    return -1;
  }
  // A prune removes a dead slot's .lock while holding its lock: a lock
  // taken on a file that is no longer the slot's .lock owns nothing.
  if (!base::own_file(fd, lock)) {
    ::close(fd);
    busy = true;
    return -1;
  }
  return fd;
}

std::string adopt_slot(const std::string &store, std::string &error) {
  for (int n = 0; n < kMaxSlots; ++n) {
    std::string dir = store + "/" + kPrefix + std::to_string(n);
    bool busy = false;
    if (lock_slot(dir, busy, error) >= 0)
      return dir;
    if (!busy)
      return {};
    // Held by a live process, or made or removed at this moment by
    // another: a slot further on.
  }
  error = "all " + std::to_string(kMaxSlots) + " of its directories are held by processes";
  return {};
}

// Removes the slot `dir` when its owner is gone and nothing but its .lock
// is left in it. The .lock goes under its lock, so that no process takes
// the slot meanwhile (one that opened it before owns nothing: lock_slot).
void remove_if_abandoned(const std::string &dir) {
  if (::rmdir(dir.c_str()) == 0)
    return;
  int fd = take_lock(dir);
  if (fd < 0)
    return;
  ::unlink((dir + "/.lock").c_str());
  ::rmdir(dir.c_str()); // only when no image is left in it; else it stays, and its next owner makes a .lock
  ::close(fd);
}

// The tmpfs directory removes itself at exit, with whatever copies are left
// (a mapping outlives its file); a forked child leaves its parent's alone.
struct TmpDirectory : CopyDirectory {
  pid_t owner = ::getpid();
  ~TmpDirectory() {
    if (!path.empty() && ::getpid() == owner)
      base::remove_tree(path);
  }
};

const CopyDirectory &tmp_directory() {
  static TmpDirectory dir = [] {
    TmpDirectory d;
    std::vector<std::string> bases;
    if (const char *e = std::getenv("HOTLINK_TMPDIR"); e && *e)
      bases.push_back(e);
    bases.push_back("/dev/shm");
    if (const char *t = std::getenv("TMPDIR"); t && *t)
      bases.push_back(t);
    bases.push_back("/tmp");
    for (const std::string &b : bases) {
      d.path = make_process_dir(b, d.error);
      if (d.path.empty())
        continue;
      for (const auto &[other, st] : process_dirs(b, d.path))
        if (int held = take_lock(other); held >= 0) { // its owner is gone
          base::remove_tree(other);
          ::close(held);
        }
      break;
    }
    return d;
  }();
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
  if (!s.empty())
    return s;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x == '/')
    return std::string(x) + "/hotlink/images";
  if (const char *h = std::getenv("HOME"); h && *h == '/')
    return std::string(h) + "/.cache/hotlink/images";
  return {};
}

// Why the store cannot hold images the dynamic loader maps, or "".
std::string unusable(const std::string &store) {
  struct stat st;
  if (::lstat(store.c_str(), &st) != 0) { // the usual case: one system call for a store that is there
    if (!make_dirs(store, 0700))
      return std::string("cannot create it: ") + std::strerror(errno);
    if (::lstat(store.c_str(), &st) != 0)
      return std::string("cannot read it: ") + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode))
    return "it is not a directory";
  if (st.st_uid != my_uid())
    return "it belongs to another user";
  if ((st.st_mode & 0777) != 0700 && ::chmod(store.c_str(), 0700) != 0)
    return "its mode is not 0700 and cannot be made so";
  struct statvfs vfs;
  if (::statvfs(store.c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
    return "it is on a file system mounted noexec, where nothing can be mapped to run";
  return {};
}

struct Image {
  std::uint64_t size = 0;
  std::int64_t mtime = 0;
  bool mapped = false;
  std::vector<std::string> names; // every name of one inode
};

void scan(const std::string &dir, std::map<std::pair<dev_t, ino_t>, Image> &images) {
  DIR *h = ::opendir(dir.c_str());
  if (!h)
    return;
  while (struct dirent *e = ::readdir(h)) {
    std::string p = dir + "/" + e->d_name;
    struct stat st;
    if (e->d_name[0] == '.' || ::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    Image &im = images[{st.st_dev, st.st_ino}];
    im.size = std::uint64_t(st.st_size);
    im.mtime = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    im.mapped = im.mapped || g_mapped.count(p);
    im.names.push_back(p);
  }
  ::closedir(h);
}

// Removes the oldest images while the store holds more than the bound, and
// every image older than the age bound; then the empty directories of
// processes that are gone. Never an image this process has mapped.
void prune_locked(const std::string &store, const std::string &mine, const LoadOptions &options) {
  std::map<std::pair<dev_t, ino_t>, Image> images;
  auto dirs = process_dirs(store, "");
  for (const auto &[dir, st] : dirs)
    scan(dir, images);
  if (DIR *h = ::opendir((store + "/.build-id").c_str())) {
    while (struct dirent *e = ::readdir(h))
      if (e->d_name[0] != '.')
        scan(store + "/.build-id/" + e->d_name, images);
    ::closedir(h);
  }
  std::vector<const Image *> all;
  std::vector<base::Resident> residents;
  for (const auto &[id, im] : images) {
    all.push_back(&im);
    residents.push_back({im.size, im.mtime, im.mapped}); // a mapped image is never removed
  }
  base::EvictionLimits limits{options.keep_max_bytes, 0, options.keep_max_age, /*tenth_free=*/false};
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
  base::evict_least_recent(residents, limits, now.count(), [&](std::size_t i) {
    for (const std::string &n : all[i]->names)
      ::unlink(n.c_str());
    return base::Evicted::Removed;
  });
  for (const auto &d : dirs)
    if (d.first != mine)
      remove_if_abandoned(d.first);
  int stamp = ::open((store + kPruneStamp).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (stamp >= 0) {
    ::futimens(stamp, nullptr);
    ::close(stamp);
  }
}

bool pruned_lately(const std::string &store) {
  struct stat st;
  return ::stat((store + kPruneStamp).c_str(), &st) == 0 && std::time(nullptr) - st.st_mtime < kPruneInterval;
}

// The store's process directory, made on first use of each store.
const CopyDirectory *store_directory(const std::string &store, const LoadOptions &options) {
  static std::map<std::string, std::unique_ptr<CopyDirectory>> made;
  std::lock_guard<std::mutex> lock(g_mu);
  auto &entry = made[store];
  if (!entry) {
    entry = std::make_unique<CopyDirectory>();
    std::string why = unusable(store);
    if (why.empty())
      entry->path = adopt_slot(store, why);
    if (entry->path.empty()) {
      std::fprintf(stderr,
                   "hotlink: warning: the post-mortem image store %s cannot be used (%s); loaded images are "
                   "removed when the process exits, so perf and gdb cannot name their functions afterwards "
                   "(set HOTLINK_KEEP_IMAGES to another directory, or to off)\n",
                   store.c_str(), why.c_str());
      entry->error = why;
      return nullptr;
    }
    struct timespec now;
    ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
    entry->taken_ns = now.tv_sec * 1000000000ll + now.tv_nsec;
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
          const std::string *build_id, bool written, const LoadOptions &options) {
  if (!dir.kept)
    return;
  if (!written) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_mapped.insert(path);
    return;
  }
  Expected<std::string> id = build_id ? Expected<std::string>(*build_id)
                                      : image::read_elf_build_id(bytes.data(), bytes.size(), path);
  if (id && id->size() > 2) {
    std::string sub = dir.store + "/.build-id/" + id->substr(0, 2);
    if (made_once(sub)) {
      std::string rest = sub + "/" + id->substr(2);
      for (const std::string &link : {rest + ".debug", rest}) {
        // A build-id names its bytes: a link that is there already, of the
        // same size, is an earlier copy of this image (a process's start
        // then skips two metadata writes of the file system's journal).
        struct stat st;
        if (::lstat(link.c_str(), &st) == 0 && S_ISREG(st.st_mode) && std::uint64_t(st.st_size) == bytes.size())
          continue;
        ::unlink(link.c_str());
        (void)::link(path.c_str(), link.c_str()); // the path alone still serves gdb and perf
      }
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_mapped.insert(path);
  std::uint64_t &since = g_written_bytes[dir.store];
  since += bytes.size();
  if (since > options.keep_max_bytes / 4) { // a quarter of the bound since the last look
    since = 0;
    prune_locked(dir.store, dir.path, options);
  }
}

bool reuse(const CopyDirectory &dir, const std::string &path, const std::vector<std::uint8_t> &bytes) {
  if (!dir.kept)
    return false;
  bool released = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_mapped.count(path))
      return false; // mapped now: a second dlopen of it would be the same library
    auto r = g_released.find(path);
    released = r != g_released.end() && r->second == ::getpid();
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  struct stat st;
  std::vector<std::uint8_t> there;
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == my_uid() && (st.st_mode & 0222) == 0 &&
              (released || st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec < dir.taken_ns) &&
              std::uint64_t(st.st_size) == bytes.size() && base::read_exact(fd, there, bytes.size()) &&
              there == bytes && ::futimens(fd, nullptr) == 0;
  ::close(fd);
  return same;
}

void unmapped(const std::string &path) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_mapped.erase(path);
  g_released[path] = ::getpid();
}

} // namespace hotlink::loader::store
