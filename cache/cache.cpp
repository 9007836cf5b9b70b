#include "cache/cache.h"
#include "cache/manifest.h"

#include "base/clock.h"
#include "base/files.h"
#include "trust/blake3.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef HOTLINK_VERSION
#define HOTLINK_VERSION "unknown"
#endif

namespace hotlink::cache {

using namespace manifest;

namespace {

constexpr const char *kMarker = "hotlink-cache";
constexpr const char *kManifest = ".m", *kArtifact = ".a", *kLock = ".lock";

bool is_entry_file(const std::string &ext) {
  if (ext == kManifest || ext == kArtifact)
    return true;
  for (const Companion &c : kCompanions)
    if (ext == c.ext)
      return true;
  return false;
}
constexpr std::uint64_t kMaxManifestBytes = 16u << 20;
// A temporary younger than this may belong to a writer that has created it
// but not yet locked it; older and unlocked means its writer is gone.
constexpr std::chrono::seconds kTemporaryGrace{10};
constexpr std::chrono::seconds kAutoPruneInterval{3600};

std::string errno_text(int e) { return std::strerror(e); }

// An owned file descriptor.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd &operator=(Fd &&o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

// Reads exactly `size` bytes from the start of fd.
bool read_exact(int fd, std::vector<std::uint8_t> &out, std::uint64_t size) {
  out.resize(size);
  std::uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<std::uint64_t>(n);
  }
  return true;
}

// True when fd is still the file that `path` names (it was not unlinked or
// replaced after it was opened).
bool same_file(int fd, const std::string &path) {
  struct stat a, b;
  if (::fstat(fd, &a) != 0 || ::stat(path.c_str(), &b) != 0)
    return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// flock with a deadline (polling, so that a timeout is possible).
bool flock_until(int fd, int op, std::chrono::steady_clock::time_point deadline) {
  auto nap = std::chrono::microseconds(200);
  for (;;) {
    if (::flock(fd, op | LOCK_NB) == 0)
      return true;
    if (errno != EWOULDBLOCK && errno != EINTR)
      return false;
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(20));
  }
}


// Counters persisted as little arrays of uint64 under flock. New counters
// go at the end: a shorter file from an older version reads as zeros.
enum StatIndex {
  kHits, kMisses, kCorrupt, kEvictions, kStores, kStoreErrors, kLockTimeouts,
  kSavedUs, // microseconds of build time that hits avoided
  kRefused, kRemoteHits, kRemoteMisses, kRemoteErrors, kRemoteRefused, kRemoteSkipped,
  kPublished, kPublishErrors, kRemoteLeaseWaits,
  kStatCount
};

// Reads the counters; a file shorter than ours (an older version's) is
// padded with zeros, anything else that is not whole counters is zeros.
void read_counters(int fd, std::uint64_t (&v)[kStatCount]) {
  std::fill(std::begin(v), std::end(v), 0);
  ssize_t n = ::pread(fd, v, sizeof v, 0);
  if (n < 0 || n % 8 != 0)
    std::fill(std::begin(v), std::end(v), 0);
}

} // namespace

// ---------------------------------------------------------------------------
// The cache.

struct Cache::Impl {
  Config cfg;
  std::vector<signature::PublicKey> trust; // trusted_keys + sign_key's public half
  std::unique_ptr<RemoteStore> remote;
  Fd usage_fd, stats_fd;
  mutable std::mutex mu;
  // flock excludes other processes, not other threads sharing the fd.
  mutable std::mutex file_mu;
  std::uint64_t delta[kStatCount] = {};

  std::string shard(const Key &k) const { return cfg.dir + "/" + k.hex().substr(0, 2); }
  std::string file(const Key &k, const char *ext) const {
    return shard(k) + "/" + k.hex() + ext;
  }
  std::chrono::steady_clock::time_point deadline() const {
    return std::chrono::steady_clock::now() + cfg.lock_timeout;
  }
  void count(StatIndex i, std::uint64_t n = 1) {
    std::lock_guard<std::mutex> lock(mu);
    delta[i] += n;
  }
  void count_hit(const Entry &e) {
    count(kHits);
    count(kSavedUs, static_cast<std::uint64_t>(e.manifest.build_ms * 1000));
  }

  // Adds to (or, with `set`, replaces) the usage counters; returns them.
  std::pair<std::uint64_t, std::uint64_t> usage(std::int64_t dbytes, std::int64_t dentries,
                                                bool set = false) const {
    std::uint64_t v[2] = {0, 0};
    std::lock_guard<std::mutex> guard(file_mu);
    int fd = usage_fd.get();
    if (::flock(fd, LOCK_EX) != 0)
      return {0, 0};
    if (::pread(fd, v, sizeof v, 0) != static_cast<ssize_t>(sizeof v))
      v[0] = v[1] = 0;
    if (set) {
      v[0] = static_cast<std::uint64_t>(dbytes);
      v[1] = static_cast<std::uint64_t>(dentries);
    } else {
      auto add = [](std::uint64_t a, std::int64_t d) {
        return d < 0 && static_cast<std::uint64_t>(-d) > a ? 0 : a + d;
      };
      v[0] = add(v[0], dbytes);
      v[1] = add(v[1], dentries);
    }
    if (dbytes != 0 || dentries != 0 || set)
      (void)!::pwrite(fd, v, sizeof v, 0);
    ::flock(fd, LOCK_UN);
    return {v[0], v[1]};
  }

