// The row loops of the softmax family (softmax, log-softmax, the two softmax cross-entropies) and
// the sum of squares of l2_loss, compiled three times from this one source: nn_loops.cpp (baseline
// x86-64, or any CPU), nn_loops_avx2.cpp and nn_loops_avx512.cpp (-ffp-contract=off). All builds
// do the same operations in the same order, so results do not depend on the ISA:
//
// - every row is shifted by its maximum before exp (no overflow for any finite logits), and the
//   log-sum-exp is formed from the shifted values, as TensorFlow's CPU kernels do;
// - sums run in kLanes<T> fixed accumulators (lane j takes the elements i with i % kLanes == j)
//   combined by a fixed pairwise tree: the compiler vectorises that into 1 AVX-512, 2 AVX2 or 4
//   SSE registers with the same roundings, and the result depends only on the row;
// - rows are processed in chunks of kChunk elements so exp values stay in L1 between the pass
//   that computes them and the pass that sums them.
//
// The kernels (softmax_ops.cpp, nn_ops.cpp) pick a table once with cpu_info() and split rows over
// the intra-op pool, each row computed by one thread. Internal to the kernels.
#pragma once

#include <cstdint>

namespace opweave::nn_loops {

template <typename T>
struct Table {
  // y = softmax(x) along rows of n elements, `rows` contiguous rows (n >= 1).
  void (*softmax)(const T* x, T* y, std::int64_t rows, std::int64_t n);
  // y = x - max - log(sum(exp(x - max))) along rows.
  void (*log_softmax)(const T* x, T* y, std::int64_t rows, std::int64_t n);
  // TensorFlow's SoftmaxCrossEntropyWithLogits on rows: loss[r] = sum(z * (lse - (x - max))),
  // backprop = softmax(x) - z. z has the rows of x.
  void (*xent)(const T* x, const T* z, T* loss, T* backprop, std::int64_t rows, std::int64_t n);
  // The sparse form: one label per row, already checked to be in [0, n).
  void (*sparse_xent)(const T* x, const std::int64_t* labels, T* loss, T* backprop,
                      std::int64_t rows, std::int64_t n);
  // sum(x[i]^2) over n contiguous elements, in lanes (l2_loss's blocks).
  T (*sum_squares)(const T* x, std::int64_t n);
};

Table<float> table_baseline_f32();
Table<double> table_baseline_f64();
#if defined(OPWEAVE_X86_64)
Table<float> table_avx2_f32();
Table<double> table_avx2_f64();
Table<float> table_avx512_f32();
Table<double> table_avx512_f64();
#endif

}  // namespace opweave::nn_loops

#if defined(OPWEAVE_NN_LOOPS_IMPL)
#include <cmath>

#include "opweave/kernels/vector_math.h"

namespace opweave::nn_loops {
namespace {

// 64 bytes of accumulators: one AVX-512 register, two AVX2 ones, four SSE ones.
template <typename T>
constexpr int kLanes = static_cast<int>(64 / sizeof(T));
// Elements per chunk of a row: 4 KiB (float) of exp values live in L1 until they are summed.
constexpr std::int64_t kChunk = 1024;

template <typename T>
struct Lanes {
  T v[kLanes<T>];
};

template <typename T>
inline void zero(Lanes<T>& acc) {
  for (int j = 0; j < kLanes<T>; ++j) acc.v[j] = T(0);
}

// The lanes combined by a fixed pairwise tree.
template <typename T>
inline T total(Lanes<T>& acc) {
  for (int w = kLanes<T> / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) acc.v[j] += acc.v[j + w];
  }
  return acc.v[0];
}

// Adds v[0..n) into the lanes, lane j taking v[i] for i % kLanes == j (n need not be a multiple
// of kLanes: the last elements go to the first lanes). Chunks start at multiples of kChunk, itself
// a multiple of kLanes, so an element's lane is its index in the row modulo kLanes.
template <typename T>
inline void accumulate(Lanes<T>& acc, const T* v, std::int64_t n) {
  constexpr int L = kLanes<T>;
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int j = 0; j < L; ++j) acc.v[j] += v[i + j];
  }
  for (int j = 0; i + j < n; ++j) acc.v[j] += v[i + j];
}

