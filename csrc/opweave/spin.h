// cpu_relax(): the body of a spin-wait loop (x86 PAUSE: saves power, frees the sibling
// hyper-thread, avoids a memory-order mis-speculation on loop exit). A no-op elsewhere.
// next_spin_us(): how long an idle pool worker spins next time, from how long it was idle.
#pragma once

#include <algorithm>
#include <cstdint>

namespace opweave {

// The longest spin next_spin_us() chooses on its own (a configured spin time above it is kept).
inline constexpr std::int64_t kMaxAdaptiveSpinUs = 500;

// A worker ran out of work, spun, parked, and was woken `idle_us` microseconds after it ran out.
// Had it spun that long it would have caught the work without a wake-up: the producer's futex
// call, tens of microseconds before the worker runs again, and on some VMs a worker placed on the
// producer's CPU (cpu_migration.h). So while work comes back within kMaxAdaptiveSpinUs / 2, the
// next spin covers twice the last idle time (at least the configured `base_us`); after a longer
// idle time it is `base_us` again. A loop of short parallel calls thus keeps its workers awake
// between calls, and a worker idle for longer wastes at most one spin of kMaxAdaptiveSpinUs
// before it is back to `base_us`. base_us = 0 (never spin) stays 0.
inline std::int64_t next_spin_us(std::int64_t base_us, std::int64_t idle_us) noexcept {
  if (base_us <= 0) return 0;
  const std::int64_t most = std::max(base_us, kMaxAdaptiveSpinUs);
  if (idle_us < 0 || idle_us > most / 2) return base_us;
  return std::clamp(2 * idle_us, base_us, most);
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace opweave
