// The inner loops of the reductions, compiled twice from this one source: reduce_loops.cpp
// (baseline x86-64) and reduce_loops_avx2.cpp (-mavx2). Both builds do the same operations in the
// same order (same lanes, same trees; no FMA in sums), so results do not depend on the ISA either;
// the AVX2 build simply runs each lane group as wider vectors. reduce.cpp picks the table once
// with cpu_info().
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace opweave::reduce_detail {

enum class Combine { kAdd, kMax, kMin, kMul };

// The loops for one (combine, element type).
template <Combine C, typename T>
struct LoopFns {
  // Reduction of a contiguous run of n >= 1 values (NumPy-style pairwise).
  T (*run)(const T* x, std::int64_t n);
  // out[0:w] = reduction over rows r < rows of src[r * stride + (0:w)]; scratch: w * depth values
  // where depth = row_tree_depth(rows).
  void (*rows)(const T* src, std::int64_t rows, std::int64_t stride, std::int64_t w, T* out,
               T* scratch);
  // dst[j] = op(dst[j], src[j]).
  void (*combine)(T* dst, const T* src, std::int64_t w);
};

// Leaves of up to kLeafRows rows are accumulated in row order into one output row; leaves are
// combined pairwise (halving recursion).
constexpr std::int64_t kLeafRows = 16;

inline int row_tree_depth(std::int64_t rows) {
  int depth = 1;
  for (std::int64_t r = rows; r > kLeafRows; r = (r + 1) / 2) ++depth;
  return depth;
}

template <Combine C, typename T>
LoopFns<C, T> loops_baseline();
template <Combine C, typename T>
LoopFns<C, T> loops_avx2();

}  // namespace opweave::reduce_detail

// Only the two loop files define OPWEAVE_REDUCE_LOOPS_IMPL. The templates below sit in an
// unnamed namespace: each file gets its own copy, so the linker can never substitute the AVX2
// instantiation for the baseline one (an ODR trap with per-file ISA flags).
#ifdef OPWEAVE_REDUCE_LOOPS_IMPL
// 32-byte vector values never cross a function boundary outside this file (the helpers inline),
// so GCC's note that their ABI differs with and without AVX does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
namespace opweave::reduce_detail {
namespace {

// Integer sums and products wrap (computed on the unsigned type); max/min propagate NaN: "a is
// NaN or a beats b" picks a, otherwise b (NaN if b is) -- branch-free, so the loops vectorise.
template <Combine C, typename T>
inline T apply(T a, T b) {
  if constexpr (C == Combine::kAdd) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  } else if constexpr (C == Combine::kMul) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  } else if constexpr (C == Combine::kMax) {
    return (a != a || a > b) ? a : b;
  } else {
    return (a != a || a < b) ? a : b;
  }
}

// 32-byte vectors through GCC/Clang vector extensions: the baseline build runs each as two SSE2
// registers, the AVX2 build as one ymm register; lane for lane the same arithmetic.
// Integer sums wrap: vectors of integers add on the unsigned type.
template <typename T, bool = std::is_integral_v<T>>
struct WrapLane {
  using type = T;
};
template <typename T>
struct WrapLane<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
struct Vec {
  using Lane = typename WrapLane<T>::type;
  typedef Lane Type __attribute__((vector_size(32)));
  typedef T Signed __attribute__((vector_size(32)));  // signed integer comparisons
  static constexpr std::int64_t kLanes = 32 / sizeof(T);
};

template <Combine C, typename T>
inline typename Vec<T>::Type vapply(typename Vec<T>::Type a, typename Vec<T>::Type b) {
  using V = typename Vec<T>::Type;
  if constexpr (C == Combine::kAdd) {
    return a + b;
  } else if constexpr (C == Combine::kMul) {
    return a * b;
  } else {
    using S = typename Vec<T>::Signed;
    S sa, sb;
    std::memcpy(&sa, &a, sizeof(V));
    std::memcpy(&sb, &b, sizeof(V));
    S r;
    if constexpr (C == Combine::kMax) {
      r = ((sa != sa) | (sa > sb)) ? sa : sb;
    } else {
      r = ((sa != sa) | (sa < sb)) ? sa : sb;
    }
    V out;
    std::memcpy(&out, &r, sizeof(V));
    return out;
  }
}

