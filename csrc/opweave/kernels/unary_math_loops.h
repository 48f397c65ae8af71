// The loops of the floating-point element-wise ops (exp, log, sqrt, rounding, pow, floormod,
// add, ...), one per row of elementwise_list.h, compiled three times from this one source:
// unary_math_loops.cpp (baseline x86-64), unary_math_loops_avx2.cpp (-mavx2) and
// unary_math_loops_avx512.cpp (-mavx512f ...), the wider ones with -ffp-contract=off so no
// multiply-add is fused behind our back. All builds do the same operations in the same order, so
// results do not depend on the ISA (pow's explicit fused multiply-adds are the instruction in the
// wider builds and the C library's correctly rounded fma in the baseline one: the same bits). The
// AVX2 build matters beyond width: float64 exp/tanh need 64-bit integer compares (SSE4.2) to
// vectorise at all, and floor/ceil/round of float64 the same, so the baseline build runs them
// scalar. elementwise.cpp picks the table once with cpu_info().
//
// Functions without a vectorisable formula here (float64 sin, cos, pow and fmod; float32
// operands outside the range of the float32 formulas) call the C library, element by element: the
// same call for the same element in every build.
#pragma once

#include <cstdint>

#include "opweave/kernels/elementwise_list.h"

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

// One loop per row of elementwise_list.h, named by its `name` column (t.exp, t.pow, ...).
template <typename T>
struct Table {
#define OPWEAVE_TABLE_UNARY_FIELD(Name, name, ...) RunFn<T> name;
#define OPWEAVE_TABLE_BINARY_FIELD(Name, name, ...) BinaryRunFn<T> name;
  OPWEAVE_UNARY_OPS(OPWEAVE_TABLE_UNARY_FIELD)
  OPWEAVE_BINARY_OPS(OPWEAVE_TABLE_BINARY_FIELD)
#undef OPWEAVE_TABLE_UNARY_FIELD
#undef OPWEAVE_TABLE_BINARY_FIELD
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
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "opweave/kernels/elementwise_fns.h"
#include "opweave/kernels/vector_math.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include "opweave/kernels/pow_f32_avx512.h"
#elif defined(__AVX2__) && defined(__FMA__)
#include "opweave/kernels/pow_f32_avx2.h"
#endif
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

// -- the loop shapes the rows of elementwise_list.h name ------------------------------------------

template <typename T, float (*F)(float), double (*D)(double)>
void run_by_type(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    run<float, F>(src, stride, dst, n);
  } else {
    run<double, D>(src, stride, dst, n);
  }
}

template <typename T, float (*F)(float, float), double (*D)(double, double)>
void run2_by_type(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* dst,
                  std::int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    run2<float, F>(a, sa, b, sb, dst, n);
  } else {
    run2<double, D>(a, sa, b, sb, dst, n);
  }
}

// The range-checked loops below work block by block: one element out of range sends its block,
// not the whole run, to the slower path. The range is checked before the block is written: dst may
// be src itself (an operation computed into its input's buffer).
constexpr std::int64_t kRangeBlock = 1024;

// The largest vm range key (vector_math.h) of the m elements src[i * stride]: the block is in the
// range iff it is at most the range's limit. A contiguous source gets its own loop.
template <typename T, typename Range>
auto max_key(const T* src, std::int64_t stride, std::int64_t m) {
  decltype(Range::key(T())) worst = 0;
  if (stride == 1) {
    for (std::int64_t i = 0; i < m; ++i) worst = std::max(worst, Range::key(src[i]));
  } else {
    for (std::int64_t i = 0; i < m; ++i) worst = std::max(worst, Range::key(src[i * stride]));
  }
  return worst;
}

// Computes dst[0..m) = Fast(src[i]) for a contiguous src that dst does not overlap, and returns
// whether every element was in Range (one pass over the block: the check rides along).
template <typename T, T (*Fast)(T), typename Range>
bool run_checked(const T* src, T* dst, std::int64_t m) {
  decltype(Range::key(T())) worst = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    const T x = src[i];
    worst = std::max(worst, Range::key(x));
    dst[i] = Fast(x);
  }
  return worst <= Range::kLimit;
}

// Fast over a block whose elements are all in Range, else Full; Fast(x) == Full(x) bit for bit
// in the range (vector_math.h says why for each pair), so the blocks never show.
template <typename T, T (*Fast)(T), typename Range, T (*Full)(T)>
void run_fast(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  for (std::int64_t b = 0; b < n; b += kRangeBlock) {
    const std::int64_t m = n - b < kRangeBlock ? n - b : kRangeBlock;
    const T* s = src + b * stride;
    T* d = dst + b;
    if (stride == 1 && (d + m <= s || s + m <= d)) {
      // Separate buffers: the fast formula and the check in one pass; the source is still there
      // to redo the block when the check failed.
      if (!run_checked<T, Fast, Range>(s, d, m)) run<T, Full>(s, 1, d, m);
    } else if (max_key<T, Range>(s, stride, m) <= Range::kLimit) {
      run<T, Fast>(s, stride, d, m);
    } else {
      run<T, Full>(s, stride, d, m);
    }
  }
}

