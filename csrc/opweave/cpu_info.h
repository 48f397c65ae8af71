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
  // Best kernel instruction set usable (IsaFlags::can_run_*_files): "avx512", "avx2+fma",
  // "portable".
  std::string isa;
};

// Re-reads affinity and quota each call (they can change at run time).
CpuInfo cpu_info();

// Instruction-set extensions the CPU offers *and* the OS enables: an AVX or AVX-512 flag is set
// only when XCR0 says the OS saves the wider register state (YMM; opmask + ZMM for AVX-512), as
// an instruction touching state the OS does not save faults like one the CPU lacks.
struct IsaFlags {
  bool popcnt = false;
  bool avx2 = false;  // also requires AVX
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512bw = false;

  // Kernel files are compiled with wider flags (CMakeLists.txt) and the compiler may use any
  // instruction those flags enable, so a file may run only when the CPU has every one of them.
  // *_avx2.cpp: -mavx2 -mfma -mf16c (-mavx2 also enables POPCNT).
  bool can_run_avx2_files() const noexcept { return popcnt && avx2 && fma && f16c; }
  // *_avx512.cpp: -mavx512f -mavx512dq -mavx512vl -mavx512bw -mavx2 -mfma.
  bool can_run_avx512_files() const noexcept {
    return popcnt && avx2 && fma && avx512f && avx512dq && avx512vl && avx512bw;
  }
};

// The instruction sets this CPU and OS support (CPUID + XGETBV, read on each call: two CPUID
// leaves, cheap next to the load-time and per-query calls it serves). Free of lazy static
// initialisation, so load-time initialisers may call it (see fork_guard.h for why kernels choose
// at load time).
IsaFlags isa_flags() noexcept;

// The decoding behind isa_flags(), for tests: leaf1_ecx = CPUID.(EAX=1):ECX, leaf7_ebx =
// CPUID.(EAX=7,ECX=0):EBX, xcr0 = XGETBV(0), which is only read (and only meaningful) when
// leaf1_ecx has OSXSAVE; pass 0 otherwise.
IsaFlags decode_isa_flags(unsigned leaf1_ecx, unsigned leaf7_ebx, unsigned long long xcr0) noexcept;

}  // namespace opweave
