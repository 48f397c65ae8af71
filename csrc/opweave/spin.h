// cpu_relax(): the body of a spin-wait loop (x86 PAUSE: saves power, frees the sibling
// hyper-thread, avoids a memory-order mis-speculation on loop exit). A no-op elsewhere.
#pragma once

namespace opweave {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace opweave
