// Blocked GEMM in the Goto/BLIS structure:
//
//   for jc in N step NC:                      B panel (KC x NC) packed once, kept in L3
//     for pc in K step KC:                    (K loop: sequential, never split across threads)
//       pack B[pc:pc+KC, jc:jc+NC]            (packing is copies only: split across threads)
//       parallel over MR-row panels of C:     each thread packs its own A block (MC x KC, L2)
//         for jr in NC step NR:               B micro-panel (KC x NR) stays in L1
//           for ir in MC step MR:             micro-kernel: MR x NR tile in registers
//
// Why never split K: splitting K would need a reduction of partial C tiles whose grouping depends
// on the thread count, changing the rounding. With rows split instead, every C element is the same
// FMA chain (k order, KC blocks added in order) whoever computes it: bit-identical for any pool.
// Panels are zero-padded to MR / NR so the micro-kernel only ever sees full tiles; edge tiles are
// computed into a scratch tile and the valid part copied out.
#include "opweave/kernels/gemm.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/buffer_cache.h"
#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/kernels/gemm_few_cols.h"
#include "opweave/kernels/gemm_microkernel.h"
#include "opweave/parallel_for.h"

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace opweave::gemm_detail {
namespace {

// 64-byte aligned scratch memory (packed panels are read with aligned vector loads). From the
// buffer cache: a matmul's B panel is allocated and freed on every call, and with aggressive
// heap trimming (MALLOC_TRIM_THRESHOLD_, which Dask sets in its workers) the allocator would
// fault its pages in afresh each time.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { release_buffer(data_, capacity_); }

  void reserve(std::size_t bytes) {
    if (bytes <= capacity_) return;
    void* p = allocate_buffer(bytes);
    if (p == nullptr) {
      throw OpError(ErrorCode::kResourceExhausted,
                    "matmul: cannot allocate " + std::to_string(bytes) + " bytes of packing space");
    }
    release_buffer(data_, capacity_);
    data_ = p;
    capacity_ = bytes;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// The A block of one thread. A chunk of the parallel loop runs to completion without calling
// back into the pool, so one buffer per thread is never used by two blocks at once.
AlignedBuffer& thread_a_buffer() {
  thread_local AlignedBuffer buffer;
  return buffer;
}

// dst[q * ld_dst + j] = src[j * ld_src + q] for q, j < 8: a block of a column-major operand into
// rows of a panel. With SSE (every x86-64) float blocks move as four 4 x 4 register transposes;
// elsewhere, and for double, through a local block that the compiler keeps in registers.
template <typename T>
constexpr bool transposes_in_registers() {
#if defined(__SSE2__)
  return std::is_same_v<T, float>;
#else
  return false;
#endif
}

// dst[q * ld_dst + j] = src[j * ld_src + q] for q, j < 4, in SSE registers (float, x86-64 only:
// callers check transposes_in_registers()).
template <typename T>
inline void transpose_4x4(const T* src, std::int64_t ld_src, T* dst, std::int64_t ld_dst) {
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    __m128 r0 = _mm_loadu_ps(src);
    __m128 r1 = _mm_loadu_ps(src + ld_src);
    __m128 r2 = _mm_loadu_ps(src + 2 * ld_src);
    __m128 r3 = _mm_loadu_ps(src + 3 * ld_src);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(dst, r0);
    _mm_storeu_ps(dst + ld_dst, r1);
    _mm_storeu_ps(dst + 2 * ld_dst, r2);
    _mm_storeu_ps(dst + 3 * ld_dst, r3);
    return;
  }
#endif
  for (int q = 0; q < 4; ++q) {
    for (int j = 0; j < 4; ++j) dst[q * ld_dst + j] = src[j * ld_src + q];
  }
}

template <typename T>
inline void transpose_8x8(const T* src, std::int64_t ld_src, T* dst, std::int64_t ld_dst) {
  if constexpr (transposes_in_registers<T>()) {
    for (int jb = 0; jb < 8; jb += 4) {
      for (int qb = 0; qb < 8; qb += 4) {
        transpose_4x4(src + jb * ld_src + qb, ld_src, dst + qb * ld_dst + jb, ld_dst);
      }
    }
    return;
  }
  T block[8][8];
  for (int j = 0; j < 8; ++j) {
    for (int q = 0; q < 8; ++q) block[q][j] = src[j * ld_src + q];
  }
  for (int q = 0; q < 8; ++q) {
    for (int j = 0; j < 8; ++j) dst[q * ld_dst + j] = block[q][j];
  }
}

// Copies the MR or NR values of one micro-panel row: a constant size, so a few vector moves inline
// rather than a call to memcpy per row.
template <typename T>
inline void copy_panel_row(const T* src, int nr, T* dst) {
  switch (nr) {
    case 32:
      std::memcpy(dst, src, sizeof(T) * 32);
      break;
    case 16:
      std::memcpy(dst, src, sizeof(T) * 16);
      break;
    case 12:
      std::memcpy(dst, src, sizeof(T) * 12);
      break;
    case 8:
      std::memcpy(dst, src, sizeof(T) * 8);
      break;
    case 6:
      std::memcpy(dst, src, sizeof(T) * 6);
      break;
    default:
      std::memcpy(dst, src, sizeof(T) * static_cast<std::size_t>(nr));
  }
}

// Packs rows [i0, i0 + mc) x cols [p0, p0 + kc) of A into MR-row micro-panels: panel r holds
// kc groups of MR values (column p of those rows), rows past m are zero.
template <typename T>
void pack_a(const StridedMatrix<T>& a, std::int64_t m, std::int64_t i0, std::int64_t mc,
            std::int64_t p0, std::int64_t kc, int mr, T* dst) {
  for (std::int64_t ir = 0; ir < mc; ir += mr) {
    const std::int64_t rows = std::min<std::int64_t>(mr, m - (i0 + ir));
    const T* src = a.data + (i0 + ir) * a.rs + p0 * a.cs;
    if (a.rs == 1 && rows == mr) {
      // Column-major A (e.g. a transposed C-order matrix): each k step is MR contiguous values.
      for (std::int64_t p = 0; p < kc; ++p) copy_panel_row(src + p * a.cs, mr, dst + p * mr);
    } else if (a.cs == 1 && rows == mr) {
      // Row-major A: a transpose of an MR x kc block. Write the packed panel in order (k outer)
      // from MR row streams rather than scattering each row with stride MR (store-friendlier;
      // the difference was below the noise of the shared test machine); float panels of a
      // multiple of 4 rows in 4 x 4 register transposes.
      std::int64_t p = 0;
      if (transposes_in_registers<T>() && mr % 4 == 0) {
        for (; p + 4 <= kc; p += 4) {
          for (int ib = 0; ib < mr; ib += 4) {
            transpose_4x4(src + ib * a.rs + p, a.rs, dst + p * mr + ib, mr);
          }
        }
      }
      for (; p < kc; ++p) {
        for (int i = 0; i < mr; ++i) dst[p * mr + i] = src[i * a.rs + p];
      }
    } else {
      for (std::int64_t i = 0; i < rows; ++i) {
        const T* row = src + i * a.rs;
        for (std::int64_t p = 0; p < kc; ++p) dst[p * mr + i] = row[p * a.cs];
      }
      for (std::int64_t i = rows; i < mr; ++i) {
        for (std::int64_t p = 0; p < kc; ++p) dst[p * mr + i] = T(0);
      }
    }
    dst += mr * kc;
  }
}

// Packs NR-column micro-panels [jp0, jp1) of B[p0:p0+kc, j0:j0+nc]; columns past n are zero.
template <typename T>
void pack_b(const StridedMatrix<T>& b, std::int64_t n, std::int64_t j0, std::int64_t p0,
            std::int64_t kc, int nr, std::int64_t jp0, std::int64_t jp1, T* bpack) {
  // Row-major B: each row of the block is read once, front to back, and dealt out to the panels
  // (which stay in L2): reading panel by panel instead fetched NR values from every row, rows
  // a whole B row apart, and spent a third of a batch-50 product's time (50 x 3136 x 1024).
  const std::int64_t full_end = std::min(jp1, (n - j0) / nr);  // panels without padding
  if (b.cs == 1 && full_end > jp0) {
    for (std::int64_t p = 0; p < kc; ++p) {
      const T* src = b.data + (p0 + p) * b.rs + j0;
      for (std::int64_t jp = jp0; jp < full_end; ++jp) {
        copy_panel_row(src + jp * nr, nr, bpack + jp * nr * kc + p * nr);
      }
    }
    jp0 = full_end;
  }
  for (std::int64_t jp = jp0; jp < jp1; ++jp) {
    const std::int64_t jr = jp * nr;
    const std::int64_t cols = std::min<std::int64_t>(nr, n - (j0 + jr));
    T* dst = bpack + jr * kc;
    const T* src = b.data + p0 * b.rs + (j0 + jr) * b.cs;
    if (b.cs == 1 && cols == nr) {
      for (std::int64_t p = 0; p < kc; ++p)
        std::memcpy(dst + p * nr, src + p * b.rs, sizeof(T) * nr);
    } else if (b.rs == 1 && cols == nr && nr % 8 == 0) {
      // Column-major B (the transpose of a C-order matrix, matmul(x, w, transpose_b=True)): each
      // column is contiguous. 8 x 8 blocks, read as 8 runs of 8 and written as 8 runs of 8,
      // instead of one column at a time into every row of the panel (a store stream per value).
      std::int64_t p = 0;
      for (; p + 8 <= kc; p += 8) {
        for (int j0 = 0; j0 < nr; j0 += 8) {
          transpose_8x8(src + j0 * b.cs + p, b.cs, dst + p * nr + j0, nr);
        }
      }
      for (; p < kc; ++p) {
        for (int j = 0; j < nr; ++j) dst[p * nr + j] = src[j * b.cs + p];
      }
    } else {
      for (std::int64_t j = 0; j < cols; ++j) {
        const T* col = src + j * b.cs;
        for (std::int64_t p = 0; p < kc; ++p) dst[p * nr + j] = col[p * b.rs];
      }
      for (std::int64_t j = cols; j < nr; ++j) {
        for (std::int64_t p = 0; p < kc; ++p) dst[p * nr + j] = T(0);
      }
    }
  }
}

// Unpacked path for small or skinny problems, where packing costs more than it saves.
// C rows are split across threads; each C element is one loop in k order either way.
template <typename T>
void small_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const StridedMatrix<T>& a,
                const StridedMatrix<T>& b, T* c, std::int64_t ldc, ThreadPool* pool,
                const Epilogue<T>& ep) {
  const double cost_per_row = 2.0 * static_cast<double>(n) * static_cast<double>(k);
  if (n == 1) {
    // Matrix-vector: c[i] = dot(A[i, :], b). Eight partial sums (fixed assignment p % 8, fixed
    // combining tree) let the compiler vectorise when A's rows and b are contiguous.
    parallel_for(
        pool, 0, m, 16,
        [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t i = i0; i < i1; ++i) {
            const T* ar = a.data + i * a.rs;
            T acc[8] = {};
            std::int64_t p = 0;
            if (a.cs == 1 && b.rs == 1) {
              for (; p + 8 <= k; p += 8) {
                for (int u = 0; u < 8; ++u) acc[u] += ar[p + u] * b.data[p + u];
              }
            } else {
              for (; p + 8 <= k; p += 8) {
                for (int u = 0; u < 8; ++u) acc[u] += ar[(p + u) * a.cs] * b.data[(p + u) * b.rs];
              }
            }
            for (; p < k; ++p) acc[p & 7] += ar[p * a.cs] * b.data[p * b.rs];
            c[i * ldc] =
                ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
          }
          if (!ep.empty()) apply_epilogue(ep, i1 - i0, 1, 0, c + i0 * ldc, ldc);
        },
        cost_per_row);
    return;
  }
  // Row-major copy of B when its rows are not contiguous, so the inner loop vectorises.
  std::vector<T> bcopy;
  const T* bd = b.data;
  std::int64_t brs = b.rs;
  if (b.cs != 1) {
    bcopy.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t p = 0; p < k; ++p) {
      for (std::int64_t j = 0; j < n; ++j)
        bcopy[static_cast<std::size_t>(p * n + j)] = b.data[p * b.rs + j * b.cs];
    }
    bd = bcopy.data();
    brs = n;
  }
  parallel_for(
      pool, 0, m, 1,
      [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
          T* cr = c + i * ldc;
          for (std::int64_t j = 0; j < n; ++j) cr[j] = T(0);
          for (std::int64_t p = 0; p < k; ++p) {
            const T aip = a.data[i * a.rs + p * a.cs];
            const T* br = bd + p * brs;
            for (std::int64_t j = 0; j < n; ++j) cr[j] += aip * br[j];
          }
          if (!ep.empty()) apply_epilogue(ep, 1, n, 0, cr, ldc);
        }
      },
      cost_per_row);
}

