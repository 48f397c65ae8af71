#include "opweave/cpu_migration.h"

#include <sched.h>

namespace opweave {

int current_cpu() noexcept {
  // glibc >= 2.35 reads it from the thread's rseq area (no system call).
  return sched_getcpu();
}

bool move_off_cpu(int cpu) noexcept {
  if (cpu < 0 || cpu >= CPU_SETSIZE || current_cpu() != cpu) return false;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return false;
  if (!CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2) return false;
  cpu_set_t elsewhere = mask;
  CPU_CLR(cpu, &elsewhere);
  // The kernel migrates a running thread whose new mask excludes its CPU before the call
  // returns; restoring the full mask afterwards leaves it where it now is.
  if (sched_setaffinity(0, sizeof(elsewhere), &elsewhere) != 0) return false;
  (void)sched_setaffinity(0, sizeof(mask), &mask);
  return true;
}

}  // namespace opweave