  std::optional<Error> flush() {
    std::uint64_t d[kStatCount];
    {
      std::lock_guard<std::mutex> lock(mu);
      std::copy(std::begin(delta), std::end(delta), d);
      std::fill(std::begin(delta), std::end(delta), 0);
    }
    if (std::all_of(std::begin(d), std::end(d), [](std::uint64_t x) { return x == 0; }))
      return std::nullopt;
    std::lock_guard<std::mutex> guard(file_mu);
    int fd = stats_fd.get();
    if (::flock(fd, LOCK_EX) != 0)
      return make_error(ErrorCode::CacheError, "cannot lock the stats file: " + errno_text(errno),
                        cfg.dir + "/stats");
    std::uint64_t v[kStatCount];
    read_counters(fd, v);
    for (int i = 0; i < kStatCount; ++i)
      v[i] += d[i];
    bool ok = ::pwrite(fd, v, sizeof v, 0) == static_cast<ssize_t>(sizeof v);
    ::flock(fd, LOCK_UN);
    if (!ok)
      return make_error(ErrorCode::CacheError, "cannot write the stats file: " + errno_text(errno),
                        cfg.dir + "/stats");
    return std::nullopt;
  }

  // Opens and locks `path` (created 0600), confirming after the lock that
  // the path still names the locked file (a pruner may have removed it).
  bool lock_file(const std::string &path, std::chrono::steady_clock::time_point deadline,
                 Fd &out, bool nonblocking = false) const {
    for (;;) {
      Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
      if (!fd)
        return false;
      bool got = nonblocking ? ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0
                             : flock_until(fd.get(), LOCK_EX, deadline);
      if (!got)
        return false;
      if (same_file(fd.get(), path)) {
        out = std::move(fd);
        return true;
      }
    }
  }

  std::optional<Error> ensure_shard(const Key &k) const {
    std::string s = shard(k);
    if (::mkdir(s.c_str(), 0700) != 0 && errno != EEXIST)
      return make_error(ErrorCode::CacheError, "cannot create a shard directory: " + errno_text(errno),
                        s, {}, "check the cache directory's permissions and free space");
    return std::nullopt;
  }

  // Writes `bytes` to path atomically: a locked temporary, then rename.
  std::optional<Error> write_atomic(const std::string &path, const void *data,
                                    std::size_t size) const {
    base::AtomicWrite how;
    how.lock = true; // marks the temporary as owned by a live writer
    auto failed = base::write_file_atomically(path, data, size, how);
    if (!failed)
      return std::nullopt;
    return make_error(ErrorCode::CacheError, failed->to_string(), failed->path, {},
                      failed->errnum == ENOSPC ? "the cache's file system is full: free space or "
                                                 "lower the cache's max_bytes"
                                               : "check the cache directory's permissions and free space");
  }

  enum class Removal { Removed, InUse, Gone };

