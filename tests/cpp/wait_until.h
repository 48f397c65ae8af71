// Hang guard for concurrency tests: polls a condition instead of sleeping a fixed time, and gives
// up after a deadline so a lost wake-up fails the test instead of hanging the suite. The deadline
// is a liveness bound, not a performance assertion: it is orders of magnitude above normal.
#pragma once

#include <chrono>
#include <thread>

namespace opweave::testing {

inline constexpr double kHangSeconds = 60.0;

template <typename Condition>
bool wait_until(Condition&& done, double seconds = kHangSeconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace opweave::testing
