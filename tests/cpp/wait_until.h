// Hang guard for concurrency tests: polls a condition instead of sleeping a fixed time, and gives
// up after a deadline so a lost wake-up fails the test instead of hanging the suite. The deadline
// is a liveness bound, not a performance assertion: it is orders of magnitude above normal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// Aborts the process when a test hangs (a deadlock would otherwise stall ctest until its timeout
// without saying where).
class Watchdog {
 public:
  explicit Watchdog(const char* what, double seconds = 120.0)
      : thread_([this, what, seconds] {
          if (!wait_until([this] { return done_.load(std::memory_order_acquire); }, seconds)) {
            std::fprintf(stderr, "watchdog: %s hung\n", what);
            std::abort();
          }
        }) {}
  ~Watchdog() {
    done_.store(true, std::memory_order_release);  // the watchdog reads it with acquire
    thread_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace opweave::testing
