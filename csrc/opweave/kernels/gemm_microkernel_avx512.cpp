// AVX-512F micro-kernels: float32 12x32 and float64 12x16. 24 zmm accumulators (12 rows x 2
// vectors) + 2 B vectors + 1 broadcast A value = 27 of the 32 zmm registers. Per k step: 2
// loads, 12 broadcasts (load-port uops), 24 FMAs. Why 12 rows and not the AVX2 kernels' 6: with
// 6 rows a k step is 12 FMAs + 8 loads + 4 loop uops = 24 uops for 6 cycles of FMA work, which
// saturates a 4-wide front end before the two FMA ports; 12 rows give 38 uops per 12 cycles
// (measured: 6x32 ran at ~80% of FMA peak, 12x32 runs close to it). Compiled with the AVX-512
// flags; called only when cpu_info() reports avx512f (and AVX2+FMA).
// x86-64 only: other architectures compile this file to nothing (gemm.cpp calls it only
// under OPWEAVE_X86_64), since <immintrin.h> exists only for x86.
#if defined(OPWEAVE_X86_64)
#include <immintrin.h>

#include <cstddef>

#include "opweave/kernels/gemm_few_cols.h"
#include "opweave/kernels/gemm_gemv.h"
#include "opweave/kernels/gemm_microkernel.h"
#include "opweave/kernels/gemm_runs.h"

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
// kRows = false: a is a packed micro-panel (a[p * kMr + i], lda = 0), or with lda > 0 the
// columns of a column-major A in place (a[p * lda + i]). kRows = true: a points at row 0 of an
// unpacked row-major A block (a[i * lda + p]). The driver reads A in place where packing it would
// cost more than it saves. Same FMA chain every way, so the same bits. kPrefetchA (columns in
// place): each step's kMr values are a fresh line lda apart, which the hardware prefetchers
// follow late on the first pass over a panel; ask for them kPrefetchSteps steps ahead.
constexpr int kPrefetchSteps = 16;
template <bool kRows, bool kPrefetchA = false>
inline void kernel_f32_12x32(std::int64_t kc, const float* a, std::int64_t lda, const float* b,
                             float* c, std::int64_t ldc, bool accumulate) {
  prefetch_c_tile(c, ldc, 32 * sizeof(float));
  const std::int64_t a_step = kRows || lda == 0 ? kMr : lda;
  // Four row bases three rows apart: row 3q + r is base_q + r * lda, an addressing mode with
  // one index register (no pointer spills in the k loop).
  const float* a0 = a;
  const float* a3 = a + 3 * lda;
  const float* a6 = a + 6 * lda;
  const float* a9 = a + 9 * lda;
  __m512 lo[kMr], hi[kMr];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) lo[i] = hi[i] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    if (kPrefetchA) {
      const char* ahead = reinterpret_cast<const char*>(a + kPrefetchSteps * a_step);
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + kMr * sizeof(float) - 1, _MM_HINT_T0);
    }
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const float* base = i < 3 ? a0 : i < 6 ? a3 : i < 9 ? a6 : a9;
      const __m512 av = _mm512_set1_ps(kRows ? base[(i % 3) * lda] : a[i]);
      lo[i] = _mm512_fmadd_ps(av, b0, lo[i]);
      hi[i] = _mm512_fmadd_ps(av, b1, hi[i]);
    }
    if (kRows) {
      ++a0, ++a3, ++a6, ++a9;
    } else {
      a += a_step;
    }
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

