// The few-rows GEMM kernel (GEMV-style): C[m x cols] (+)= A[m x kc] * B[kc x cols] for m below
// the micro-kernel's MR, with every C element of the block in a register for the whole K block and
// each B element loaded once per K block. Included by the ISA files (gemm_microkernel_avx2.cpp,
// gemm_microkernel_avx512.cpp) with a SIMD traits class S:
//
//   using T = float;  using V = __m512;  static constexpr int kLanes = 16;
//   static V zero();  static V set1(T);  static V load(const T*);  static V fma(V a, V b, V c);
//   static V add(V, V);  static void store(T*, V);
//   using Mask = ...;  static Mask mask(int lanes);   // the first `lanes` lanes
//   static V load(const T*, Mask);  static void store(T*, V, Mask);   // masked
//
// Each element is the chain the micro-kernels compute: acc = 0, acc = fma(a[i][p], b[p][j], acc)
// for p in K-block order, then C = acc (first block) or C = C + acc. So for the same K blocks a
// product gives the same bits here as on the packed path, whichever path its shape selects.
//
// B's layout is general enough for both of its sources: column j of step p is at
//   b[(j / NR) * bps + p * brs + j % NR]      (NR = 2 vectors)
// row-major B in place: brs = its row stride, bps = NR; packed NR-column micro-panels (gemm.cpp's
// layout, zero-padded): brs = NR, bps = kc * NR. A's element (i, p) is a[i * ars + p * aks]
// (row-major A: ars = lda, aks = 1; a packed MR micro-panel: ars = 1, aks = MR).
#pragma once

#include <cstdint>

namespace opweave::gemm_detail::gemv {

// Vectors per row of C one call keeps in registers: accumulators (rows x vectors), the B vectors
// of a step and one broadcast must fit the register file, with at least 8 independent FMA chains
// where the rows allow it (two FMA pipes x 4 cycles of latency).
constexpr int max_vectors(int rows, int registers) {
  int v = (registers - 1) / (rows + 1);
  if (v > 8) v = 8;
  if (v > 2 && v % 2) --v;
  return v < 1 ? 1 : v;
}

template <class S, int M, int NV>
inline void block(std::int64_t kc, const typename S::T* a, std::int64_t ars, std::int64_t aks,
                  const typename S::T* b, std::int64_t brs, std::int64_t bps, typename S::T* c,
                  std::int64_t ldc, bool accumulate, int last_lanes) {
  using T = typename S::T;
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  const T* bv[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) bv[v] = b + (v / 2) * bps + (v % 2) * kL;
  const typename S::Mask mask = S::mask(last_lanes);
  const bool partial = last_lanes < kL;
  V acc[M][NV];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
  }
  for (std::int64_t p = 0; p < kc; ++p) {
    V x[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      // Only the last vector can run past the columns (row-major B in place is not padded).
      x[v] = v == NV - 1 && partial ? S::load(bv[v] + p * brs, mask) : S::load(bv[v] + p * brs);
    }
    const T* ap = a + p * aks;
#pragma GCC unroll 16
    for (int i = 0; i < M; ++i) {
      const V ai = S::set1(ap[i * ars]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = S::fma(ai, x[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
    T* row = c + i * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      T* dst = row + v * kL;
      if (v == NV - 1 && partial) {
        if (accumulate) acc[i][v] = S::add(S::load(dst, mask), acc[i][v]);
        S::store(dst, acc[i][v], mask);
      } else {
        if (accumulate) acc[i][v] = S::add(S::load(dst), acc[i][v]);
        S::store(dst, acc[i][v]);
      }
    }
  }
}

// All `cols` columns for M rows: blocks of the widest register tile, then of 2 and 1 vectors.
template <class S, int M, int kRegisters>
void rows(std::int64_t cols, std::int64_t kc, const typename S::T* a, std::int64_t ars,
          std::int64_t aks, const typename S::T* b, std::int64_t brs, std::int64_t bps,
          typename S::T* c, std::int64_t ldc, bool accumulate) {
  constexpr int kL = S::kLanes;
  constexpr int kWide = max_vectors(M, kRegisters);
  std::int64_t j = 0;
  // j advances by whole panels (2 vectors) until the last block, so (j / NR) * bps + j % NR is
  // always a panel start plus 0 or one vector.
  auto at = [&](std::int64_t col) { return b + (col / (2 * kL)) * bps + col % (2 * kL); };
  for (; j + kWide * kL <= cols; j += kWide * kL) {
    block<S, M, kWide>(kc, a, ars, aks, at(j), brs, bps, c + j, ldc, accumulate, kL);
  }
  for (; j + 2 * kL <= cols; j += 2 * kL) {
    block<S, M, 2>(kc, a, ars, aks, at(j), brs, bps, c + j, ldc, accumulate, kL);
  }
  const std::int64_t left = cols - j;
  if (left > kL) {
    block<S, M, 2>(kc, a, ars, aks, at(j), brs, bps, c + j, ldc, accumulate,
                   static_cast<int>(left - kL));
  } else if (left > 0) {
    block<S, M, 1>(kc, a, ars, aks, at(j), brs, bps, c + j, ldc, accumulate,
                   static_cast<int>(left));
  }
}

template <class S, int kRegisters, int M = 1>
void dispatch(int m, std::int64_t cols, std::int64_t kc, const typename S::T* a, std::int64_t ars,
              std::int64_t aks, const typename S::T* b, std::int64_t brs, std::int64_t bps,
              typename S::T* c, std::int64_t ldc, bool accumulate) {
  if (m == M) {
    rows<S, M, kRegisters>(cols, kc, a, ars, aks, b, brs, bps, c, ldc, accumulate);
  } else if constexpr (M + 1 < S::kMaxRows + 1) {
    dispatch<S, kRegisters, M + 1>(m, cols, kc, a, ars, aks, b, brs, bps, c, ldc, accumulate);
  }
}

}  // namespace opweave::gemm_detail::gemv
