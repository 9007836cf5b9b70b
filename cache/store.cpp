// The local store (store.h): paths, locks, reading, writing, scanning and
// removing entries.
#include "cache/store.h"

namespace hotlink::cache {

std::string Cache::Impl::shard(const Key &k) const { return cfg.dir + "/" + k.hex().substr(0, 2); }

std::string Cache::Impl::file(const Key &k, const char *ext) const {
  return shard(k) + "/" + k.hex() + ext;
}

std::chrono::steady_clock::time_point Cache::Impl::deadline() const {
  return std::chrono::steady_clock::now() + cfg.lock_timeout;
}

bool Cache::Impl::lock_file(const std::string &path, std::chrono::steady_clock::time_point deadline,
                 Fd &out, bool nonblocking) const {
  for (;;) {
    Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd)
      return false;
    bool got = nonblocking ? ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0
                           : flock_until(fd.get(), LOCK_EX, deadline);
    if (!got)
      return false;
    if (base::same_file(fd.get(), path)) {
      out = std::move(fd);
      return true;
    }
  }
}

std::optional<Error> Cache::Impl::ensure_shard(const Key &k) const {
  std::string s = shard(k);
  if (::mkdir(s.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(ErrorCode::CacheError, "cannot create a shard directory: " + errno_text(errno),
                      s, {}, "check the cache directory's permissions and free space");
  return std::nullopt;
}

std::optional<Error> Cache::Impl::write_atomic(const std::string &path, const void *data,
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

Cache::Impl::Removal Cache::Impl::remove_entry(const Key &k, bool wait, std::uint64_t *freed,
                       bool key_locked) const {
  std::string m = file(k, kManifest);
  Fd fd(::open(m.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return Removal::Gone;
  return remove_locked(k, fd, wait, freed, key_locked);
}

Cache::Impl::Removal Cache::Impl::remove_locked(const Key &k, Fd &fd, bool wait, std::uint64_t *freed,
                        bool key_locked) const {
  std::string m = file(k, kManifest);
  Fd key_lock;
  if (!key_locked && !lock_file(file(k, kLock), deadline(), key_lock, /*nonblocking=*/!wait))
    return Removal::InUse; // a builder is replacing it
  bool got = wait ? flock_until(fd.get(), LOCK_EX, deadline())
                  : ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0;
  if (!got)
    return Removal::InUse;
  if (!base::same_file(fd.get(), m))
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

std::string Cache::Impl::read_entry(const Key &k, int fd, Entry &e, bool *refused) const {
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return "cannot stat the manifest";
  if (static_cast<std::uint64_t>(st.st_size) > kMaxManifestBytes)
    return "manifest is implausibly large";
  std::vector<std::uint8_t> mbytes;
  if (!base::read_exact(fd, mbytes, static_cast<std::uint64_t>(st.st_size)))
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
    if (!base::read_exact(f.get(), out, size))
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

Lookup Cache::Impl::find(const Key &k, bool touch, bool key_locked) {
  Lookup out;
  std::string m = file(k, kManifest);
  for (int attempt = 0; attempt < 4; ++attempt) {
    Fd fd(::open(m.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
      return out; // no entry
    if (::flock(fd.get(), LOCK_SH) != 0)
      return out;
    if (!base::same_file(fd.get(), m))
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

std::vector<Cache::Impl::Scanned> Cache::Impl::scan(std::vector<std::string> &old_temporaries) const {
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

std::optional<Error> Cache::Impl::store_locked(const Key &key, const Artifact &a, const std::string &text,
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

void Cache::Impl::clean(std::vector<Scanned> &keys, const std::vector<std::string> &temporaries,
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

} // namespace hotlink::cache