template <typename T>
const MicroKernel<T>& best_kernel();
template <>
const MicroKernel<float>& best_kernel<float>() {
  return best_kernel_f32();
}
template <>
const MicroKernel<double>& best_kernel<double>() {
  return best_kernel_f64();
}

// Whether the micro-kernel reads A in place instead of from packed micro-panels: row-major A by
// fn_rows, or column-major A by fn_cols (the transposed activations of a weight gradient, whose
// steps are MR contiguous values already: packing only copied them; dW of a 512-wide layer at
// batch 256 103 -> 110 GFLOP/s). Packing A is paid once per A block and amortised over the n / NR
// micro-kernel calls that reuse each panel; for narrow C that is too few (n = 256 float32: 8
// calls, packing A took ~16% of the time; reading rows in place ran 80 -> 101 GFLOP/s, f32 n = 512
// 85 -> 94, f64 n = 512 35 -> 40). Not when the rows (columns) all start at the same 4 KiB offset:
// a panel's twelve rows (every step) would share the L1 sets of the B micro-panel and evict it
// (f64 n = 1024 rows in place: 41 -> 29). Depends on shapes and strides only, and the FMA chains
// are the same either way: same bits.
template <typename T>
bool reads_a_in_place(MicroKernelRowsFn<T> fn, std::int64_t unit_stride, std::int64_t stride,
                      std::int64_t n) {
  if (fn == nullptr || unit_stride != 1) return false;
  return n <= 512 && stride * static_cast<std::int64_t>(sizeof(T)) % 4096 != 0;
}

}  // namespace

