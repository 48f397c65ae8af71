// Micro-benchmark of the GEMM building blocks, single thread: each micro-kernel on L1/L2-resident
// packed panels (its ceiling), then the whole gemm() at a few sizes.
//
//   ./build/cpp-tests-release/gemm_microbench
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/gemm.h"
#include "opweave/kernels/gemm_microkernel.h"

using namespace opweave;
using namespace opweave::gemm_detail;

namespace {

// CPU time of this thread: on a shared, loaded machine it excludes the time other processes
// held the core (single-threaded measurements only).
double now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <typename T>
void bench_kernel(const MicroKernel<T>& uk) {
  const std::int64_t kc = uk.kc;
  std::vector<T, std::allocator<T>> a(static_cast<std::size_t>(kc * uk.mr * 24) + 64, T(1));
  std::vector<T> b(static_cast<std::size_t>(kc * uk.nr) + 64, T(1));
  std::vector<T> c(static_cast<std::size_t>(uk.mr * uk.nr * 24), T(0));
  T* ap = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(a.data()) + 63) / 64 * 64);
  T* bp = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(b.data()) + 63) / 64 * 64);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const int iters = 2000;
    const double t0 = now();
    for (int it = 0; it < iters; ++it) {
      for (int ir = 0; ir < 24; ++ir) {
        uk.fn(kc, ap + ir * uk.mr * kc, bp, c.data() + ir * uk.mr * uk.nr, uk.nr, true);
      }
    }
    const double dt = now() - t0;
    const double gf = 2.0 * uk.mr * uk.nr * kc * 24.0 * iters / dt / 1e9;
    if (gf > best) best = gf;
  }
  std::printf("micro-kernel %-9s %s %dx%d kc=%lld: %.1f GFLOP/s\n", uk.isa,
              sizeof(T) == 4 ? "f32" : "f64", uk.mr, uk.nr, static_cast<long long>(kc), best);
}

template <typename T>
void bench_gemm(std::int64_t n) {
  std::vector<T> a(static_cast<std::size_t>(n * n), T(1)), b(a), c(a);
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = now();
    gemm<T>(n, n, n, {a.data(), n, 1}, {b.data(), n, 1}, c.data(), n, nullptr);
    best = std::min(best, now() - t0);
  }
  std::printf("gemm %s n=%lld: %.1f GFLOP/s\n", sizeof(T) == 4 ? "f32" : "f64",
              static_cast<long long>(n), 2.0 * n * n * n / best / 1e9);
}

template <typename T>
void sweep(MicroKernel<T> uk, std::int64_t n) {
  std::vector<T> a(static_cast<std::size_t>(n * n), T(1)), b(a), c(a);
  for (std::int64_t kc : {128, 192, 256, 384}) {
    for (std::int64_t mc : {48, 96, 144, 288, 576}) {
      uk.kc = kc;
      uk.mc = mc;
      double best = 1e9;
      for (int rep = 0; rep < 3; ++rep) {
        const double t0 = now();
        packed_gemm<T>(uk, n, n, n, {a.data(), n, 1}, {b.data(), n, 1}, c.data(), n, nullptr);
        best = std::min(best, now() - t0);
      }
      std::printf("  %s %s n=%lld kc=%lld mc=%lld: %.1f GFLOP/s\n", uk.isa,
                  sizeof(T) == 4 ? "f32" : "f64", static_cast<long long>(n),
                  static_cast<long long>(kc), static_cast<long long>(mc),
                  2.0 * n * n * n / best / 1e9);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    const std::int64_t n = std::atoll(argv[1]);
    if (cpu_info().has_avx512f) {
      sweep(avx512_kernel_f32(), n);
      sweep(avx512_kernel_f64(), n);
    }
    return 0;
  }
  const CpuInfo info = cpu_info();
  bench_kernel(portable_kernel_f32());
  if (info.has_avx2 && info.has_fma) {
    bench_kernel(avx2_kernel_f32());
    bench_kernel(avx2_kernel_f64());
  }
  if (info.has_avx512f) {
    bench_kernel(avx512_kernel_f32());
    bench_kernel(avx512_kernel_f64());
  }
  for (std::int64_t n : {256, 1024, 2048}) {
    bench_gemm<float>(n);
    bench_gemm<double>(n);
  }
  return 0;
}
