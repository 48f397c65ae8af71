// The cancellation flag of the work the calling thread is doing: a run's "cancelled" flag while
// the executor runs one of its kernels. parallel_for captures it when called and skips the pieces
// that have not started once it is set, so a long kernel of a cancelled run (a deadline passed,
// Ctrl-C, Session.close) stops between pieces instead of computing a result nobody will read.
//
//   ScopedCancellation scope(&run_cancelled);  // around the kernel
//   parallel_for(pool, 0, n, grain, body);      // pieces after run_cancelled = true are skipped
#pragma once

#include <atomic>

namespace opweave {

// The calling thread's flag, or null when nothing can cancel its work.
const std::atomic<bool>* current_cancellation() noexcept;

// Installs `flag` for the calling thread for its lifetime, then restores the previous one
// (scopes nest). One thread; not movable.
class ScopedCancellation {
 public:
  explicit ScopedCancellation(const std::atomic<bool>* flag) noexcept;
  ~ScopedCancellation();
  ScopedCancellation(const ScopedCancellation&) = delete;
  ScopedCancellation& operator=(const ScopedCancellation&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// True when `flag` is set. Relaxed: cancellation is a hint to stop early; whatever a cancelled
// piece would have written is discarded, so nothing is published through the flag.
inline bool cancellation_requested(const std::atomic<bool>* flag) noexcept {
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

}  // namespace opweave
