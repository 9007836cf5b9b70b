// Internal. The cache's local store: its directory layout (256 shards of
// KEY.m manifests, KEY.a artifacts, companions and KEY.lock files), the
// locks, reading and writing entries, scanning and removing them; and the
// state the tiers (cache.cpp, remote_tier.cpp) and the statistics
// (stats.cpp) share. One Cache::Impl per open Cache.
#pragma once

#include "hotlink/cache.h"
#include "cache/manifest.h"

#include "base/clock.h"
#include "base/file_handle.h"
#include "base/files.h"
#include "hotlink/blake3.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace hotlink::cache {

using namespace manifest;

constexpr const char *kMarker = "hotlink-cache";
constexpr const char *kManifest = ".m", *kArtifact = ".a", *kLock = ".lock";

inline bool is_entry_file(const std::string &ext) {
  if (ext == kManifest || ext == kArtifact)
    return true;
  for (const Companion &c : kCompanions)
    if (ext == c.ext)
      return true;
  return false;
}
constexpr std::uint64_t kMaxManifestBytes = 16u << 20;
constexpr std::chrono::seconds kAutoPruneInterval{3600};
// Cache::Impl::known: entries, and the bytes of their files in all.
constexpr std::size_t kKnownEntries = 256;
constexpr std::uint64_t kKnownBytes = 16u << 20;

inline std::string errno_text(int e) { return std::strerror(e); }

// Files are opened and locked through the host layer (base/file_handle.h):
// flock on POSIX, LockFileEx on Windows.
using base::FileHandle;

// Counters persisted as little arrays of uint64 under the file's lock. New counters
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
inline void read_counters(const FileHandle &f, std::uint64_t (&v)[kStatCount]) {
  std::fill(std::begin(v), std::end(v), 0);
  long long n = f.read_at(v, sizeof v, 0);
  if (n < 0 || n % 8 != 0)
    std::fill(std::begin(v), std::end(v), 0);
}


struct HOTLINK_HIDDEN Cache::Impl {
  Config cfg;
  std::vector<signature::PublicKey> trust; // trusted_keys + sign_key's public half
  std::unique_ptr<RemoteStore> remote;
  mutable FileHandle usage_file, stats_file;
  mutable std::mutex mu;
  // The file lock excludes other processes, not other threads sharing the handle.
  mutable std::mutex file_mu;
  std::uint64_t delta[kStatCount] = {};

  // Opening (cache.cpp): the marker that makes the directory a cache, the
  // trust set and the remote tier, the counters' files.
  std::optional<Error> claim_directory();
  std::optional<Error> connect();
  std::optional<Error> open_counters();

  std::string shard(const Key &k) const;
  std::string file(const Key &k, const char *ext) const;
  std::chrono::steady_clock::time_point deadline() const;
  void count(StatIndex i, std::uint64_t n = 1);
  void count_hit(const Entry &e);

  // Adds to (or, with `set`, replaces) the usage counters; returns them.
  std::pair<std::uint64_t, std::uint64_t> usage(std::int64_t dbytes, std::int64_t dentries,
                                                bool set = false) const;

  std::optional<Error> flush();

  // Opens and locks `path` (created 0600), confirming after the lock that
  // the path still names the locked file (a pruner may have removed it).
  bool lock_file(const std::string &path, std::chrono::steady_clock::time_point deadline,
                 FileHandle &out, bool nonblocking = false) const;

  std::optional<Error> ensure_shard(const Key &k) const;

  // Writes `bytes` to path atomically: a locked temporary, then rename.
  std::optional<Error> write_atomic(const std::string &path, const void *data,
                                    std::size_t size) const;

  enum class Removal { Removed, InUse, Gone };

  // Removes an entry. Holding the key's lock (taken here unless the caller
  // holds it) keeps builders of the key out; the manifest's exclusive lock
  // waits for (or, without `wait`, gives way to) readers. The manifest goes
  // first, so that an interrupted removal leaves only invisible files,
  // which prune() collects.
  Removal remove_entry(const Key &k, bool wait, std::uint64_t *freed = nullptr,
                       bool key_locked = false) const;