template <bool kRows>
inline void kernel_f64_12x16(std::int64_t kc, const double* a, std::int64_t lda, const double* b,
                             double* c, std::int64_t ldc, bool accumulate) {
  prefetch_c_tile(c, ldc, 16 * sizeof(double));
  const std::int64_t a_step = kRows || lda == 0 ? kMr : lda;
  const double* a0 = a;
  const double* a3 = a + 3 * lda;
  const double* a6 = a + 6 * lda;
  const double* a9 = a + 9 * lda;
  __m512d lo[kMr], hi[kMr];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) lo[i] = hi[i] = _mm512_setzero_pd();
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512d b0 = _mm512_load_pd(b);
    const __m512d b1 = _mm512_load_pd(b + 8);
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      const double* base = i < 3 ? a0 : i < 6 ? a3 : i < 9 ? a6 : a9;
      const __m512d av = _mm512_set1_pd(kRows ? base[(i % 3) * lda] : a[i]);
      lo[i] = _mm512_fmadd_pd(av, b0, lo[i]);
      hi[i] = _mm512_fmadd_pd(av, b1, hi[i]);
    }
    if (kRows) {
      ++a0, ++a3, ++a6, ++a9;
    } else {
      a += a_step;
    }
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

void packed_f32(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                bool accumulate) {
  kernel_f32_12x32<false>(kc, a, 0, b, c, ldc, accumulate);
}
void cols_f32(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c,
              std::int64_t ldc, bool accumulate) {
  kernel_f32_12x32<false, true>(kc, a, lda, b, c, ldc, accumulate);
}
void rows_f32(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c,
              std::int64_t ldc, bool accumulate) {
  kernel_f32_12x32<true>(kc, a, lda, b, c, ldc, accumulate);
}
void packed_f64(std::int64_t kc, const double* a, const double* b, double* c, std::int64_t ldc,
                bool accumulate) {
  kernel_f64_12x16<false>(kc, a, 0, b, c, ldc, accumulate);
}
void cols_f64(std::int64_t kc, const double* a, std::int64_t lda, const double* b, double* c,
              std::int64_t ldc, bool accumulate) {
  kernel_f64_12x16<false>(kc, a, lda, b, c, ldc, accumulate);
}
void rows_f64(std::int64_t kc, const double* a, std::int64_t lda, const double* b, double* c,
              std::int64_t ldc, bool accumulate) {
  kernel_f64_12x16<true>(kc, a, lda, b, c, ldc, accumulate);
}