  // Removes an entry. Holding the key's lock (taken here unless the caller
  // holds it) keeps builders of the key out; the manifest's exclusive lock
  // waits for (or, without `wait`, gives way to) readers. The manifest goes
  // first, so that an interrupted removal leaves only invisible files,
  // which prune() collects.
  Removal remove_entry(const Key &k, bool wait, std::uint64_t *freed = nullptr,
                       bool key_locked = false) const {
    std::string m = file(k, kManifest);
    Fd fd(::open(m.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
      return Removal::Gone;
    return remove_locked(k, fd, wait, freed, key_locked);
  }

  Removal remove_locked(const Key &k, Fd &fd, bool wait, std::uint64_t *freed = nullptr,
                        bool key_locked = false) const {
    std::string m = file(k, kManifest);
    Fd key_lock;
    if (!key_locked && !lock_file(file(k, kLock), deadline(), key_lock, /*nonblocking=*/!wait))
      return Removal::InUse; // a builder is replacing it
    bool got = wait ? flock_until(fd.get(), LOCK_EX, deadline())
                    : ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0;
    if (!got)
      return Removal::InUse;
    if (!same_file(fd.get(), m))
      return Removal::Gone;
    std::uint64_t size = 0;
    struct stat st;
    if (::fstat(fd.get(), &st) == 0)
      size += static_cast<std::uint64_t>(st.st_size);
    if (::unlink(m.c_str()) != 0)
      return Removal::InUse; // e.g. a read-only directory: still there
    std::vector<const char *> files = {kArtifact};
    for (const Companion &c : kCompanions)
      files.push_back(c.ext);
    for (const char *ext : files) {
      std::string p = file(k, ext);
      if (::stat(p.c_str(), &st) == 0)
        size += static_cast<std::uint64_t>(st.st_size);
      ::unlink(p.c_str());
    }
    usage(-static_cast<std::int64_t>(size), -1);
    if (freed)
      *freed = size;
    return Removal::Removed;
  }

  // The manifest file's text: the sealed JSON, signed with sign_key.
  std::string manifest_text(const Manifest &m) const {
    std::string json = encode_manifest(m);
    std::string text = signature::seal(json);
    if (cfg.sign_key)
      text += cfg.sign_key->sign_line(json) + "\n";
    return text;
  }

  // Checks a manifest's signature against the trust set; sets the signer.
  // Returns why it is refused, or empty.
  std::string check_signed(const std::string &text, Manifest &m, const std::string &name) const {
    auto c = signature::check_statement(text, trust, name);
    if (!c)
      return c.error().message + (c.error().symbol.empty() ? "" : " (" + c.error().symbol + ")");
    m.signer = c->signer.hex();
    return {};
  }

  // Reads the files of the entry whose manifest `fd` holds (locked shared).
  // `refused`: the reason is its signature (not damage).
  std::string read_entry(const Key &k, int fd, Entry &e, bool *refused = nullptr) const {
    struct stat st;
    if (::fstat(fd, &st) != 0)
      return "cannot stat the manifest";
    if (static_cast<std::uint64_t>(st.st_size) > kMaxManifestBytes)
      return "manifest is implausibly large";
    std::vector<std::uint8_t> mbytes;
    if (!read_exact(fd, mbytes, static_cast<std::uint64_t>(st.st_size)))
      return "cannot read the manifest";
    e.statement.assign(mbytes.begin(), mbytes.end());
    std::string why = decode_manifest(e.statement, e.manifest);
    if (!why.empty())
      return why;
    if (e.manifest.key != k.hex())
      return "manifest belongs to another key";
    if (cfg.require_signed) {
      why = check_signed(e.statement, e.manifest, "manifest");
      if (!why.empty()) {
        if (refused)
          *refused = true;
        return "its signature is refused: " + why;
      }
    }
    auto read_checked = [&](const char *ext, std::uint64_t size, const std::string &hash,
                            std::vector<std::uint8_t> &out) -> std::string {
      std::string p = file(k, ext);
      Fd f(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
      if (!f)
        return std::string(ext + 1) + " file is missing";
      struct stat fs;
      if (::fstat(f.get(), &fs) != 0 || static_cast<std::uint64_t>(fs.st_size) != size)
        return std::string(ext + 1) + " file has the wrong size (" +
               std::to_string(fs.st_size) + " bytes, manifest says " + std::to_string(size) + ")";
      if (!read_exact(f.get(), out, size))
        return std::string("cannot read the ") + (ext + 1) + " file";
      if (trust::blake3_hex(out.data(), out.size()) != hash)
        return std::string(ext + 1) + " file's BLAKE3 does not match the manifest";
      return {};
    };
    why = read_checked(kArtifact, e.manifest.size, e.manifest.blake3, e.artifact.bytes);
    if (!why.empty())
      return why;
    for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
      const Companion &c = kCompanions[i];
      if ((e.manifest.*c.blake3).empty())
        continue;
      std::vector<std::uint8_t> bytes;
      why = read_checked(c.ext, e.manifest.*c.size, e.manifest.*c.blake3, bytes);
      if (!why.empty())
        return why;
      set_companion(e.artifact, i, std::move(bytes));
    }
    e.artifact.name = e.manifest.name;
    e.artifact.target = e.manifest.target;
    e.artifact.exports = e.manifest.exports;
    e.artifact_path = file(k, kArtifact);
    return {};
  }

  // A lookup that does not count; `touch` records the use. `key_locked`:
  // the caller holds the key's lock (so a corrupt entry can be removed).
  Lookup find(const Key &k, bool touch, bool key_locked = false) {
    Lookup out;
    std::string m = file(k, kManifest);
    for (int attempt = 0; attempt < 4; ++attempt) {
      Fd fd(::open(m.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd)
        return out; // no entry
      if (::flock(fd.get(), LOCK_SH) != 0)
        return out;
      if (!same_file(fd.get(), m))
        continue; // removed or replaced while we waited: look again
      Entry e;
      bool refused = false;
      std::string why = read_entry(k, fd.get(), e, &refused);
      if (why.empty()) {
        if (touch) {
          struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
          ::futimens(fd.get(), times);
        }
        out.entry = std::move(e);
        return out;
      }
      out.corrupt = why;
      if (remove_locked(k, fd, /*wait=*/false, nullptr, key_locked) == Removal::Removed)
        count(refused ? kRefused : kCorrupt);
      return out;
    }
    return out;
  }

  struct Scanned {
    std::string key;
    bool manifest = false;
    std::uint64_t bytes = 0; // manifest + artifact + companions
    std::int64_t last_use_ns = 0;
    std::vector<std::string> orphans; // companions without a manifest
    bool lock = false;
  };

  // Every key's files, and the temporaries (full paths) older than the grace.
  std::vector<Scanned> scan(std::vector<std::string> &old_temporaries) const {
    std::map<std::string, Scanned> keys;
    auto now = std::chrono::system_clock::now();
    DIR *top = ::opendir(cfg.dir.c_str());
    if (!top)
      return {};
    std::vector<std::string> shards;
    while (dirent *d = ::readdir(top)) {
      std::string n = d->d_name;
      if (n.size() == 2 && std::isxdigit(static_cast<unsigned char>(n[0])) &&
          std::isxdigit(static_cast<unsigned char>(n[1])))
        shards.push_back(n);
    }
    ::closedir(top);
    for (const std::string &s : shards) {
      std::string sdir = cfg.dir + "/" + s;
      DIR *dd = ::opendir(sdir.c_str());
      if (!dd)
        continue;
      while (dirent *d = ::readdir(dd)) {
        std::string n = d->d_name;
        if (n.size() < 66 || n[64] != '.' || !manifest::is_hex_key(n.substr(0, 64)))
          continue; // not the cache's: never touched
        std::string path = sdir + "/" + n, ext = n.substr(64);
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
          continue;
        if (ext.find(".tmp-") != std::string::npos) {
          auto mtime = std::chrono::system_clock::time_point(
              std::chrono::seconds(st.st_mtim.tv_sec));
          if (now - mtime > kTemporaryGrace)
            old_temporaries.push_back(path);
          continue;
        }
        Scanned &k = keys[n.substr(0, 64)];
        k.key = n.substr(0, 64);
        if (ext == kLock) {
          k.lock = true;
        } else if (is_entry_file(ext)) {
          k.bytes += static_cast<std::uint64_t>(st.st_size);
          if (ext == kManifest) {
            k.manifest = true;
            k.last_use_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                            st.st_mtim.tv_nsec;
          } else {
            k.orphans.push_back(path);
          }
        }
      }
      ::closedir(dd);
    }
    std::vector<Scanned> out;
    for (auto &[_, v] : keys)
      out.push_back(std::move(v));
    return out;
  }

  // Stores `a` with its manifest `m` under the key's lock, which the caller
  // holds (so its shard exists). Sets `over` when a limit is now exceeded
  // (the caller prunes, unlocked).
  std::optional<Error> store_locked(const Key &key, const Artifact &a, const std::string &text,
                                    bool &over) {
    auto fail = [&](Error e) {
      ::unlink(file(key, kArtifact).c_str());
      for (const Companion &c : kCompanions)
        ::unlink(file(key, c.ext).c_str());
      count(kStoreErrors);
      return std::optional<Error>(std::move(e));
    };
    const Limits &lim = cfg.limits;
    std::uint64_t payload = a.bytes.size();
    for (std::size_t i = 0; i < std::size(kCompanions); ++i)
      payload += companion_bytes(a, i).second;
    if (lim.max_bytes && payload > lim.max_bytes) {
      count(kStoreErrors);
      return make_error(ErrorCode::CacheError,
                        "the artifact (" + std::to_string(payload) +
                            " bytes with its companions) is larger than the cache's max_bytes (" +
                            std::to_string(lim.max_bytes) + ")",
                        a.name, {}, "raise the cache's max_bytes (--max-bytes)");
    }
    // Replacing: the old entry goes first (waiting for its readers).
    if (remove_entry(key, /*wait=*/true, nullptr, /*key_locked=*/true) == Removal::InUse) {
      count(kStoreErrors);
      return make_error(ErrorCode::CacheError,
                        "the old entry stayed in use past the lock timeout", file(key, kManifest));
    }
    for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
      auto [data, size] = companion_bytes(a, i);
      if (size)
        if (auto err = write_atomic(file(key, kCompanions[i].ext), data, size))
          return fail(*err);
    }
    if (auto err = write_atomic(file(key, kArtifact), a.bytes.data(), a.bytes.size()))
      return fail(*err);
    // The manifest is committed last.
    if (auto err = write_atomic(file(key, kManifest), text.data(), text.size()))
      return fail(*err);
    count(kStores);
    auto [bytes, entries] = usage(static_cast<std::int64_t>(payload + text.size()), 1);
    (void)flush();
    over = (lim.max_bytes && bytes > lim.max_bytes) ||
           (lim.max_entries && entries > lim.max_entries);
    return std::nullopt;
  }

  // Asks the remote for `k`. True with an entry whose manifest a trusted
  // key signed and whose files match it; every other outcome is counted
  // and, when it is a failure or a refusal, explained in `warnings`.
  bool fetch_remote(const Key &k, Entry &out, std::vector<std::string> &warnings) {
    if (!remote)
      return false;
    RemoteStore::Got g = remote->get_manifest(k.hex());
    // A miss by a host that will publish: take the key's build lease, or
    // wait for the host that holds it.
    if (g.status == RemoteStore::Status::Miss && cfg.sign_key) {
      RemoteStore::Got lease = remote->take_lease(k.hex());
      if (lease.status == RemoteStore::Status::Hit) {
        // Published between our read and the lease (whose holder had just
        // released it): use that rather than link it again.
        RemoteStore::Got again = remote->get_manifest(k.hex());
        if (again.status == RemoteStore::Status::Hit) {
          remote->release_lease(k.hex());
          g = std::move(again);
        }
      } else if (lease.status == RemoteStore::Status::Miss) {
        g = remote->wait_for_manifest(k.hex());
        if (g.status == RemoteStore::Status::Hit)
          count(kRemoteLeaseWaits);
      } else if (lease.status == RemoteStore::Status::Error) {
        g = lease;
      }
    }
    switch (g.status) {
    case RemoteStore::Status::Skipped:
      count(kRemoteSkipped);
      return false;
    case RemoteStore::Status::Error:
      count(kRemoteErrors);
      warnings.push_back("remote cache " + g.error + "; built here instead");
      return false;
    case RemoteStore::Status::Miss:
      count(kRemoteMisses);
      return false;
    case RemoteStore::Status::Hit:
      break;
    }
    auto refuse = [&](const std::string &why) {
      count(kRemoteRefused);
      warnings.push_back("remote cache entry " + k.hex() + " from " + remote->url().display +
                         " refused: " + why + "; built here instead");
      return false;
    };
    Entry e;
    e.statement = std::move(g.blobs.manifest);
    std::string why = decode_manifest(e.statement, e.manifest);
    if (!why.empty())
      return refuse(why);
    why = check_signed(e.statement, e.manifest, "remote manifest");
    if (!why.empty())
      return refuse(why);
    if (e.manifest.key != k.hex())
      return refuse("its manifest belongs to another key");
    const Manifest &m = e.manifest;
    std::uint64_t total = m.size;
    std::vector<std::pair<std::string, std::uint64_t>> parts;
    for (const Companion &c : kCompanions) {
      std::uint64_t size = (m.*c.blake3).empty() ? 0 : m.*c.size;
      parts.emplace_back(c.remote_part, size);
      total += size;
    }
    if (total > remote->config().max_entry_bytes)
      return refuse("it is " + std::to_string(total) + " bytes, over the limit of " +
                    std::to_string(remote->config().max_entry_bytes));
    RemoteStore::Got files = remote->get_files(k.hex(), m.size, parts);
    if (files.status == RemoteStore::Status::Error) {
      count(kRemoteErrors);
      warnings.push_back("remote cache " + files.error + "; built here instead");
      return false;
    }
    if (files.status == RemoteStore::Status::Skipped) {
      count(kRemoteSkipped);
      return false;
    }
    if (files.status == RemoteStore::Status::Miss)
      return refuse("it is incomplete (" + files.error + ")");
    RemoteStore::Blobs &b = files.blobs;
    if (trust::blake3_hex(b.artifact.data(), b.artifact.size()) != m.blake3)
      return refuse("its artifact does not match the BLAKE3 its manifest signs");
    for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
      const Companion &c = kCompanions[i];
      std::vector<std::uint8_t> &got = b.companions[i].second;
      if (parts[i].second && trust::blake3_hex(got.data(), got.size()) != m.*c.blake3)
        return refuse(std::string("its ") + c.what + " does not match the BLAKE3 its manifest signs");
      set_companion(e.artifact, i, std::move(got));
    }
    e.artifact.bytes = std::move(b.artifact);
    e.artifact.name = m.name;
    e.artifact.target = m.target;
    e.artifact.exports = m.exports;
    e.artifact.linker_version = m.linker_version;
    e.artifact.build_ms = m.build_ms;
    count(kRemoteHits);
    count(kSavedUs, static_cast<std::uint64_t>(m.build_ms * 1000));
    out = std::move(e);
    return true;
  }

  // Write-back: only signed entries are published (an unsigned one would
  // be refused by every consumer).
  void publish(const Key &k, const Artifact &a, const std::string &text) {
    if (!remote || !cfg.sign_key)
      return;
    RemoteStore::Blobs b;
    b.manifest = text;
    b.artifact = a.bytes;
    for (std::size_t i = 0; i < std::size(kCompanions); ++i) {
      auto [data, size] = companion_bytes(a, i);
      b.companions.emplace_back(kCompanions[i].remote_part, std::vector<std::uint8_t>(data, data + size));
    }
    remote->publish(k.hex(), std::move(b));
  }

  // Removes temporaries whose writer is gone (their flock is free), and the
  // files of keys that have no manifest and no builder.
  void clean(std::vector<Scanned> &keys, const std::vector<std::string> &temporaries,
             PruneReport &r) const {
    for (const std::string &t : temporaries) {
      Fd fd(::open(t.c_str(), O_RDONLY | O_CLOEXEC));
      if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0 && ::unlink(t.c_str()) == 0)
        ++r.temporaries_removed;
    }
    for (Scanned &s : keys) {
      if (s.manifest)
        continue;
      Key k = Key::parse(s.key).value();
      Fd lock;
      if (!lock_file(file(k, kLock), {}, lock, /*nonblocking=*/true))
        continue; // a builder is writing this entry now
      if (::access(file(k, kManifest).c_str(), F_OK) == 0)
        continue;
      for (const std::string &p : s.orphans)
        if (::unlink(p.c_str()) == 0)
          ++r.orphans_removed;
      ::unlink(file(k, kLock).c_str()); // unlinked while held: waiters re-open
    }
  }
};

