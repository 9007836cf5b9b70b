#include "cache/backoff.h"

#include <algorithm>

namespace hotlink::cache {

bool Backoff::usable() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::chrono::steady_clock::now() >= retry_at_;
}

void Backoff::succeeded() {
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::chrono::milliseconds(0);
  retry_at_ = {}; // the other connection need not wait out a backoff either
}

std::chrono::milliseconds Backoff::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  current_ = current_.count() == 0 ? min_ : std::min(current_ * 2, max_);
  retry_at_ = std::chrono::steady_clock::now() + current_;
  return current_;
}

} // namespace hotlink::cache
