// AVX2+FMA micro-kernels: float32 6x16 and float64 6x8. 12 accumulator registers (6 rows x 2
// vectors) + 2 B vectors + 1 broadcast A value = 15 of the 16 ymm registers. Per k step: 2 loads,
// 6 broadcasts, 12 FMAs; 12 independent FMA chains cover the FMA latency (4-5 cycles) on two
// ports. Compiled with -mavx2 -mfma; called only when cpu_info() reports both.
// x86-64 only: other architectures compile this file to nothing (gemm.cpp calls it only
// under OPWEAVE_X86_64), since <immintrin.h> exists only for x86.
#if defined(OPWEAVE_X86_64)
#include <immintrin.h>

#include "opweave/kernels/gemm_few_cols.h"
#include "opweave/kernels/gemm_gemv.h"
#include "opweave/kernels/gemm_microkernel.h"
#include "opweave/kernels/gemm_runs.h"

namespace opweave::gemm_detail {
namespace {

void kernel_f32_6x16(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                     bool accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
    __m256 av = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
    a += 6;
    b += 16;
  }
  auto store = [&](float* row, __m256 lo, __m256 hi) {
    if (accumulate) {
      lo = _mm256_add_ps(_mm256_loadu_ps(row), lo);
      hi = _mm256_add_ps(_mm256_loadu_ps(row + 8), hi);
    }
    _mm256_storeu_ps(row, lo);
    _mm256_storeu_ps(row + 8, hi);
  };
  store(c + 0 * ldc, c00, c01);
  store(c + 1 * ldc, c10, c11);
  store(c + 2 * ldc, c20, c21);
  store(c + 3 * ldc, c30, c31);
  store(c + 4 * ldc, c40, c41);
  store(c + 5 * ldc, c50, c51);
}

void kernel_f64_6x8(std::int64_t kc, const double* a, const double* b, double* c, std::int64_t ldc,
                    bool accumulate) {
  __m256d c00 = _mm256_setzero_pd(), c01 = _mm256_setzero_pd();
  __m256d c10 = _mm256_setzero_pd(), c11 = _mm256_setzero_pd();
  __m256d c20 = _mm256_setzero_pd(), c21 = _mm256_setzero_pd();
  __m256d c30 = _mm256_setzero_pd(), c31 = _mm256_setzero_pd();
  __m256d c40 = _mm256_setzero_pd(), c41 = _mm256_setzero_pd();
  __m256d c50 = _mm256_setzero_pd(), c51 = _mm256_setzero_pd();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m256d b0 = _mm256_load_pd(b);
    const __m256d b1 = _mm256_load_pd(b + 4);
    __m256d av = _mm256_broadcast_sd(a + 0);
    c00 = _mm256_fmadd_pd(av, b0, c00);
    c01 = _mm256_fmadd_pd(av, b1, c01);
    av = _mm256_broadcast_sd(a + 1);
    c10 = _mm256_fmadd_pd(av, b0, c10);
    c11 = _mm256_fmadd_pd(av, b1, c11);
    av = _mm256_broadcast_sd(a + 2);
    c20 = _mm256_fmadd_pd(av, b0, c20);
    c21 = _mm256_fmadd_pd(av, b1, c21);
    av = _mm256_broadcast_sd(a + 3);
    c30 = _mm256_fmadd_pd(av, b0, c30);
    c31 = _mm256_fmadd_pd(av, b1, c31);
    av = _mm256_broadcast_sd(a + 4);
    c40 = _mm256_fmadd_pd(av, b0, c40);
    c41 = _mm256_fmadd_pd(av, b1, c41);
    av = _mm256_broadcast_sd(a + 5);
    c50 = _mm256_fmadd_pd(av, b0, c50);
    c51 = _mm256_fmadd_pd(av, b1, c51);
    a += 6;
    b += 8;
  }
  auto store = [&](double* row, __m256d lo, __m256d hi) {
    if (accumulate) {
      lo = _mm256_add_pd(_mm256_loadu_pd(row), lo);
      hi = _mm256_add_pd(_mm256_loadu_pd(row + 4), hi);
    }
    _mm256_storeu_pd(row, lo);
    _mm256_storeu_pd(row + 4, hi);
  };
  store(c + 0 * ldc, c00, c01);
  store(c + 1 * ldc, c10, c11);
  store(c + 2 * ldc, c20, c21);
  store(c + 3 * ldc, c30, c31);
  store(c + 4 * ldc, c40, c41);
  store(c + 5 * ldc, c50, c51);
}

