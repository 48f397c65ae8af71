// exp written so the compiler vectorises it (no calls, no branches, no float<->int conversions):
// Cody-Waite range reduction x = n ln2 + r with |r| <= ln2/2, a Taylor polynomial for e^r, and
// 2^n assembled in the exponent bits. Accuracy: within ~1 ulp of libm over the whole range;
// NaN -> NaN, overflow -> +inf, underflow -> 0 (subnormal results are produced, via a two-factor
// scale). Internal to the kernels.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace opweave::vector_math {

template <typename T>
struct ExpTraits;

template <>
struct ExpTraits<float> {
  using Bits = std::uint32_t;
  static constexpr int kMantissa = 23;
  static constexpr Bits kBias = 127;
  static constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23: t + shifter rounds t to an integer
  static constexpr float kLog2e = 1.44269504088896341f;
  static constexpr float kLn2Hi = 0.693145751953125f;  // few mantissa bits: n * hi is exact
  static constexpr float kLn2Lo = 1.42860682030941723212e-6f;
  static constexpr float kMax = 88.72283905206835f;  // ln(FLT_MAX)
  static constexpr float kMin = -103.97208f;         // below: the result rounds to 0
  static constexpr int kDegree = 7;
};

template <>
struct ExpTraits<double> {
  using Bits = std::uint64_t;
  static constexpr int kMantissa = 52;
  static constexpr Bits kBias = 1023;
  static constexpr double kShifter = 6755399441055744.0;  // 1.5 * 2^52
  static constexpr double kLog2e = 1.4426950408889634074;
  static constexpr double kLn2Hi = 6.93147180369123816490e-01;
  static constexpr double kLn2Lo = 1.90821492927058770002e-10;
  static constexpr double kMax = 709.782712893384;
  static constexpr double kMin = -745.1332191019412;
  static constexpr int kDegree = 13;
};

template <typename T>
inline typename ExpTraits<T>::Bits to_bits(T v) {
  typename ExpTraits<T>::Bits b;
  std::memcpy(&b, &v, sizeof(v));
  return b;
}

template <typename T>
inline T from_bits(typename ExpTraits<T>::Bits b) {
  T v;
  std::memcpy(&v, &b, sizeof(v));
  return v;
}

// c ? a : b without a branch.
template <typename T>
inline T select(bool c, T a, T b) {
  using Bits = typename ExpTraits<T>::Bits;
  const Bits mask = Bits(0) - static_cast<Bits>(c);
  return from_bits<T>((to_bits<T>(a) & mask) | (to_bits<T>(b) & ~mask));
}

// 2^n for an integer-valued n in [-1022, 1023] (float: [-126, 127]).
template <typename T>
inline T pow2i(T n) {
  using E = ExpTraits<T>;
  using Bits = typename E::Bits;
  // n + shifter has n in its low mantissa bits; re-bias them into the exponent field.
  const Bits k = to_bits<T>(n + E::kShifter) - to_bits<T>(E::kShifter);
  return from_bits<T>((k + E::kBias) << E::kMantissa);
}

template <typename T, int D>
struct Coefficients {
  T v[D + 1];
};

// 1/0!, 1/1!, ..., 1/D!, computed at compile time.
template <typename T, int D>
constexpr Coefficients<T, D> inverse_factorials() {
  Coefficients<T, D> c{};
  T f = T(1);
  for (int i = 0; i <= D; ++i) {
    if (i > 1) f *= T(i);
    c.v[i] = T(1) / f;
  }
  return c;
}

template <typename T>
inline T exp(T x) {
  using E = ExpTraits<T>;
  // Clamp first so the integer part stays small; out-of-range inputs are fixed up at the end.
  // Bit-mask selects throughout: a plain ?: on values that may be NaN or inf keeps a branch under
  // the default -ftrapping-math, and a branch stops vectorisation.
  T xc = select<T>(x < E::kMin, E::kMin, x);
  xc = select<T>(xc > E::kMax, E::kMax, xc);
  const T n = (xc * E::kLog2e + E::kShifter) - E::kShifter;  // round to nearest integer
  const T r = (xc - n * E::kLn2Hi) - n * E::kLn2Lo;
  // Horner on the Taylor series 1 + r + r^2/2! + ... + r^d/d! (|r| <= ln2/2: the first omitted
  // term is below half an ulp).
  constexpr auto c = inverse_factorials<T, E::kDegree>();
  T p = c.v[E::kDegree];
#pragma GCC unroll 16
  for (int i = E::kDegree - 1; i >= 0; --i) p = p * r + c.v[i];
  // 2^n as two factors so results down to the subnormal range need no special case.
  const T n1 = (n * T(0.5) + E::kShifter) - E::kShifter;
  const T result = p * pow2i<T>(n1) * pow2i<T>(n - n1);
  T out = select<T>(x > E::kMax, std::numeric_limits<T>::infinity(), result);
  out = select<T>(x < E::kMin, T(0), out);
  return select<T>(x != x, x, out);
}

}  // namespace opweave::vector_math
