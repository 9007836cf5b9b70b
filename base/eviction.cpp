#include "base/eviction.h"

#include <algorithm>

namespace hotlink::base {

StoreTotals evict_least_recent(const std::vector<Resident> &items, const EvictionLimits &limits, std::int64_t now_ns,
                               const std::function<Evicted(std::size_t)> &evict) {
  StoreTotals t;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < items.size(); ++i) {
    t.bytes += items[i].bytes;
    ++t.entries;
    if (!items[i].pinned)
      order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return items[a].last_use_ns < items[b].last_use_ns; });
  auto goal_of = [&](std::uint64_t limit, std::uint64_t now) {
    return limit && now > limit ? limit - (limits.tenth_free ? limit / 10 : 0) : UINT64_MAX;
  };
  const std::uint64_t goal_bytes = goal_of(limits.max_bytes, t.bytes), goal_entries = goal_of(limits.max_entries, t.entries);

  for (std::size_t i : order) {
    const Resident &r = items[i];
    bool expired = limits.max_age && now_ns - r.last_use_ns > limits.max_age->count();
    if (!expired && t.bytes <= goal_bytes && t.entries <= goal_entries)
      continue;
    if (evict(i) == Evicted::Kept)
      continue;
    t.bytes -= std::min(t.bytes, r.bytes);
    --t.entries;
  }
  return t;
}

} // namespace hotlink::base