Cache::Cache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Cache::~Cache() {
  impl_->remote.reset(); // drains the publish queue, which counts
  (void)impl_->flush();
}

const Config &Cache::config() const { return impl_->cfg; }
const std::vector<signature::PublicKey> &Cache::trust() const { return impl_->trust; }

Expected<std::shared_ptr<Cache>> Cache::open(Config config) {
  if (config.dir.empty())
    return make_error(ErrorCode::BadRequest, "no cache directory given", {}, "--cache",
                      "name a directory for the cache");
  llvm::SmallString<256> abs(config.dir);
  llvm::sys::fs::make_absolute(abs);
  while (abs.size() > 1 && abs.back() == '/')
    abs.pop_back();
  config.dir = abs.str().str();
  const std::string &dir = config.dir;
  auto unsafe = [&](const std::string &why) {
    return make_error(ErrorCode::CacheUnsafe, why, dir, {},
                      "a cache another user can write to lets them choose the code this "
                      "process loads; use a directory only you can write to (chmod 700 " +
                          dir + ")");
  };

  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return make_error(ErrorCode::CacheError, "cannot stat: " + errno_text(errno), dir);
    if (!config.create)
      return make_error(ErrorCode::InputNotFound, "no cache directory here", dir, {},
                        "check the path; a cache is made by the first link that uses it "
                        "(hotlink link --cache DIR)");
    llvm::SmallString<256> parent(dir);
    llvm::sys::path::remove_filename(parent);
    if (!parent.empty())
      if (auto ec = llvm::sys::fs::create_directories(parent))
        return make_error(ErrorCode::CacheError,
                          "cannot create the parent directory: " + ec.message(), dir, {},
                          "choose a directory you can create");
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return make_error(ErrorCode::CacheError, "cannot create: " + errno_text(errno), dir, {},
                        "choose a directory you can create");
    if (::stat(dir.c_str(), &st) != 0)
      return make_error(ErrorCode::CacheError, "cannot stat: " + errno_text(errno), dir);
  }
  if (!S_ISDIR(st.st_mode))
    return make_error(ErrorCode::CacheError, "is not a directory", dir, {},
                      "name a directory for the cache");
  if (st.st_uid != ::geteuid())
    return unsafe("the cache directory belongs to another user (uid " +
                  std::to_string(st.st_uid) + ")");
  if (st.st_mode & 022) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return unsafe(std::string("the cache directory is writable by ") +
                  ((st.st_mode & 020) && (st.st_mode & 002) ? "its group and by others"
                   : (st.st_mode & 020)                     ? "its group"
                                                            : "others") +
                  " (mode " + mode + ")");
  }

  std::string marker = dir + "/" + kMarker;
  if (!config.create && ::access(marker.c_str(), F_OK) != 0)
    return make_error(ErrorCode::InputNotFound,
                      "is not a hotlink cache (it has no '" + std::string(kMarker) + "' file)", dir,
                      {}, "check the path; a cache is made by the first link that uses it "
                          "(hotlink link --cache DIR)");
  if (::access(marker.c_str(), F_OK) != 0) {
    DIR *d = ::opendir(dir.c_str());
    if (!d)
      return make_error(ErrorCode::CacheError, "cannot read: " + errno_text(errno), dir);
    bool empty = true;
    while (dirent *e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        empty = false;
    ::closedir(d);
    // hotlink creates the marker before any other file, so a directory that
    // has files has the marker unless it is not a cache: look again, since
    // another process may have made it one since the first look.
    if (!empty && ::access(marker.c_str(), F_OK) != 0)
      return make_error(ErrorCode::CacheError,
                        "is not empty and is not a hotlink cache (it has no '" +
                            std::string(kMarker) + "' file)",
                        dir, {},
                        "choose a new or empty directory: hotlink never prunes or clears "
                        "files it did not create");
    // Exactly one of the processes opening a new cache at once creates it.
    int fd = empty ? ::open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    if (fd < 0 && empty && errno != EEXIST)
      return make_error(ErrorCode::CacheError, "cannot create: " + errno_text(errno), marker, {},
                        "check the cache directory's permissions");
    if (fd >= 0) {
      std::string text = "hotlink cache, format " + std::to_string(kFormat) + "\n";
      bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!written)
        return make_error(ErrorCode::CacheError, "cannot write: " + errno_text(errno), marker);
      Impl writer;
      writer.cfg = config;
      std::string tag = "Signature: 8a477f597d28d172789f06886806bc55\n"
                        "# This directory is a hotlink cache; backup tools may skip it.\n";
      if (auto err = writer.write_atomic(dir + "/CACHEDIR.TAG", tag.data(), tag.size()))
        return *err;
    }
  }

  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->trust = config.trusted_keys;
  if (config.sign_key)
    impl->trust.push_back(config.sign_key->public_key());
  if (config.require_signed && !config.sign_key)
    return make_error(ErrorCode::BadRequest,
                      "requiring signed local entries needs a signing key: this process's own "
                      "links would be refused",
                      config.dir, "--sign-key", "pass --sign-key KEY (make one with hotlink keygen)");
  if (config.remote) {
    if (impl->trust.empty())
      return make_error(ErrorCode::BadRequest,
                        "a remote cache needs a key to trust: its entries are used only when "
                        "a trusted key signed them",
                        config.remote->url, "--trusted-key",
                        "pass the publisher's public key (--trusted-key KEY.pub) or a signing "
                        "key (--sign-key KEY) to publish and trust your own entries");
    auto r = RemoteStore::create(*config.remote);
    if (!r)
      return r.take_error();
    impl->remote = std::move(r.value());
    Impl *raw = impl.get();
    impl->remote->on_event([raw](RemoteStore::Event e, const std::string &) {
      switch (e) {
      case RemoteStore::Event::Published: raw->count(kPublished); break;
      case RemoteStore::Event::Skipped: raw->count(kRemoteSkipped); break;
      case RemoteStore::Event::PublishFailed:
      case RemoteStore::Event::Dropped: raw->count(kPublishErrors); break;
      }
    });
  }
  for (auto [name, fd] : {std::pair{"/usage", &impl->usage_fd},
                          std::pair{"/stats", &impl->stats_fd}}) {
    std::string p = impl->cfg.dir + name;
    *fd = Fd(::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!*fd)
      return make_error(ErrorCode::CacheError, "cannot open: " + errno_text(errno), p, {},
                        "check the cache directory's permissions (a read-only cache "
                        "cannot be used)");
  }
  std::shared_ptr<Cache> cache(new Cache(std::move(impl)));
  // Pruned at least hourly by whoever opens it: limits hold, and the
  // temporaries and partial entries of killed processes are collected,
  // even when no store ever exceeds a limit.
  struct stat ps;
  std::string plock = cache->config().dir + "/prune.lock";
  if (::stat(plock.c_str(), &ps) != 0 ||
      std::time(nullptr) - ps.st_mtim.tv_sec > kAutoPruneInterval.count())
    cache->prune();
  return cache;
}

