// The loops of the transcendental unary ops (exp, tanh, sigmoid), compiled twice from this one
// source: unary_math_loops.cpp (baseline x86-64) and unary_math_loops_avx2.cpp (-mavx2, with
// -ffp-contract=off so no multiply-add is fused). Both builds do the same operations in the same
// order, so results do not depend on the ISA. The AVX2 build matters beyond width: float64
// exp/tanh need 64-bit integer compares (SSE4.2) to vectorise at all, so the baseline build runs
// them scalar. elementwise.cpp picks the table once with cpu_info().
#pragma once

#include <cstdint>

namespace opweave::unary_math {

// dst[i] = f(src[i * stride]) for i < n.
template <typename T>
using RunFn = void (*)(const T* src, std::int64_t stride, T* dst, std::int64_t n);

template <typename T>
struct Table {
  RunFn<T> exp, tanh, sigmoid;
};

Table<float> table_baseline_f32();
Table<double> table_baseline_f64();
#if defined(OPWEAVE_X86_64)
Table<float> table_avx2_f32();
Table<double> table_avx2_f64();
#endif

}  // namespace opweave::unary_math

#if defined(OPWEAVE_UNARY_MATH_IMPL)
#include "opweave/kernels/vector_math.h"

namespace opweave::unary_math {
namespace {

template <typename T, T (*F)(T)>
void run(const T* src, std::int64_t stride, T* dst, std::int64_t n) {
  if (stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(src[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = F(src[i * stride]);
  }
}

template <typename T>
Table<T> make_table() {
  return {&run<T, vector_math::exp<T>>, &run<T, vector_math::tanh<T>>,
          &run<T, vector_math::sigmoid<T>>};
}

}  // namespace
}  // namespace opweave::unary_math

#define OPWEAVE_UNARY_MATH_INSTANTIATE(suffix)                          \
  namespace opweave::unary_math {                                       \
  Table<float> table_##suffix##_f32() { return make_table<float>(); }   \
  Table<double> table_##suffix##_f64() { return make_table<double>(); } \
  }
#endif
