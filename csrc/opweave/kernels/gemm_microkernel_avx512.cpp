// AVX-512F micro-kernels: float32 6x32 and float64 6x16, the AVX2 kernels' register layout on
// 512-bit vectors (12 zmm accumulators, 2 B vectors, 1 broadcast). Per k step: 2 loads, 6
// broadcasts, 12 FMAs, so the two FMA ports, not the loads, bound the speed. Compiled with the
// AVX-512 flags; called only when cpu_info() reports avx512f (and AVX2+FMA).
#include <immintrin.h>

#include "opweave/kernels/gemm_microkernel.h"

namespace opweave::gemm_detail {
namespace {

void kernel_f32_6x32(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                     bool accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps();
  __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
  __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps();
  __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
  __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps();
  __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
    __m512 av = _mm512_set1_ps(a[0]);
    c00 = _mm512_fmadd_ps(av, b0, c00);
    c01 = _mm512_fmadd_ps(av, b1, c01);
    av = _mm512_set1_ps(a[1]);
    c10 = _mm512_fmadd_ps(av, b0, c10);
    c11 = _mm512_fmadd_ps(av, b1, c11);
    av = _mm512_set1_ps(a[2]);
    c20 = _mm512_fmadd_ps(av, b0, c20);
    c21 = _mm512_fmadd_ps(av, b1, c21);
    av = _mm512_set1_ps(a[3]);
    c30 = _mm512_fmadd_ps(av, b0, c30);
    c31 = _mm512_fmadd_ps(av, b1, c31);
    av = _mm512_set1_ps(a[4]);
    c40 = _mm512_fmadd_ps(av, b0, c40);
    c41 = _mm512_fmadd_ps(av, b1, c41);
    av = _mm512_set1_ps(a[5]);
    c50 = _mm512_fmadd_ps(av, b0, c50);
    c51 = _mm512_fmadd_ps(av, b1, c51);
    a += 6;
    b += 32;
  }
  auto store = [&](float* row, __m512 lo, __m512 hi) {
    if (accumulate) {
      lo = _mm512_add_ps(_mm512_loadu_ps(row), lo);
      hi = _mm512_add_ps(_mm512_loadu_ps(row + 16), hi);
    }
    _mm512_storeu_ps(row, lo);
    _mm512_storeu_ps(row + 16, hi);
  };
  store(c + 0 * ldc, c00, c01);
  store(c + 1 * ldc, c10, c11);
  store(c + 2 * ldc, c20, c21);
  store(c + 3 * ldc, c30, c31);
  store(c + 4 * ldc, c40, c41);
  store(c + 5 * ldc, c50, c51);
}

void kernel_f64_6x16(std::int64_t kc, const double* a, const double* b, double* c, std::int64_t ldc,
                     bool accumulate) {
  __m512d c00 = _mm512_setzero_pd(), c01 = _mm512_setzero_pd();
  __m512d c10 = _mm512_setzero_pd(), c11 = _mm512_setzero_pd();
  __m512d c20 = _mm512_setzero_pd(), c21 = _mm512_setzero_pd();
  __m512d c30 = _mm512_setzero_pd(), c31 = _mm512_setzero_pd();
  __m512d c40 = _mm512_setzero_pd(), c41 = _mm512_setzero_pd();
  __m512d c50 = _mm512_setzero_pd(), c51 = _mm512_setzero_pd();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512d b0 = _mm512_load_pd(b);
    const __m512d b1 = _mm512_load_pd(b + 8);
    __m512d av = _mm512_set1_pd(a[0]);
    c00 = _mm512_fmadd_pd(av, b0, c00);
    c01 = _mm512_fmadd_pd(av, b1, c01);
    av = _mm512_set1_pd(a[1]);
    c10 = _mm512_fmadd_pd(av, b0, c10);
    c11 = _mm512_fmadd_pd(av, b1, c11);
    av = _mm512_set1_pd(a[2]);
    c20 = _mm512_fmadd_pd(av, b0, c20);
    c21 = _mm512_fmadd_pd(av, b1, c21);
    av = _mm512_set1_pd(a[3]);
    c30 = _mm512_fmadd_pd(av, b0, c30);
    c31 = _mm512_fmadd_pd(av, b1, c31);
    av = _mm512_set1_pd(a[4]);
    c40 = _mm512_fmadd_pd(av, b0, c40);
    c41 = _mm512_fmadd_pd(av, b1, c41);
    av = _mm512_set1_pd(a[5]);
    c50 = _mm512_fmadd_pd(av, b0, c50);
    c51 = _mm512_fmadd_pd(av, b1, c51);
    a += 6;
    b += 16;
  }
  auto store = [&](double* row, __m512d lo, __m512d hi) {
    if (accumulate) {
      lo = _mm512_add_pd(_mm512_loadu_pd(row), lo);
      hi = _mm512_add_pd(_mm512_loadu_pd(row + 8), hi);
    }
    _mm512_storeu_pd(row, lo);
    _mm512_storeu_pd(row + 8, hi);
  };
  store(c + 0 * ldc, c00, c01);
  store(c + 1 * ldc, c10, c11);
  store(c + 2 * ldc, c20, c21);
  store(c + 3 * ldc, c30, c31);
  store(c + 4 * ldc, c40, c41);
  store(c + 5 * ldc, c50, c51);
}

}  // namespace

// KC=256: a 256 x 32 float B micro-panel is 32 KiB, two thirds of the 48 KiB L1d (the A
// micro-panel, 6 KiB, streams from L2). MC=144 rows x 256 x 4 B = 144 KiB of packed A in L2.
MicroKernel<float> avx512_kernel_f32() {
  return {6, 32, 256, 144, 4064, &kernel_f32_6x32, "avx512"};
}
MicroKernel<double> avx512_kernel_f64() {
  return {6, 16, 256, 72, 4064, &kernel_f64_6x16, "avx512"};
}

}  // namespace opweave::gemm_detail
