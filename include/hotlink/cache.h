// The host-side cache of linked artifacts: content-addressed, atomic, safe
// across processes, bounded, and verified on every read.
//
// Contract:
// - Keys are 64 lowercase hex digits (BLAKE3-256). LinkService derives them
//   from everything that reaches lld (hotlink/link_service.h); Key::of_caller()
//   turns a caller's own key (e.g. a hash of pipeline + target, before any
//   compilation) into one. No other string ever becomes a path.
// - An entry is its artifact, its companions (COFF .def, import library, PDB)
//   and a manifest, in one of 256 shard directories. Each file is written to
//   a temporary in the same directory and renamed; the manifest is renamed
//   last, and an entry without a valid manifest does not exist.
// - A read checks the manifest's own checksum, its key, and the size and
//   BLAKE3 of every file before returning anything. A corrupt or partial
//   entry is a miss: it is removed and counted, never returned.
// - Many processes may share a directory. get_or_build() runs the producer
//   once per missing key across all of them (a per-key flock, which the
//   kernel releases when its owner dies, so a killed owner never blocks
//   anyone); a waiter that gives up after lock_timeout builds by itself.
// - A process killed at any instant leaves no visible partial entry; its
//   temporaries are found (their flock is free) and removed by prune(),
//   which open() runs when the directory was not pruned for an hour.
// - Bounds: bytes, entries, age since last use. The cache records last use
//   itself (the manifest's mtime, set on each hit; atime is not used).
//   Pruning evicts least recently used entries first, down to 90% of a
//   limit, and skips any entry a reader holds at that moment. What a read
//   returns is a verified copy in memory, and loader::load() maps a private
//   copy of it, so evicting an entry later never touches a library loaded from it.
// - The directory is created 0700. A directory that another user owns, or
//   that group or others can write to, is refused (CacheUnsafe): whoever
//   can write to it can make this process load their code. A non-empty
//   directory that is not a hotlink cache is refused too, so that prune and
//   clear never touch files that are not the cache's.
// - Not fsync'd: after a power loss an entry may be truncated, which reads
//   then see as corrupt (a miss), never as a wrong hit.
// - Remote tier (Config::remote, hotlink/remote_cache.h): a local miss asks a Redis
//   server shared with other hosts before building. A remote entry is used
//   only when a trusted key signed its manifest and the artifact matches
//   the signed BLAKE3, size and exports; that is checked before anything
//   is stored locally or mapped, and a refused entry is built here instead.
//   A remote failure (down, slow, garbage, cut off) never fails a lookup or
//   a build: it is a warning, a counter, and a backoff. Only a process with
//   a sign_key publishes what it builds.
#pragma once

#include "hotlink/remote_cache.h"
#include "hotlink/error.h"
#include "hotlink/signature.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hotlink::cache {

class HOTLINK_API Key {
public:
  // Accepts exactly 64 hex digits (either case); the error names the text.
  static Expected<Key> parse(const std::string &hex);
  // A key for the caller's own identity of a build, e.g. "blur:v3:" + the
  // pipeline's hash + the target. Hashed, so any bytes are fine.
  static Key of_caller(const std::string &caller_key);
  const std::string &hex() const { return hex_; }
  bool operator==(const Key &o) const { return hex_ == o.hex_; }
  bool operator!=(const Key &o) const { return hex_ != o.hex_; }

private:
  friend class KeyBuilder;
  std::string hex_;
};

// A canonical encoding of named fields, hashed with BLAKE3: every field is
// written as its name and its length-prefixed value, so no two different
// field lists encode the same way.
class HOTLINK_API KeyBuilder {
public:
  explicit KeyBuilder(const std::string &domain);
  KeyBuilder &add(const std::string &field, const std::string &value);
  KeyBuilder &add(const std::string &field, const void *data, std::size_t size);
  KeyBuilder &add(const std::string &field, std::uint64_t value);
  // Adds BLAKE3(data) instead of the data (for large inputs).
  KeyBuilder &add_digest(const std::string &field, const void *data, std::size_t size);
  // BLAKE3(data) in hex, without copying the data.
  static std::string digest(const void *data, std::size_t size);
  Key finish() const;

private:
  std::string encoding_;
};

// What a producer hands to the cache.
struct HOTLINK_API Artifact {
  std::vector<std::uint8_t> bytes;
  std::string name;                 // file name, e.g. "blur.so"
  std::string target;               // normalized triple
  std::vector<std::string> exports; // the C names it exports
  std::string def;                  // COFF: the .def it was linked with
  std::vector<std::uint8_t> implib; // COFF: its import library, if any
  std::vector<std::uint8_t> pdb;    // COFF: its PDB, if linked with debug info
  std::string linker_version;       // recorded in the manifest
  double build_ms = 0; // what producing it cost; get_or_build() measures it
};

struct HOTLINK_API Manifest {
  int format = 0;
  std::string key;
  std::string name, target;
  std::uint64_t size = 0;
  std::string blake3; // of the artifact (SHA-256 is not computed: it costs
                      // ~15x more here, and nothing needs it)
  std::vector<std::string> exports;
  std::int64_t created = 0;   // Unix seconds
  std::string hotlink_version, linker_version;
  std::uint64_t def_size = 0, implib_size = 0, pdb_size = 0;
  std::string def_blake3, implib_blake3, pdb_blake3; // empty when absent
  double build_ms = 0;                   // what producing it cost
  // Hex of the trusted key whose signature was checked; empty when the
  // entry was read without requiring one.
  std::string signer;
};

struct HOTLINK_API Entry {
  Manifest manifest;
  Artifact artifact;         // verified against the manifest
  std::string artifact_path; // in the cache; may be evicted later: use
                             // artifact.bytes, or copy it out
  std::string statement;     // the manifest as stored: a statement
                             // (hotlink/signature.h), with its signatures
};