template <typename T>
inline typename Vec<T>::Type vload(const T* p) {
  typename Vec<T>::Type v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <typename T>
inline void vstore(T* p, typename Vec<T>::Type v) {
  std::memcpy(p, &v, sizeof(v));
}

// NumPy's pairwise structure, vectorised, with the lanes carried up the tree. A step is 4 vectors
// (4 x 8 lanes for float); lane u takes elements u, u + 4L, u + 8L, ... of the run. A leaf of
// kLeafSteps steps accumulates each lane in order (8 values per lane: with 16, as NumPy's 8
// accumulators take in its 128-element blocks, float32 rows of 1000..4000 values came out 1-5%
// less accurate than NumPy's on average, with 8 they are 5-12% more accurate, at the same speed
// within noise); leaves are combined lane by lane in a fixed
// binary tree (leaf i is merged with its left neighbours as a binary counter carries, so the tree
// depends only on n); the 4L lanes are folded into one value only once per run, in a fixed
// halving tree (the last < 4L values are a padded step of the last leaf). The previous
// version folded every 256-value leaf down to one value and recursed by halving; that fold and
// the recursion cost about a sixth of the time of a float32 sum from L2 (1 MiB: 99 GB/s per
// CPU-second, this loop 116, a plain 8-accumulator loop 117; 16 MiB from L3: 83 vs 95).
constexpr std::int64_t kLeafSteps = 8;

template <Combine C, typename T>
struct LaneAcc {
  typename Vec<T>::Type v[4];
};

template <Combine C, typename T>
inline void merge_into(LaneAcc<C, T>& right, const LaneAcc<C, T>& left) {
  for (int u = 0; u < 4; ++u) right.v[u] = vapply<C, T>(left.v[u], right.v[u]);
}

// A run of 8 <= n < 4 L values: 8 accumulators (lane u takes elements u, u + 8, ...), combined
// in NumPy's tree, as NumPy's own short blocks. A plain sequential sum here met the largest
// partial sum with every value and was up to 50% less accurate than NumPy's for float32 rows of
// 8..31 values (mean error over thousands of rows; tests/test_kernels.py). Fixed trip counts keep
// the accumulators in registers.
template <Combine C, typename T>
T short_run(const T* x, std::int64_t n) {
  T r[8];
  for (int u = 0; u < 8; ++u) r[u] = x[u];
  std::int64_t i = 8;
  for (; i + 8 <= n; i += 8) {
    for (int u = 0; u < 8; ++u) r[u] = apply<C, T>(r[u], x[i + u]);
  }
  for (int u = 0; u < 7; ++u) {
    if (i + u < n) r[u] = apply<C, T>(r[u], x[i + u]);
  }
  return apply<C, T>(apply<C, T>(apply<C, T>(r[0], r[1]), apply<C, T>(r[2], r[3])),
                     apply<C, T>(apply<C, T>(r[4], r[5]), apply<C, T>(r[6], r[7])));
}

// A value that changes nothing when combined in: 1 for products, -0.0 for float sums (x + -0.0 ==
// x, also for x = -0.0), 0 for integer sums, and for max / min a value of the data itself (`some`).
template <Combine C, typename T>
T neutral(T some) {
  if constexpr (C == Combine::kAdd) return std::is_integral_v<T> ? T(0) : T(-0.0);
  if constexpr (C == Combine::kMul) return T(1);
  return some;
}

template <Combine C, typename T>
T pairwise(const T* x, std::int64_t n) {
  using V = typename Vec<T>::Type;
  constexpr std::int64_t L = Vec<T>::kLanes;
  constexpr std::int64_t kStep = 4 * L;
  if (n < kStep) {
    if (n >= 8) return short_run<C, T>(x, n);
    T r = x[0];
    for (std::int64_t i = 1; i < n; ++i) r = apply<C, T>(r, x[i]);
    return r;
  }
  // The last < 4L values are one more step, filled up with neutral values, so they are summed in
  // their lanes' last leaf like every other value; added onto the lanes' run totals instead, each
  // met a partial sum of the whole run, and float32 rows of 1000 or 4127 values came out 1-4%
  // less accurate than NumPy's (mean error over thousands of rows; tests/test_kernels.py).
  const std::int64_t full = n / kStep;
  const std::int64_t rest = n - full * kStep;
  const std::int64_t steps = full + (rest > 0 ? 1 : 0);
  T padded[kStep];
  if (rest > 0) {
    const T* tail = x + full * kStep;
    const T pad = neutral<C, T>(tail[0]);
    for (std::int64_t u = 0; u < kStep; ++u) padded[u] = u < rest ? tail[u] : pad;
  }
  const std::int64_t leaves = (steps + kLeafSteps - 1) / kLeafSteps;
  LaneAcc<C, T> stack[64];  // one pending left subtree per level: 2^64 leaves at most
  int depth = 0;
  LaneAcc<C, T> acc;
  for (std::int64_t leaf = 0; leaf < leaves; ++leaf) {
    const std::int64_t first = leaf * kLeafSteps;
    const std::int64_t leaf_steps = std::min(kLeafSteps, steps - first);
    // Only the last step of the run may be the padded one; the loop runs over whole steps.
    const std::int64_t whole = std::min(leaf_steps, full - first);
    const T* p = whole > 0 ? x + first * kStep : padded;
    V a0 = vload(p), a1 = vload(p + L), a2 = vload(p + 2 * L), a3 = vload(p + 3 * L);
    for (std::int64_t s = 1; s < whole; ++s) {
      const T* q = p + s * kStep;
      a0 = vapply<C, T>(a0, vload(q));
      a1 = vapply<C, T>(a1, vload(q + L));
      a2 = vapply<C, T>(a2, vload(q + 2 * L));
      a3 = vapply<C, T>(a3, vload(q + 3 * L));
    }
    if (whole > 0 && whole < leaf_steps) {
      a0 = vapply<C, T>(a0, vload(padded));
      a1 = vapply<C, T>(a1, vload(padded + L));
      a2 = vapply<C, T>(a2, vload(padded + 2 * L));
      a3 = vapply<C, T>(a3, vload(padded + 3 * L));
    }
    acc.v[0] = a0;
    acc.v[1] = a1;
    acc.v[2] = a2;
    acc.v[3] = a3;
    for (std::int64_t t = leaf; (t & 1) != 0; t >>= 1) merge_into<C, T>(acc, stack[--depth]);
    stack[depth++] = acc;
  }
  acc = stack[--depth];
  while (depth > 0) merge_into<C, T>(acc, stack[--depth]);
  T lanes[kStep];
  std::memcpy(lanes, acc.v, sizeof(lanes));
  for (std::int64_t w = kStep / 2; w >= 1; w /= 2) {
    for (std::int64_t u = 0; u < w; ++u) lanes[u] = apply<C, T>(lanes[u], lanes[u + w]);
  }
  return lanes[0];
}

template <Combine C, typename T>
void combine_row(T* dst, const T* src, std::int64_t w) {
  for (std::int64_t j = 0; j < w; ++j) dst[j] = apply<C, T>(dst[j], src[j]);
}

// One pass over up to 4 rows: dst[j] = op(...op(op(dst[j], r[0][j]), r[1][j])..., r[k-1][j]), or,
// with kFirst, the same chain starting from r[0][j] itself (dst is not read). The same order as k
// calls of combine_row, with a fraction of the output loads and stores.
template <Combine C, typename T, int kRows, bool kFirst>
void combine_rows(T* dst, const T* src, std::int64_t stride, std::int64_t w) {
  for (std::int64_t j = 0; j < w; ++j) {
    T acc = kFirst ? src[j] : apply<C, T>(dst[j], src[j]);
    for (int q = 1; q < kRows; ++q) acc = apply<C, T>(acc, src[q * stride + j]);
    dst[j] = acc;
  }
}

template <Combine C, typename T, bool kFirst>
void combine_up_to_4_rows(T* dst, const T* src, std::int64_t stride, std::int64_t k,
                          std::int64_t w) {
  switch (k) {
    case 1:
      if (kFirst) {
        std::memcpy(dst, src, sizeof(T) * static_cast<std::size_t>(w));
      } else {
        combine_rows<C, T, 1, false>(dst, src, stride, w);
      }
      return;
    case 2:
      return combine_rows<C, T, 2, kFirst>(dst, src, stride, w);
    case 3:
      return combine_rows<C, T, 3, kFirst>(dst, src, stride, w);
    default:
      return combine_rows<C, T, 4, kFirst>(dst, src, stride, w);
  }
}

// Rows are read whole and in order within a leaf; a leaf of up to 16 rows is at most 4 passes of
// 4 rows (4 streams, which DRAM prefetching keeps up with; 8 or 16 were no faster), the first
// one starting from row 0 rather than from a copy of it. Each output is the row-order chain
// either way. The previous copy + 3 passes of 4 + 3 single rows ran a 4096^2 float32 axis-0 sum
// at ~29 GB/s per CPU-second, this at ~33 (same bits).
template <Combine C, typename T>
void rows(const T* src, std::int64_t nrows, std::int64_t stride, std::int64_t w, T* out,
          T* scratch) {
  if (nrows <= kLeafRows) {
    std::int64_t r = std::min<std::int64_t>(4, nrows);
    combine_up_to_4_rows<C, T, true>(out, src, stride, r, w);
    for (; r < nrows; r += 4) {
      combine_up_to_4_rows<C, T, false>(out, src + r * stride, stride,
                                        std::min<std::int64_t>(4, nrows - r), w);
    }
    return;
  }
  const std::int64_t half = nrows / 2;
  rows<C, T>(src, half, stride, w, out, scratch + w);
  rows<C, T>(src + half * stride, nrows - half, stride, w, scratch, scratch + w);
  combine_row<C, T>(out, scratch, w);
}

template <Combine C, typename T>
LoopFns<C, T> make_loops() {
  return {&pairwise<C, T>, &rows<C, T>, &combine_row<C, T>};
}

}  // namespace
}  // namespace opweave::reduce_detail

