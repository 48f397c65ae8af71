// The inner loops of ArgMax / ArgMin (argminmax.cpp), compiled three times from this one source:
// argminmax_loops.cpp (baseline x86-64, 16-byte vectors), argminmax_loops_avx2.cpp (-mavx2,
// 32-byte vectors) and argminmax_loops_avx512.cpp (64-byte vectors). Comparisons and selects are
// exact, and the lanes merge by the rule in argminmax.cpp whatever their number, so every build
// gives the same index.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "opweave/kernels/vector_width.h"

namespace opweave::argminmax_detail {

template <typename T, bool kMax>
struct Best {
  T value;
  std::int64_t index;
};

// The best (first largest for kMax, first smallest otherwise) of x[0, n), n <= 2^31, with the
// index relative to x; NaN never wins and nothing beating the start value gives index 0.
template <typename T>
struct RunFns {
  Best<T, true> (*max)(const T* x, std::int64_t n);
  Best<T, false> (*min)(const T* x, std::int64_t n);
};

template <typename T>
RunFns<T> run_fns_baseline();
template <typename T>
RunFns<T> run_fns_avx2();
template <typename T>
RunFns<T> run_fns_avx512();

}  // namespace opweave::argminmax_detail

// Only the two loop files define OPWEAVE_ARGMINMAX_LOOPS_IMPL. The templates below sit in an
// unnamed namespace: each file gets its own copy, so the linker can never substitute the AVX2
// instantiation for the baseline one.
#ifdef OPWEAVE_ARGMINMAX_LOOPS_IMPL
namespace opweave::argminmax_detail {
namespace {

// Lanes of the scalar loop (for the tail and for 1- and 2-byte types).
constexpr int kLanes = 16;
using simd_width::kVectorBytes;

template <typename T, bool kMax>
constexpr T start_value() {
  return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

template <typename T, bool kMax>
inline bool beats(T a, T b) {
  return kMax ? a > b : a < b;
}

// The better of two candidates; b's index is larger when their values are equal only if it came
// from a later position, so ties keep the smaller index.
template <typename T, bool kMax>
inline Best<T, kMax> better(const Best<T, kMax>& a, const Best<T, kMax>& b) {
  if (beats<T, kMax>(b.value, a.value)) return b;
  if (beats<T, kMax>(a.value, b.value)) return a;
  return b.index < a.index ? b : a;
}

// The best of a contiguous run x[0, n), n <= kBlock; indices relative to x. One lane per element
// position modulo the lane count; any split into lanes gives the same result (see the top).
template <typename T, bool kMax>
Best<T, kMax> best_of_run_scalar(const T* x, std::int64_t n) {
  T bv[kLanes];
  std::int64_t bi[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    bv[l] = start_value<T, kMax>();
    bi[l] = 0;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const int l = static_cast<int>(i % kLanes);
    if (beats<T, kMax>(x[i], bv[l])) {
      bv[l] = x[i];
      bi[l] = i;
    }
  }
  Best<T, kMax> best{bv[0], bi[0]};
  for (int l = 1; l < kLanes; ++l) best = better<T, kMax>(best, {bv[l], bi[l]});
  return best;
}

// 4- and 8-byte values: four vectors of values and of indices (integers of the values' width, so
// a comparison's mask selects both), GCC/Clang vector extensions of this build's width (wider ones
// would be split into scalar code).
template <typename T, bool kMax>
Best<T, kMax> best_of_run_vector(const T* x, std::int64_t n) {
  using Idx = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;
  typedef T V __attribute__((vector_size(kVectorBytes)));
  typedef Idx I __attribute__((vector_size(kVectorBytes)));
  constexpr int L = kVectorBytes / sizeof(T);
  constexpr int kVecs = 4;
  V b[kVecs];
  I bi[kVecs], c[kVecs];
  for (int k = 0; k < kVecs; ++k) {
    for (int l = 0; l < L; ++l) {
      b[k][l] = start_value<T, kMax>();
      bi[k][l] = 0;
      c[k][l] = static_cast<Idx>(k * L + l);
    }
  }
  std::int64_t i = 0;
  for (; i + kVecs * L <= n; i += kVecs * L) {
    for (int k = 0; k < kVecs; ++k) {
      V v;
      std::memcpy(&v, x + i + k * L, sizeof(V));
      const I m = kMax ? (v > b[k]) : (v < b[k]);
      b[k] = m ? v : b[k];
      bi[k] = m ? c[k] : bi[k];
      c[k] += kVecs * L;
    }
  }
  Best<T, kMax> best{b[0][0], bi[0][0]};
  for (int k = 0; k < kVecs; ++k) {
    for (int l = 0; l < L; ++l) best = better<T, kMax>(best, {b[k][l], bi[k][l]});
  }
  if (i < n) {
    Best<T, kMax> tail = best_of_run_scalar<T, kMax>(x + i, n - i);
    tail.index += i;
    best = better<T, kMax>(best, tail);
  }
  return best;
}

template <typename T>
RunFns<T> make_run_fns() {
  return {&best_of_run_vector<T, true>, &best_of_run_vector<T, false>};
}

}  // namespace
}  // namespace opweave::argminmax_detail

#define OPWEAVE_ARGMINMAX_INSTANTIATE(NAME)           \
  namespace opweave::argminmax_detail {               \
  template <typename T>                               \
  RunFns<T> NAME() {                                  \
    return make_run_fns<T>();                         \
  }                                                   \
  template RunFns<float> NAME<float>();               \
  template RunFns<double> NAME<double>();             \
  template RunFns<std::int32_t> NAME<std::int32_t>(); \
  template RunFns<std::int64_t> NAME<std::int64_t>(); \
  }
#endif