namespace {

template <typename T>
MicroKernel<T> select_kernel() {
  [[maybe_unused]] const IsaFlags isa = isa_flags();
  constexpr bool f32 = std::is_same_v<T, float>;
#if defined(OPWEAVE_X86_64)
  if (isa.can_run_avx512_files()) {  // every feature the file is compiled for
    if constexpr (f32)
      return avx512_kernel_f32();
    else
      return avx512_kernel_f64();
  }
  if (isa.can_run_avx2_files()) {
    if constexpr (f32)
      return avx2_kernel_f32();
    else
      return avx2_kernel_f64();
  }
#endif
  if constexpr (f32)
    return portable_kernel_f32();
  else
    return portable_kernel_f64();
}

// Chosen at load time, not on first use: see fork_guard.h.
const MicroKernel<float> g_kernel_f32 = select_kernel<float>();
const MicroKernel<double> g_kernel_f64 = select_kernel<double>();

}  // namespace

const MicroKernel<float>& best_kernel_f32() { return g_kernel_f32; }
const MicroKernel<double>& best_kernel_f64() { return g_kernel_f64; }

// -- PackedB: B packed once ----------------------------------------------------------------------

namespace {

// The blocking packed_gemm (and PackedB) uses for k and n: balanced K blocks (K = 256 with KC =
// 192 runs as 2 x 128 rather than 192 + 64: a short block pays the C-tile load/store for little
// work) and NC blocks of whole micro-panels. Depends only on k, n and the kernel, never on threads.
struct Blocking {
  std::int64_t kc_max, nc_max;
};

template <typename T>
Blocking blocking(const MicroKernel<T>& uk, std::int64_t n, std::int64_t k) {
  const std::int64_t k_blocks = (k + uk.kc - 1) / uk.kc;
  const std::int64_t n_blocks = (n + uk.nc - 1) / uk.nc;
  return {(k + k_blocks - 1) / k_blocks,
          ((n + n_blocks - 1) / n_blocks + uk.nr - 1) / uk.nr * uk.nr};
}

}  // namespace

template <typename T>
PackedB<T>::PackedB(std::int64_t k, std::int64_t n, StridedMatrix<T> b, ThreadPool* pool)
    : PackedB(best_kernel<T>(), k, n, b, pool) {}

template <typename T>
PackedB<T>::PackedB(const MicroKernel<T>& uk, std::int64_t k, std::int64_t n, StridedMatrix<T> b,
                    ThreadPool* pool)
    : k_(k), n_(n), kc_(uk.kc), nc_(uk.nc) {
  const Blocking bl = blocking(uk, std::max<std::int64_t>(n, 1), std::max<std::int64_t>(k, 1));
  nc_max_ = bl.nc_max;
  nr_ = uk.nr;
  const std::int64_t width = (n + nr_ - 1) / nr_ * nr_;  // every block's padded columns
  bytes_ = sizeof(T) * static_cast<std::size_t>(std::max<std::int64_t>(1, width * k));
  data_ = static_cast<T*>(allocate_buffer(bytes_));
  if (data_ == nullptr) {
    throw OpError(ErrorCode::kResourceExhausted,
                  "matmul: cannot allocate " + std::to_string(bytes_) + " bytes of packed weights");
  }
  // One task per (NC block, KC block, micro-panel): copies only, any split gives the same bytes.
  std::vector<std::array<std::int64_t, 3>> blocks;  // jc, pc, kc
  for (std::int64_t jc = 0; jc < n; jc += nc_max_) {
    for (std::int64_t pc = 0; pc < k; pc += bl.kc_max) {
      blocks.push_back({jc, pc, std::min(bl.kc_max, k - pc)});
    }
  }
  const std::int64_t panels_per_block = (nc_max_ + nr_ - 1) / nr_;
  parallel_for(
      pool, 0, static_cast<std::int64_t>(blocks.size()) * panels_per_block, 1,
      [&](std::int64_t e0, std::int64_t e1) {
        for (std::int64_t e = e0; e < e1; ++e) {
          const auto& [jc, pc, kc] = blocks[static_cast<std::size_t>(e / panels_per_block)];
          const std::int64_t jp = e % panels_per_block;
          const std::int64_t nc = std::min(nc_max_, n - jc);
          if (jp * nr_ >= nc) continue;
          pack_b(b, n, jc, pc, kc, static_cast<int>(nr_), jp, jp + 1,
                 data_ + jc * k_ + pc * padded_width(jc));
        }
      },
      static_cast<double>(bl.kc_max * nr_));
}

template <typename T>
PackedB<T>::~PackedB() {
  release_buffer(data_, bytes_);
}

template <typename T>
std::int64_t PackedB<T>::padded_width(std::int64_t jc) const noexcept {
  const std::int64_t nc = std::min(nc_max_, n_ - jc);
  return (nc + nr_ - 1) / nr_ * nr_;
}

template <typename T>
bool PackedB<T>::fits(const MicroKernel<T>& uk) const noexcept {
  return uk.kc == kc_ && uk.nc == nc_ && uk.nr == nr_;
}

template class PackedB<float>;
template class PackedB<double>;

// -- the packed path
// -------------------------------------------------------------------------------

