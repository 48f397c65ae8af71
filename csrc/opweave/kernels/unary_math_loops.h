// The loops of the floating-point math ops (exp, log, sqrt, rounding, pow, floormod, ...),
// compiled three times from this one source: unary_math_loops.cpp (baseline x86-64),
// unary_math_loops_avx2.cpp (-mavx2) and unary_math_loops_avx512.cpp (-mavx512f ...), the wider
// ones with -ffp-contract=off so no multiply-add is fused. All builds do the same operations in
// the same order, so results do not depend on the ISA. The AVX2
// build matters beyond width: float64 exp/tanh need 64-bit integer compares (SSE4.2) to vectorise
// at all, and floor/ceil/round of float64 the same, so the baseline build runs them scalar.
// elementwise.cpp picks the table once with cpu_info().
//
// Functions without a vectorisable formula here (float64 sin, cos, pow and fmod; float32
// operands outside the range of the float32 formulas) call the C library, element by element: the
// same call for the same element in every build.
#pragma once

#include <cstdint>

namespace opweave::unary_math {

// dst[i] = f(src[i * stride]) for i < n.
template <typename T>
using RunFn = void (*)(const T* src, std::int64_t stride, T* dst, std::int64_t n);
// dst[i] = f(a[i * sa], b[i * sb]) for i < n.
template <typename T>
using BinaryRunFn = void (*)(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* dst,
                             std::int64_t n);
// dst[i] = p(src[i * stride]) for i < n (a bool result).
template <typename T>
using PredicateRunFn = void (*)(const T* src, std::int64_t stride, bool* dst, std::int64_t n);

template <typename T>
struct Table {
  RunFn<T> exp, tanh, sigmoid;
  RunFn<T> log, log1p, expm1, sin, cos, sqrt, rsqrt, reciprocal, abs, sign, square, floor, ceil,
      round;
  // pow: C's pow; floormod: TensorFlow's FloorMod (fmod, then the divisor's sign);
  // squared_difference: (a - b)^2.
  BinaryRunFn<T> pow, floormod, squared_difference;
  PredicateRunFn<T> is_nan, is_inf, is_finite;
};

Table<float> table_baseline_f32();
Table<double> table_baseline_f64();
// The table this CPU runs (picked once at load time by elementwise.cpp): the loops of the
// element-wise ops, also used by the GEMM epilogue (gemm_epilogue.cpp) so a fused activation
// rounds exactly like the op.
template <typename T>
const Table<T>& selected_table();

#if defined(OPWEAVE_X86_64)
Table<float> table_avx2_f32();
Table<double> table_avx2_f64();
Table<float> table_avx512_f32();
Table<double> table_avx512_f64();
#endif

}  // namespace opweave::unary_math

#if defined(OPWEAVE_UNARY_MATH_IMPL)
#include <cmath>
#include <limits>
#include <type_traits>