// SIMD traits for the few-rows kernel (gemm_gemv.h); masks are lane-index compares.
struct SimdF32 {
  using T = float;
  using V = __m256;
  using Mask = __m256i;
  static constexpr int kLanes = 8;
  static constexpr int kMaxRows = 5;  // MR = 6
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(T x) { return _mm256_set1_ps(x); }
  static V load(const T* p) { return _mm256_loadu_ps(p); }
  static V load(const T* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static void store(T* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  // max(0, v) keeps its second operand when either is NaN, and 0 > -0 is false: v < 0 ? 0 : v.
  static V relu(V v) { return _mm256_max_ps(zero(), v); }
  static Mask mask(int lanes) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
};

struct SimdF64 {
  using T = double;
  using V = __m256d;
  using Mask = __m256i;
  static constexpr int kLanes = 4;
  static constexpr int kMaxRows = 5;
  static V zero() { return _mm256_setzero_pd(); }
  static V set1(T x) { return _mm256_set1_pd(x); }
  static V load(const T* p) { return _mm256_loadu_pd(p); }
  static V load(const T* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static void store(T* p, V v, Mask m) { _mm256_maskstore_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  // max(0, v) keeps its second operand when either is NaN, and 0 > -0 is false: v < 0 ? 0 : v.
  static V relu(V v) { return _mm256_max_pd(zero(), v); }
  static Mask mask(int lanes) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(lanes), _mm256_setr_epi64x(0, 1, 2, 3));
  }
};

void gemv_f32(int m, std::int64_t cols, std::int64_t kc, const float* a, std::int64_t ars,
              std::int64_t aks, const float* b, std::int64_t brs, std::int64_t bps, float* c,
              std::int64_t ldc, bool accumulate) {
  gemv::dispatch<SimdF32, 16>(m, cols, kc, a, ars, aks, b, brs, bps, c, ldc, accumulate);
}
void gemv_f64(int m, std::int64_t cols, std::int64_t kc, const double* a, std::int64_t ars,
              std::int64_t aks, const double* b, std::int64_t brs, std::int64_t bps, double* c,
              std::int64_t ldc, bool accumulate) {
  gemv::dispatch<SimdF64, 16>(m, cols, kc, a, ars, aks, b, brs, bps, c, ldc, accumulate);
}

void few_cols_f32(int rows, int cols, std::int64_t kc, const float* a, std::int64_t aps,
                  const float* b, std::int64_t brs, std::int64_t bcs, float* c, std::int64_t ldc,
                  bool accumulate) {
  few_cols::dispatch<SimdF32, 1>(rows, cols, kc, a, aps, b, brs, bcs, c, ldc, accumulate);
}
void few_cols_f64(int rows, int cols, std::int64_t kc, const double* a, std::int64_t aps,
                  const double* b, std::int64_t brs, std::int64_t bcs, double* c, std::int64_t ldc,
                  bool accumulate) {
  few_cols::dispatch<SimdF64, 1>(rows, cols, kc, a, aps, b, brs, bcs, c, ldc, accumulate);
}

void runs_f32(const RunsArgs<float>& x) { runs::dispatch<SimdF32, 2, SimdF32::kMaxRows + 1>(x); }
void runs_f64(const RunsArgs<double>& x) { runs::dispatch<SimdF64, 2, SimdF64::kMaxRows + 1>(x); }

}  // namespace

// KC=256: a 256 x 16 float B micro-panel is 16 KiB, a third of the 48 KiB L1d. MC=144 floats x
// 256 = 144 KiB of packed A stays in L2. NC=4080 (a multiple of 16 and of 6*... near 4K) bounds the
// B panel at 4 MiB, kept in L3.
MicroKernel<float> avx2_kernel_f32() {
  MicroKernel<float> k{6, 16, 256, 144, 4080, &kernel_f32_6x16, "avx2+fma"};
  k.fn_gemv = &gemv_f32;
  k.fn_runs = &runs_f32;
  k.fn_few_cols = &few_cols_f32;
  k.few_rows = 8;
  return k;
}
MicroKernel<double> avx2_kernel_f64() {
  MicroKernel<double> k{6, 8, 256, 72, 4080, &kernel_f64_6x8, "avx2+fma"};
  k.fn_gemv = &gemv_f64;
  k.fn_runs = &runs_f64;
  k.fn_few_cols = &few_cols_f64;
  k.few_rows = 4;
  return k;
}

}  // namespace opweave::gemm_detail

#endif  // OPWEAVE_X86_64