template <typename T>
void packed_gemm(const MicroKernel<T>& uk, std::int64_t m, std::int64_t n, std::int64_t k,
                 const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
                 ThreadPool* pool, const Epilogue<T>& ep, const PackedB<T>* packed) {
  const int mr = uk.mr, nr = uk.nr;
  const Blocking bl = blocking(uk, n, k);
  const std::int64_t kc_max = bl.kc_max, nc_max = bl.nc_max;
  // A PackedB is laid out for the selected kernel; tests run other kernels on the same shapes.
  if (packed != nullptr && !packed->fits(uk)) packed = nullptr;
  // The B panel is per call (not thread-local): while this thread waits in parallel_for it may
  // help run another op's matmul, which must not overwrite our panel.
  AlignedBuffer bbuf;
  if (packed == nullptr) bbuf.reserve(sizeof(T) * static_cast<std::size_t>(kc_max * nc_max));
  const std::int64_t m_panels = (m + mr - 1) / mr;
  const std::int64_t mc_panels = std::max<std::int64_t>(1, uk.mc / mr);
  const int threads = pool ? pool->num_workers() + 1 : 1;
  // The M loop runs over `blocks` near-equal runs of row panels (block q holds panels
  // [q * m_panels / blocks, (q + 1) * m_panels / blocks)), a whole number per thread and at most
  // an MC block each. Splitting block indices rather than panels on a grain lattice keeps the
  // threads' shares within one panel for any thread count: 22 panels (M = 256) on 2 threads run
  // as 11 | 11, where panel chunks of 6 split 6 | 16 and left one thread idle two thirds of the
  // time. Which thread computes a block never changes its bits.
  const std::int64_t per_thread = (m_panels + threads * mc_panels - 1) / (threads * mc_panels);
  const std::int64_t blocks = std::max<std::int64_t>(1, std::min(m_panels, threads * per_thread));
  const bool direct_a = reads_a_in_place(uk.fn_rows, a.cs, a.rs, n);
  const bool direct_cols = !direct_a && reads_a_in_place(uk.fn_cols, a.rs, a.cs, n);
  // Rows that do not fill a micro-panel (m = 16: 12 + 4) go to the few-rows kernel, which reads
  // the same packed B panels and computes the same FMA chains, instead of a zero-padded tile
  // (a third of the FMAs wasted at m = 16).
  const bool gemv_rows = uk.fn_gemv != nullptr;
  const bool has_ep = !ep.empty();
  // 2 x k_blocks x n_blocks parallel phases follow each other (8 for n = 1024 float32): keep the
  // pool's threads awake between them (thread_pool.h). A worker that finished its rows of one
  // phase used to park while the caller finished its own (> 50 us), and the next phase started
  // without it while it woke up.
  ThreadPool::KeepAwake awake(pool);

  for (std::int64_t jc = 0; jc < n; jc += nc_max) {
    const std::int64_t nc = std::min(nc_max, n - jc);
    const std::int64_t n_panels = (nc + nr - 1) / nr;
    // Few row panels for the threads (a batch of 16 is 2 panels, one of them 4 rows): the columns
    // are split too, into tiles of (row block, run of micro-panels) ordered column run first, so
    // halving the tile range halves the columns and every thread gets all row blocks' share.
    const std::int64_t n_chunks =
        threads == 1 || m_panels >= 4 * threads
            ? 1
            : std::min<std::int64_t>(n_panels, (4 * threads + m_panels - 1) / m_panels);
    const std::int64_t tiles = blocks * n_chunks;
    for (std::int64_t pc = 0; pc < k; pc += kc_max) {
      const std::int64_t kc = std::min(kc_max, k - pc);
      const bool accumulate = pc > 0;
      const bool last_k = pc + kc >= k;
      const T* bpack = packed != nullptr ? packed->block(jc, pc) : bbuf.as<T>();
      if (packed == nullptr) {
        T* dst = bbuf.as<T>();
        parallel_for(
            pool, 0, n_panels, std::max<std::int64_t>(1, n_panels / (2 * threads)),
            [&](std::int64_t jp0, std::int64_t jp1) {
              pack_b(b, n, jc, pc, kc, nr, jp0, jp1, dst);
            },
            static_cast<double>(kc * nr));
      }
      parallel_for(
          pool, 0, tiles, 1,
          [&](std::int64_t t0, std::int64_t t1) {
            AlignedBuffer& abuf = thread_a_buffer();
            abuf.reserve(sizeof(T) * static_cast<std::size_t>(mc_panels * mr * kc_max));
            T* apack = abuf.as<T>();
            alignas(64) T tile[16 * 64];  // >= MR x NR of every kernel
            for (std::int64_t t = t0; t < t1; ++t) {
              const std::int64_t q = t % blocks, ch = t / blocks;
              const std::int64_t blk = q * m_panels / blocks;
              const std::int64_t i0 = blk * mr;
              const std::int64_t mc = ((q + 1) * m_panels / blocks - blk) * mr;
              const std::int64_t valid = std::min(mc, m - i0);
              const std::int64_t full = valid / mr * mr;  // rows in whole micro-panels
              const std::int64_t ragged = valid - full;
              const std::int64_t jr0 = ch * n_panels / n_chunks * nr;
              const std::int64_t jr1 = std::min(nc, (ch + 1) * n_panels / n_chunks * nr);
              if (direct_a || direct_cols) {
                // Only the ragged last micro-panel (rows past m) needs a zero-padded copy, and
                // not even that when the few-rows kernel reads it.
                if (full < mc && !gemv_rows) {
                  pack_a(a, m, i0 + full, mc - full, pc, kc, mr, apack + full * kc);
                }
              } else {
                pack_a(a, m, i0, mc, pc, kc, mr, apack);
              }
              for (std::int64_t jr = jr0; jr < jr1; jr += nr) {
                const T* bp = bpack + jr * kc;
                const std::int64_t cols = std::min<std::int64_t>(nr, nc - jr);
                const std::int64_t end = gemv_rows ? full : valid;
                for (std::int64_t ir = 0; ir < end; ir += mr) {
                  const std::int64_t rows = std::min<std::int64_t>(mr, valid - ir);
                  T* ct = c + (i0 + ir) * ldc + jc + jr;
                  const T* ap = apack + ir * kc;
                  const T* ar = a.data + (i0 + ir) * a.rs + pc;  // unpacked rows (direct_a)
                  const bool rows_fn = direct_a && rows == mr;
                  const bool cols_fn = direct_cols && rows == mr;
                  const T* ac = a.data + i0 + ir + pc * a.cs;  // unpacked columns (direct_cols)
                  if (rows == mr && cols == nr) {
                    if (rows_fn) {
                      uk.fn_rows(kc, ar, a.rs, bp, ct, ldc, accumulate);
                    } else if (cols_fn) {
                      uk.fn_cols(kc, ac, a.cs, bp, ct, ldc, accumulate);
                    } else {
                      uk.fn(kc, ap, bp, ct, ldc, accumulate);
                    }
                  } else {
                    if (rows_fn) {
                      uk.fn_rows(kc, ar, a.rs, bp, tile, nr, false);
                    } else if (cols_fn) {
                      uk.fn_cols(kc, ac, a.cs, bp, tile, nr, false);
                    } else {
                      uk.fn(kc, ap, bp, tile, nr, false);
                    }
                    for (std::int64_t i = 0; i < rows; ++i) {
                      for (std::int64_t j = 0; j < cols; ++j) {
                        ct[i * ldc + j] =
                            accumulate ? ct[i * ldc + j] + tile[i * nr + j] : tile[i * nr + j];
                      }
                    }
                  }
                  // The tile is final after the last K block and still in L1: the epilogue now.
                  if (has_ep && last_k) apply_epilogue(ep, rows, cols, jc + jr, ct, ldc);
                }
              }
              if (gemv_rows && ragged > 0 && jr1 > jr0) {
                const bool in_place = direct_a || direct_cols;
                const T* a_rows =
                    in_place ? a.data + (i0 + full) * a.rs + pc * a.cs : apack + full * kc;
                const std::int64_t ars = in_place ? a.rs : 1, aks = in_place ? a.cs : mr;
                T* ct = c + (i0 + full) * ldc + jc + jr0;
                uk.fn_gemv(static_cast<int>(ragged), jr1 - jr0, kc, a_rows, ars, aks,
                           bpack + jr0 * kc, nr, kc * nr, ct, ldc, accumulate);
                if (has_ep && last_k) apply_epilogue(ep, ragged, jr1 - jr0, jc + jr0, ct, ldc);
              }
            }
          },
          static_cast<double>(m_panels / blocks * mr) * static_cast<double>(nc / n_chunks + 1) *
              static_cast<double>(kc) / 8.0);
    }
  }
}