struct HOTLINK_API Limits {
  std::uint64_t max_bytes = 1ull << 30; // 0 = unbounded
  std::uint64_t max_entries = 0;        // 0 = unbounded
  std::chrono::seconds max_age{0};      // since last use; 0 = unbounded
};

struct HOTLINK_API Config {
  std::string dir;
  Limits limits;
  // How long get_or_build() waits for another process building the same
  // key before building it too (the result is the same; only work is lost).
  std::chrono::milliseconds lock_timeout{120000};

  // A Redis server shared with other hosts (hotlink/remote_cache.h): a local miss
  // asks it before building, and what this process builds is published to
  // it when it has a sign_key. Needs trusted keys (or a sign_key, whose
  // public half is trusted): an entry from the remote is used only when a
  // trusted key signed it.
  std::optional<RemoteConfig> remote;
  // Signs the manifest of every entry this process stores or publishes.
  std::optional<signature::SecretKey> sign_key;
  // Remote entries are used only when signed by one of these keys or by
  // sign_key.
  std::vector<signature::PublicKey> trusted_keys;
  // Local entries, too, are used only when so signed; any other is refused
  // (counted in Stats::refused) and replaced. Needs sign_key, or this
  // process's own links would be refused.
  bool require_signed = false;
  // Makes DIR (and its parents) a new cache when it is missing or empty.
  // false: DIR must already be a cache, else InputNotFound and nothing is
  // created (for tools that inspect a cache: a typo must not make one).
  bool create = true;
};

struct HOTLINK_API Stats {
  // Counted by every process using the directory (persisted in DIR/stats,
  // flushed after each store and when a Cache is destroyed).
  std::uint64_t hits = 0, misses = 0;
  std::uint64_t corrupt = 0;      // entries found corrupt and removed
  std::uint64_t evictions = 0;    // entries removed by limits
  std::uint64_t stores = 0, store_errors = 0;
  std::uint64_t lock_timeouts = 0; // waits for another builder that gave up
  std::uint64_t refused = 0;      // local entries whose signature was refused
  double saved_ms = 0;            // the build time of every entry hit
  // The remote tier. A remote hit is also a local miss.
  std::uint64_t remote_hits = 0, remote_misses = 0;
  std::uint64_t remote_errors = 0;  // unreachable, timed out, garbage
  std::uint64_t remote_refused = 0; // unsigned, untrusted, tampered, too large
  std::uint64_t remote_skipped = 0; // not asked: in backoff after a failure
  std::uint64_t published = 0, publish_errors = 0; // write-back (incl. dropped)
  std::uint64_t remote_waits = 0; // remote hits that waited for another host's build
  // The directory now (from DIR/usage, which prune() recomputes).
  std::uint64_t bytes = 0, entries = 0;
};

struct HOTLINK_API Lookup {
  std::optional<Entry> entry;
  bool remote = false; // the entry came from the remote tier (and is now local)
  std::vector<std::string> warnings; // remote failures and refusals
  std::string corrupt; // why the entry found was refused (and removed)
};

struct HOTLINK_API Fetched {
  Entry entry;
  bool hit = false; // not built here: from the local directory or the remote
  enum class Source { Local, Remote, Built } source = Source::Built;
  std::vector<std::string> warnings; // corrupt entry replaced, store failed
};

struct HOTLINK_API PruneReport {
  std::uint64_t evicted = 0, evicted_bytes = 0;
  std::uint64_t skipped_in_use = 0;
  std::uint64_t temporaries_removed = 0, orphans_removed = 0;
  std::uint64_t bytes = 0, entries = 0; // what remains
};

struct HOTLINK_API VerifyReport {
  std::uint64_t checked = 0, ok = 0;
  std::vector<std::pair<std::string, std::string>> corrupt; // key, reason (removed)
  std::uint64_t bytes = 0;
};

class HOTLINK_API Cache {
public:
  // Creates DIR (0700) when missing. Errors: CacheUnsafe, CacheError.
  static Expected<std::shared_ptr<Cache>> open(Config config);
  ~Cache(); // flushes the counters
  Cache(const Cache &) = delete;
  Cache &operator=(const Cache &) = delete;

  // Reads and verifies an entry; updates its last use on a hit. Counts a
  // hit or a miss.
  Lookup lookup(const Key &key);

  // Stores an entry, replacing any entry of the same key. Takes the key's
  // lock; prunes afterwards if a limit is exceeded.
  std::optional<Error> store(const Key &key, const Artifact &artifact);

  using Producer = std::function<Expected<Artifact>()>;
  // A hit, or else runs `produce` (once across every process asking for the
  // key at the same time), stores its result and returns it. A store that
  // fails is a warning: the produced artifact is returned anyway. The
  // producer's error is returned as is.
  Expected<Fetched> get_or_build(const Key &key, const Producer &produce);

  // Enforces `limits` (default: the configured ones) and removes orphaned
  // temporaries, companions without a manifest and unused lock files.
  PruneReport prune(const std::optional<Limits> &limits = std::nullopt);
  // Reads every entry fully (without touching its last use); removes the
  // corrupt ones.
  VerifyReport verify();
  // Removes every entry; waits up to lock_timeout for readers of each.
  std::optional<Error> clear();

  Stats stats() const;
  std::optional<Error> flush_stats();
  const Config &config() const;
  // The keys an entry's signature is checked against (trusted_keys and
  // sign_key's public half).
  const std::vector<signature::PublicKey> &trust() const;

  struct Impl;

private:
  explicit Cache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Loading an entry is the loader's: hotlink/cache_entry.h.

} // namespace hotlink::cache