  Removal remove_locked(const Key &k, FileHandle &fd, bool wait, std::uint64_t *freed = nullptr,
                        bool key_locked = false) const;

  // The manifest file's text: the sealed JSON, signed with sign_key.
  std::string manifest_text(const Manifest &m) const;

  // Checks a manifest's signature against the trust set; sets the signer.
  // Returns why it is refused, or empty.
  std::string check_signed(const std::string &text, Manifest &m, const std::string &name) const;

  // Reads the files of the entry whose manifest `fd` holds (locked shared;
  // `manifest_id` its identity). `refused`: the reason is its signature
  // (not damage). `files`, when given, gets the identity of each file read
  // (the manifest first, then the artifact and companions).
  std::string read_entry(const Key &k, const FileHandle &manifest, const base::FileIdentity &manifest_id, Entry &e,
                         bool *refused = nullptr, std::vector<base::FileIdentity> *files = nullptr) const;
  // The fields of a manifest read from `k`'s entry, checked (its key, and
  // its signature where one is required), or why not.
  std::string accept_manifest(const Key &k, const std::string &statement, Manifest &m, bool *refused) const;

  // Entries this Cache read lately, by key (kKnownEntries, their files up
  // to kKnownBytes in all; of an entry larger than a quarter of that, its
  // statement alone):
  // - the statement it accepted, with its fields: the same bytes decode to
  //   the same fields and pass the same trust set (fixed for the Cache), so
  //   a statement read again is not decoded and checked again;
  // - when its files were read and verified again (a process that reads
  //   an entry once keeps no copy of it) while their identities were
  //   settled (base::FileIdentity::holds_same_bytes), those identities and
  //   the entry: a lookup whose files show the same identities still (a
  //   stat each) is answered with it, not read and hashed again. A store,
  //   a prune, a removal, a tamper or a touch changes an identity; the
  //   entry is then read and verified as on a first lookup.
  struct Known {
    // With no files, its statement and manifest alone are set.
    Entry entry;
    std::vector<base::FileIdentity> files;
  };
  mutable std::mutex known_mu;
  mutable std::map<std::string, std::shared_ptr<const Known>> known;
  mutable std::uint64_t known_bytes = 0;
  // The known entry of `k`, when its files still hold what was read (and,
  // with `touch`, its last use is recent enough not to be set again).
  std::optional<Entry> known_entry(const Key &k, bool touch) const;
  void remember(const Key &k, std::shared_ptr<const Known> entry) const;

  // A lookup that does not count; `touch` records the use. `key_locked`:
  // the caller holds the key's lock (so a corrupt entry can be removed).
  Lookup find(const Key &k, bool touch, bool key_locked = false);

  struct Scanned {
    std::string key;
    bool manifest = false;
    std::uint64_t bytes = 0; // manifest + artifact + companions
    std::int64_t last_use_ns = 0;
    std::vector<std::string> orphans; // companions without a manifest
    bool lock = false;
  };

  // Every key's files, and the temporaries (full paths).
  std::vector<Scanned> scan(std::vector<std::string> &temporaries) const;

  // Stores `a` with its manifest `m` under the key's lock, which the caller
  // holds (so its shard exists). Sets `over` when a limit is now exceeded
  // (the caller prunes, unlocked).
  std::optional<Error> store_locked(const Key &key, const Artifact &a, const std::string &text,
                                    bool &over);

  // Asks the remote for `k`. True with an entry whose manifest a trusted
  // key signed and whose files match it; every other outcome is counted
  // and, when it is a failure or a refusal, explained in `warnings`.
  RemoteStore::Got remote_manifest(const Key &k);
  bool fetch_remote(const Key &k, Entry &out, std::vector<std::string> &warnings);

  // Write-back: only signed entries are published (an unsigned one would
  // be refused by every consumer).
  void publish(const Key &k, const Artifact &a, const std::string &text);

  // Removes temporaries whose writer is gone (base::remove_if_abandoned),
  // and the files of keys that have no manifest and no builder.
  void clean(std::vector<Scanned> &keys, const std::vector<std::string> &temporaries,
             PruneReport &r) const;
};

} // namespace hotlink::cache
