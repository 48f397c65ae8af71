// What this process may run on: CPU count seen through affinity and the cgroup CPU quota, and the
// instruction sets the CPU offers. Read once, cached; thread-safe.
#pragma once

#include <string>

namespace opweave {

struct CpuInfo {
  int online_cpus = 1;           // CPUs the machine has online
  int affinity_cpus = 1;         // CPUs in this process's sched_getaffinity mask
  double cgroup_quota_cpus = 0;  // cgroup CPU quota in CPUs (0 = no quota)
  int available_cpus = 1;        // what "0 = the system picks" means: min(affinity, ceil(quota))
  bool has_avx2 = false;
  bool has_fma = false;
  bool has_avx512f = false;
  std::string isa;  // best kernel instruction set usable: "avx512", "avx2+fma", "portable"
};

// Re-reads affinity and quota each call (they can change at run time).
CpuInfo cpu_info();

struct IsaFlags {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
};

// The instruction sets this CPU and OS support. Cheap, and free of lazy static initialisation, so
// load-time initialisers may call it (see fork_guard.h for why kernels choose at load time).
IsaFlags isa_flags() noexcept;

}  // namespace opweave