#include "opweave/kernels/vector_math.h"

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace opweave::unary_math {
namespace {

namespace vm = vector_math;

template <typename T, T (*F)(T)>
void run(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  if (stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(src[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(src[i * stride]);
  }
}

// The flat shapes worth a loop of their own: both operands contiguous, or one of them a broadcast
// scalar; anything else is indexed.
template <typename T, T (*F)(T, T)>
void run2(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* dst, std::int64_t n) {
  if (sa == 1 && sb == 1) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(av, b[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(a[i * sa], b[i * sb]);
  }
}

template <typename T, bool (*P)(T)>
void run_predicate(const T* src, std::int64_t stride, bool* dst, std::int64_t n) {
  if (stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = P(src[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = P(src[i * stride]);
  }
}

// -- simple element functions ---------------------------------------------------------------------

template <typename T>
OPWEAVE_VM_INLINE T abs_of(T x) {
  return vm::abs(x);
}
// 1 for x > 0, -1 for x < 0, x itself for zeros (+0: TensorFlow's sign(-0.0) is +0) and NaN.
template <typename T>
OPWEAVE_VM_INLINE T sign_of(T x) {
  T out = vm::select<T>(x > T(0), T(1), T(0));
  out = vm::select<T>(x < T(0), T(-1), out);
  return vm::select<T>(x != x, x, out);
}
template <typename T>
OPWEAVE_VM_INLINE T square_of(T x) {
  return x * x;
}
template <typename T>
OPWEAVE_VM_INLINE T reciprocal_of(T x) {
  return T(1) / x;
}
template <typename T>
OPWEAVE_VM_INLINE T squared_difference_of(T a, T b) {
  const T d = a - b;
  return d * d;
}
template <typename T>
OPWEAVE_VM_INLINE bool is_nan_of(T x) {
  return x != x;
}
template <typename T>
OPWEAVE_VM_INLINE bool is_inf_of(T x) {
  return vm::abs(x) == std::numeric_limits<T>::infinity();
}
template <typename T>
OPWEAVE_VM_INLINE bool is_finite_of(T x) {
  return vm::abs(x) < std::numeric_limits<T>::infinity();
}

// TensorFlow's FloorMod from C's fmod: a non-zero remainder whose sign differs from the
// divisor's moves by one divisor (so floormod(-7, 2) = 1 and floormod(7, -2) = -1).
template <typename T>
OPWEAVE_VM_INLINE T floor_adjust(T trunc_mod, T y) {
  const bool adjust = (trunc_mod != T(0)) & ((y < T(0)) != (trunc_mod < T(0)));
  return vm::select<T>(adjust, trunc_mod + y, trunc_mod);
}

OPWEAVE_VM_INLINE float floormod_f32_fast(float x, float y) {
  return floor_adjust(vm::fmod_f32(x, y), y);
}
OPWEAVE_VM_INLINE float floormod_f32_libm(float x, float y) {
  return floor_adjust(std::fmod(x, y), y);
}
OPWEAVE_VM_INLINE double floormod_f64(double x, double y) {
  return floor_adjust(std::fmod(x, y), y);
}
OPWEAVE_VM_INLINE float sin_f32(float x) { return vm::trig_f32(x, 0); }
OPWEAVE_VM_INLINE float cos_f32(float x) { return vm::trig_f32(x, 1); }
OPWEAVE_VM_INLINE double sin_f64(double x) { return std::sin(x); }
OPWEAVE_VM_INLINE double cos_f64(double x) { return std::cos(x); }
OPWEAVE_VM_INLINE double pow_f64(double x, double y) { return std::pow(x, y); }

// -- float32 functions with a range of their own -------------------------------------------------

// f over a run, or, when some element lies outside f's range, each element by f or by the C
// library's g. The range is checked before anything is written: dst may be src itself (an
// operation computed into its input's buffer).
template <float (*F)(float), bool (*InRange)(float), float (*G)(float)>
void run_with_fallback(const float* src, std::int64_t stride, float* dst, std::int64_t n) {
  bool all_in = true;
  for (std::int64_t i = 0; i < n; ++i) all_in &= InRange(src[i * stride]);
  if (all_in) {
    run<float, F>(src, stride, dst, n);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = src[i * stride];
    dst[i] = InRange(x) ? F(x) : G(x);
  }
}

OPWEAVE_VM_INLINE float sin_libm(float x) { return std::sin(x); }
OPWEAVE_VM_INLINE float cos_libm(float x) { return std::cos(x); }

void floormod_f32_run(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* dst,
                      std::int64_t n) {
  bool all_in = true;
  for (std::int64_t i = 0; i < n; ++i) all_in &= vm::fmod_f32_in_range(a[i * sa], b[i * sb]);
  if (all_in) {
    run2<float, floormod_f32_fast>(a, sa, b, sb, dst, n);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = a[i * sa], y = b[i * sb];
    dst[i] = vm::fmod_f32_in_range(x, y) ? floormod_f32_fast(x, y) : floormod_f32_libm(x, y);
  }
}

// -- sqrt through the instruction (a plain std::sqrt loop does not vectorise: errno)
// ---------------

template <typename T>
void sqrt_contiguous(const T* src, T* dst, std::int64_t n) {
  std::int64_t i = 0;
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_sqrt_ps(_mm256_loadu_ps(src + i)));
    for (; i < n; ++i) _mm_store_ss(dst + i, _mm_sqrt_ss(_mm_load_ss(src + i)));
  } else {
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(dst + i, _mm256_sqrt_pd(_mm256_loadu_pd(src + i)));
    for (; i < n; ++i) _mm_store_sd(dst + i, _mm_sqrt_sd(_mm_setzero_pd(), _mm_load_sd(src + i)));
  }
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, _mm_sqrt_ps(_mm_loadu_ps(src + i)));
    for (; i < n; ++i) _mm_store_ss(dst + i, _mm_sqrt_ss(_mm_load_ss(src + i)));
  } else {
    for (; i + 2 <= n; i += 2) _mm_storeu_pd(dst + i, _mm_sqrt_pd(_mm_loadu_pd(src + i)));
    for (; i < n; ++i) _mm_store_sd(dst + i, _mm_sqrt_sd(_mm_setzero_pd(), _mm_load_sd(src + i)));
  }
#else
  for (; i < n; ++i) dst[i] = std::sqrt(src[i]);
#endif
}

// Strided sources are gathered into a stack block first; rsqrt divides the block in place.
template <typename T, bool kReciprocal>
void sqrt_run(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  constexpr std::int64_t kBlock = 512;
  T block[kBlock];
  for (std::int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const std::int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
    const T* in = src + i0 * stride;
    if (stride != 1) {
      for (std::int64_t i = 0; i < m; ++i) block[i] = src[(i0 + i) * stride];
      in = block;
    }
    sqrt_contiguous<T>(in, dst + i0, m);
    if constexpr (kReciprocal) {
      for (std::int64_t i = 0; i < m; ++i) dst[i0 + i] = T(1) / dst[i0 + i];
    }
  }
}

template <typename T>
Table<T> make_table() {
  Table<T> t{};
  t.exp = &run<T, vm::exp<T>>;
  t.tanh = &run<T, vm::tanh<T>>;
  t.sigmoid = &run<T, vm::sigmoid<T>>;
  t.log = &run<T, vm::log<T>>;
  t.log1p = &run<T, vm::log1p<T>>;
  t.expm1 = &run<T, vm::expm1<T>>;
  t.sqrt = &sqrt_run<T, false>;
  t.rsqrt = &sqrt_run<T, true>;
  t.reciprocal = &run<T, reciprocal_of<T>>;
  t.abs = &run<T, abs_of<T>>;
  t.sign = &run<T, sign_of<T>>;
  t.square = &run<T, square_of<T>>;
  t.floor = &run<T, vm::floor<T>>;
  t.ceil = &run<T, vm::ceil<T>>;
  t.round = &run<T, vm::rint<T>>;
  t.squared_difference = &run2<T, squared_difference_of<T>>;
  t.is_nan = &run_predicate<T, is_nan_of<T>>;
  t.is_inf = &run_predicate<T, is_inf_of<T>>;
  t.is_finite = &run_predicate<T, is_finite_of<T>>;
  if constexpr (std::is_same_v<T, float>) {
    t.sin = &run_with_fallback<sin_f32, vm::trig_f32_in_range, sin_libm>;
    t.cos = &run_with_fallback<cos_f32, vm::trig_f32_in_range, cos_libm>;
    t.pow = &run2<float, vm::pow_f32>;
    t.floormod = &floormod_f32_run;
  } else {
    t.sin = &run<double, sin_f64>;
    t.cos = &run<double, cos_f64>;
    t.pow = &run2<double, pow_f64>;
    t.floormod = &run2<double, floormod_f64>;
  }
  return t;
}

}  // namespace
}  // namespace opweave::unary_math

#define OPWEAVE_UNARY_MATH_INSTANTIATE(suffix)                          \
  namespace opweave::unary_math {                                       \
  Table<float> table_##suffix##_f32() { return make_table<float>(); }   \
  Table<double> table_##suffix##_f64() { return make_table<double>(); } \
  }
#endif
