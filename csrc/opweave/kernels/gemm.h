// Single-matrix GEMM, C = A * B, on strided A and B and a row-major C. Internal to the kernels;
// matmul() (matmul.cpp) handles shapes, transposes and batching on top of it.
#pragma once

#include <cstddef>
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

// What a fused GEMM applies to each element of C once its whole K sum is done, in this order:
// + bias[j] (the column's), then the activation, with the element-wise ops' own formulas (the same
// operations in the same order, so a fused MatMul + BiasAdd + Relu gives the unfused bits).
enum class Activation { kNone, kRelu, kRelu6, kElu, kLeakyRelu, kSigmoid, kTanh };

template <typename T>
struct Epilogue {
  const T* bias = nullptr;  // n values (C's columns), or null
  Activation activation = Activation::kNone;
  T alpha = T(0);  // LeakyRelu's slope
  bool empty() const noexcept { return bias == nullptr && activation == Activation::kNone; }
};

// Applies `ep` to a rows x cols block of C at c (row stride ldc) whose first column is column j0
// of C. gemm_epilogue.cpp.
template <typename T>
void apply_epilogue(const Epilogue<T>& ep, std::int64_t rows, std::int64_t cols, std::int64_t j0,
                    T* c, std::int64_t ldc);

// B packed once into the NR-column micro-panels gemm() reads, for every (NC, KC) block of the
// kernel this CPU selected: a weight packed when a compiled signature first runs, then read by
// every later run (gemm() then skips its per-call packing; the bits are the same). Immutable once
// built, so runs may share it.
template <typename T>
struct MicroKernel;

template <typename T>
class PackedB {
 public:
  // For the kernel gemm() selects on this CPU, or an explicit one (tests).
  PackedB(std::int64_t k, std::int64_t n, StridedMatrix<T> b, ThreadPool* pool);
  PackedB(const MicroKernel<T>& kernel, std::int64_t k, std::int64_t n, StridedMatrix<T> b,
          ThreadPool* pool);
  ~PackedB();
  PackedB(const PackedB&) = delete;
  PackedB& operator=(const PackedB&) = delete;

  std::int64_t k() const noexcept { return k_; }
  std::int64_t n() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return bytes_; }
  // Laid out for this kernel's blocking (else the GEMM packs B itself).
  bool fits(const MicroKernel<T>& kernel) const noexcept;
  // The panels of the block at columns [jc, jc + NC) and rows [pc, pc + KC) (both block starts):
  // micro-panel q (columns jc + q * NR ...) at block + q * NR * kc, value (p, j) at [p * NR + j].
  const T* block(std::int64_t jc, std::int64_t pc) const noexcept {
    return data_ + jc * k_ + pc * padded_width(jc);
  }

 private:
  std::int64_t padded_width(std::int64_t jc) const noexcept;
  std::int64_t k_, n_, kc_, nc_, nc_max_ = 0, nr_ = 0;
  T* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// C[m x n] (row stride ldc) = A[m x k] * B[k x n], then `ep` on each element. Threads split rows
// or columns of C, never k, so the result is bit-identical for any pool, including null. Which path
// runs depends only on m, n, k and the strides: small products unpacked; fewer rows than the
// micro-kernel's MR (a batch of 1 or a few) on the GEMV-style kernel, which streams B once (in
// place, or from `packed`); the rest packed (from `packed` when given). The GEMV kernel and the
// packed path compute each element as the same FMA chain over the same K blocks, so they give the
// same bits. `packed`, when given, must hold this b (the caller's promise).
template <typename T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix<T> a, StridedMatrix<T> b,
          T* c, std::int64_t ldc, ThreadPool* pool, const Epilogue<T>& ep = {},
          const PackedB<T>* packed = nullptr);

// The packed path with an explicit micro-kernel (tests check every kernel the CPU can run).
template <typename T>
void packed_gemm(const MicroKernel<T>& kernel, std::int64_t m, std::int64_t n, std::int64_t k,
                 const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
                 ThreadPool* pool, const Epilogue<T>& ep = {}, const PackedB<T>* packed = nullptr);
// The few-rows path (m < kernel.mr, and the kernel has fn_gemv) with an explicit micro-kernel.
template <typename T>
void gemv_gemm(const MicroKernel<T>& kernel, std::int64_t m, std::int64_t n, std::int64_t k,
               const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
               ThreadPool* pool, const Epilogue<T>& ep = {}, const PackedB<T>* packed = nullptr);

