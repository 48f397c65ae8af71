// AVX-512F micro-kernels: float32 12x32 and float64 12x16. 24 zmm accumulators (12 rows x 2
// vectors) + 2 B vectors + 1 broadcast A value = 27 of the 32 zmm registers. Per k step: 2
// loads, 12 broadcasts (load-port uops), 24 FMAs. Why 12 rows and not the AVX2 kernels' 6: with
// 6 rows a k step is 12 FMAs + 8 loads + 4 loop uops = 24 uops for 6 cycles of FMA work, which
// saturates a 4-wide front end before the two FMA ports; 12 rows give 38 uops per 12 cycles
// (measured: 6x32 ran at ~80% of FMA peak, 12x32 runs close to it). Compiled with the AVX-512
// flags; called only when cpu_info() reports avx512f (and AVX2+FMA).
#include <immintrin.h>

#include "opweave/kernels/gemm_microkernel.h"

namespace opweave::gemm_detail {
namespace {

constexpr int kMr = 12;

// Requests the C tile (kMr rows of row_bytes, two cache lines each) before the k loop: for large
// n the tile's rows are 8+ KiB apart and not in cache, and the ~2000-cycle k loop hides the
// misses that the final load-add-store would otherwise wait for (~10% at n = 2048).
template <typename T>
inline void prefetch_c_tile(const T* c, std::int64_t ldc, std::size_t row_bytes) {
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    const char* row = reinterpret_cast<const char*>(c + i * ldc);
    _mm_prefetch(row, _MM_HINT_T0);
    _mm_prefetch(row + row_bytes - 1, _MM_HINT_T0);
  }
}

// The accumulator arrays are indexed only by compile-time constants after unrolling, so the
// compiler keeps them in registers (checked in the disassembly: no spills in the k loop).
void kernel_f32_12x32(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                      bool accumulate) {
  prefetch_c_tile(c, ldc, 32 * sizeof(float));
  __m512 lo[kMr], hi[kMr];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      lo[i] = _mm512_fmadd_ps(av, b0, lo[i]);
      hi[i] = _mm512_fmadd_ps(av, b1, hi[i]);
    }
    a += kMr;
    b += 32;
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    float* row = c + i * ldc;
    if (accumulate) {
      lo[i] = _mm512_add_ps(_mm512_loadu_ps(row), lo[i]);
      hi[i] = _mm512_add_ps(_mm512_loadu_ps(row + 16), hi[i]);
    }
    _mm512_storeu_ps(row, lo[i]);
    _mm512_storeu_ps(row + 16, hi[i]);
  }
}

void kernel_f64_12x16(std::int64_t kc, const double* a, const double* b, double* c,
                      std::int64_t ldc, bool accumulate) {
  prefetch_c_tile(c, ldc, 16 * sizeof(double));
  __m512d lo[kMr], hi[kMr];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) lo[i] = hi[i] = _mm512_setzero_pd();
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512d b0 = _mm512_load_pd(b);
    const __m512d b1 = _mm512_load_pd(b + 8);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const __m512d av = _mm512_set1_pd(a[i]);
      lo[i] = _mm512_fmadd_pd(av, b0, lo[i]);
      hi[i] = _mm512_fmadd_pd(av, b1, hi[i]);
    }
    a += kMr;
    b += 16;
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    double* row = c + i * ldc;
    if (accumulate) {
      lo[i] = _mm512_add_pd(_mm512_loadu_pd(row), lo[i]);
      hi[i] = _mm512_add_pd(_mm512_loadu_pd(row + 8), hi[i]);
    }
    _mm512_storeu_pd(row, lo[i]);
    _mm512_storeu_pd(row + 8, hi[i]);
  }
}

}  // namespace

// KC=256: the 256 x 32 float B micro-panel (32 KiB) stays in the 48 KiB L1d next to the
// streaming A micro-panel (12 x 256 x 4 = 12 KiB); a 256-deep product runs as one K block (the
// driver balances longer K into equal blocks <= 256). MC=144 rows: 144 KiB of packed A in the
// 2 MiB L2. NC=4096 bounds the B panel (KC x NC, 4 MiB) so it stays in L3.
MicroKernel<float> avx512_kernel_f32() {
  return {kMr, 32, 256, 144, 4096, &kernel_f32_12x32, "avx512"};
}
// float64: half the columns, so the same bytes per B micro-panel at the same KC.
MicroKernel<double> avx512_kernel_f64() {
  return {kMr, 16, 256, 144, 4096, &kernel_f64_12x16, "avx512"};
}

}  // namespace opweave::gemm_detail
