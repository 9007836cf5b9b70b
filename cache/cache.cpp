// The cache's operations over its tiers: the local store (store.h) first,
// then the remote tier (remote_tier.cpp), then the producer.
#include "cache/store.h"

#include "base/eviction.h"

#include <filesystem>

namespace hotlink::cache {

Cache::Cache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Cache::~Cache() {
  impl_->remote.reset(); // drains the publish queue, which counts
  (void)impl_->flush();
}

const Config &Cache::config() const { return impl_->cfg; }
const std::vector<signature::PublicKey> &Cache::trust() const { return impl_->trust; }

namespace {

Error unsafe(const std::string &dir, const std::string &why) {
  return make_error(ErrorCode::CacheUnsafe, why, dir, {},
                    "a cache another user can write to lets them choose the code this "
                    "process loads; use a directory only you can write to (chmod 700 " +
                        dir + ")");
}

// The directory, made (0700, with its parents) when missing and `create`;
// `found` is what it is then.
std::optional<Error> make_directory(const Config &config, base::FileIdentity &found) {
  const std::string &dir = config.dir;
  found = base::identify_file(dir);
  if (found.exists)
    return std::nullopt;
  if (!config.create)
    return make_error(ErrorCode::InputNotFound, "no cache directory here", dir, {},
                      "check the path; a cache is made by the first link that uses it "
                      "(hotlink link --cache DIR)");
  std::filesystem::path parent = std::filesystem::u8path(dir).parent_path();
  std::error_code ec;
  if (!parent.empty() && (std::filesystem::create_directories(parent, ec), ec))
    return make_error(ErrorCode::CacheError, "cannot create the parent directory: " + ec.message(), dir, {},
                      "choose a directory you can create");
  if (int e = base::make_directory(dir); e != 0 && e != EEXIST)
    return make_error(ErrorCode::CacheError, "cannot create: " + errno_text(e), dir, {},
                      "choose a directory you can create");
  found = base::identify_file(dir);
  return std::nullopt;
}

std::optional<Error> check_private(const std::string &dir, const base::FileIdentity &found) {
  if (!found.directory)
    return make_error(ErrorCode::CacheError, "is not a directory", dir, {}, "name a directory for the cache");
  if (auto why = base::writable_by_others(dir))
    return unsafe(dir, "the cache directory " + *why);
  return std::nullopt;
}

bool is_empty_directory(const std::string &dir, bool &empty) {
  std::vector<base::DirectoryEntry> entries;
  int error = 0;
  if (!base::list_directory(dir, entries, error)) {
    errno = error;
    return false;
  }
  empty = entries.empty();
  return true;
}

} // namespace

// The marker that makes a directory a cache: a new or empty directory gets
// it (exactly one of the processes opening it at once creates it); any
// other directory without it is refused, so prune and clear never touch
// files that are not the cache's.
std::optional<Error> Cache::Impl::claim_directory() {
  const std::string &dir = cfg.dir;
  std::string marker = dir + "/" + kMarker;
  if (base::identify_file(marker).exists)
    return std::nullopt;
  if (!cfg.create)
    return make_error(ErrorCode::InputNotFound,
                      "is not a hotlink cache (it has no '" + std::string(kMarker) + "' file)", dir, {},
                      "check the path; a cache is made by the first link that uses it "
                      "(hotlink link --cache DIR)");
  bool empty = false;
  if (!is_empty_directory(dir, empty))
    return make_error(ErrorCode::CacheError, "cannot read: " + errno_text(errno), dir);
  // hotlink creates the marker before any other file, so a directory that
  // has files has the marker unless it is not a cache: look again, since
  // another process may have made it one since the first look.
  if (!empty && !base::identify_file(marker).exists)
    return make_error(ErrorCode::CacheError,
                      "is not empty and is not a hotlink cache (it has no '" + std::string(kMarker) + "' file)",
                      dir, {},
                      "choose a new or empty directory: hotlink never prunes or clears "
                      "files it did not create");
  if (!empty)
    return std::nullopt;
  // Created in place, never through a temporary: another process claiming
  // the directory at once must see it empty or marked, nothing else.
  std::string text = "hotlink cache, format " + std::to_string(kFormat) + "\n";
  if (auto failed = base::create_file(marker, text.data(), text.size())) {
    if (failed->errnum == EEXIST)
      return std::nullopt; // claimed by another process, which writes the tag
    return make_error(ErrorCode::CacheError, failed->to_string(), marker, {},
                      "check the cache directory's permissions");
  }
  // Written by the claimer alone: on Windows a rename cannot replace a file
  // another writer has just renamed into place and not yet closed.
  std::string tag = "Signature: 8a477f597d28d172789f06886806bc55\n"
                    "# This directory is a hotlink cache; backup tools may skip it.\n";
  return write_atomic(dir + "/CACHEDIR.TAG", tag.data(), tag.size());
}

// The keys entries are checked against, and the remote tier.
std::optional<Error> Cache::Impl::connect() {
  trust = cfg.trusted_keys;
  if (cfg.sign_key)
    trust.push_back(cfg.sign_key->public_key());
  if (cfg.require_signed && !cfg.sign_key)
    return make_error(ErrorCode::BadRequest,
                      "requiring signed local entries needs a signing key: this process's own "
                      "links would be refused",
                      cfg.dir, "--sign-key", "pass --sign-key KEY (make one with hotlink keygen)");
  if (!cfg.remote)
    return std::nullopt;
  if (trust.empty())
    return make_error(ErrorCode::BadRequest,
                      "a remote cache needs a key to trust: its entries are used only when "
                      "a trusted key signed them",
                      cfg.remote->url, "--trusted-key",
                      "pass the publisher's public key (--trusted-key KEY.pub) or a signing "
                      "key (--sign-key KEY) to publish and trust your own entries");
  auto r = RemoteStore::create(*cfg.remote);
  if (!r)
    return r.take_error();
  remote = std::move(r.value());
  remote->on_event([this](RemoteStore::Event e, const std::string &) {
    switch (e) {
    case RemoteStore::Event::Published: count(kPublished); break;
    case RemoteStore::Event::Skipped: count(kRemoteSkipped); break;
    case RemoteStore::Event::PublishFailed:
    case RemoteStore::Event::Dropped: count(kPublishErrors); break;
    }
  });
  return std::nullopt;
}

// The counters' files.
std::optional<Error> Cache::Impl::open_counters() {
  for (auto [name, fd] : {std::pair{"/usage", &usage_file}, std::pair{"/stats", &stats_file}}) {
    std::string p = cfg.dir + name;
    *fd = FileHandle::open(p, FileHandle::Access::ReadWrite);
    if (!*fd)
      return make_error(ErrorCode::CacheError, "cannot open: " + errno_text(fd->error()), p, {},
                        "check the cache directory's permissions (a read-only cache "
                        "cannot be used)");
  }
  return std::nullopt;
}

Expected<std::shared_ptr<Cache>> Cache::open(Config config) {
  if (config.dir.empty())
    return make_error(ErrorCode::BadRequest, "no cache directory given", {}, "--cache",
                      "name a directory for the cache");
  std::string abs = base::absolute_path(config.dir);
  if (abs.empty())
    return make_error(ErrorCode::CacheError, "cannot make the path absolute: " + errno_text(errno), config.dir);
  while (abs.size() > 1 && (abs.back() == '/' || abs.back() == '\\') && abs[abs.size() - 2] != ':')
    abs.pop_back();
  config.dir = abs;
  base::FileIdentity found;
  if (auto err = make_directory(config, found))
    return std::move(*err);
  if (auto err = check_private(config.dir, found))
    return std::move(*err);
  auto impl = std::make_unique<Impl>();
  impl->cfg = std::move(config);
  if (auto err = impl->claim_directory())
    return std::move(*err);
  if (auto err = impl->connect())
    return std::move(*err);
  if (auto err = impl->open_counters())
    return std::move(*err);
  std::shared_ptr<Cache> cache(new Cache(std::move(impl)));
  // Pruned at least hourly by whoever opens it: limits hold, and the
  // temporaries and partial entries of killed processes are collected,
  // even when no store ever exceeds a limit.
  base::FileIdentity pruned = base::identify_file(cache->config().dir + "/prune.lock");
  auto since = std::chrono::nanoseconds(base::file_clock_ns() - pruned.mtime_ns);
  if (!pruned.exists || since > kAutoPruneInterval)
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
  FileHandle lock;
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
    FileHandle lock;
    errno = 0;
    if (!I.lock_file(I.file(key, kLock), I.deadline(), lock)) {
      I.count(kStoreErrors);
      return make_error(ErrorCode::CacheError,
                        "cannot take the entry's lock: " +
                            std::string(errno && errno != ETIMEDOUT ? errno_text(errno) : "timed out"),
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

namespace {

Expected<Fetched> local_hit(Cache::Impl &I, Fetched &f, Entry &e) {
  I.count_hit(e);
  f.entry = std::move(e);
  f.hit = true;
  f.source = Fetched::Source::Local;
  return std::move(f);
}

// A lookup that missed (`l`: why, when its entry was corrupt): one builder
// per key, the remote tier, then `produce`. Apart from get_or_build, so
// that a hit's stack frame holds none of this path's entries and errors.
[[gnu::noinline]] Expected<Fetched> build_missing(Cache &cache, Cache::Impl &I, const Key &key,
                                                  const Cache::Producer &produce, const Lookup &l) {
  Fetched f;
  auto note_corrupt = [&](const Lookup &x) {
    if (!x.corrupt.empty())
      f.warnings.push_back("cache entry " + key.hex() + " was corrupt or refused (" + x.corrupt +
                           "): removed, and built again");
  };
  note_corrupt(l);

  // One builder per key: whoever holds the lock builds; the others wait,
  // then find the entry. A lock whose owner died is free (flock).
  FileHandle lock;
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
      return local_hit(I, f, *again.entry);
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
      cache.prune();
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
    cache.prune();
  return f;
}

} // namespace

Expected<Fetched> Cache::get_or_build(const Key &key, const Producer &produce) {
  Lookup l = impl_->find(key, /*touch=*/true);
  if (l.entry) {
    Fetched f;
    return local_hit(*impl_, f, *l.entry);
  }
  return build_missing(*this, *impl_, key, produce, l);
}

PruneReport Cache::prune(const std::optional<Limits> &limits) {
  Impl &I = *impl_;
  Limits lim = limits ? *limits : I.cfg.limits;
  PruneReport r;
  FileHandle plock;
  if (!I.lock_file(I.cfg.dir + "/prune.lock", {}, plock, /*nonblocking=*/true)) {
    // Another process is pruning now; it will enforce the limits.
    auto [bytes, entries] = I.usage(0, 0);
    r.bytes = bytes;
    r.entries = entries;
    return r;
  }
  // Records when the directory was last pruned (open() prunes when that is
  // long ago, so that what killed processes left does not pile up).
  (void)plock.touch();
  std::vector<std::string> temporaries;
  std::vector<Impl::Scanned> keys = I.scan(temporaries);
  I.clean(keys, temporaries, r);

  std::vector<Impl::Scanned *> entries;
  std::vector<base::Resident> residents;
  for (Impl::Scanned &s : keys)
    if (s.manifest) {
      entries.push_back(&s);
      residents.push_back({s.bytes, s.last_use_ns, false});
    }
  base::EvictionLimits evict{lim.max_bytes, lim.max_entries, std::nullopt, /*tenth_free=*/true};
  if (lim.max_age.count() > 0) // 0: unbounded (hotlink/cache.h)
    evict.max_age = lim.max_age;
  std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  base::StoreTotals left = base::evict_least_recent(residents, evict, now_ns, [&](std::size_t i) {
    std::uint64_t freed = 0;
    switch (I.remove_entry(Key::parse(entries[i]->key).value(), /*wait=*/false, &freed)) {
    case Impl::Removal::Removed:
      ++r.evicted;
      r.evicted_bytes += freed;
      return base::Evicted::Removed;
    case Impl::Removal::InUse:
      ++r.skipped_in_use;
      return base::Evicted::Kept;
    case Impl::Removal::Gone: break;
    }
    return base::Evicted::Gone;
  });
  std::uint64_t bytes = left.bytes, count = left.entries;
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

} // namespace hotlink::cache