// The few-columns path (n <= few_cols::kMaxCols, and the kernel has fn_few_cols) with an explicit
// micro-kernel.
template <typename T>
void few_cols_gemm(const MicroKernel<T>& kernel, std::int64_t m, std::int64_t n, std::int64_t k,
                   const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
                   ThreadPool* pool, const Epilogue<T>& ep = {},
                   const PackedB<T>* packed = nullptr);

// An operand that gemm_sourced() reads block by block, straight into its packing buffers, instead
// of from a strided view of memory: the image-patch matrix of a convolution exists only as the
// blocks the GEMM packs (conv_packing.h), never as a whole im2col buffer.
template <typename T>
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // Writes rows [i0, i0 + rows) x cols [j0, j0 + cols) (all inside the matrix) to dst, row-major
  // with row stride ld. Called from several threads at once, for disjoint dst.
  virtual void copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, T* dst,
                    std::int64_t ld) const = 0;
  // The same block transposed: dst[j * ld + i] = A[i0 + i][j0 + j] (the GEMM's A micro-panels).
  virtual void copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                               std::int64_t cols, T* dst, std::int64_t ld) const = 0;
  // Whether copy() is the cheap direction (runs of contiguous elements along a row); the GEMM
  // then packs A as rows for micro-kernels that read rows (fn_rows), else as micro-panels.
  virtual bool rows_are_contiguous() const = 0;
  // Rows [i0, i0 + rows) x cols [j0, j0 + cols) as the GEMM's A micro-panels: panel q (rows
  // q * mr ...) at dst + q * mr * cols, value (i, p) at [p * mr + i], rows past `rows` zero up to
  // a multiple of mr. The default copies panel by panel with copy_transposed.
  virtual void pack_panels(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                           int mr, T* dst) const;
};

// A strided matrix as a BlockSource.
template <typename T>
class StridedSource final : public BlockSource<T> {
 public:
  explicit StridedSource(StridedMatrix<T> m) : m_(m) {}
  void copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, T* dst,
            std::int64_t ld) const override;
  void copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                       T* dst, std::int64_t ld) const override;
  bool rows_are_contiguous() const override { return m_.cs == 1; }

 private:
  StridedMatrix<T> m_;
};

// The transpose of another source (which must outlive it): its copy is the other's
// copy_transposed and vice versa.
template <typename T>
class TransposedSource final : public BlockSource<T> {
 public:
  explicit TransposedSource(const BlockSource<T>& of) : of_(of) {}
  void copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, T* dst,
            std::int64_t ld) const override {
    of_.copy_transposed(j0, cols, i0, rows, dst, ld);
  }
  void copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                       T* dst, std::int64_t ld) const override {
    of_.copy(j0, cols, i0, rows, dst, ld);
  }
  bool rows_are_contiguous() const override { return !of_.rows_are_contiguous(); }
  // Copies the block from the other source the cheap way (its rows: long runs) into a scratch
  // buffer, then cuts that into micro-panels of mr contiguous values per column.
  void pack_panels(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, int mr,
                   T* dst) const override;

 private:
  const BlockSource<T>& of_;
};

// C[m x n] (row stride ldc) = A[m x k] * B[k x n], each operand read through a BlockSource. The
// same micro-kernels and K blocking as gemm(); tiles of C (blocks of rows x runs of columns) are
// split across threads and K never is, so each element of C is one FMA chain per K block, the
// blocks added in order: bit-identical for any pool. k_unit: when at most the kernel's KC, the K
// blocks start at multiples of it (a convolution's channel count, so a block copies whole runs of
// channels). The blocking depends only on m, n, k and k_unit.
// `ep` is applied to each tile of C after its last K block, while the tile is in cache.
template <typename T>
void gemm_sourced(std::int64_t m, std::int64_t n, std::int64_t k, const BlockSource<T>& a,
                  const BlockSource<T>& b, T* c, std::int64_t ldc, ThreadPool* pool,
                  std::int64_t k_unit = 1, const Epilogue<T>& ep = {});

// True when gemm() takes the unpacked path (also used to pick how batches are parallelised).
bool gemm_is_small(std::int64_t m, std::int64_t n, std::int64_t k);

// Name of the micro-kernel ISA in use for float32 / float64 ("avx512", "avx2+fma", "portable").
const char* gemm_isa(bool float64);

// GFLOP/s of the selected micro-kernel on one thread, B in L1 and A in L2 as the GEMM keeps them
// (the best of five runs of about `seconds` / 5 each): what the CPU's FMA units give this kernel
// at the clock it runs at now, the ceiling the benches report kernels against (/proc/cpuinfo's
// nominal clock understates a turbo clock). Runs on the calling thread; thread-safe.
double gemm_ceiling_gflops(bool float64, double seconds);

}  // namespace opweave::gemm_detail
