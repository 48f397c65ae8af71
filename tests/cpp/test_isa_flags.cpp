// CPU feature detection (cpu_info.h): a kernel file compiled with wider flags is used only when
// the CPU has every feature of those flags and the OS saves the registers they use.
#include <cstdio>
#include <string>

#include "opweave/cpu_info.h"
#include "opweave/kernels/gemm.h"
#include "testing.h"

using namespace opweave;

namespace {

// CPUID.1:ECX bits.
constexpr unsigned kFma = 1u << 12, kPopcnt = 1u << 23, kOsxsave = 1u << 27, kAvx = 1u << 28,
                   kF16c = 1u << 29;
constexpr unsigned kLeaf1Avx2Cpu = kFma | kPopcnt | kOsxsave | kAvx | kF16c;
// CPUID.7.0:EBX bits.
constexpr unsigned kAvx2 = 1u << 5, kAvx512f = 1u << 16, kAvx512dq = 1u << 17, kAvx512bw = 1u << 30,
                   kAvx512vl = 1u << 31;
constexpr unsigned kLeaf7Avx512Cpu = kAvx2 | kAvx512f | kAvx512dq | kAvx512bw | kAvx512vl;
// XCR0: x87 + SSE + YMM, and + opmask + ZMM_Hi256 + Hi16_ZMM.
constexpr unsigned long long kXcr0Ymm = 0x7, kXcr0Zmm = 0xE7;

}  // namespace

OPWEAVE_TEST(a_full_avx512_cpu_whose_os_saves_zmm_state_runs_both_kernel_families) {
  const IsaFlags f = decode_isa_flags(kLeaf1Avx2Cpu, kLeaf7Avx512Cpu, kXcr0Zmm);
  OPWEAVE_CHECK(f.can_run_avx512_files());
  OPWEAVE_CHECK(f.can_run_avx2_files());
}

OPWEAVE_TEST(avx512f_alone_is_not_enough_for_files_built_with_dq_vl_and_bw) {
  for (unsigned missing : {kAvx512dq, kAvx512vl, kAvx512bw}) {
    const IsaFlags f = decode_isa_flags(kLeaf1Avx2Cpu, kLeaf7Avx512Cpu & ~missing, kXcr0Zmm);
    OPWEAVE_CHECK(f.avx512f);
    OPWEAVE_CHECK(!f.can_run_avx512_files());
    OPWEAVE_CHECK(f.can_run_avx2_files());  // the AVX2 kernels serve such a CPU
  }
  OPWEAVE_CHECK(
      !decode_isa_flags(kLeaf1Avx2Cpu, kAvx2 | kAvx512f, kXcr0Zmm).can_run_avx512_files());
}

OPWEAVE_TEST(avx512_in_cpuid_is_unusable_when_the_os_does_not_save_zmm_state) {
  for (unsigned long long xcr0 :
       {kXcr0Ymm, kXcr0Zmm & ~0x20ull, kXcr0Zmm & ~0x40ull, kXcr0Zmm & ~0x80ull}) {
    const IsaFlags f = decode_isa_flags(kLeaf1Avx2Cpu, kLeaf7Avx512Cpu, xcr0);
    OPWEAVE_CHECK(!f.avx512f && !f.avx512dq && !f.avx512vl && !f.avx512bw);
    OPWEAVE_CHECK(!f.can_run_avx512_files());
    OPWEAVE_CHECK(f.can_run_avx2_files());
  }
}

OPWEAVE_TEST(avx_in_cpuid_is_unusable_without_osxsave_or_saved_ymm_state) {
  // No OSXSAVE: XCR0 cannot be read (isa_flags() passes 0), whatever CPUID says.
  const IsaFlags no_osxsave = decode_isa_flags(kLeaf1Avx2Cpu & ~kOsxsave, kLeaf7Avx512Cpu, 0);
  OPWEAVE_CHECK(!no_osxsave.avx2 && !no_osxsave.fma && !no_osxsave.f16c && !no_osxsave.avx512f);
  OPWEAVE_CHECK(no_osxsave.popcnt);  // not an AVX feature: no OS state needed
  // OSXSAVE, but the OS saves only x87 + SSE state.
  const IsaFlags sse_only = decode_isa_flags(kLeaf1Avx2Cpu, kLeaf7Avx512Cpu, 0x3);
  OPWEAVE_CHECK(!sse_only.can_run_avx2_files() && !sse_only.can_run_avx512_files());
}

OPWEAVE_TEST(avx2_files_need_fma_f16c_and_popcnt_too) {
  for (unsigned missing : {kFma, kF16c, kPopcnt, kAvx}) {
    const IsaFlags f = decode_isa_flags(kLeaf1Avx2Cpu & ~missing, kAvx2, kXcr0Ymm);
    OPWEAVE_CHECK(!f.can_run_avx2_files());
  }
  OPWEAVE_CHECK(decode_isa_flags(kLeaf1Avx2Cpu, kAvx2, kXcr0Ymm).can_run_avx2_files());
}

OPWEAVE_TEST(this_cpu_reads_like_the_compilers_own_detection) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // libgcc / compiler-rt also require the OS to save the register state for these. Zig's own
  // compiler-rt (the portable wheel's toolchain) leaves the table empty: every x86-64 CPU has SSE2,
  // so a "no" for it means there is no oracle to compare with, not a disagreement.
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse2")) {
    std::printf("  the compiler's runtime does not detect CPU features; nothing to compare\n");
    return;
  }
  const IsaFlags f = isa_flags();
  OPWEAVE_CHECK_EQ(f.avx2, static_cast<bool>(__builtin_cpu_supports("avx2")));
  OPWEAVE_CHECK_EQ(f.fma, static_cast<bool>(__builtin_cpu_supports("fma")));
  OPWEAVE_CHECK_EQ(f.f16c, static_cast<bool>(__builtin_cpu_supports("f16c")));
  OPWEAVE_CHECK_EQ(f.popcnt, static_cast<bool>(__builtin_cpu_supports("popcnt")));
  OPWEAVE_CHECK_EQ(f.avx512f, static_cast<bool>(__builtin_cpu_supports("avx512f")));
  OPWEAVE_CHECK_EQ(f.avx512dq, static_cast<bool>(__builtin_cpu_supports("avx512dq")));
  OPWEAVE_CHECK_EQ(f.avx512vl, static_cast<bool>(__builtin_cpu_supports("avx512vl")));
  OPWEAVE_CHECK_EQ(f.avx512bw, static_cast<bool>(__builtin_cpu_supports("avx512bw")));
#endif
}

OPWEAVE_TEST(the_gemm_kernel_and_parallel_info_follow_the_same_rule) {
  const IsaFlags f = isa_flags();
  const std::string expected = f.can_run_avx512_files() ? "avx512"
                               : f.can_run_avx2_files() ? "avx2+fma"
                                                        : "portable";
#if defined(OPWEAVE_X86_64)
  OPWEAVE_CHECK_EQ(std::string(gemm_detail::gemm_isa(false)), expected);
  OPWEAVE_CHECK_EQ(std::string(gemm_detail::gemm_isa(true)), expected);
#endif
  OPWEAVE_CHECK_EQ(cpu_info().isa, expected);
}

OPWEAVE_TEST_MAIN()
