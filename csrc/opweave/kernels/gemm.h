// Single-matrix GEMM, C = A * B, on strided A and B and a row-major C. Internal to the kernels;
// matmul() (matmul.cpp) handles shapes, transposes and batching on top of it.
#pragma once

#include <cstdint>

#include "opweave/thread_pool.h"

namespace opweave::gemm_detail {

// Element (i, j) lives at data[i * rs + j * cs]; any strides, including 0 and negative.
template <typename T>
struct StridedMatrix {
  const T* data;
  std::int64_t rs;
  std::int64_t cs;
};

// C[m x n] (row stride ldc) = A[m x k] * B[k x n]. Threads split rows of C only (never k), so the
// result is bit-identical for any pool, including null. Which path runs (small, packed) depends
// only on m, n, k and the strides.
template <typename T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix<T> a, StridedMatrix<T> b,
          T* c, std::int64_t ldc, ThreadPool* pool);

// The packed path with an explicit micro-kernel (tests check every kernel the CPU can run).
template <typename T>
struct MicroKernel;
template <typename T>
void packed_gemm(const MicroKernel<T>& kernel, std::int64_t m, std::int64_t n, std::int64_t k,
                 const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
                 ThreadPool* pool);

// True when gemm() takes the unpacked path (also used to pick how batches are parallelised).
bool gemm_is_small(std::int64_t m, std::int64_t n, std::int64_t k);

// Name of the micro-kernel ISA in use for float32 / float64 ("avx512", "avx2+fma", "portable").
const char* gemm_isa(bool float64);

}  // namespace opweave::gemm_detail
