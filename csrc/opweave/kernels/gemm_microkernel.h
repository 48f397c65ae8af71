// The register-blocked GEMM micro-kernels and their blocking parameters, one set per instruction
// set. A micro-kernel computes one MR x NR tile of C from a packed A micro-panel (kc x MR, MR
// contiguous values per k) and a packed B micro-panel (kc x NR, NR contiguous values per k):
//
//   C[i][j] (+)= sum_{p < kc} a[p * MR + i] * b[p * NR + j]      (p in increasing order)
//
// Each C element is one fused-multiply-add chain in k order, so its value does not depend on
// where the tile sits or which thread computes it. The wider kernels live in *_avx2.cpp /
// *_avx512.cpp, compiled with their own flags and called only when cpu_info() reports the ISA.
#pragma once

#include <cstdint>

namespace opweave::gemm_detail {

// c: row-major tile with row stride ldc; accumulate = false overwrites C (beta = 0), true adds.
template <typename T>
using MicroKernelFn = void (*)(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc,
                               bool accumulate);

// The same tile from an unpacked row-major A: row i, step p at a[i * lda + p] (kernels that have
// it let the driver skip packing A for small problems; same FMA chain, same bits).
template <typename T>
using MicroKernelRowsFn = void (*)(std::int64_t kc, const T* a, std::int64_t lda, const T* b, T* c,
                                   std::int64_t ldc, bool accumulate);

// Fewer rows than MR (0 < m < MR): C[m x cols] (+)= A[m x kc] * B[kc x cols] with A's (i, p) at
// a[i * ars + p * aks] and B's (p, j) at b[(j / NR) * bps + p * brs + j % NR] (row-major B in
// place, or packed micro-panels). Same FMA chains as fn: see gemm_gemv.h.
template <typename T>
using MicroKernelGemvFn = void (*)(int m, std::int64_t cols, std::int64_t kc, const T* a,
                                   std::int64_t ars, std::int64_t aks, const T* b, std::int64_t brs,
                                   std::int64_t bps, T* c, std::int64_t ldc, bool accumulate);

// Few columns (0 < cols <= few_cols::kMaxCols, gemm_few_cols.h): C[rows x cols] (+)= A[rows x kc] *
// B[kc x cols] for 0 < rows <= few_rows, with A's (i, p) at a[i + p * aps] (its columns
// contiguous) and B's (p, j) at b[p * brs + j * bcs]. Same FMA chains as fn: the same bits.
template <typename T>
using MicroKernelFewColsFn = void (*)(int rows, int cols, std::int64_t kc, const T* a,
                                      std::int64_t aps, const T* b, std::int64_t brs,
                                      std::int64_t bcs, T* c, std::int64_t ldc, bool accumulate);

// The runs kernel's arguments (gemm_runs.h): C[rows x NR] (+)= sum over runs r < nruns and steps
// p < len of A(i, r, p) * B(r, p, j), A(i, r, p) = row_i[a_off[r] + p * lda] with row_i =
// a_rows[i] (rows pointers) or a_base + i (when a_rows is null), B(r, p, j) = b_run[r][p * ldb + j]
// (NR readable values per step), C's rows at c_rows[i] + c_col, or c + i * ldc when c_rows is
// null.
// 1 <= rows <= MR. Then, in registers before the store: + bias[j] when bias is set (NR values),
// then ReLU when relu is set (x < 0 ? 0 : x, so -0 and NaN pass): a convolution's fused epilogue,
// the same operations as apply_epilogue (gemm.h), so the same bits.
template <typename T>
struct RunsArgs {
  int rows = 0;
  const T* const* a_rows = nullptr;
  const T* a_base = nullptr;
  const std::int64_t* a_off = nullptr;
  const T* const* b_run = nullptr;
  std::int64_t nruns = 0, len = 0, lda = 0, ldb = 0;
  T* c = nullptr;
  std::int64_t ldc = 0;
  T* const* c_rows = nullptr;
  std::int64_t c_col = 0;
  bool accumulate = false;
  const T* bias = nullptr;
  bool relu = false;
};

template <typename T>
using MicroKernelRunsFn = void (*)(const RunsArgs<T>& args);

template <typename T>
struct MicroKernel {
  int mr;  // rows of the register tile
  int nr;  // columns of the register tile
  // Cache blocking (Goto/BLIS): a kc x nr B micro-panel stays in L1 while the MR x kc A
  // micro-panels stream through; the mc x kc A block stays in L2; the kc x nc B panel in L3.
  std::int64_t kc, mc, nc;
  MicroKernelFn<T> fn;
  const char* isa;
  MicroKernelRowsFn<T> fn_rows = nullptr;  // optional
  // optional: the tile from an unpacked column-major A, row i of step p at a[p * lda + i]
  MicroKernelRowsFn<T> fn_cols = nullptr;
  MicroKernelGemvFn<T> fn_gemv = nullptr;  // optional
  MicroKernelRunsFn<T> fn_runs = nullptr;  // optional (direct convolutions)
  // optional: a runs kernel of runs_wide_mr rows x runs_wide_nr columns, for forward
  // convolutions whose output channels are a multiple of runs_wide_nr (the same chains as fn_runs)
  MicroKernelRunsFn<T> fn_runs_wide = nullptr;
  int runs_wide_mr = 0, runs_wide_nr = 0;
  MicroKernelFewColsFn<T> fn_few_cols = nullptr;  // optional
  int few_rows = 0;                               // rows of one fn_few_cols call at most
};

MicroKernel<float> portable_kernel_f32();
MicroKernel<double> portable_kernel_f64();
#if defined(OPWEAVE_X86_64)
MicroKernel<float> avx2_kernel_f32();
MicroKernel<double> avx2_kernel_f64();
MicroKernel<float> avx512_kernel_f32();
MicroKernel<double> avx512_kernel_f64();
#endif

// The best kernel for this CPU, picked once (thread-safe).
const MicroKernel<float>& best_kernel_f32();
const MicroKernel<double>& best_kernel_f64();

}  // namespace opweave::gemm_detail