template void packed_gemm<float>(const MicroKernel<float>&, std::int64_t, std::int64_t,
                                 std::int64_t, const StridedMatrix<float>&,
                                 const StridedMatrix<float>&, float*, std::int64_t, ThreadPool*,
                                 const Epilogue<float>&, const PackedB<float>*);
template void packed_gemm<double>(const MicroKernel<double>&, std::int64_t, std::int64_t,
                                  std::int64_t, const StridedMatrix<double>&,
                                  const StridedMatrix<double>&, double*, std::int64_t, ThreadPool*,
                                  const Epilogue<double>&, const PackedB<double>*);

// -- the few-rows (GEMV-style) path
// ----------------------------------------------------------------

// C = A * B for m < MR: the columns are cut into chunks of whole micro-panels (split across
// threads), and each chunk runs every K block in order with its C block in registers
// (fn_gemv), so each B element is read once per call: a batch of one streams the weights once.
// B is read in place when its rows are contiguous, else from `packed` (packed now if not given).
// Same K blocks and FMA chains as packed_gemm: the same bits.
template <typename T>
void gemv_gemm(const MicroKernel<T>& uk, std::int64_t m, std::int64_t n, std::int64_t k,
               const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
               ThreadPool* pool, const Epilogue<T>& ep, const PackedB<T>* packed) {
  const int nr = uk.nr;
  const Blocking bl = blocking(uk, n, k);
  const std::int64_t kc_max = bl.kc_max, nc_max = bl.nc_max;
  if (packed != nullptr && !packed->fits(uk)) packed = nullptr;
  std::unique_ptr<PackedB<T>> own;
  if (packed == nullptr && b.cs != 1) {
    // Columns of B are not contiguous (a transposed weight): pack it once for this call.
    own = std::make_unique<PackedB<T>>(uk, k, n, b, pool);
    packed = own.get();
  }
  // Chunks of 4 micro-panels (128 float32 columns with AVX-512): a few chunks per layer to share
  // between threads, each long enough to amortise the call. Packed B is read block by NC block, so
  // a chunk never straddles one (nc_max is a multiple of NR).
  const std::int64_t chunk = 4 * static_cast<std::int64_t>(nr);
  const std::int64_t span = packed != nullptr ? nc_max : (n + chunk - 1) / chunk * chunk;
  const std::int64_t per_span = (span + chunk - 1) / chunk;
  const std::int64_t spans = (n + span - 1) / span;
  const double cost =
      static_cast<double>(chunk) * static_cast<double>(k) * (static_cast<double>(m) / 16.0 + 0.5);
  ThreadPool::KeepAwake awake(pool);
  parallel_for(
      pool, 0, spans * per_span, 1,
      [&](std::int64_t e0, std::int64_t e1) {
        for (std::int64_t e = e0; e < e1; ++e) {
          const std::int64_t jc = e / per_span * span;
          const std::int64_t j = jc + e % per_span * chunk;
          const std::int64_t cols = std::min({chunk, n - j, jc + span - j});
          if (cols <= 0) continue;
          T* cj = c + j;
          for (std::int64_t pc = 0; pc < k; pc += kc_max) {
            const std::int64_t kc = std::min(kc_max, k - pc);
            const T* ap = a.data + pc * a.cs;
            if (packed != nullptr) {
              const T* bp = packed->block(jc, pc) + (j - jc) * kc;  // panel (j - jc) / NR
              uk.fn_gemv(static_cast<int>(m), cols, kc, ap, a.rs, a.cs, bp, nr, kc * nr, cj, ldc,
                         pc > 0);
            } else {
              uk.fn_gemv(static_cast<int>(m), cols, kc, ap, a.rs, a.cs, b.data + pc * b.rs + j,
                         b.rs, nr, cj, ldc, pc > 0);
            }
          }
          if (!ep.empty()) apply_epilogue(ep, m, cols, j, cj, ldc);
        }
      },
      cost);
}

template void gemv_gemm<float>(const MicroKernel<float>&, std::int64_t, std::int64_t, std::int64_t,
                               const StridedMatrix<float>&, const StridedMatrix<float>&, float*,
                               std::int64_t, ThreadPool*, const Epilogue<float>&,
                               const PackedB<float>*);
template void gemv_gemm<double>(const MicroKernel<double>&, std::int64_t, std::int64_t,
                                std::int64_t, const StridedMatrix<double>&,
                                const StridedMatrix<double>&, double*, std::int64_t, ThreadPool*,
                                const Epilogue<double>&, const PackedB<double>*);

// -- the few-columns path ------------------------------------------------------------------------

