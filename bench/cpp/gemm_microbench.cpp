// Micro-benchmark of the GEMM building blocks, single thread: each micro-kernel on L1/L2-resident
// packed panels (its ceiling), then the whole gemm() at a few sizes.
//
//   ./build/cpp-tests-release/gemm_microbench
//   ./build/cpp-tests-release/gemm_microbench 2048 f64 128,192,256 96,144 512,1024  # sweep
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
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

std::vector<std::int64_t> parse_list(const char* text) {
  std::vector<std::int64_t> out;
  for (char* end = nullptr;; text = end) {
    const long long v = std::strtoll(text, &end, 10);
    if (end == text) break;
    out.push_back(v);
    if (*end == ',') ++end;
  }
  return out;
}

// Times packed_gemm over a grid of (kc, mc, nc); the median of many runs per point.
template <typename T>
void sweep(MicroKernel<T> uk, std::int64_t n, const std::vector<std::int64_t>& kcs,
           const std::vector<std::int64_t>& mcs, const std::vector<std::int64_t>& ncs) {
  std::vector<T> a(static_cast<std::size_t>(n * n), T(1)), b(a), c(a);
  // ~0.3 s of work per point (odd count, 5..301 runs): the median needs many runs when loaded.
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  const int reps = std::max(5, std::min(301, static_cast<int>(3e10 / flops) | 1));
  for (std::int64_t kc : kcs) {
    for (std::int64_t mc : mcs) {
      for (std::int64_t nc : ncs) {
        uk.kc = kc;
        uk.mc = mc;
        uk.nc = nc;
        std::vector<double> times;
        for (int rep = 0; rep < reps; ++rep) {
          const double t0 = now();
          packed_gemm<T>(uk, n, n, n, {a.data(), n, 1}, {b.data(), n, 1}, c.data(), n, nullptr);
          times.push_back(now() - t0);
        }
        std::sort(times.begin(), times.end());
        std::printf("  %s %s n=%lld kc=%lld mc=%lld nc=%lld: %.1f GFLOP/s (median of %d)\n", uk.isa,
                    sizeof(T) == 4 ? "f32" : "f64", static_cast<long long>(n),
                    static_cast<long long>(kc), static_cast<long long>(mc),
                    static_cast<long long>(nc), 2.0 * n * n * n / times[times.size() / 2] / 1e9,
                    reps);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    // gemm_microbench N [f32|f64] [kc,kc,..] [mc,..] [nc,..]: block-size sweep of the best kernel.
    const std::int64_t n = std::atoll(argv[1]);
    const bool f64 = argc > 2 && argv[2][0] == 'f' && argv[2][1] == '6';
    const auto kcs = parse_list(argc > 3 ? argv[3] : "128,192,256,384");
    const auto mcs = parse_list(argc > 4 ? argv[4] : "48,96,144,288,576");
    if (f64) {
      const auto& uk = best_kernel_f64();
      sweep(uk, n, kcs, mcs, parse_list(argc > 5 ? argv[5] : std::to_string(uk.nc).c_str()));
    } else {
      const auto& uk = best_kernel_f32();
      sweep(uk, n, kcs, mcs, parse_list(argc > 5 ? argv[5] : std::to_string(uk.nc).c_str()));
    }
    return 0;
  }
  const IsaFlags isa = isa_flags();
  bench_kernel(portable_kernel_f32());
  if (isa.can_run_avx2_files()) {
    bench_kernel(avx2_kernel_f32());
    bench_kernel(avx2_kernel_f64());
  }
  if (isa.can_run_avx512_files()) {
    bench_kernel(avx512_kernel_f32());
    bench_kernel(avx512_kernel_f64());
  }
  for (std::int64_t n : {256, 1024, 2048}) {
    bench_gemm<float>(n);
    bench_gemm<double>(n);
  }
  return 0;
}