// F(x) where x is in Range, else the C library's G(x): element by element, with a branch.
template <float (*F)(float), typename Range, float (*G)(float)>
float in_range_or(float x) {
  return vm::in_range<Range>(x) ? F(x) : G(x);
}

// float32: f over a block in Range, else each element by f or by the C library's g; float64: d
// on each element.
template <typename T, float (*F)(float), typename Range, float (*G)(float), double (*D)(double)>
void run_in_range(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  if constexpr (std::is_same_v<T, double>) {
    run<double, D>(src, stride, dst, n);
  } else {
    run_fast<float, F, Range, in_range_or<F, Range, G>>(src, stride, dst, n);
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

// -- floormod -------------------------------------------------------------------------------------

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

// float32: the double formula where every quotient of the run is in its range, else element by
// element (the C library outside it); float64: the C library.
template <typename T>
void floormod_loop(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* dst,
                   std::int64_t n) {
  if constexpr (std::is_same_v<T, double>) {
    run2<double, floormod_f64>(a, sa, b, sb, dst, n);
  } else {
    std::int32_t miss = 0;  // an int: GCC does not vectorise a bool reduction
    for (std::int64_t i = 0; i < n; ++i)
      miss |= vm::fmod_f32_in_range(a[i * sa], b[i * sb]) ? 0 : 1;
    if (miss == 0) {
      run2<float, floormod_f32_fast>(a, sa, b, sb, dst, n);
      return;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const float x = a[i * sa], y = b[i * sb];
      dst[i] = vm::fmod_f32_in_range(x, y) ? floormod_f32_fast(x, y) : floormod_f32_libm(x, y);
    }
  }
}

// -- pow ------------------------------------------------------------------------------------------

// float32 in the AVX-512 and AVX2 builds: pow_f32_avx512.h / pow_f32_avx2.h over the flat shapes
// (pow_f32's bits); the rest element by element.
template <typename T>
void pow_loop(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* dst, std::int64_t n) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  if constexpr (std::is_same_v<T, float>) {
    if (vm::avx512::pow_f32_flat(a, sa, b, sb, dst, n)) return;
  }
#elif defined(__AVX2__) && defined(__FMA__)
  if constexpr (std::is_same_v<T, float>) {
    if (vm::avx2::pow_f32_flat(a, sa, b, sb, dst, n)) return;
  }
#endif
  run2_by_type<T, vm::pow_f32, vm::pow_f64>(a, sa, b, sb, dst, n);
}

// -- sqrt through the instruction (a plain std::sqrt loop does not vectorise: errno) -------------

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
void sqrt_loop(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  sqrt_run<T, false>(src, stride, dst, n);
}
template <typename T>
void rsqrt_loop(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  sqrt_run<T, true>(src, stride, dst, n);
}

// The table, row by row from elementwise_list.h; the `loop` column spelled out for T.
template <typename T>
Table<T> make_table() {
  Table<T> t{};
#define LOOP(l) l<T>
#define BINARY_FN(k) run2<T, &elementwise_fns::BinaryFn<BinaryOp::k, T>::apply>
#define F32_IN_RANGE(f, range, g, d) run_in_range<T, vm::f, vm::range, vm::g, vm::d>
#define EACH(f) run<T, vm::f<T>>
#define EACH_FAST(fast, range, full) run_fast<T, vm::fast<T>, vm::range<T>, vm::full<T>>
#define EACH_BY_TYPE(f, d) run_by_type<T, vm::f, vm::d>
#define OPWEAVE_TABLE_ROW(Name, name, type, cost, types, loop) t.name = &loop;
  OPWEAVE_UNARY_OPS(OPWEAVE_TABLE_ROW)
#undef EACH
#undef EACH_FAST
#undef EACH_BY_TYPE
#define EACH(f) run2<T, vm::f<T>>
#define EACH_BY_TYPE(f, d) run2_by_type<T, vm::f, vm::d>
  OPWEAVE_BINARY_OPS(OPWEAVE_TABLE_ROW)
#undef OPWEAVE_TABLE_ROW
#undef EACH
#undef EACH_BY_TYPE
#undef F32_IN_RANGE
#undef BINARY_FN
#undef LOOP
  t.is_nan = &run_predicate<T, is_nan_of<T>>;
  t.is_inf = &run_predicate<T, is_inf_of<T>>;
  t.is_finite = &run_predicate<T, is_finite_of<T>>;
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