// C = A * B for n <= few_cols::kMaxCols (a classifier's logits and their weight's gradient), in
// blocks of rows split across threads, each running every K block in order with its C block in
// registers. Row-major A (the logits' activations): the few-rows path (gemv_gemm) on runs of
// MR - 1 rows reads A and B in place (B packed once if its columns are not contiguous), at
// n / NR of its lanes busy but with no transposing copy of A. Otherwise (the transposed
// activations of a weight gradient) the few-columns kernel (fn_few_cols), rows in vector lanes,
// A read in place when its columns are contiguous, else packed per block. Same K blocks and FMA
// chains as packed_gemm either way: the same bits.
template <typename T>
void few_cols_gemm(const MicroKernel<T>& uk, std::int64_t m, std::int64_t n, std::int64_t k,
                   const StridedMatrix<T>& a, const StridedMatrix<T>& b, T* c, std::int64_t ldc,
                   ThreadPool* pool, const Epilogue<T>& ep, const PackedB<T>* packed) {
  if (packed != nullptr && !packed->fits(uk)) packed = nullptr;
  const double flops_per_row = static_cast<double>(k) * static_cast<double>(n);
  if (a.cs == 1 && uk.fn_gemv != nullptr) {
    // B packed once here if its columns are not contiguous, not by every run's gemv_gemm.
    std::unique_ptr<PackedB<T>> own;
    if (packed == nullptr && b.cs != 1) {
      own = std::make_unique<PackedB<T>>(uk, k, n, b, pool);
      packed = own.get();
    }
    const std::int64_t run = uk.mr - 1;
    parallel_for(
        pool, 0, (m + run - 1) / run, 1,
        [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r) {
            const std::int64_t i0 = r * run;
            gemv_gemm<T>(uk, std::min(run, m - i0), n, k, {a.data + i0 * a.rs, a.rs, a.cs}, b,
                         c + i0 * ldc, ldc, nullptr, ep, packed);
          }
        },
        static_cast<double>(run) * flops_per_row / 4.0);
    return;
  }
  // fn_few_cols reads packed B as one micro-panel (brs = NR): not when the columns spill into a
  // second one (float64 with AVX2, NR = 8).
  if (packed != nullptr && n > uk.nr) packed = nullptr;
  const std::int64_t kc_max = blocking(uk, n, k).kc_max;
  const int fr = uk.few_rows;
  const bool a_in_place = a.rs == 1;
  parallel_for(
      pool, 0, (m + fr - 1) / fr, 1,
      [&](std::int64_t b0, std::int64_t b1) {
        AlignedBuffer& abuf = thread_a_buffer();
        if (!a_in_place) abuf.reserve(sizeof(T) * static_cast<std::size_t>(fr * kc_max));
        for (std::int64_t blk = b0; blk < b1; ++blk) {
          const std::int64_t i0 = blk * fr;
          const int rows = static_cast<int>(std::min<std::int64_t>(fr, m - i0));
          T* ci = c + i0 * ldc;
          for (std::int64_t pc = 0; pc < k; pc += kc_max) {
            const std::int64_t kc = std::min(kc_max, k - pc);
            const T* ap = a.data + i0 + pc * a.cs;
            std::int64_t aps = a.cs;
            if (!a_in_place) {
              pack_a(a, m, i0, fr, pc, kc, fr, abuf.as<T>());
              ap = abuf.as<T>();
              aps = fr;
            }
            const T* bp = packed != nullptr ? packed->block(0, pc) : b.data + pc * b.rs;
            const std::int64_t brs = packed != nullptr ? uk.nr : b.rs;
            const std::int64_t bcs = packed != nullptr ? 1 : b.cs;
            uk.fn_few_cols(rows, static_cast<int>(n), kc, ap, aps, bp, brs, bcs, ci, ldc, pc > 0);
          }
          if (!ep.empty()) apply_epilogue(ep, rows, n, 0, ci, ldc);
        }
      },
      static_cast<double>(fr) * flops_per_row / 8.0);
}

template void few_cols_gemm<float>(const MicroKernel<float>&, std::int64_t, std::int64_t,
                                   std::int64_t, const StridedMatrix<float>&,
                                   const StridedMatrix<float>&, float*, std::int64_t, ThreadPool*,
                                   const Epilogue<float>&, const PackedB<float>*);
template void few_cols_gemm<double>(const MicroKernel<double>&, std::int64_t, std::int64_t,
                                    std::int64_t, const StridedMatrix<double>&,
                                    const StridedMatrix<double>&, double*, std::int64_t,
                                    ThreadPool*, const Epilogue<double>&, const PackedB<double>*);

const char* gemm_isa(bool float64) {
  return float64 ? best_kernel_f64().isa : best_kernel_f32().isa;
}

namespace {

template <typename T>
double ceiling_gflops(double seconds) {
  const MicroKernel<T>& uk = best_kernel<T>();
  // The GEMM's own blocking: a KC = 256 B micro-panel in L1, A micro-panels streaming from L2.
  const std::int64_t kc = 256;
  constexpr int kTiles = 8;
  AlignedBuffer a, b, c;
  a.reserve(sizeof(T) * static_cast<std::size_t>(kc * uk.mr * kTiles));
  b.reserve(sizeof(T) * static_cast<std::size_t>(kc * uk.nr));
  c.reserve(sizeof(T) * static_cast<std::size_t>(uk.mr * uk.nr * kTiles));
  std::fill(a.as<T>(), a.as<T>() + kc * uk.mr * kTiles, T(1));
  std::fill(b.as<T>(), b.as<T>() + kc * uk.nr, T(0));  // C stays finite (and 0)
  std::fill(c.as<T>(), c.as<T>() + uk.mr * uk.nr * kTiles, T(0));
  const double flops_per_call = 2.0 * uk.mr * uk.nr * static_cast<double>(kc) * kTiles;
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    std::int64_t calls = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds / 5) {
      for (int i = 0; i < 64; ++i, ++calls) {
        for (int t = 0; t < kTiles; ++t) {
          uk.fn(kc, a.as<T>() + t * uk.mr * kc, b.as<T>(), c.as<T>() + t * uk.mr * uk.nr, uk.nr,
                true);
        }
      }
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    best = std::max(best, flops_per_call * static_cast<double>(calls) / elapsed / 1e9);
  }
  return best;
}

}  // namespace

double gemm_ceiling_gflops(bool float64, double seconds) {
  return float64 ? ceiling_gflops<double>(seconds) : ceiling_gflops<float>(seconds);
}

bool gemm_is_small(std::int64_t m, std::int64_t n, std::int64_t k) {
  // Below ~32^3 multiply-adds packing costs as much as it saves; very skinny products (one or two
  // rows or columns) are memory-bound and gain nothing from register tiles.
  return m <= 2 || n <= 2 || k <= 2 || m * n * k <= 32 * 32 * 32;
}

template <typename T>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, StridedMatrix<T> a, StridedMatrix<T> b,
          T* c, std::int64_t ldc, ThreadPool* pool, const Epilogue<T>& ep,
          const PackedB<T>* packed) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    if (!ep.empty()) apply_epilogue(ep, m, n, 0, c, ldc);
    return;
  }
  const MicroKernel<T>& uk = best_kernel<T>();
  if (n <= 2 || k <= 2) {
    small_gemm(m, n, k, a, b, c, ldc, pool, ep);
  } else if (m < uk.mr && uk.fn_gemv != nullptr) {
    gemv_gemm(uk, m, n, k, a, b, c, ldc, pool, ep, packed);
  } else if (gemm_is_small(m, n, k)) {
    small_gemm(m, n, k, a, b, c, ldc, pool, ep);
  } else if (n <= few_cols::kMaxCols && uk.fn_few_cols != nullptr) {
    few_cols_gemm(uk, m, n, k, a, b, c, ldc, pool, ep, packed);
  } else {
    packed_gemm(uk, m, n, k, a, b, c, ldc, pool, ep, packed);
  }
}