Lookup Cache::lookup(const Key &key) {
  Impl &I = *impl_;
  Lookup l = I.find(key, /*touch=*/true);
  if (l.entry) {
    I.count_hit(*l.entry);
    return l;
  }
  I.count(kMisses);
  Entry e;
  if (!I.fetch_remote(key, e, l.warnings))
    return l;
  // Kept locally, under the key's lock like any store.
  bool over = false;
  Fd lock;
  if (I.ensure_shard(key) || !I.lock_file(I.file(key, kLock), I.deadline(), lock)) {
    l.warnings.push_back("the artifact from the remote cache was not stored locally: cannot "
                         "take the entry's lock");
  } else if (auto err = I.store_locked(key, e.artifact, e.statement, over)) {
    l.warnings.push_back("the artifact from the remote cache was not stored locally: " +
                         err->to_string());
  } else {
    e.artifact_path = I.file(key, kArtifact);
  }
  lock.reset();
  l.entry = std::move(e);
  l.remote = true;
  if (over)
    prune();
  return l;
}

std::optional<Error> Cache::store(const Key &key, const Artifact &artifact) {
  Impl &I = *impl_;
  if (auto err = I.ensure_shard(key)) {
    I.count(kStoreErrors);
    return err;
  }
  bool over = false;
  {
    Fd lock;
    errno = 0;
    if (!I.lock_file(I.file(key, kLock), I.deadline(), lock)) {
      I.count(kStoreErrors);
      return make_error(ErrorCode::CacheError,
                        "cannot take the entry's lock: " +
                            std::string(errno ? errno_text(errno) : "timed out"),
                        I.file(key, kLock), {}, "check the cache directory");
    }
    std::string text = I.manifest_text(make_manifest(key, artifact));
    if (auto err = I.store_locked(key, artifact, text, over))
      return err;
    I.publish(key, artifact, text);
  }
  if (over)
    prune();
  return std::nullopt;
}

