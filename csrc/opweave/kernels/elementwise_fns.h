// The scalar element functions of the element-wise kernels, shared by the unfused kernels
// (elementwise.cpp, compare_select.cpp) and the fused loop kernel (fused_elementwise.cpp), so a
// fused loop computes each element with the very functions the unfused ops use. Internal to
// csrc/opweave/kernels.
//
// The functions live in an anonymous namespace: the per-ISA builds of the fused loops and of the
// math tables (fused_elementwise_loops*.cpp, unary_math_loops*.cpp, compiled with -mavx2 /
// -mavx512f) include them too, and an inline
// function with external linkage would let the linker keep one build's copy for every caller,
// AVX-512 code in the baseline build included.
#pragma once

#include <cmath>
#include <type_traits>

#include "opweave/errors.h"
#include "opweave/kernels/kernels.h"
#include "opweave/kernels/unary_math_loops.h"

namespace opweave::elementwise_fns {
namespace {  // NOLINT(build/namespaces): per translation unit on purpose, see above

// Integer arithmetic wraps around like NumPy's (done in unsigned to avoid signed-overflow UB).
template <typename T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
// Floor division (Python's //); the caller has checked b != 0.
template <typename T>
T floor_div(T a, T b) {
  if (b == -1) return wrap_sub<T>(0, a);  // avoids the INT_MIN / -1 trap; wraps like NumPy
  T q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// TensorFlow's FloorMod of integers (the remainder takes the divisor's sign); the caller has
// checked b != 0.
template <typename T>
T floor_mod(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return T(0);  // avoids the INT_MIN % -1 trap
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}

// a^b by repeated squaring, wrapping like the other integer arithmetic; the caller has checked
// b >= 0.
template <typename T>
T int_pow(T a, T b) {
  T result = 1;
  T base = a;
  while (b != 0) {
    if (b & 1) result = wrap_mul(result, base);
    b = static_cast<T>(b >> 1);
    if (b != 0) base = wrap_mul(base, base);
  }
  return result;
}

// NaN-propagating maximum/minimum, as numpy.maximum / numpy.minimum.
template <typename T>
T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? b : a;
}
template <typename T>
T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return b < a ? b : a;
}

template <BinaryOp Op, typename T>
struct BinaryFn {
  static T apply(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
      if constexpr (Op == BinaryOp::kAdd || Op == BinaryOp::kMaximum) return a || b;
      if constexpr (Op == BinaryOp::kMul || Op == BinaryOp::kMinimum) return a && b;
      return false;  // rejected before the loop runs
    } else if constexpr (std::is_integral_v<T>) {
      if constexpr (Op == BinaryOp::kAdd) return wrap_add(a, b);
      if constexpr (Op == BinaryOp::kSub) return wrap_sub(a, b);
      if constexpr (Op == BinaryOp::kMul) return wrap_mul(a, b);
      if constexpr (Op == BinaryOp::kDiv || Op == BinaryOp::kFloorDiv) {
        if (b == 0) throw_invalid_argument("Integer division by zero");
        return floor_div(a, b);
      }
      if constexpr (Op == BinaryOp::kTruncDiv) {
        if (b == 0) throw_invalid_argument("Integer division by zero");
        if (b == -1) return wrap_sub<T>(0, a);  // avoids the INT_MIN / -1 trap
        return static_cast<T>(a / b);
      }
      if constexpr (Op == BinaryOp::kMaximum) return nan_max(a, b);
      if constexpr (Op == BinaryOp::kMinimum) return nan_min(a, b);
      if constexpr (Op == BinaryOp::kReluGrad) return b > T(0) ? a : T(0);
      if constexpr (Op == BinaryOp::kPow) {
        if (b < 0) throw_invalid_argument("Integers to negative integer powers are not allowed");
        return int_pow(a, b);
      }
      if constexpr (Op == BinaryOp::kFloorMod) {
        if (b == 0) throw_invalid_argument("Integer division by zero");
        return floor_mod(a, b);
      }
      if constexpr (Op == BinaryOp::kSquaredDifference) {
        const T d = wrap_sub(a, b);
        return wrap_mul(d, d);
      }
    } else {
      if constexpr (Op == BinaryOp::kAdd) return a + b;
      if constexpr (Op == BinaryOp::kSub) return a - b;
      if constexpr (Op == BinaryOp::kMul) return a * b;
      if constexpr (Op == BinaryOp::kDiv || Op == BinaryOp::kTruncDiv) return a / b;
      if constexpr (Op == BinaryOp::kFloorDiv) return std::floor(a / b);
      if constexpr (Op == BinaryOp::kMaximum) return nan_max(a, b);
      if constexpr (Op == BinaryOp::kMinimum) return nan_min(a, b);
      if constexpr (Op == BinaryOp::kReluGrad) return b > T(0) ? a : T(0);
      // The other ops' float loops are not BinaryFn (elementwise_list.h).
      return a;
    }
  }
};

// The integer element functions of the unary ops whose row in elementwise_list.h takes kNumbers
// (their float loops are the ISA table's). Integers wrap like TensorFlow's: neg and abs of the
// lowest value are itself; round of an integer is the integer.
template <UnaryOp Op, typename T>
struct IntUnaryFn {
  static T apply(T v) {
    if constexpr (Op == UnaryOp::kNeg) return wrap_sub<T>(0, v);
    if constexpr (Op == UnaryOp::kRelu) return v < T(0) ? T(0) : v;
    if constexpr (Op == UnaryOp::kAbs) return v < T(0) ? wrap_sub<T>(0, v) : v;
    if constexpr (Op == UnaryOp::kSign) return static_cast<T>((v > T(0)) - (v < T(0)));
    if constexpr (Op == UnaryOp::kSquare) return wrap_mul(v, v);
    return v;  // kRound
  }
};

// max(min(v, hi), lo) with NaN propagating from any operand, as TensorFlow's Minimum / Maximum.
template <typename T>
T clip_one(T v, T lo, T hi) {
  T m = hi < v ? hi : v;
  if constexpr (std::is_floating_point_v<T>) m = (v != v || hi != hi) ? v + hi : m;
  T r = m < lo ? lo : m;
  if constexpr (std::is_floating_point_v<T>) r = (m != m || lo != lo) ? m + lo : r;
  return r;
}

}  // namespace

// The float math loops elementwise.cpp picked for this CPU at load time (unary_math_loops.h).
const unary_math::Table<float>& math_table_f32();
const unary_math::Table<double>& math_table_f64();

namespace {  // NOLINT(build/namespaces)
template <typename T>
const unary_math::Table<T>& math_table() {
  if constexpr (std::is_same_v<T, float>) {
    return math_table_f32();
  } else {
    return math_table_f64();
  }
}
}  // namespace

}  // namespace opweave::elementwise_fns