template void gemm<float>(std::int64_t, std::int64_t, std::int64_t, StridedMatrix<float>,
                          StridedMatrix<float>, float*, std::int64_t, ThreadPool*,
                          const Epilogue<float>&, const PackedB<float>*);
template void gemm<double>(std::int64_t, std::int64_t, std::int64_t, StridedMatrix<double>,
                           StridedMatrix<double>, double*, std::int64_t, ThreadPool*,
                           const Epilogue<double>&, const PackedB<double>*);

// -- gemm_sourced: operands read block by block (convolutions) -----------------------------------

template <typename T>
void StridedSource<T>::copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                            T* dst, std::int64_t ld) const {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* src = m_.data + (i0 + r) * m_.rs + j0 * m_.cs;
    T* out = dst + r * ld;
    if (m_.cs == 1) {
      std::memcpy(out, src, sizeof(T) * static_cast<std::size_t>(cols));
    } else {
      for (std::int64_t j = 0; j < cols; ++j) out[j] = src[j * m_.cs];
    }
  }
}

template <typename T>
void StridedSource<T>::copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                                       std::int64_t cols, T* dst, std::int64_t ld) const {
  for (std::int64_t j = 0; j < cols; ++j) {
    const T* src = m_.data + i0 * m_.rs + (j0 + j) * m_.cs;
    T* out = dst + j * ld;
    if (m_.rs == 1) {
      std::memcpy(out, src, sizeof(T) * static_cast<std::size_t>(rows));
    } else {
      for (std::int64_t i = 0; i < rows; ++i) out[i] = src[i * m_.rs];
    }
  }
}

template class StridedSource<float>;
template class StridedSource<double>;

template <typename T>
void BlockSource<T>::pack_panels(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                                 std::int64_t cols, int mr, T* dst) const {
  for (std::int64_t ir = 0; ir < rows; ir += mr) {
    T* panel = dst + ir * cols;
    const std::int64_t n = std::min<std::int64_t>(mr, rows - ir);
    copy_transposed(i0 + ir, n, j0, cols, panel, mr);
    if (n < mr) {
      for (std::int64_t p = 0; p < cols; ++p)
        std::fill(panel + p * mr + n, panel + (p + 1) * mr, T(0));
    }
  }
}

template <typename T>
void TransposedSource<T>::pack_panels(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                                      std::int64_t cols, int mr, T* dst) const {
  // Thread-local: a chunk of gemm_sourced's parallel loop never calls back into the pool while
  // packing, so one thread never packs two blocks at once.
  thread_local std::vector<T> scratch;
  const std::int64_t ld = (rows + mr - 1) / mr * mr;
  scratch.resize(static_cast<std::size_t>(cols * ld));
  T* tmp = scratch.data();
  of_.copy(j0, cols, i0, rows, tmp, ld);  // tmp[p][i] = A[i0 + i][j0 + p], long runs
  if (rows < ld) {
    for (std::int64_t p = 0; p < cols; ++p)
      std::fill(tmp + p * ld + rows, tmp + (p + 1) * ld, T(0));
  }
  for (std::int64_t ir = 0; ir < ld; ir += mr) {
    T* panel = dst + ir * cols;
    const T* from = tmp + ir;
    for (std::int64_t p = 0; p < cols; ++p) {
      for (int i = 0; i < mr; ++i) panel[p * mr + i] = from[p * ld + i];  // not a memcpy call
    }
  }
}

template class BlockSource<float>;
template class BlockSource<double>;
template class TransposedSource<float>;
template class TransposedSource<double>;

namespace {

// Row stride of an A block packed as rows: kc rounded up to a cache line, and never a multiple of
// 4 KiB (rows at one 4 KiB offset would share the L1 sets of the B micro-panel; see
// reads_a_in_place).
template <typename T>
std::int64_t rows_stride(std::int64_t kc) {
  constexpr std::int64_t per_line = 64 / static_cast<std::int64_t>(sizeof(T));
  std::int64_t ld = (kc + per_line - 1) / per_line * per_line;
  if ((ld * static_cast<std::int64_t>(sizeof(T))) % 4096 == 0) ld += per_line;
  return ld;
}

// Packed B of consecutive K blocks is kept while every tile of C uses it: at most this much, so it
// stays in L2 (a weight gradient's B, the output gradient, is packed afresh group after group:
// 87 GFLOP/s at 1 MiB against 79 at 4 MiB for 64x56x56x64, 3x3x64x64). A convolution's filter
// usually fits whole.
constexpr std::size_t kBGroupBytes = std::size_t{1} << 20;

}  // namespace

