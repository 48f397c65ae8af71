// The few-columns GEMM kernel: C[rows x cols] (+)= A[rows x kc] * B[kc x cols] for products whose
// C has fewer columns than a vector (a classifier's 10 logits, the gradient of its weight). The
// register tile turns around: RV vectors of rows by `cols` columns, each accumulator one column
// of C for S::kLanes rows, and each step p one column of A (loaded) times one broadcast B element
// per column. The micro-kernels would spend a whole NR-wide tile on those columns (10 of 32 lanes
// with AVX-512). Included by the ISA files (gemm_microkernel_avx2.cpp, gemm_microkernel_avx512.cpp)
// with the SIMD traits class of gemm_gemv.h.
//
// Each C element is the chain the micro-kernels compute: acc = 0, acc = fma(a[i][p], b[p][j], acc)
// for p in K-block order (the product of two numbers is the same either way round), then C = acc
// (first block) or C = C + acc. So for the same K blocks the bits are those of the packed path.
//
// A's (i, p) is at a[i + p * aps]: a column-major operand in place (the transposed activations of
// a weight gradient), or micro-panels packed by pack_a with MR = RV * kLanes. B's (p, j) is at
// b[p * brs + j * bcs]: in place in either order, or packed micro-panels (brs = NR, bcs = 1).
#pragma once

#include <cstdint>

namespace opweave::gemm_detail::few_cols {

// Columns the kernel takes at most: RV x kMaxCols accumulators, RV A vectors and a broadcast fit
// the 32 AVX-512 registers with RV = 2, the 16 AVX2 ones with RV = 1.
constexpr int kMaxCols = 12;
// How far ahead block() prefetches A: a step is ~RV x NC FMA cycles, so 16 steps cover ~100 ns,
// an L3 or memory latency, for the column counts this kernel takes.
constexpr int kPrefetchSteps = 16;

template <class S, int RV, int NC>
inline void block(int rows, std::int64_t kc, const typename S::T* a, std::int64_t aps,
                  const typename S::T* b, std::int64_t brs, std::int64_t bcs, typename S::T* c,
                  std::int64_t ldc, bool accumulate) {
  using T = typename S::T;
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  // Rows past `rows` are never read (A in place ends there) and never written.
  typename S::Mask mask[RV];
#pragma GCC unroll 4
  for (int v = 0; v < RV; ++v) {
    const int lanes = rows - v * kL;
    mask[v] = S::mask(lanes <= 0 ? 0 : lanes >= kL ? kL : lanes);
  }
  const bool full = rows == RV * kL;
  V acc[RV][NC];
#pragma GCC unroll 4
  for (int v = 0; v < RV; ++v) {
#pragma GCC unroll 12
    for (int j = 0; j < NC; ++j) acc[v][j] = S::zero();
  }
  for (std::int64_t p = 0; p < kc; ++p) {
    const T* ap = a + p * aps;
    // A in place is a column strip of a row-major matrix, one row of it per step (aps apart, a
    // stride the hardware prefetchers follow late): ask for the rows kPrefetchSteps ahead. A
    // prefetch past the end is harmless (it never faults).
#pragma GCC unroll 4
    for (int v = 0; v < RV; ++v) __builtin_prefetch(ap + kPrefetchSteps * aps + v * kL);
    V x[RV];
#pragma GCC unroll 4
    for (int v = 0; v < RV; ++v) x[v] = full ? S::load(ap + v * kL) : S::load(ap + v * kL, mask[v]);
    const T* bp = b + p * brs;
#pragma GCC unroll 12
    for (int j = 0; j < NC; ++j) {
      const V y = S::set1(bp[j * bcs]);
#pragma GCC unroll 4
      for (int v = 0; v < RV; ++v) acc[v][j] = S::fma(x[v], y, acc[v][j]);
    }
  }
  // The columns in registers are rows of C's transpose: out through a small tile.
  alignas(64) T tile[NC][RV * kL];
#pragma GCC unroll 12
  for (int j = 0; j < NC; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < RV; ++v) S::store(&tile[j][v * kL], acc[v][j]);
  }
  for (int i = 0; i < rows; ++i) {
    T* row = c + i * ldc;
    for (int j = 0; j < NC; ++j) row[j] = accumulate ? row[j] + tile[j][i] : tile[j][i];
  }
}

// block<S, RV, cols> for 1 <= cols <= kMaxCols.
template <class S, int RV>
void dispatch(int rows, int cols, std::int64_t kc, const typename S::T* a, std::int64_t aps,
              const typename S::T* b, std::int64_t brs, std::int64_t bcs, typename S::T* c,
              std::int64_t ldc, bool accumulate) {
#define OPWEAVE_FEW_COLS_CASE(n) \
  case n:                        \
    return block<S, RV, n>(rows, kc, a, aps, b, brs, bcs, c, ldc, accumulate);
  switch (cols) {
    OPWEAVE_FEW_COLS_CASE(1)
    OPWEAVE_FEW_COLS_CASE(2)
    OPWEAVE_FEW_COLS_CASE(3)
    OPWEAVE_FEW_COLS_CASE(4)
    OPWEAVE_FEW_COLS_CASE(5)
    OPWEAVE_FEW_COLS_CASE(6)
    OPWEAVE_FEW_COLS_CASE(7)
    OPWEAVE_FEW_COLS_CASE(8)
    OPWEAVE_FEW_COLS_CASE(9)
    OPWEAVE_FEW_COLS_CASE(10)
    OPWEAVE_FEW_COLS_CASE(11)
    OPWEAVE_FEW_COLS_CASE(12)
    default:
      break;
  }
#undef OPWEAVE_FEW_COLS_CASE
}

}  // namespace opweave::gemm_detail::few_cols
