#include "opweave/cpu_info.h"

#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace opweave {
namespace {

// cgroup v2: "max 100000" or "<quota> <period>"; v1: separate quota/period files.
double read_cgroup_quota() {
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  if (v2) {
    std::string quota;
    double period = 0;
    if (v2 >> quota >> period && quota != "max" && period > 0) return std::stod(quota) / period;
    return 0;
  }
  std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::ifstream p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota = -1, period = 0;
  if (q >> quota && p >> period && quota > 0 && period > 0) return quota / period;
  return 0;
}

}  // namespace

IsaFlags isa_flags() noexcept {
  IsaFlags f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Idempotent and cheap after the first call (libgcc caches the CPUID results in __cpu_model).
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
#endif
  return f;
}

CpuInfo cpu_info() {
  const IsaFlags isa = isa_flags();
  CpuInfo info;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  info.online_cpus = online > 0 ? static_cast<int>(online) : 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  info.affinity_cpus =
      sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : info.online_cpus;
  if (info.affinity_cpus < 1) info.affinity_cpus = 1;
  info.cgroup_quota_cpus = read_cgroup_quota();
  info.available_cpus = info.affinity_cpus;
  if (info.cgroup_quota_cpus > 0) {
    const int quota = static_cast<int>(std::ceil(info.cgroup_quota_cpus));
    if (quota < info.available_cpus) info.available_cpus = quota < 1 ? 1 : quota;
  }
  info.has_avx2 = isa.avx2;
  info.has_fma = isa.fma;
  info.has_avx512f = isa.avx512f;
  info.isa = isa.avx512f && isa.avx2 && isa.fma ? "avx512"
             : isa.avx2 && isa.fma              ? "avx2+fma"
                                                : "portable";
  return info;
}

}  // namespace opweave