// Loop order (per NC column block jc, per group of K blocks whose packed B fits kBGroupBytes):
//
//   pack B[group, jc block] into KC x NR micro-panels   (parallel over (K block, micro-panel))
//   parallel over tiles of C (MC rows x a run of NR micro-panels):
//     for each K block of the group (in order):
//       A block (MC x KC) from the source: rows for fn_rows kernels, else MR micro-panels
//       for each B micro-panel of the tile: for each MR row panel: micro-kernel (+= after block 0)
//
// Unlike packed_gemm the K loop runs inside a tile, so the tile of C stays in cache across K
// blocks, and one parallel phase covers a whole group: a convolution's filter (B) is small and
// its patch matrix (A) tall. Columns are split as well as rows when the rows give fewer tiles
// than twice the threads (a weight gradient: C has as many rows as output channels). Neither
// split changes any element's FMA chain, so tiles may depend on the thread count.
template <typename T>
void gemm_sourced(std::int64_t m, std::int64_t n, std::int64_t k, const BlockSource<T>& a,
                  const BlockSource<T>& b, T* c, std::int64_t ldc, ThreadPool* pool,
                  std::int64_t k_unit, const Epilogue<T>& ep) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    if (!ep.empty()) apply_epilogue(ep, m, n, 0, c, ldc);
    return;
  }
  const bool has_ep = !ep.empty();
  const MicroKernel<T>& uk = best_kernel<T>();
  const int mr = uk.mr, nr = uk.nr;
  // K blocks: balanced in units of k_unit (block q covers units [q * units / k_blocks, ...)).
  const std::int64_t unit = k_unit >= 1 && k_unit <= uk.kc ? k_unit : 1;
  const std::int64_t units = (k + unit - 1) / unit;
  const std::int64_t units_per_kc = uk.kc / unit;
  const std::int64_t k_blocks = (units + units_per_kc - 1) / units_per_kc;
  auto k_begin = [&](std::int64_t q) { return std::min(k, q * units / k_blocks * unit); };
  std::int64_t kc_max = 0;
  for (std::int64_t q = 0; q < k_blocks; ++q)
    kc_max = std::max(kc_max, k_begin(q + 1) - k_begin(q));
  const std::int64_t n_blocks = (n + uk.nc - 1) / uk.nc;
  const std::int64_t nc_max = ((n + n_blocks - 1) / n_blocks + nr - 1) / nr * nr;
  const std::size_t block_bytes = sizeof(T) * static_cast<std::size_t>(kc_max * nc_max);
  const std::int64_t group =
      std::min<std::int64_t>(k_blocks, std::max<std::size_t>(1, kBGroupBytes / block_bytes));
  // Per call, not thread-local: see packed_gemm.
  AlignedBuffer bbuf;
  bbuf.reserve(block_bytes * static_cast<std::size_t>(group));
  T* bpack = bbuf.as<T>();
  const bool rows_mode = uk.fn_rows != nullptr && a.rows_are_contiguous();
  const std::int64_t lda_max = rows_stride<T>(kc_max);
  const int threads = pool ? pool->num_workers() + 1 : 1;
  const std::int64_t m_panels = (m + mr - 1) / mr;
  const std::int64_t mc_panels = std::max<std::int64_t>(1, uk.mc / mr);
  const std::int64_t m_blocks = (m_panels + mc_panels - 1) / mc_panels;
  ThreadPool::KeepAwake awake(pool);

  for (std::int64_t jc = 0; jc < n; jc += nc_max) {
    const std::int64_t nc = std::min(nc_max, n - jc);
    const std::int64_t n_panels = (nc + nr - 1) / nr;
    const std::int64_t n_chunks =
        m_blocks >= 2 * threads
            ? 1
            : std::min<std::int64_t>(n_panels, (2 * threads + m_blocks - 1) / m_blocks);
    const std::int64_t tiles = m_blocks * n_chunks;
    for (std::int64_t q0 = 0; q0 < k_blocks; q0 += group) {
      const std::int64_t q1 = std::min(k_blocks, q0 + group);
      const std::int64_t kg0 = k_begin(q0);
      parallel_for(
          pool, 0, (q1 - q0) * n_panels, 1,
          [&](std::int64_t e0, std::int64_t e1) {
            for (std::int64_t e = e0; e < e1; ++e) {
              const std::int64_t q = q0 + e / n_panels, jp = e % n_panels;
              const std::int64_t p0 = k_begin(q), kc = k_begin(q + 1) - p0;
              T* dst = bpack + (p0 - kg0) * nc_max + jp * nr * kc;
              const std::int64_t cols = std::min<std::int64_t>(nr, nc - jp * nr);
              b.copy(p0, kc, jc + jp * nr, cols, dst, nr);
              if (cols < nr) {
                for (std::int64_t p = 0; p < kc; ++p)
                  std::fill(dst + p * nr + cols, dst + (p + 1) * nr, T(0));
              }
            }
          },
          static_cast<double>(kc_max * nr));
      parallel_for(
          pool, 0, tiles, 1,
          [&](std::int64_t t0, std::int64_t t1) {
            AlignedBuffer& abuf = thread_a_buffer();
            abuf.reserve(sizeof(T) * static_cast<std::size_t>(mc_panels * mr * lda_max));
            T* apack = abuf.as<T>();
            alignas(64) T tile[16 * 64];  // >= MR x NR of every kernel
            for (std::int64_t t = t0; t < t1; ++t) {
              const std::int64_t i0 = t / n_chunks * mc_panels * mr;
              const std::int64_t mc = std::min(mc_panels * mr, m_panels * mr - i0);
              const std::int64_t valid = std::min(mc, m - i0);
              const std::int64_t ch = t % n_chunks;
              const std::int64_t jp0 = ch * n_panels / n_chunks;
              const std::int64_t jp1 = (ch + 1) * n_panels / n_chunks;
              for (std::int64_t q = q0; q < q1; ++q) {
                const std::int64_t p0 = k_begin(q), kc = k_begin(q + 1) - p0;
                const bool accumulate = q > 0;
                const std::int64_t lda = rows_stride<T>(kc);
                if (rows_mode) {
                  // Copied even from a strided matrix with contiguous rows (a 1x1 convolution):
                  // the copy streams the rows in faster than the micro-kernel's twelve row
                  // streams would (measured 85 vs 79 GFLOP/s for 25088 x 256 x 64).
                  a.copy(i0, valid, p0, kc, apack, lda);
                  for (std::int64_t i = valid; i < mc; ++i) {
                    std::fill(apack + i * lda, apack + i * lda + kc, T(0));
                  }
                } else {
                  a.pack_panels(i0, valid, p0, kc, mr, apack);
                }
                const T* bblock = bpack + (p0 - kg0) * nc_max;
                for (std::int64_t jp = jp0; jp < jp1; ++jp) {
                  const T* bp = bblock + jp * nr * kc;
                  const std::int64_t cols = std::min<std::int64_t>(nr, nc - jp * nr);
                  for (std::int64_t ir = 0; ir < mc; ir += mr) {
                    const std::int64_t rows = std::min<std::int64_t>(mr, valid - ir);
                    T* ct = c + (i0 + ir) * ldc + jc + jp * nr;
                    const bool full = rows == mr && cols == nr;
                    T* out = full ? ct : tile;
                    const std::int64_t ldo = full ? ldc : nr;
                    const bool acc = full && accumulate;
                    if (rows_mode) {
                      uk.fn_rows(kc, apack + ir * lda, lda, bp, out, ldo, acc);
                    } else {
                      uk.fn(kc, apack + ir * kc, bp, out, ldo, acc);
                    }
                    if (!full) {
                      for (std::int64_t i = 0; i < rows; ++i) {
                        for (std::int64_t j = 0; j < cols; ++j) {
                          ct[i * ldc + j] =
                              accumulate ? ct[i * ldc + j] + tile[i * nr + j] : tile[i * nr + j];
                        }
                      }
                    }
                    // The micro-tile is final after the last K block and still in L1.
                    if (has_ep && q == k_blocks - 1) {
                      apply_epilogue(ep, rows, cols, jc + jp * nr, ct, ldc);
                    }
                  }
                }
              }
            }
          },
          static_cast<double>(mc_panels * mr) * static_cast<double>(nc / n_chunks + 1) *
              static_cast<double>(kc_max * (q1 - q0)) / 8.0);
    }
  }
}

template void gemm_sourced<float>(std::int64_t, std::int64_t, std::int64_t,
                                  const BlockSource<float>&, const BlockSource<float>&, float*,
                                  std::int64_t, ThreadPool*, std::int64_t, const Epilogue<float>&);
template void gemm_sourced<double>(std::int64_t, std::int64_t, std::int64_t,
                                   const BlockSource<double>&, const BlockSource<double>&, double*,
                                   std::int64_t, ThreadPool*, std::int64_t,
                                   const Epilogue<double>&);

}  // namespace opweave::gemm_detail
