// Internal. The one least-recently-used eviction of hotlink's two stores
// on disk: the cache's entries (cache/cache.cpp) and the loader's
// post-mortem images (loader/image_store_posix.cpp). Each store scans its
// own files and removes them its own way; which go, and in what order, is
// decided here.
//
// Contract: the items are considered oldest first (by last use). An item
// goes when it is older than max_age, or while the store is over a limit
// of bytes or entries, until it is at that limit, or, with `tenth_free`,
// a tenth below it (a store that was over its bound keeps room, so the
// next write does not evict again at once). Pinned items (in use) are counted, never
// offered. evict(i) removes item i and says what happened to it; an item
// it kept (in use after all) is still counted.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace hotlink::base {

struct EvictionLimits {
  std::uint64_t max_bytes = 0;          // 0: no limit
  std::uint64_t max_entries = 0;        // 0: no limit
  std::optional<std::chrono::nanoseconds> max_age; // none: no limit (0: everything goes)
  bool tenth_free = false;              // down to a tenth below an exceeded limit
};

struct Resident {
  std::uint64_t bytes = 0;
  std::int64_t last_use_ns = 0; // since the epoch
  bool pinned = false;          // in use: counted, never offered
};

enum class Evicted { Removed, Kept, Gone };

struct StoreTotals {
  std::uint64_t bytes = 0, entries = 0;
};

// The store's totals once the items that had to go are gone.
StoreTotals evict_least_recent(const std::vector<Resident> &items, const EvictionLimits &limits, std::int64_t now_ns,
                               const std::function<Evicted(std::size_t)> &evict);

} // namespace hotlink::base