// SIMD traits for the few-rows kernel (gemm_gemv.h).
struct SimdF32 {
  using T = float;
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int kMaxRows = kMr - 1;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(T x) { return _mm512_set1_ps(x); }
  static V load(const T* p) { return _mm512_loadu_ps(p); }
  static V load(const T* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(T* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(T* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  // max(0, v) keeps its second operand when either is NaN, and 0 > -0 is false: v < 0 ? 0 : v.
  // (The maskz form: GCC 12 warns of the plain one's _mm512_undefined_ps, its bug 105593.)
  static V relu(V v) { return _mm512_maskz_max_ps(static_cast<Mask>(-1), zero(), v); }
  static Mask mask(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
};

struct SimdF64 {
  using T = double;
  using V = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static constexpr int kMaxRows = kMr - 1;
  static V zero() { return _mm512_setzero_pd(); }
  static V set1(T x) { return _mm512_set1_pd(x); }
  static V load(const T* p) { return _mm512_loadu_pd(p); }
  static V load(const T* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static void store(T* p, V v) { _mm512_storeu_pd(p, v); }
  static void store(T* p, V v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V add(V a, V b) { return _mm512_add_pd(a, b); }
  // max(0, v) keeps its second operand when either is NaN, and 0 > -0 is false: v < 0 ? 0 : v.
  static V relu(V v) { return _mm512_maskz_max_pd(static_cast<Mask>(-1), zero(), v); }
  static Mask mask(int lanes) { return static_cast<Mask>((1u << lanes) - 1u); }
};

void gemv_f32(int m, std::int64_t cols, std::int64_t kc, const float* a, std::int64_t ars,
              std::int64_t aks, const float* b, std::int64_t brs, std::int64_t bps, float* c,
              std::int64_t ldc, bool accumulate) {
  gemv::dispatch<SimdF32, 32>(m, cols, kc, a, ars, aks, b, brs, bps, c, ldc, accumulate);
}
void gemv_f64(int m, std::int64_t cols, std::int64_t kc, const double* a, std::int64_t ars,
              std::int64_t aks, const double* b, std::int64_t brs, std::int64_t bps, double* c,
              std::int64_t ldc, bool accumulate) {
  gemv::dispatch<SimdF64, 32>(m, cols, kc, a, ars, aks, b, brs, bps, c, ldc, accumulate);
}

void few_cols_f32(int rows, int cols, std::int64_t kc, const float* a, std::int64_t aps,
                  const float* b, std::int64_t brs, std::int64_t bcs, float* c, std::int64_t ldc,
                  bool accumulate) {
  few_cols::dispatch<SimdF32, 2>(rows, cols, kc, a, aps, b, brs, bcs, c, ldc, accumulate);
}
void few_cols_f64(int rows, int cols, std::int64_t kc, const double* a, std::int64_t aps,
                  const double* b, std::int64_t brs, std::int64_t bcs, double* c, std::int64_t ldc,
                  bool accumulate) {
  few_cols::dispatch<SimdF64, 2>(rows, cols, kc, a, aps, b, brs, bcs, c, ldc, accumulate);
}

void runs_f32(const RunsArgs<float>& x) { runs::dispatch<SimdF32, 2, kMr>(x); }
void runs_f64(const RunsArgs<double>& x) { runs::dispatch<SimdF64, 2, kMr>(x); }
// 6 rows x 4 vectors: 24 accumulators, 4 of B and the broadcast in the 32 registers.
constexpr int kWideRunsMr = 6;
void runs_wide_f32(const RunsArgs<float>& x) { runs::dispatch<SimdF32, 4, kWideRunsMr>(x); }
void runs_wide_f64(const RunsArgs<double>& x) { runs::dispatch<SimdF64, 4, kWideRunsMr>(x); }

}  // namespace

// KC=256: the 256 x 32 float B micro-panel (32 KiB) stays in the 48 KiB L1d next to the
// streaming A micro-panel (12 x 256 x 4 = 12 KiB); a 256-deep product runs as one K block (the
// driver balances longer K into equal blocks <= 256). MC=144 rows: 144 KiB of packed A in the
// 2 MiB L2. NC=4096 bounds the B panel (KC x NC, 4 MiB) so it stays in L3.
MicroKernel<float> avx512_kernel_f32() {
  MicroKernel<float> k{kMr, 32, 256, 144, 4096, &packed_f32, "avx512"};
  k.fn_rows = &rows_f32;
  k.fn_cols = &cols_f32;
  k.fn_gemv = &gemv_f32;
  k.fn_runs = &runs_f32;
  k.fn_runs_wide = &runs_wide_f32;
  k.runs_wide_mr = kWideRunsMr;
  k.runs_wide_nr = 4 * 16;
  k.fn_few_cols = &few_cols_f32;
  k.few_rows = 2 * 16;
  return k;
}
// float64: half the columns, so the same bytes per B micro-panel at the same KC. NC=1024: the B
// panel is 2 MiB (it was 8 MiB at NC=4096 and 4 MiB for n = 2048). Swept with gemm_microbench at
// n = 2048 on the loaded machine: NC=1024 beat 4096 in 6 of 6 paired runs (by 2-8 GFLOP/s, ~45),
// NC=512 was slower (more A packing); KC=192 or 384 were no better than 256 (within the noise).
MicroKernel<double> avx512_kernel_f64() {
  MicroKernel<double> k{kMr, 16, 256, 144, 1024, &packed_f64, "avx512"};
  k.fn_rows = &rows_f64;
  k.fn_cols = &cols_f64;
  k.fn_gemv = &gemv_f64;
  k.fn_runs = &runs_f64;
  k.fn_runs_wide = &runs_wide_f64;
  k.runs_wide_mr = kWideRunsMr;
  k.runs_wide_nr = 4 * 8;
  k.fn_few_cols = &few_cols_f64;
  k.few_rows = 2 * 8;
  return k;
}

}  // namespace opweave::gemm_detail

#endif  // OPWEAVE_X86_64
