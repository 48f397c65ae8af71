// The element-wise math ops, one row each: the one place such an op is declared in C++. The rows
// feed the UnaryOp / BinaryOp enumerators (kernels.h), the names, dtype rules, costs and dispatch
// of elementwise.cpp, the kernels registered by op type (elementwise_ops.cpp), the per-ISA loop
// tables (unary_math_loops.h, whose loops the GEMM epilogue shares), the element-wise fusion's op
// codes, costs and block loops (fused_elementwise.h / .cpp, fused_elementwise_loops.h) and the
// test that every ISA build gives the same bits (tests/cpp/test_unary_math_isa.cpp). A new op is
// its element function (vector_math.h) and a row here, then its Python definition and test row
// (docs/architecture.md, "Ops and kernels").
//
// OPWEAVE_UNARY_OPS(X), y = f(x):  X(Name, name, "Type", cost, types, loop)
// OPWEAVE_BINARY_OPS(X), z = f(x, y), NumPy broadcasting:  the same columns.
//   Name    the enumerators UnaryOp::kName / BinaryOp::kName and fused_elementwise::Op::kName
//   name    the loop's field in unary_math::Table<T>; the op's name in error messages
//   "Type"  the TensorFlow op type the kernel is registered under (and fused as)
//   cost    work per element relative to an add: how soon the work is split over threads, and
//           the fused loop's cost
//   types   the dtypes it takes: kFloats (float16 via float32, float32, float64); kNumbers, the
//           integers too (elementwise_fns.h: IntUnaryFn, BinaryFn); kAll, bool too (binary)
//   loop    how the loop of unary_math_loops.h computes an element of float32 / float64:
//             EACH(f)                f<T>(x...), a function template of vector_math.h
//             EACH_FAST(fast, range, full)  fast<T>(x) over blocks whose elements are all in
//                                    range<T> (a key interval of vector_math.h), full<T>(x)
//                                    elsewhere: a shortcut with the same bits (unary)
//             EACH_BY_TYPE(f, d)     f(x...) for float32, d(x...) for float64
//             F32_IN_RANGE(f, range, g, d)  float32: f(x) over a run whose elements are all in
//                                    range, else f or g (the C library) element by element;
//                                    float64: d(x)
//             LOOP(l)                l<T>, a whole loop of unary_math_loops.h (sqrt: the
//                                    instruction)
//             BINARY_FN(kName)       elementwise_fns::BinaryFn<BinaryOp::kName, T>::apply
// Every build (baseline, AVX2, AVX-512) runs the same operations in the same order (no FMA
// contraction), so no result depends on the CPU; the fused loops call these very loops, so a fused
// graph gives the unfused graph's bits.
//
// The fused op codes follow the row order (fused_elementwise.h): a program is read by the build
// that wrote it.
//
// Other op types computing a row's op (registered and fused like it): OPWEAVE_UNARY_ALIASES(X)
// and OPWEAVE_BINARY_ALIASES(X), X("Type", Name).
#pragma once