// Explicit instantiations of loops_<isa>() for every (combine, type) the reductions use.
#define OPWEAVE_REDUCE_INSTANTIATE(NAME)                                             \
  namespace opweave::reduce_detail {                                                 \
  template <Combine C, typename T>                                                   \
  LoopFns<C, T> NAME() {                                                             \
    return make_loops<C, T>();                                                       \
  }                                                                                  \
  template LoopFns<Combine::kAdd, float> NAME<Combine::kAdd, float>();               \
  template LoopFns<Combine::kAdd, double> NAME<Combine::kAdd, double>();             \
  template LoopFns<Combine::kAdd, std::int32_t> NAME<Combine::kAdd, std::int32_t>(); \
  template LoopFns<Combine::kAdd, std::int64_t> NAME<Combine::kAdd, std::int64_t>(); \
  template LoopFns<Combine::kMul, float> NAME<Combine::kMul, float>();               \
  template LoopFns<Combine::kMul, double> NAME<Combine::kMul, double>();             \
  template LoopFns<Combine::kMul, std::int32_t> NAME<Combine::kMul, std::int32_t>(); \
  template LoopFns<Combine::kMul, std::int64_t> NAME<Combine::kMul, std::int64_t>(); \
  template LoopFns<Combine::kMax, float> NAME<Combine::kMax, float>();               \
  template LoopFns<Combine::kMax, double> NAME<Combine::kMax, double>();             \
  template LoopFns<Combine::kMax, std::int32_t> NAME<Combine::kMax, std::int32_t>(); \
  template LoopFns<Combine::kMax, std::int64_t> NAME<Combine::kMax, std::int64_t>(); \
  template LoopFns<Combine::kMax, std::uint8_t> NAME<Combine::kMax, std::uint8_t>(); \
  template LoopFns<Combine::kMin, float> NAME<Combine::kMin, float>();               \
  template LoopFns<Combine::kMin, double> NAME<Combine::kMin, double>();             \
  template LoopFns<Combine::kMin, std::int32_t> NAME<Combine::kMin, std::int32_t>(); \
  template LoopFns<Combine::kMin, std::int64_t> NAME<Combine::kMin, std::int64_t>(); \
  template LoopFns<Combine::kMin, std::uint8_t> NAME<Combine::kMin, std::uint8_t>(); \
  }
#endif
