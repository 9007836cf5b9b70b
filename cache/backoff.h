// A remote server's backoff (each Redis node, an HTTP server).
#pragma once

#include <chrono>
#include <mutex>

namespace hotlink::cache {

// A server that failed stays unused for a period that doubles from min up
// to max after each failure, and is tried again after it.
class Backoff {
public:
  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max) : min_(min), max_(max) {}
  bool usable() const;
  void succeeded();
  // Starts or lengthens the backoff; returns its length.
  std::chrono::milliseconds failed();

private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds current_{0};
  const std::chrono::milliseconds min_, max_;
};

} // namespace hotlink::cache