// clang-format off
#define OPWEAVE_UNARY_OPS(X)                                                                       \
  X(Neg,        neg,        "Neg",        1.0,  kNumbers, EACH(neg_of))                            \
  X(Relu,       relu,       "Relu",       1.0,  kNumbers, EACH(relu_of))                           \
  X(Abs,        abs,        "Abs",        1.0,  kNumbers, EACH(abs))                               \
  X(Square,     square,     "Square",     1.0,  kNumbers, EACH(square_of))                         \
  X(Sign,       sign,       "Sign",       1.0,  kNumbers, EACH(sign_of))                           \
  X(Exp,        exp,        "Exp",        20.0, kFloats,                                           \
    EACH_FAST(exp_normal, ExpNormalRange, exp))                                                    \
  X(Tanh,       tanh,       "Tanh",       20.0, kFloats,  EACH(tanh))                              \
  X(Sigmoid,    sigmoid,    "Sigmoid",    20.0, kFloats,                                           \
    EACH_FAST(sigmoid_normal, ExpNormalRange, sigmoid))                                            \
  X(Log,        log,        "Log",        20.0, kFloats,                                           \
    EACH_FAST(log_normal, LogNormalRange, log))                                                    \
  X(Log1p,      log1p,      "Log1p",      20.0, kFloats,  EACH(log1p))                             \
  X(Expm1,      expm1,      "Expm1",      20.0, kFloats,  EACH(expm1))                             \
  X(Sqrt,       sqrt,       "Sqrt",       4.0,  kFloats,  LOOP(sqrt_loop))                         \
  X(Rsqrt,      rsqrt,      "Rsqrt",      4.0,  kFloats,  LOOP(rsqrt_loop))                        \
  X(Reciprocal, reciprocal, "Reciprocal", 1.0,  kFloats,  EACH(reciprocal_of))                     \
  X(Floor,      floor,      "Floor",      1.0,  kFloats,  EACH(floor))                             \
  X(Ceil,       ceil,       "Ceil",       1.0,  kFloats,  EACH(ceil))                              \
  X(Round,      round,      "Round",      1.0,  kNumbers, EACH(rint))                              \
  X(Sin,        sin,        "Sin",        20.0, kFloats,                                           \
    F32_IN_RANGE(sin_f32, TrigF32Range, sin_libm_f32, sin_libm_f64))                               \
  X(Cos,        cos,        "Cos",        20.0, kFloats,                                           \
    F32_IN_RANGE(cos_f32, TrigF32Range, cos_libm_f32, cos_libm_f64))                               \
  X(Tan,        tan,        "Tan",        20.0, kFloats,                                           \
    F32_IN_RANGE(tan_f32, TrigF32Range, tan_libm_f32, tan_libm_f64))

#define OPWEAVE_BINARY_OPS(X)                                                                      \
  X(Add,               add,                "Add",               1.0,  kAll,     BINARY_FN(kAdd))   \
  X(Sub,               sub,                "Sub",               1.0,  kNumbers, BINARY_FN(kSub))   \
  X(Mul,               mul,                "Mul",               1.0,  kAll,     BINARY_FN(kMul))   \
  X(Div,               div,                "RealDiv",           1.0,  kNumbers, BINARY_FN(kDiv))   \
  X(FloorDiv,          floordiv,           "FloorDiv",          1.0,  kNumbers,                    \
    BINARY_FN(kFloorDiv))                                                                          \
  X(TruncDiv,          truncatediv,        "Div",               1.0,  kNumbers,                    \
    BINARY_FN(kTruncDiv))                                                                          \
  X(Maximum,           maximum,            "Maximum",           1.0,  kAll,                        \
    BINARY_FN(kMaximum))                                                                           \
  X(Minimum,           minimum,            "Minimum",           1.0,  kAll,                        \
    BINARY_FN(kMinimum))                                                                           \
  X(ReluGrad,          relu_grad,          "ReluGrad",          1.0,  kNumbers,                    \
    BINARY_FN(kReluGrad))                                                                          \
  X(Pow,               pow,                "Pow",               20.0, kNumbers,                    \
    LOOP(pow_loop))                                                                                \
  X(FloorMod,          floormod,           "FloorMod",          20.0, kNumbers,                    \
    LOOP(floormod_loop))                                                                           \
  X(SquaredDifference, squared_difference, "SquaredDifference", 1.0,  kNumbers,                    \
    EACH(squared_difference_of))

#define OPWEAVE_UNARY_ALIASES(X) X("Inv", Reciprocal)
#define OPWEAVE_BINARY_ALIASES(X) X("AddV2", Add)
// clang-format on

namespace opweave {

// The dtypes an element-wise op takes (the `types` column).
enum class ElementTypes { kFloats, kNumbers, kAll };

}  // namespace opweave
