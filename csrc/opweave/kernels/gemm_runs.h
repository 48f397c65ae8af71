// The runs kernel: one MR x NR tile of C summed over a list of "runs", each a short product whose
// A and B are read where they lie, with strides, instead of from packed panels. A direct
// convolution (conv_direct.cpp) is such a sum: over the taps of a filter (forward), or over the
// output rows of an image (filter gradient), and neither operand needs an im2col copy. Included by
// the ISA files (gemm_microkernel_avx2.cpp, gemm_microkernel_avx512.cpp) with the SIMD traits the
// few-rows kernel uses (gemm_gemv.h), NR = NV vectors (2: the GEMM's tile width; 4 on AVX-512 for
// the forward convolutions whose output channels come in multiples of it, where each broadcast
// element of A feeds twice the FMAs and A is read once instead of once per 2-vector panel):
//
//   C[i][j] (+)= sum over runs r (in order), p < len (in order) of  A(i, r, p) * B(r, p, j)
//   A(i, r, p) = row_i[a_off[r] + p * lda],   row_i = a_rows[i], or a_base + i when a_rows is null
//   B(r, p, j) = b_run[r][p * ldb + j]        (NR readable values per step: pad B if need be)
//   C's row i at c_rows[i] + c_col, or c + i * ldc   (the pixels of a tile need not be neighbours)
//
// Each element is one FMA chain over the runs in order (acc = 0, acc = fma(A, B, acc)), then
// C = acc or C = C + acc (then + bias, then ReLU, when asked): the same chain whichever thread
// computes the tile and whichever width of kernel (NV) it is.
#pragma once

#include <cstdint>

#include "opweave/kernels/gemm_microkernel.h"

namespace opweave::gemm_detail::runs {

// kPacked: lda = 1 and ldb = NR (a forward convolution's runs: a pixel's channels against a
// packed filter panel), so the steps are constants and free two registers for the rows.
template <class S, int M, int NV, bool kIndirect, bool kPacked>
inline void tile(const RunsArgs<typename S::T>& x) {
  using T = typename S::T;
  using V = typename S::V;
  constexpr int kL = S::kLanes;
  V acc[M][NV];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
  }
  // The rows' own pointers: a contiguous block (rows of a channel run: one base register and
  // constant displacements) or M independent pointers (pixels of an image, taps of a filter).
  const T* rows[M];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) rows[i] = kIndirect ? x.a_rows[i] : x.a_base + i;
  const std::int64_t len = x.len;
  const std::int64_t lda = kPacked ? 1 : x.lda, ldb = kPacked ? NV * kL : x.ldb;
  for (std::int64_t r = 0; r < x.nruns; ++r) {
    const T* b = x.b_run[r];
    std::int64_t at = x.a_off[r];
#pragma GCC unroll 2
    for (std::int64_t p = 0; p < len; ++p) {
      V bv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) bv[v] = S::load(b + v * kL);
#pragma GCC unroll 16
      for (int i = 0; i < M; ++i) {
        const V ai = S::set1(kIndirect ? rows[i][at] : x.a_base[at + i]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = S::fma(ai, bv[v], acc[i][v]);
      }
      b += ldb;
      at += lda;
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) {
    T* row = x.c_rows != nullptr ? x.c_rows[i] + x.c_col : x.c + i * x.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      V out = acc[i][v];
      if (x.accumulate) out = S::add(S::load(row + v * kL), out);
      if (x.bias != nullptr) out = S::add(out, S::load(x.bias + v * kL));
      if (x.relu) out = S::relu(out);
      S::store(row + v * kL, out);
    }
  }
}

// The kernel of NV vectors for x.rows rows (1 <= rows <= kMaxM): each count its own unrolled
// tile.
template <class S, int NV, int kMaxM, int M = 1>
void dispatch(const RunsArgs<typename S::T>& x) {
  if (x.rows == M) {
    if (x.a_rows != nullptr && x.lda == 1 && x.ldb == NV * S::kLanes) {
      tile<S, M, NV, true, true>(x);
    } else if (x.a_rows != nullptr) {
      tile<S, M, NV, true, false>(x);
    } else {
      tile<S, M, NV, false, false>(x);
    }
  } else if constexpr (M < kMaxM) {
    dispatch<S, NV, kMaxM, M + 1>(x);
  }
}

}  // namespace opweave::gemm_detail::runs
