// What this process may run on: CPU count seen through affinity and the cgroup CPU quota, and the
// instruction sets the CPU offers. Read once, cached; thread-safe.
#pragma once

#include <string>

namespace opweave {

struct CpuInfo {
  int online_cpus = 1;           // CPUs the machine has online
  int affinity_cpus = 1;         // CPUs in this process's sched_getaffinity mask
  double cgroup_quota_cpus = 0;  // cgroup CPU quota in CPUs (0 = no quota)
  std::string cgroup_error;      // why a cgroup file was ignored ("" = none was)
  int available_cpus = 1;        // what "0 = the system picks" means: min(affinity, ceil(quota))
  bool has_avx2 = false;
  bool has_fma = false;
  bool has_avx512f = false;
  // Best kernel instruction set usable (IsaFlags::can_run_*_files): "avx512", "avx2+fma",
  // "portable".
  std::string isa;
};

// Re-reads affinity and quota each call (they can change at run time). The quota is
// cgroup_quota_cpus("/sys/fs/cgroup", "/proc/self/cgroup"); for tests only, the environment
// variables OPWEAVE_CGROUP_ROOT and OPWEAVE_PROC_SELF_CGROUP replace those two paths (a fake tree
// lets a subprocess test see a quota the machine does not have).
CpuInfo cpu_info();

// The CPU quota, in CPUs (0 = none), of the cgroup this process is in: the smallest quota from
// its own cgroup up to the root of the hierarchy, since every ancestor's quota also applies.
//   proc_self_cgroup: a file in the format of /proc/self/cgroup ("<id>:<controllers>:<path>"
//     lines). cgroup v2: the "0::<path>" line, quota in <cgroup_root><path>/cpu.max
//     ("<quota> <period>" or "max <period>"). cgroup v1: the line whose controllers include
//     "cpu", quota in <cgroup_root>/cpu/<path>/cpu.cfs_quota_us and cpu.cfs_period_us (-1 = none;
//     the mount may be named "cpu,cpuacct"). Both are read (a hybrid host has both).
//   A cgroup directory that does not exist under the root (a container whose mount starts at its
//     own cgroup while the file shows the host's path) is read at the mount's root instead. A
//     missing or unreadable file, or a missing proc_self_cgroup (then only the root is read), is
//     no quota. A file that is not a regular file (a device, a FIFO) or is over 64 KiB is not read
//     (no quota from it), and *error (when given) says which and why. Thread-safe.
//   cgroup_quota_cpus("/sys/fs/cgroup", "/proc/self/cgroup")  // e.g. 1.5 under CPUQuota=150%
double cgroup_quota_cpus(const std::string& cgroup_root, const std::string& proc_self_cgroup,
                         std::string* error = nullptr);

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
