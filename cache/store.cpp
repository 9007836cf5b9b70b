// The local store (store.h): paths, locks, reading, writing, scanning and
// removing entries.
#include "cache/store.h"
#include "trust/recent_digests.h"

namespace hotlink::cache {

std::string Cache::Impl::shard(const Key &k) const { return cfg.dir + "/" + k.hex().substr(0, 2); }

std::string Cache::Impl::file(const Key &k, const char *ext) const {
  return shard(k) + "/" + k.hex() + ext;
}

std::chrono::steady_clock::time_point Cache::Impl::deadline() const {
  return std::chrono::steady_clock::now() + cfg.lock_timeout;
}

bool Cache::Impl::lock_file(const std::string &path, std::chrono::steady_clock::time_point deadline,
                 FileHandle &out, bool nonblocking) const {
  for (;;) {
    FileHandle f = FileHandle::open(path, FileHandle::Access::ReadWrite);
    if (!f) {
      errno = f.error();
      return false;
    }
    bool got = nonblocking ? f.try_lock(FileHandle::Lock::Exclusive)
                           : f.lock_until(FileHandle::Lock::Exclusive, deadline);
    if (!got) {
      errno = f.error();
      return false;
    }
    if (f.names(path)) {
      out = std::move(f);
      return true;
    }
  }
}

std::optional<Error> Cache::Impl::ensure_shard(const Key &k) const {
  std::string s = shard(k);
  if (int e = base::make_directory(s); e != 0 && e != EEXIST)
    return make_error(ErrorCode::CacheError, "cannot create a shard directory: " + errno_text(e),
                      s, {}, "check the cache directory's permissions and free space");
  return std::nullopt;
}

std::optional<Error> Cache::Impl::write_atomic(const std::string &path, const void *data,
                                    std::size_t size) const {
  auto failed = base::write_file_atomically(path, data, size); // 0600, held by this writer until renamed
  if (!failed)
    return std::nullopt;
  return make_error(ErrorCode::CacheError, failed->to_string(), failed->path, {},
                    failed->errnum == ENOSPC ? "the cache's file system is full: free space or "
                                               "lower the cache's max_bytes"
                                             : "check the cache directory's permissions and free space");
}

Cache::Impl::Removal Cache::Impl::remove_entry(const Key &k, bool wait, std::uint64_t *freed,
                       bool key_locked) const {
  std::string m = file(k, kManifest);
  FileHandle f = FileHandle::open(m, FileHandle::Access::Read);
  if (!f)
    return Removal::Gone;
  return remove_locked(k, f, wait, freed, key_locked);
}

Cache::Impl::Removal Cache::Impl::remove_locked(const Key &k, FileHandle &fd, bool wait, std::uint64_t *freed,
                        bool key_locked) const {
  std::string m = file(k, kManifest);
  FileHandle key_lock;
  if (!key_locked && !lock_file(file(k, kLock), deadline(), key_lock, /*nonblocking=*/!wait))
    return Removal::InUse; // a builder is replacing it
  bool got = wait ? fd.lock_until(FileHandle::Lock::Exclusive, deadline())
                  : fd.try_lock(FileHandle::Lock::Exclusive);
  if (!got)
    return Removal::InUse;
  if (!fd.names(m))
    return Removal::Gone;
  std::uint64_t size = 0;
  (void)fd.size(size);
  if (base::remove_file(m) != 0)
    return Removal::InUse; // e.g. a read-only directory: still there
  std::vector<const char *> files = {kArtifact};
  for (const Companion &c : kCompanions)
    files.push_back(c.ext);
  for (const char *ext : files) {
    std::string p = file(k, ext);
    base::FileIdentity id = base::identify_file(p);
    if (id.exists)
      size += id.size;
    base::remove_file(p);
  }
  usage(-static_cast<std::int64_t>(size), -1);
  if (freed)
    *freed = size;
  return Removal::Removed;
}

std::string Cache::Impl::manifest_text(const Manifest &m) const {
  std::string json = encode_manifest(m);
  std::string text = signature::seal(json);
  if (cfg.sign_key)
    text += cfg.sign_key->sign_line(json) + "\n";
  return text;
}

std::string Cache::Impl::check_signed(const std::string &text, Manifest &m, const std::string &name) const {
  auto c = signature::check_statement(text, trust, name);
  if (!c)
    return c.error().message + (c.error().symbol.empty() ? "" : " (" + c.error().symbol + ")");
  m.signer = c->signer.hex();
  return {};
}

namespace {

std::shared_ptr<const Cache::Impl::Known> statement_only(const std::string &statement, const Manifest &m) {
  auto kn = std::make_shared<Cache::Impl::Known>();
  kn->entry.statement = statement;
  kn->entry.manifest = m;
  return kn;
}

} // namespace

std::string Cache::Impl::accept_manifest(const Key &k, const std::string &statement, Manifest &m,
                                         bool *refused) const {
  {
    std::lock_guard<std::mutex> lock(known_mu);
    auto it = known.find(k.hex());
    if (it != known.end() && it->second->entry.statement == statement) {
      m = it->second->entry.manifest;
      return {};
    }
  }
  std::string why = decode_manifest(statement, m);
  if (!why.empty())
    return why;
  if (m.key != k.hex())
    return "manifest belongs to another key";
  if (cfg.require_signed) {
    why = check_signed(statement, m, "manifest");
    if (!why.empty()) {
      if (refused)
        *refused = true;
      return "its signature is refused: " + why;
    }
  }
  remember(k, statement_only(statement, m));
  return {};
}

void Cache::Impl::remember(const Key &k, std::shared_ptr<const Known> entry) const {
  std::uint64_t bytes = 0;
  for (const base::FileIdentity &f : entry->files)
    bytes += f.size;
  if (bytes > kKnownBytes / 4) { // a large entry: its statement alone, not a copy of its files
    entry = statement_only(entry->entry.statement, entry->entry.manifest);
    bytes = 0;
  }
  std::lock_guard<std::mutex> lock(known_mu);
  auto it = known.find(k.hex());
  if (it != known.end() && !it->second->files.empty())
    for (const base::FileIdentity &f : it->second->files)
      known_bytes -= f.size;
  if ((it == known.end() && known.size() >= kKnownEntries) || known_bytes + bytes > kKnownBytes) {
    known.clear(); // a working set larger than this is read as before
    known_bytes = 0;
  }
  known_bytes += bytes;
  known[k.hex()] = std::move(entry);
}

namespace {

// An entry's files in the order read_entry reads them: the manifest, the
// artifact, then the companions it names.
std::vector<const char *> entry_files(const Manifest &m) {
  std::vector<const char *> files = {kManifest, kArtifact};
  for (const Companion &c : kCompanions)
    if (!(m.*c.blake3).empty())
      files.push_back(c.ext);
  return files;
}

} // namespace

std::optional<Entry> Cache::Impl::known_entry(const Key &k, bool touch) const {
  std::shared_ptr<const Known> kn;
  {
    std::lock_guard<std::mutex> lock(known_mu);
    auto it = known.find(k.hex());
    if (it == known.end() || it->second->files.empty())
      return std::nullopt;
    kn = it->second;
  }
  std::vector<const char *> files = entry_files(kn->entry.manifest);
  if (files.size() != kn->files.size())
    return std::nullopt;
  for (std::size_t i = 0; i < files.size(); ++i) {
    base::FileIdentity now = base::identify_file(file(k, files[i]));
    if (!now.holds_same_bytes(kn->files[i]))
      return std::nullopt;
    if (i == 0 && touch && !now.used_lately(base::file_clock_ns()))
      return std::nullopt; // its use is recorded where the entry is read
  }
  return kn->entry;
}

std::string Cache::Impl::read_entry(const Key &k, const FileHandle &manifest, const base::FileIdentity &manifest_id,
                                    Entry &e, bool *refused, std::vector<base::FileIdentity> *files) const {
  if (manifest_id.size > kMaxManifestBytes)
    return "manifest is implausibly large";
  std::vector<std::uint8_t> mbytes;
  if (!manifest.read_all(mbytes, manifest_id.size))
    return "cannot read the manifest";
  if (files)
    files->push_back(manifest_id);
  e.statement.assign(mbytes.begin(), mbytes.end());
  std::string why = accept_manifest(k, e.statement, e.manifest, refused);
  if (!why.empty())
    return why;
  auto read_checked = [&](const char *ext, std::uint64_t size, const std::string &hash,
                          std::vector<std::uint8_t> &out) -> std::string {
    std::string p = file(k, ext);
    FileHandle f = FileHandle::open(p, FileHandle::Access::Read);
    if (!f)
      return std::string(ext + 1) + " file is missing";
    base::FileIdentity id = f.identity();
    if (!id.exists || id.size != size)
      return std::string(ext + 1) + " file has the wrong size (" +
             std::to_string(id.size) + " bytes, manifest says " + std::to_string(size) + ")";
    if (!f.read_all(out, size))
      return std::string("cannot read the ") + (ext + 1) + " file";
    if (trust::artifact_blake3_hex(out.data(), out.size()) != hash)
      return std::string(ext + 1) + " file's BLAKE3 does not match the manifest";
    if (files)
      files->push_back(id);
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

Lookup Cache::Impl::find(const Key &k, bool touch, bool key_locked) {
  Lookup out;
  if ((out.entry = known_entry(k, touch)))
    return out;
  std::string m = file(k, kManifest);
  for (int attempt = 0; attempt < 4; ++attempt) {
    FileHandle fd = FileHandle::open(m, FileHandle::Access::Read);
    if (!fd)
      return out; // no entry
    if (!fd.lock(FileHandle::Lock::Shared))
      return out;
    std::int64_t read_at = base::file_clock_ns();
    base::FileIdentity id = fd.identity(), at_path = base::identify_file(m);
    if (!at_path.same_file(id))
      continue; // removed or replaced while we waited: look again
    Entry e;
    bool refused = false;
    std::vector<base::FileIdentity> files;
    bool read_before = false; // a process that reads an entry once keeps no copy of it
    {
      std::lock_guard<std::mutex> lock(known_mu);
      read_before = known.count(k.hex()) != 0;
    }
    std::string why = read_entry(k, fd, id, e, &refused, &files);
    if (why.empty()) {
      // Its last use, for the prune (to the minute).
      bool touched = touch && !id.used_lately(read_at) && fd.touch();
      if (read_before && !touched && std::all_of(files.begin(), files.end(),
                                  [&](const base::FileIdentity &f) { return f.settled(read_at); })) {
        remember(k, std::make_shared<Known>(Known{e, std::move(files)}));
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

std::vector<Cache::Impl::Scanned> Cache::Impl::scan(std::vector<std::string> &temporaries) const {
  std::map<std::string, Scanned> keys;
  std::vector<base::DirectoryEntry> top;
  int error = 0;
  if (!base::list_directory(cfg.dir, top, error))
    return {};
  for (const base::DirectoryEntry &sd : top) {
    const std::string &s = sd.name;
    if (s.size() != 2 || !std::isxdigit(static_cast<unsigned char>(s[0])) ||
        !std::isxdigit(static_cast<unsigned char>(s[1])))
      continue;
    std::string sdir = cfg.dir + "/" + s;
    std::vector<base::DirectoryEntry> files;
    if (!base::list_directory(sdir, files, error))
      continue;
    for (const base::DirectoryEntry &d : files) {
      const std::string &n = d.name;
      if (n.size() < 66 || n[64] != '.' || !manifest::is_hex_key(n.substr(0, 64)))
        continue; // not the cache's: never touched
      if (!d.regular)
        continue;
      std::string path = sdir + "/" + n, ext = n.substr(64);
      if (ext.find(".tmp-") != std::string::npos) {
        temporaries.push_back(path);
        continue;
      }
      Scanned &k = keys[n.substr(0, 64)];
      k.key = n.substr(0, 64);
      if (ext == kLock) {
        k.lock = true;
      } else if (is_entry_file(ext)) {
        k.bytes += d.size;
        if (ext == kManifest) {
          k.manifest = true;
          k.last_use_ns = d.mtime_ns;
        } else {
          k.orphans.push_back(path);
        }
      }
    }
  }
  std::vector<Scanned> out;
  for (auto &[_, v] : keys)
    out.push_back(std::move(v));
  return out;
}

std::optional<Error> Cache::Impl::store_locked(const Key &key, const Artifact &a, const std::string &text,
                                    bool &over) {
  auto fail = [&](Error e) {
    base::remove_file(file(key, kArtifact));
    for (const Companion &c : kCompanions)
      base::remove_file(file(key, c.ext));
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

void Cache::Impl::clean(std::vector<Scanned> &keys, const std::vector<std::string> &temporaries,
             PruneReport &r) const {
  for (const std::string &t : temporaries)
    if (base::remove_if_abandoned(t)) // a live writer holds its temporary locked
      ++r.temporaries_removed;
  for (Scanned &s : keys) {
    if (s.manifest)
      continue;
    Key k = Key::parse(s.key).value();
    FileHandle lock;
    if (!lock_file(file(k, kLock), {}, lock, /*nonblocking=*/true))
      continue; // a builder is writing this entry now
    if (base::identify_file(file(k, kManifest)).exists)
      continue;
    for (const std::string &p : s.orphans)
      if (base::remove_file(p) == 0)
        ++r.orphans_removed;
    base::remove_file(file(k, kLock)); // removed while held: waiters re-open
  }
}

} // namespace hotlink::cache
