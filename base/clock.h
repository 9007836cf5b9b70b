// Internal. The one way hotlink measures how long a step took.
#pragma once

#include <chrono>

namespace hotlink::base {

using Clock = std::chrono::steady_clock;

// Milliseconds from `t0` to now.
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

} // namespace hotlink::base
