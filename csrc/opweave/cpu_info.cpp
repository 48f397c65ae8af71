#include "opweave/cpu_info.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
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

IsaFlags decode_isa_flags(unsigned leaf1_ecx, unsigned leaf7_ebx,
                          unsigned long long xcr0) noexcept {
  auto bit = [](unsigned reg, int b) { return ((reg >> b) & 1u) != 0; };
  // XGETBV exists (and xcr0 means something) only when the OS set CR4.OSXSAVE.
  const bool osxsave = bit(leaf1_ecx, 27);
  // XCR0 bits: 1 SSE, 2 AVX (upper YMM); 5 opmask, 6 ZMM_Hi256, 7 Hi16_ZMM.
  const bool os_ymm = osxsave && (xcr0 & 0x6) == 0x6;
  const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0;
  IsaFlags f;
  f.popcnt = bit(leaf1_ecx, 23);
  const bool avx = os_ymm && bit(leaf1_ecx, 28);
  f.fma = avx && bit(leaf1_ecx, 12);
  f.f16c = avx && bit(leaf1_ecx, 29);
  f.avx2 = avx && bit(leaf7_ebx, 5);
  f.avx512f = os_zmm && bit(leaf7_ebx, 16);
  f.avx512dq = f.avx512f && bit(leaf7_ebx, 17);
  f.avx512bw = f.avx512f && bit(leaf7_ebx, 30);
  f.avx512vl = f.avx512f && bit(leaf7_ebx, 31);
  return f;
}

IsaFlags isa_flags() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx1 = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx1, &edx) == 0) return {};
  unsigned ebx7 = 0, ecx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx7, &ecx, &edx) == 0) ebx7 = 0;  // no leaf 7: no AVX2
  unsigned long long xcr0 = 0;
  if ((ecx1 >> 27) & 1u) {  // OSXSAVE: XGETBV is available (it faults otherwise)
    unsigned lo = 0, hi = 0;
    // Encoded as a plain instruction: the _xgetbv intrinsic would need -mxsave on this file.
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  return decode_isa_flags(ecx1, ebx7, xcr0);
#else
  return {};
#endif
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
  info.isa = isa.can_run_avx512_files() ? "avx512"
             : isa.can_run_avx2_files() ? "avx2+fma"
                                        : "portable";
  return info;
}

}  // namespace opweave
