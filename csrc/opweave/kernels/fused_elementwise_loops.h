// The block loops of _FusedElementwise (fused_elementwise.h), compiled three times from this one
// source, as unary_math_loops.h is: fused_elementwise_loops.cpp (baseline x86-64, or any CPU),
// _avx2.cpp and _avx512.cpp (-ffp-contract=off, so no multiply-add is contracted). The rows of
// elementwise_list.h call the ISA table elementwise.cpp picked (unary_math_loops.h), the very
// loops the unfused kernels call; the other ops are single IEEE operations, comparisons and
// selects, exact in every build. So every build gives the unfused kernels' bits, only wider.
// fused_elementwise.cpp picks one build at load time with cpu_info().
#pragma once

#include "opweave/kernels/fused_elementwise.h"

#if defined(OPWEAVE_FUSED_LOOPS_IMPL)
#include <cmath>
#include <cstdint>

#include "opweave/kernels/elementwise_fns.h"

namespace opweave::fused_elementwise {
namespace {

// -- the element loops ----------------------------------------------------------------------------

template <typename R, typename A, typename F>
void map1(const Operand& a, void* dst, std::int64_t n, F f) {
  const A* pa = static_cast<const A*>(a.p);
  R* out = static_cast<R*>(dst);
  if (a.stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(pa[i]);
  } else {
    const R r = f(pa[0]);
    for (std::int64_t i = 0; i < n; ++i) out[i] = r;
  }
}

// The four stride cases as separate loops (as binary_run has them), so each vectorises.
template <typename R, typename A, typename F>
void map2(const Operand& a, const Operand& b, void* dst, std::int64_t n, F f) {
  const A* pa = static_cast<const A*>(a.p);
  const A* pb = static_cast<const A*>(b.p);
  R* out = static_cast<R*>(dst);
  if (a.stride == 1 && b.stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(pa[i], pb[i]);
  } else if (a.stride == 1) {
    const A bv = pb[0];
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(pa[i], bv);
  } else if (b.stride == 1) {
    const A av = pa[0];
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(av, pb[i]);
  } else {
    const R r = f(pa[0], pb[0]);
    for (std::int64_t i = 0; i < n; ++i) out[i] = r;
  }
}

template <typename R, typename A0, typename A, typename F>
void map3(const Operand& a, const Operand& b, const Operand& c, void* dst, std::int64_t n, F f) {
  const A0* pa = static_cast<const A0*>(a.p);
  const A* pb = static_cast<const A*>(b.p);
  const A* pc = static_cast<const A*>(c.p);
  R* out = static_cast<R*>(dst);
  if (a.stride == 1 && b.stride == 1 && c.stride == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(pa[i], pb[i], pc[i]);
  } else {
    const std::int64_t sa = a.stride, sb = b.stride, sc = c.stride;
    for (std::int64_t i = 0; i < n; ++i) out[i] = f(pa[i * sa], pb[i * sb], pc[i * sc]);
  }
}

template <typename C>
void table_unary(unary_math::RunFn<C> fn, const Operand& a, void* dst, std::int64_t n) {
  fn(static_cast<const C*>(a.p), a.stride, static_cast<C*>(dst), n);
}

template <typename C>
void table_binary(unary_math::BinaryRunFn<C> fn, const Operand& a, const Operand& b, void* dst,
                  std::int64_t n) {
  fn(static_cast<const C*>(a.p), a.stride, static_cast<const C*>(b.p), b.stride,
     static_cast<C*>(dst), n);
}

// One instruction over one block, in compute type C (float for float16 and float32).
template <typename C>
void execute(const Instruction& in, const Operand* o, void* dst, std::int64_t n) {
  const unary_math::Table<C>& t = elementwise_fns::math_table<C>();
  const Operand& a = o[0];
  const Operand& b = o[1];
  const Operand& c = o[2];
  switch (in.op) {
    // The rows of elementwise_list.h: the very loops the unfused kernels run.
#define OPWEAVE_UNARY_CASE(Name, name, ...) \
  case Op::k##Name:                         \
    return table_unary<C>(t.name, a, dst, n);
#define OPWEAVE_BINARY_CASE(Name, name, ...) \
  case Op::k##Name:                          \
    return table_binary<C>(t.name, a, b, dst, n);
    OPWEAVE_UNARY_OPS(OPWEAVE_UNARY_CASE)
    OPWEAVE_BINARY_OPS(OPWEAVE_BINARY_CASE)
#undef OPWEAVE_UNARY_CASE
#undef OPWEAVE_BINARY_CASE
    // The nn ops' own expressions (nn_ops.cpp).
    case Op::kRelu6:
      return map1<C, C>(a, dst, n, [](C v) { return v < C(0) ? C(0) : (v > C(6) ? C(6) : v); });
    case Op::kLeakyRelu: {
      const C alpha = static_cast<C>(in.immediate);
      return map1<C, C>(a, dst, n, [alpha](C v) { return v > C(0) ? v : v * alpha; });
    }
    case Op::kRelu6Grad:
      return map2<C, C>(a, b, dst, n, [](C g, C f) { return f > C(0) && f < C(6) ? g : C(0); });
    case Op::kLeakyReluGrad: {
      const C alpha = static_cast<C>(in.immediate);
      return map2<C, C>(a, b, dst, n, [alpha](C g, C f) { return f > C(0) ? g : g * alpha; });
    }
    case Op::kEqual:
      return map2<bool, C>(a, b, dst, n, [](C x, C y) { return x == y; });
    case Op::kNotEqual:
      return map2<bool, C>(a, b, dst, n, [](C x, C y) { return x != y; });
    case Op::kLess:
      return map2<bool, C>(a, b, dst, n, [](C x, C y) { return x < y; });
    case Op::kLessEqual:
      return map2<bool, C>(a, b, dst, n, [](C x, C y) { return x <= y; });
    case Op::kGreater:
      return map2<bool, C>(a, b, dst, n, [](C x, C y) { return x > y; });
    case Op::kGreaterEqual:
      return map2<bool, C>(a, b, dst, n, [](C x, C y) { return x >= y; });
    case Op::kLogicalNot:
      return map1<bool, bool>(a, dst, n, [](bool v) { return !v; });
    case Op::kLogicalAnd:
      return map2<bool, bool>(a, b, dst, n, [](bool x, bool y) { return x && y; });
    case Op::kLogicalOr:
      return map2<bool, bool>(a, b, dst, n, [](bool x, bool y) { return x || y; });
    case Op::kSelect:
    case Op::kSelectV2:
      return map3<C, bool, C>(a, b, c, dst, n, [](bool k, C x, C y) { return k ? x : y; });
    case Op::kClipByValue:
      return map3<C, C, C>(a, b, c, dst, n,
                           [](C v, C lo, C hi) { return elementwise_fns::clip_one<C>(v, lo, hi); });
    case Op::kCount:
      break;
  }
}

template <typename C>
void execute_c(const Instruction& in, const Operand* o, void* dst, std::int64_t n) {
  execute<C>(in, o, dst, n);
}

}  // namespace
}  // namespace opweave::fused_elementwise

#define OPWEAVE_FUSED_LOOPS_INSTANTIATE(suffix)                              \
  namespace opweave::fused_elementwise {                                     \
  Loops loops_##suffix() { return {&execute_c<float>, &execute_c<double>}; } \
  }
#endif