Expected<Fetched> Cache::get_or_build(const Key &key, const Producer &produce) {
  Impl &I = *impl_;
  Fetched f;
  Lookup l = I.find(key, /*touch=*/true);
  auto hit = [&](Entry &e) -> Expected<Fetched> {
    I.count_hit(e);
    f.entry = std::move(e);
    f.hit = true;
    f.source = Fetched::Source::Local;
    return std::move(f);
  };
  if (l.entry)
    return hit(*l.entry);
  auto note_corrupt = [&](const Lookup &x) {
    if (!x.corrupt.empty())
      f.warnings.push_back("cache entry " + key.hex() + " was corrupt or refused (" + x.corrupt +
                           "): removed, and built again");
  };
  note_corrupt(l);

  // One builder per key: whoever holds the lock builds; the others wait,
  // then find the entry. A lock whose owner died is free (flock).
  Fd lock;
  bool locked = false;
  if (auto err = I.ensure_shard(key)) {
    f.warnings.push_back(err->to_string());
  } else {
    locked = I.lock_file(I.file(key, kLock), I.deadline(), lock);
    if (!locked) {
      I.count(kLockTimeouts);
      f.warnings.push_back("gave up waiting for another process building cache entry " +
                           key.hex() + "; built it here too (not stored)");
    }
  }
  if (locked) {
    Lookup again = I.find(key, /*touch=*/true, /*key_locked=*/true);
    if (again.entry)
      return hit(*again.entry);
    note_corrupt(again);
  }
  I.count(kMisses);
  bool over = false;
  Entry remote_entry;
  if (I.fetch_remote(key, remote_entry, f.warnings)) {
    if (locked) {
      if (auto err = I.store_locked(key, remote_entry.artifact, remote_entry.statement, over))
        f.warnings.push_back("the artifact from the remote cache was not stored locally: " +
                             err->to_string());
      else
        remote_entry.artifact_path = I.file(key, kArtifact);
    }
    f.entry = std::move(remote_entry);
    f.hit = true;
    f.source = Fetched::Source::Remote;
    lock.reset();
    if (over)
      prune();
    return f;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto produced = produce();
  if (!produced) {
    if (I.remote && I.cfg.sign_key)
      I.remote->release_lease(key.hex());
    return produced.take_error();
  }
  if (produced->build_ms == 0)
    produced->build_ms = base::ms_since(t0);
  f.entry.manifest = make_manifest(key, produced.value());
  f.entry.statement = I.manifest_text(f.entry.manifest);
  if (locked) {
    if (auto err = I.store_locked(key, produced.value(), f.entry.statement, over))
      f.warnings.push_back("the artifact was not stored in the cache: " + err->to_string());
    else
      f.entry.artifact_path = I.file(key, kArtifact);
  }
  I.publish(key, produced.value(), f.entry.statement);
  f.entry.artifact = std::move(produced.value());
  lock.reset();
  if (over)
    prune();
  return f;
}

PruneReport Cache::prune(const std::optional<Limits> &limits) {
  Impl &I = *impl_;
  Limits lim = limits ? *limits : I.cfg.limits;
  PruneReport r;
  Fd plock;
  if (!I.lock_file(I.cfg.dir + "/prune.lock", {}, plock, /*nonblocking=*/true)) {
    // Another process is pruning now; it will enforce the limits.
    auto [bytes, entries] = I.usage(0, 0);
    r.bytes = bytes;
    r.entries = entries;
    return r;
  }
  // Records when the directory was last pruned (open() prunes when that is
  // long ago, so that what killed processes left does not pile up).
  ::futimens(plock.get(), nullptr);
  std::vector<std::string> temporaries;
  std::vector<Impl::Scanned> keys = I.scan(temporaries);
  I.clean(keys, temporaries, r);

  std::vector<Impl::Scanned *> entries;
  std::uint64_t bytes = 0;
  for (Impl::Scanned &s : keys)
    if (s.manifest) {
      entries.push_back(&s);
      bytes += s.bytes;
    }
  std::sort(entries.begin(), entries.end(), [](const Impl::Scanned *a, const Impl::Scanned *b) {
    return a->last_use_ns < b->last_use_ns;
  });
  std::uint64_t count = entries.size();
  // Down to 90% of a limit that is exceeded, so that the next store does not
  // prune again at once.
  std::uint64_t goal_bytes = lim.max_bytes && bytes > lim.max_bytes
                                 ? lim.max_bytes - lim.max_bytes / 10
                                 : UINT64_MAX;
  std::uint64_t goal_entries = lim.max_entries && count > lim.max_entries
                                   ? lim.max_entries - lim.max_entries / 10
                                   : UINT64_MAX;
  std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  std::int64_t max_age_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(lim.max_age).count();
  for (Impl::Scanned *s : entries) {
    bool expired = max_age_ns > 0 && now_ns - s->last_use_ns > max_age_ns;
    if (!expired && bytes <= goal_bytes && count <= goal_entries)
      continue;
    Key k = Key::parse(s->key).value();
    std::uint64_t freed = 0;
    switch (I.remove_entry(k, /*wait=*/false, &freed)) {
    case Impl::Removal::Removed:
      ++r.evicted;
      r.evicted_bytes += freed;
      bytes -= std::min(bytes, s->bytes);
      --count;
      break;
    case Impl::Removal::InUse:
      ++r.skipped_in_use;
      break;
    case Impl::Removal::Gone:
      bytes -= std::min(bytes, s->bytes);
      --count;
      break;
    }
  }
  I.count(kEvictions, r.evicted);
  // The scan is the truth: the ledger is reset to it.
  I.usage(static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(count), /*set=*/true);
  (void)I.flush();
  r.bytes = bytes;
  r.entries = count;
  return r;
}

VerifyReport Cache::verify() {
  Impl &I = *impl_;
  VerifyReport r;
  std::vector<std::string> temporaries;
  for (Impl::Scanned &s : I.scan(temporaries)) {
    if (!s.manifest)
      continue;
    ++r.checked;
    Key k = Key::parse(s.key).value();
    Lookup l = I.find(k, /*touch=*/false);
    if (l.entry) {
      ++r.ok;
      r.bytes += s.bytes;
    } else if (!l.corrupt.empty()) {
      r.corrupt.emplace_back(s.key, l.corrupt);
    }
  }
  (void)I.flush();
  return r;
}

std::optional<Error> Cache::clear() {
  Impl &I = *impl_;
  std::vector<std::string> temporaries;
  std::vector<Impl::Scanned> keys = I.scan(temporaries);
  std::uint64_t left = 0;
  for (Impl::Scanned &s : keys)
    if (s.manifest &&
        I.remove_entry(Key::parse(s.key).value(), /*wait=*/true) == Impl::Removal::InUse)
      ++left;
  PruneReport r;
  I.clean(keys, temporaries, r);
  std::vector<std::string> unused;
  std::uint64_t bytes = 0, entries = 0;
  for (Impl::Scanned &s : I.scan(unused))
    if (s.manifest) {
      bytes += s.bytes;
      ++entries;
    }
  I.usage(static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(entries), /*set=*/true);
  if (left)
    return make_error(ErrorCode::CacheError,
                      std::to_string(left) + " entries stayed in use past the lock timeout",
                      I.cfg.dir, {}, "run clear again when no process reads the cache");
  return std::nullopt;
}

Stats Cache::stats() const {
  Impl &I = *impl_;
  Stats s;
  std::uint64_t v[kStatCount] = {};
  {
    std::lock_guard<std::mutex> guard(I.file_mu);
    int fd = I.stats_fd.get();
    if (::flock(fd, LOCK_SH) == 0) {
      read_counters(fd, v);
      ::flock(fd, LOCK_UN);
    }
  }
  {
    std::lock_guard<std::mutex> lock(I.mu);
    for (int i = 0; i < kStatCount; ++i)
      v[i] += I.delta[i];
  }
  s.hits = v[kHits];
  s.misses = v[kMisses];
  s.corrupt = v[kCorrupt];
  s.evictions = v[kEvictions];
  s.stores = v[kStores];
  s.store_errors = v[kStoreErrors];
  s.lock_timeouts = v[kLockTimeouts];
  s.saved_ms = static_cast<double>(v[kSavedUs]) / 1000.0;
  s.refused = v[kRefused];
  s.remote_hits = v[kRemoteHits];
  s.remote_misses = v[kRemoteMisses];
  s.remote_errors = v[kRemoteErrors];
  s.remote_refused = v[kRemoteRefused];
  s.remote_skipped = v[kRemoteSkipped];
  s.published = v[kPublished];
  s.publish_errors = v[kPublishErrors];
  s.remote_waits = v[kRemoteLeaseWaits];
  auto [bytes, entries] = I.usage(0, 0);
  s.bytes = bytes;
  s.entries = entries;
  return s;
}

std::optional<Error> Cache::flush_stats() { return impl_->flush(); }

} // namespace hotlink::cache