// The row's maximum (order-independent: a max is exact). A NaN may or may not win here; either
// way it reaches every output through the sum of exps, as in TensorFlow.
template <typename T>
inline T row_max(const T* x, std::int64_t n) {
  constexpr int L = kLanes<T>;
  Lanes<T> acc;
  for (int j = 0; j < L; ++j) acc.v[j] = x[0];
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int j = 0; j < L; ++j) acc.v[j] = x[i + j] > acc.v[j] ? x[i + j] : acc.v[j];
  }
  T m = acc.v[0];
  for (int j = 1; j < L; ++j) m = acc.v[j] > m ? acc.v[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// Minimax polynomials for e^r on |r| <= ln2/2 (fitted with mpmath.chebyfit): degree 6 for float
// (0.8 ulp with Horner's roundings), 11 for double (1 ulp), a degree below vector_math's Taylor
// series for the same accuracy.
template <typename T>
struct ExpPoly;
template <>
struct ExpPoly<float> {
  static constexpr int kDegree = 6;
  static constexpr float c[kDegree + 1] = {1.0f,
                                           1.0000000377388714f,
                                           0.5000000047146057f,
                                           0.16666415414041177f,
                                           0.04166635277111221f,
                                           0.008375134774624326f,
                                           0.0013941118895837f};
};
template <>
struct ExpPoly<double> {
  static constexpr int kDegree = 11;
  static constexpr double c[kDegree + 1] = {1.0,
                                            1.0,
                                            0.5000000000000019,
                                            0.1666666666666668,
                                            0.04166666666648795,
                                            0.008333333333319589,
                                            0.0013888888952352863,
                                            0.00019841269890076403,
                                            2.4801485441561313e-05,
                                            2.755724088722987e-06,
                                            2.763265472252779e-07,
                                            2.5110049204818658e-08};
};

// e^d for d <= 0 (a shifted logit) or NaN, branch-free so it vectorises: vector_math::exp's
// Cody-Waite reduction and two-factor scale (subnormal results exact, 0 below the range), without
// its overflow handling, which d <= 0 never needs; NaN propagates through the arithmetic.
template <typename T>
inline T exp_nonpositive(T d) {
  using E = vector_math::ExpTraits<T>;
  const T dc = vector_math::select<T>(d < E::kMin, E::kMin, d);
  const T n = (dc * E::kLog2e + E::kShifter) - E::kShifter;
  const T r = (dc - n * E::kLn2Hi) - n * E::kLn2Lo;
  constexpr int kD = ExpPoly<T>::kDegree;
  T p = ExpPoly<T>::c[kD];
#pragma GCC unroll 16
  for (int i = kD - 1; i >= 0; --i) p = p * r + ExpPoly<T>::c[i];
  const T n1 = (n * T(0.5) + E::kShifter) - E::kShifter;
  const T result = p * vector_math::pow2i<T>(n1) * vector_math::pow2i<T>(n - n1);
  return vector_math::select<T>(d < E::kMin, T(0), result);
}

// e[i] = exp(x[i] - m) for i < n: a plain loop, which the compiler vectorises.
template <typename T>
inline void shifted_exp(const T* x, T m, T* e, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) e[i] = exp_nonpositive<T>(x[i] - m);
}

// sum(exp(x - m)) over the row, the exps written to y.
template <typename T>
inline T exp_sum(const T* x, T m, T* y, std::int64_t n) {
  Lanes<T> acc;
  zero(acc);
  for (std::int64_t c = 0; c < n; c += kChunk) {
    const std::int64_t len = n - c < kChunk ? n - c : kChunk;
    shifted_exp(x + c, m, y + c, len);
    accumulate(acc, y + c, len);
  }
  return total(acc);
}

// sum(exp(x - m)) over the row, the exps kept in a scratch chunk only.
template <typename T>
inline T exp_sum_scratch(const T* x, T m, std::int64_t n) {
  alignas(64) T scratch[kChunk];
  Lanes<T> acc;
  zero(acc);
  for (std::int64_t c = 0; c < n; c += kChunk) {
    const std::int64_t len = n - c < kChunk ? n - c : kChunk;
    shifted_exp(x + c, m, scratch, len);
    accumulate(acc, scratch, len);
  }
  return total(acc);
}

template <typename T>
void softmax_rows(const T* x, T* y, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r, x += n, y += n) {
    const T m = row_max(x, n);
    // TensorFlow multiplies by the inverse of the sum.
    const T inv = T(1) / exp_sum(x, m, y, n);
    for (std::int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

template <typename T>
void log_softmax_rows(const T* x, T* y, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r, x += n, y += n) {
    const T m = row_max(x, n);
    const T log_sum = std::log(exp_sum_scratch(x, m, n));
    for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
  }
}

template <typename T>
void xent_rows(const T* x, const T* z, T* loss, T* bp, std::int64_t rows, std::int64_t n) {
  alignas(64) T scratch[kChunk];
  for (std::int64_t r = 0; r < rows; ++r, x += n, z += n, bp += n) {
    const T m = row_max(x, n);
    const T sum = exp_sum(x, m, bp, n);
    const T log_sum = std::log(sum);
    const T inv = T(1) / sum;
    Lanes<T> acc;
    zero(acc);
    for (std::int64_t c = 0; c < n; c += kChunk) {
      const std::int64_t len = n - c < kChunk ? n - c : kChunk;
      const T* xc = x + c;
      const T* zc = z + c;
      T* bc = bp + c;
      for (std::int64_t i = 0; i < len; ++i) {
        scratch[i] = zc[i] * (log_sum - (xc[i] - m));
        bc[i] = bc[i] * inv - zc[i];
      }
      accumulate(acc, scratch, len);
    }
    loss[r] = total(acc);
  }
}

template <typename T>
void sparse_xent_rows(const T* x, const std::int64_t* labels, T* loss, T* bp, std::int64_t rows,
                      std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r, x += n, bp += n) {
    const T m = row_max(x, n);
    const T sum = exp_sum(x, m, bp, n);
    const T inv = T(1) / sum;
    for (std::int64_t i = 0; i < n; ++i) bp[i] *= inv;
    const std::int64_t label = labels[r];
    bp[label] -= T(1);
    loss[r] = std::log(sum) - (x[label] - m);
  }
}

template <typename T>
T sum_squares(const T* x, std::int64_t n) {
  alignas(64) T scratch[kChunk];
  Lanes<T> acc;
  zero(acc);
  for (std::int64_t c = 0; c < n; c += kChunk) {
    const std::int64_t len = n - c < kChunk ? n - c : kChunk;
    for (std::int64_t i = 0; i < len; ++i) scratch[i] = x[c + i] * x[c + i];
    accumulate(acc, scratch, len);
  }
  return total(acc);
}

template <typename T>
Table<T> make_table() {
  return {&softmax_rows<T>, &log_softmax_rows<T>, &xent_rows<T>, &sparse_xent_rows<T>,
          &sum_squares<T>};
}

}  // namespace
}  // namespace opweave::nn_loops

#define OPWEAVE_NN_LOOPS_INSTANTIATE(suffix)                            \
  namespace opweave::nn_loops {                                         \
  Table<float> table_##suffix##_f32() { return make_table<float>(); }   \
  Table<double> table_##suffix##_f64() { return make_table<double>(); } \
  }
#endif
