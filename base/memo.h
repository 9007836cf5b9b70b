// Internal. The one registry of answers hotlink computes once per process
// and reuses: answers that follow from their key alone (a triple's target,
// a sysroot's layout, a target's runtime environment, a support object), so
// that a JIT linking for the same target again pays nothing. Process-wide
// by design: every LinkService of a process, and the CLI's one link, share
// them, and an answer never changes for its key (a key carries the
// fingerprint of what it read when that can change: a file's size and
// mtime; or find() is given a check that the answer still holds).
//
// Contract: thread-safe. find() copies the kept answer out (answers that
// are shared_ptr share immutable state). keep() keeps one: an existing
// answer of the key is replaced only when asked, and past `capacity`
// answers nothing new is kept. compute_once(key, f) returns the kept answer
// or f()'s (an Expected<V>), kept when it succeeded; f runs under the
// memo's lock, so an expensive answer is computed once even when threads
// ask at once (computes of one memo are serialized). A failure is never
// kept.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

namespace hotlink::base {

template <class K, class V> class Memo {
public:
  explicit Memo(std::size_t capacity = std::numeric_limits<std::size_t>::max()) : capacity_(capacity) {}

  std::optional<V> find(const K &key) const {
    return find(key, [](const V &) { return true; });
  }
  // The kept answer when `still_holds(answer)`.
  template <class Check> std::optional<V> find(const K &key, Check still_holds) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = answers_.find(key);
    if (it == answers_.end() || !still_holds(it->second))
      return std::nullopt;
    return it->second;
  }

  void keep(const K &key, V value, bool replace = false) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = answers_.find(key);
    if (it != answers_.end()) {
      if (replace)
        it->second = std::move(value);
    } else if (answers_.size() < capacity_) {
      answers_.emplace(key, std::move(value));
    }
  }

  template <class F> auto compute_once(const K &key, F compute) -> decltype(compute()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = answers_.find(key);
    if (it != answers_.end())
      return it->second;
    auto answer = compute();
    if (answer && answers_.size() < capacity_)
      answers_.emplace(key, *answer);
    return answer;
  }

private:
  mutable std::mutex mu_;
  std::map<K, V> answers_;
  std::size_t capacity_;
};

} // namespace hotlink::base
