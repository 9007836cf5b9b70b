// The cache's counters: counted in memory, persisted in DIR/stats (shared by
// every process using the directory) and DIR/usage (bytes and entries).
#include "cache/store.h"

namespace hotlink::cache {

void Cache::Impl::count(StatIndex i, std::uint64_t n) {
  std::lock_guard<std::mutex> lock(mu);
  delta[i] += n;
}

void Cache::Impl::count_hit(const Entry &e) {
  count(kHits);
  count(kSavedUs, static_cast<std::uint64_t>(e.manifest.build_ms * 1000));
}

std::pair<std::uint64_t, std::uint64_t> Cache::Impl::usage(std::int64_t dbytes, std::int64_t dentries,
                                                bool set) const {
  std::uint64_t v[2] = {0, 0};
  std::lock_guard<std::mutex> guard(file_mu);
  FileHandle &f = usage_file;
  if (!f.lock(FileHandle::Lock::Exclusive))
    return {0, 0};
  if (f.read_at(v, sizeof v, 0) != static_cast<long long>(sizeof v))
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
    (void)f.write_at(v, sizeof v, 0);
  f.unlock();
  return {v[0], v[1]};
}

std::optional<Error> Cache::Impl::flush() {
  std::uint64_t d[kStatCount];
  {
    std::lock_guard<std::mutex> lock(mu);
    std::copy(std::begin(delta), std::end(delta), d);
    std::fill(std::begin(delta), std::end(delta), 0);
  }
  if (std::all_of(std::begin(d), std::end(d), [](std::uint64_t x) { return x == 0; }))
    return std::nullopt;
  std::lock_guard<std::mutex> guard(file_mu);
  FileHandle &f = stats_file;
  if (!f.lock(FileHandle::Lock::Exclusive))
    return make_error(ErrorCode::CacheError, "cannot lock the stats file: " + errno_text(f.error()),
                      cfg.dir + "/stats");
  std::uint64_t v[kStatCount];
  read_counters(f, v);
  for (int i = 0; i < kStatCount; ++i)
    v[i] += d[i];
  bool ok = f.write_at(v, sizeof v, 0);
  f.unlock();
  if (!ok)
    return make_error(ErrorCode::CacheError, "cannot write the stats file: " + errno_text(f.error()),
                      cfg.dir + "/stats");
  return std::nullopt;
}

Stats Cache::stats() const {
  Impl &I = *impl_;
  Stats s;
  std::uint64_t v[kStatCount] = {};
  {
    std::lock_guard<std::mutex> guard(I.file_mu);
    FileHandle &f = I.stats_file;
    if (f.lock(FileHandle::Lock::Shared)) {
      read_counters(f, v);
      f.unlock();
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
