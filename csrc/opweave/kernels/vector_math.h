// Element-wise math written so the compiler vectorises it (no calls, no branches, no float<->int
// conversions): exp, expm1, tanh and sigmoid by Cody-Waite range reduction x = n ln2 + r with
// |r| <= ln2/2, a Taylor polynomial for e^r, and 2^n assembled in the exponent bits; log and log1p
// from the exponent and mantissa bits and the atanh series; rint / floor / ceil with the 2^p
// shifter; pow, sin, cos, tan and fmod of float32 computed in double. exp accuracy: within ~1 ulp
// of libm over the whole range; NaN -> NaN, overflow -> +inf, underflow -> 0 (subnormal results are
// produced, via a two-factor scale). Internal to the kernels.
//
// The element functions the rows of elementwise_list.h name live here, so a new element-wise op
// is its function here and its row there. The *_libm functions are the exceptions to "no calls":
// the C library, element by element, where a formula here has no range (float64 sin, cos, pow;
// float32 operands outside a formula's range); the same call for the same element in every build.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// Every function here is forced inline: the loops that call them vectorise only when the whole
// computation is in the loop body (GCC does not inline the longer ones on its own).
#define OPWEAVE_VM_INLINE inline __attribute__((always_inline))

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
OPWEAVE_VM_INLINE typename ExpTraits<T>::Bits to_bits(T v) {
  typename ExpTraits<T>::Bits b;
  std::memcpy(&b, &v, sizeof(v));
  return b;
}

template <typename T>
OPWEAVE_VM_INLINE T from_bits(typename ExpTraits<T>::Bits b) {
  T v;
  std::memcpy(&v, &b, sizeof(v));
  return v;
}

// c ? a : b without a branch. GCC needs the bit mask (a ?: on floats keeps a branch and the loop
// does not vectorise); clang vectorises ?: into a blend, and LLVM 22 (the portable wheel's Zig
// clang) miscompiles the bit-mask form with AVX-512 mask registers (rint(-2.5) and floor(2.5)
// gave subnormals; tests/cpp/test_unary_math_isa.cpp catches it).
template <typename T>
OPWEAVE_VM_INLINE T select(bool c, T a, T b) {
#if defined(__clang__)
  return c ? a : b;
#else
  using Bits = typename ExpTraits<T>::Bits;
  const Bits mask = Bits(0) - static_cast<Bits>(c);
  return from_bits<T>((to_bits<T>(a) & mask) | (to_bits<T>(b) & ~mask));
#endif
}

// 2^n for an integer-valued n in [-1022, 1023] (float: [-126, 127]).
template <typename T>
OPWEAVE_VM_INLINE T pow2i(T n) {
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

// exp with a Taylor polynomial of degree D (exp below uses the full-precision degree).
template <typename T, int D>
OPWEAVE_VM_INLINE T exp_n(T x) {
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
  constexpr auto c = inverse_factorials<T, D>();
  T p = c.v[D];
#pragma GCC unroll 16
  for (int i = D - 1; i >= 0; --i) p = p * r + c.v[i];
  // 2^n as two factors so results down to the subnormal range need no special case.
  const T n1 = (n * T(0.5) + E::kShifter) - E::kShifter;
  const T result = p * pow2i<T>(n1) * pow2i<T>(n - n1);
  T out = select<T>(x > E::kMax, std::numeric_limits<T>::infinity(), result);
  out = select<T>(x < E::kMin, T(0), out);
  return select<T>(x != x, x, out);
}

template <typename T>
OPWEAVE_VM_INLINE T exp(T x) {
  return exp_n<T, ExpTraits<T>::kDegree>(x);
}

// -- ranges as intervals of keys -----------------------------------------------------------------
//
// The fast formulas below (exp_normal, sigmoid_normal, log_normal, sin_f32, ...) hold on a range
// of x; the loops check a whole block before using one (unary_math_loops.h). A range is a struct
// R with R::key(x), an unsigned integer made from x's bits, and R::kLimit: x is in the range iff
// key(x) <= kLimit. A block's check is then one running maximum of the keys (two vector
// instructions an element, no mask registers), a third of the cost of or-ing two compares' masks
// (log on Zen 4: 6.2 -> 5.7 ns per 16 floats). NaN is never in a range: its bits less the sign
// are above the infinity's, and the infinity is above every limit.

template <typename T>
OPWEAVE_VM_INLINE typename ExpTraits<T>::Bits abs_bits(T x) {
  using Bits = typename ExpTraits<T>::Bits;
  return to_bits<T>(x) & (~Bits(0) >> 1);
}

template <typename R, typename T>
OPWEAVE_VM_INLINE bool in_range(T x) {
  return R::key(x) <= R::kLimit;
}

// Where e^x and e^-x are normal numbers whose 2^n is one normal factor: |x| <= 87 (float; n in
// [-126, 126]) or 708 (double; n in [-1021, 1021]).
template <typename T>
struct ExpNormalRange;
template <>
struct ExpNormalRange<float> {
  static constexpr std::uint32_t kLimit = 0x42ae0000u;  // the bits of 87.0f
  static OPWEAVE_VM_INLINE std::uint32_t key(float x) { return abs_bits(x); }
};
template <>
struct ExpNormalRange<double> {
  static constexpr std::uint64_t kLimit = 0x4086200000000000ull;  // the bits of 708.0
  static OPWEAVE_VM_INLINE std::uint64_t key(double x) { return abs_bits(x); }
};
// exp for x in ExpNormalRange: the clamps and fix-ups of exp_n do nothing there, and p 2^n1
// 2^(n - n1) is p 2^n exactly (a normal result: no rounding), so this is exp's result bit for bit
// with a third fewer operations. The loops run it over whole blocks in range (EACH_FAST).
template <typename T>
OPWEAVE_VM_INLINE T exp_normal(T x) {
  using E = ExpTraits<T>;
  const T n = (x * E::kLog2e + E::kShifter) - E::kShifter;
  const T r = (x - n * E::kLn2Hi) - n * E::kLn2Lo;
  constexpr int kD = E::kDegree;
  constexpr auto c = inverse_factorials<T, kD>();
  T p = c.v[kD];
#pragma GCC unroll 16
  for (int i = kD - 1; i >= 0; --i) p = p * r + c.v[i];
  return p * pow2i<T>(n);
}

template <typename T>
struct TanhTraits;
template <>
struct TanhTraits<float> {
  static constexpr int kDegree = 7;       // |r|^8 / 9! < 2^-25 |r| on |r| <= ln2/2
  static constexpr float kClamp = 40.0f;  // 2|x| above this: tanh rounds to 1 (from |x| ~ 9)
};
template <>
struct TanhTraits<double> {
  static constexpr int kDegree = 13;      // |r|^14 / 15! < 2^-54 |r|
  static constexpr double kClamp = 80.0;  // tanh rounds to 1 from |x| ~ 19.1
};

// tanh(x) = sign(x) * m / (m + 2) with m = expm1(2|x|): no cancellation anywhere (unlike
// 1 - 2 / (e^2x + 1) near 0), so relative accuracy holds down to the smallest inputs. expm1 by the
// same Cody-Waite reduction as exp: 2|x| = n ln2 + r, expm1(r) = r (1 + r/2! + ... ) by Horner,
// then expm1 = 2^n expm1(r) + (2^n - 1). For 2|x| <= ln2/2, n = 0 and r = 2|x| exactly.
// Within 3.1 ulp of a long double tanh (measured on 4M random inputs); tanh(+-0) = +-0, tanh(+-inf)
// = +-1, NaN -> NaN. Branch-free.
template <typename T>
OPWEAVE_VM_INLINE T tanh(T x) {
  using E = ExpTraits<T>;
  using Bits = typename E::Bits;
  constexpr Bits kSign = Bits(1) << (sizeof(T) * 8 - 1);
  const Bits sign = to_bits<T>(x) & kSign;
  const T ax = from_bits<T>(to_bits<T>(x) & ~kSign);
  T a = T(2) * ax;
  a = select<T>(a > TanhTraits<T>::kClamp, TanhTraits<T>::kClamp, a);  // also maps inf; NaN below
  const T n = (a * E::kLog2e + E::kShifter) - E::kShifter;
  const T r = (a - n * E::kLn2Hi) - n * E::kLn2Lo;
  constexpr int kD = TanhTraits<T>::kDegree;
  constexpr auto c = inverse_factorials<T, kD + 1>();  // c.v[i] = 1/i!
  T p = c.v[kD + 1];
#pragma GCC unroll 16
  for (int i = kD; i >= 1; --i) p = p * r + c.v[i];
  const T em = p * r;  // expm1(r)
  const T s = pow2i<T>(n);
  const T m = s * em + (s - T(1));
  const T t = m / (m + T(2));
  const T out = from_bits<T>(to_bits<T>(t) | sign);
  return select<T>(x != x, x, out);
}

// e = e^-|x| never overflows: 1/(1+e) for x >= 0, e/(1+e) otherwise. Branch-free, so it
// vectorises together with the exp.
template <typename T, T (*Exp)(T)>
OPWEAVE_VM_INLINE T sigmoid_with(T x) {
  const T e = Exp(select<T>(x < T(0), x, -x));
  const T r = T(1) / (T(1) + e);
  return select<T>(x >= T(0), r, e * r);
}
template <typename T>
OPWEAVE_VM_INLINE T sigmoid(T x) {
  return sigmoid_with<T, exp<T>>(x);
}
// sigmoid for x in ExpNormalRange, where -|x| is: the same bits with exp_normal (EACH_FAST).
template <typename T>
OPWEAVE_VM_INLINE T sigmoid_normal(T x) {
  return sigmoid_with<T, exp_normal<T>>(x);
}

// e^x - 1 for x <= 0 without cancellation near 0 (Elu, Selu), written like tanh so it
// vectorises: x = n ln2 + r, expm1(r) = r (1 + r/2! + ...) by Horner, then 2^n expm1(r) + (2^n -
// 1). Below -kClamp the result rounds to -1. NaN -> NaN. One definition for the activation kernels
// and the GEMM epilogue (gemm_epilogue.cpp), so a fused Elu rounds like the op.
template <typename T>
OPWEAVE_VM_INLINE T expm1_nonpositive(T x) {
  using E = ExpTraits<T>;
  constexpr T kClamp = sizeof(T) == 4 ? T(40) : T(80);
  constexpr int kD = TanhTraits<T>::kDegree;
  const T a = select<T>(x < -kClamp, -kClamp, x);
  const T n = (a * E::kLog2e + E::kShifter) - E::kShifter;
  const T r = (a - n * E::kLn2Hi) - n * E::kLn2Lo;
  constexpr auto c = inverse_factorials<T, kD + 1>();
  T p = c.v[kD + 1];
#pragma GCC unroll 16
  for (int i = kD; i >= 1; --i) p = p * r + c.v[i];
  const T s = pow2i<T>(n);
  const T m = s * (p * r) + (s - T(1));
  return select<T>(x != x, x, m);
}

// -- bits, signs, rounding ------------------------------------------------------------------------

template <typename T>
constexpr typename ExpTraits<T>::Bits sign_mask() {
  using Bits = typename ExpTraits<T>::Bits;
  return Bits(1) << (sizeof(T) * 8 - 1);
}

template <typename T>
OPWEAVE_VM_INLINE T abs(T x) {
  return from_bits<T>(to_bits<T>(x) & ~sign_mask<T>());
}

// |mag| with the sign bit of `sign`.
template <typename T>
OPWEAVE_VM_INLINE T copysign(T mag, T sign) {
  return from_bits<T>((to_bits<T>(mag) & ~sign_mask<T>()) | (to_bits<T>(sign) & sign_mask<T>()));
}

template <typename T>
OPWEAVE_VM_INLINE bool signbit(T x) {
  return (to_bits<T>(x) & sign_mask<T>()) != 0;
}

// 2^p, p = the mantissa width: from there on every value is an integer.
template <typename T>
constexpr T integer_threshold() {
  return T(typename ExpTraits<T>::Bits(1) << ExpTraits<T>::kMantissa);
}

// Round half to even (C's rint in the default rounding mode, TensorFlow's Round): adding and
// subtracting 2^p rounds |x| < 2^p to an integer in the current (nearest-even) mode; larger
// values, infinities and NaN are returned as they are. The sign of x is kept (rint(-0.3) = -0).
template <typename T>
OPWEAVE_VM_INLINE T rint(T x) {
  constexpr T big = integer_threshold<T>();
  const T ax = abs(x);
  const T r = (ax + big) - big;
  return select<T>(ax < big, copysign(r, x), x);
}

// floor and ceil from rint: one step down (up) where rint went up (down). The result has the
// sign of x, so floor(-0.0) = -0 and ceil(-0.5) = -0 as in C.
template <typename T>
OPWEAVE_VM_INLINE T floor(T x) {
  const T t = rint(x);
  return copysign(select<T>(t > x, t - T(1), t), x);
}

template <typename T>
OPWEAVE_VM_INLINE T ceil(T x) {
  const T t = rint(x);
  return copysign(select<T>(t < x, t + T(1), t), x);
}

// -- log and log1p --------------------------------------------------------------------------------

// 2 / (2i + 1) for i = 1..K: the atanh series 2 atanh(s) = 2s + s (2/3 z + 2/5 z^2 + ...), z = s^2.
template <typename T, int K>
constexpr Coefficients<T, K> atanh_series() {
  Coefficients<T, K> c{};
  c.v[0] = T(0);
  for (int i = 1; i <= K; ++i) c.v[i] = T(2) / T(2 * i + 1);
  return c;
}

// R(z) = c_1 z + ... + c_K z^K with c = series(), and the constants of the reduction.
template <typename T>
struct LogTraits;
template <>
struct LogTraits<float> {
  static constexpr std::uint32_t kSqrtHalf = 0x3f3504f3u;  // bits of sqrt(1/2), rounded up
  static constexpr std::uint32_t kOne = 0x3f800000u;
  static constexpr float kMinNormal = 1.17549435e-38f;
  static constexpr float kSubnormalScale = 8388608.0f;  // 2^23
  static constexpr float kSubnormalExponent = 23.0f;
  // R(z) ~ 2/3 z + 2/5 z^2 + ... by three terms fitted to it on the whole range of z (a weighted
  // minimax fit: |z (R(z)/z - P(z))| < 2^-29 for z <= 0.0295, i.e. below 2^-30 of the result),
  // where the series itself needs four: the same 0.84 ulp at most, measured on every normal
  // positive float, one multiply and one add fewer.
  static constexpr int kTerms = 3;
  static constexpr Coefficients<float, 3> series() {
    return {{0.0f, 0.6666677594184875f, 0.3997754156589508f, 0.29871729016304016f}};
  }
};
template <>
struct LogTraits<double> {
  static constexpr std::uint64_t kSqrtHalf = 0x3fe6a09e667f3bcdull;
  static constexpr std::uint64_t kOne = 0x3ff0000000000000ull;
  static constexpr double kMinNormal = 2.2250738585072014e-308;
  static constexpr double kSubnormalScale = 4503599627370496.0;  // 2^52
  static constexpr double kSubnormalExponent = 52.0;
  static constexpr int kTerms = 10;  // z^11 / 23 < 2^-60
  static constexpr Coefficients<double, 10> series() { return atanh_series<double, 10>(); }
};

// Natural log. x = 2^k m with m in [sqrt(1/2), sqrt(2)) (the exponent field is shifted so it rolls
// over at sqrt(2)); with f = m - 1 and s = f / (2 + f), log(m) = f - f^2/2 + s (f^2/2 + R(s^2)),
// where the correction s (f^2/2 + R) is small next to f, so the result keeps f's full precision.
// Subnormals are scaled by 2^p first. log(0) = -inf, log(inf) = inf, log(x < 0) = NaN, NaN -> NaN.
// Within 0.85 ulp (float32, every input checked) / ~1 ulp (float64).
// log_core: log of a normal, positive, finite xs, less k_extra in its exponent (subnormals come
// here scaled).
template <typename T>
OPWEAVE_VM_INLINE T log_core(T xs, T k_extra) {
  using E = ExpTraits<T>;
  using L = LogTraits<T>;
  using Bits = typename E::Bits;
  constexpr Bits kMantissaMask = (Bits(1) << E::kMantissa) - 1;
  Bits ix = to_bits<T>(xs) + (L::kOne - L::kSqrtHalf);
  // k as a float without an int conversion: the shifter holds the biased exponent in its low
  // mantissa bits, and shifter + bias is exact (below 2^24 / 2^53), so one subtraction leaves k.
  const T k = from_bits<T>((ix >> E::kMantissa) | to_bits<T>(E::kShifter)) -
              (E::kShifter + T(E::kBias)) - k_extra;
  ix = (ix & kMantissaMask) + L::kSqrtHalf;
  const T f = from_bits<T>(ix) - T(1);
  const T s = f / (T(2) + f);
  const T z = s * s;
  constexpr int K = L::kTerms;
  constexpr auto c = L::series();
  T p = c.v[K];
#pragma GCC unroll 16
  for (int i = K - 1; i >= 1; --i) p = p * z + c.v[i];
  const T r = p * z;
  const T hfsq = T(0.5) * f * f;
  return k * E::kLn2Hi - ((hfsq - (s * (hfsq + r) + k * E::kLn2Lo)) - f);
}

template <typename T>
OPWEAVE_VM_INLINE T log(T x) {
  using L = LogTraits<T>;
  const bool subnormal = x < L::kMinNormal;
  const bool finite_positive = (x > T(0)) & (x < std::numeric_limits<T>::infinity());
  T xs = select<T>(subnormal, x * L::kSubnormalScale, x);
  xs = select<T>(finite_positive, xs, T(1));  // keeps the arithmetic below finite
  T out = log_core<T>(xs, select<T>(subnormal, L::kSubnormalExponent, T(0)));
  out = select<T>(x == T(0), -std::numeric_limits<T>::infinity(), out);
  out = select<T>(x == std::numeric_limits<T>::infinity(), x, out);
  return select<T>((x < T(0)) | (x != x), std::numeric_limits<T>::quiet_NaN(), out);
}

// Normal, positive, finite x: its bits less the smallest normal's, where zero, subnormals and
// negatives wrap around to the top and the infinity lands just above the limit.
template <typename T>
struct LogNormalRange {
  using Bits = typename ExpTraits<T>::Bits;
  static constexpr Bits kMinNormalBits = Bits(1) << ExpTraits<T>::kMantissa;
  static constexpr int kExponentBits = int(sizeof(T)) * 8 - 1 - ExpTraits<T>::kMantissa;
  static constexpr Bits kInfinityBits = ((Bits(1) << kExponentBits) - 1) << ExpTraits<T>::kMantissa;
  static constexpr Bits kLimit = kInfinityBits - kMinNormalBits - 1;
  static OPWEAVE_VM_INLINE Bits key(T x) { return to_bits<T>(x) - kMinNormalBits; }
};

// log for x in LogNormalRange: log's formula without its special cases, the same operations on
// such x, so the same bits. The loops run it over whole blocks in range (unary_math_loops.h,
// EACH_FAST).
template <typename T>
OPWEAVE_VM_INLINE T log_normal(T x) {
  return log_core<T>(x, T(0));
}

// log(1 + x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the second term is the rounding
// error of u divided by u (u - 1 is exact), so no digits of a small x are lost. When u == 1 the
// log is 0 and the correction is x itself.
template <typename T>
OPWEAVE_VM_INLINE T log1p(T x) {
  const T u = T(1) + x;
  T out = log(u) + (x - (u - T(1))) / u;
  out = select<T>(u == T(1), x, out);  // also keeps the sign of -0
  out = select<T>(x == T(-1), -std::numeric_limits<T>::infinity(), out);
  return select<T>(x == std::numeric_limits<T>::infinity(), x, out);
}

// -- expm1 ----------------------------------------------------------------------------------------

template <typename T>
struct Expm1Traits;
template <>
struct Expm1Traits<float> {
  static constexpr float kLow = -30.0f;   // below: expm1 rounds to -1
  static constexpr float kSplit = 30.0f;  // n above: the -1 is far below an ulp of e^x
};
template <>
struct Expm1Traits<double> {
  static constexpr double kLow = -60.0;
  static constexpr double kSplit = 60.0;
};

// e^x - 1 without cancellation near 0: x = n ln2 + r as in exp, expm1(r) = r (1 + r/2! + ...) by
// Horner, then expm1(x) = 2^n expm1(r) + (2^n - 1); for large n, e^x = 2^n (expm1(r) + 1) with 2^n
// as two factors (as in exp), so the range reaches overflow. NaN -> NaN, -inf -> -1, inf -> inf.
template <typename T>
OPWEAVE_VM_INLINE T expm1(T x) {
  using E = ExpTraits<T>;
  using M = Expm1Traits<T>;
  T a = select<T>(x < M::kLow, M::kLow, x);
  a = select<T>(a > E::kMax, E::kMax, a);
  const T n = (a * E::kLog2e + E::kShifter) - E::kShifter;
  const T r = (a - n * E::kLn2Hi) - n * E::kLn2Lo;
  constexpr int kD = TanhTraits<T>::kDegree;
  constexpr auto c = inverse_factorials<T, kD + 1>();
  T p = c.v[kD + 1];
#pragma GCC unroll 16
  for (int i = kD; i >= 1; --i) p = p * r + c.v[i];
  const T em = p * r;
  const bool large = n > M::kSplit;
  // 2^n for the small branch; its value for large n is not used (the select below).
  const T s = pow2i<T>(select<T>(large, T(0), n));
  const T small_result = s * em + (s - T(1));
  const T n1 = (n * T(0.5) + E::kShifter) - E::kShifter;
  const T large_result = (em + T(1)) * pow2i<T>(n1) * pow2i<T>(n - n1);
  T out = select<T>(large, large_result, small_result);
  out = select<T>(x > E::kMax, std::numeric_limits<T>::infinity(), out);
  out = select<T>(x == T(0), x, out);  // expm1(-0) = -0
  return select<T>(x != x, x, out);
}

// -- one-operation functions ----------------------------------------------------------------------

template <typename T>
OPWEAVE_VM_INLINE T neg_of(T x) {
  return -x;
}
template <typename T>
OPWEAVE_VM_INLINE T relu_of(T x) {
  return select<T>(x < T(0), T(0), x);  // NaN and -0 stay as they are
}
template <typename T>
OPWEAVE_VM_INLINE T square_of(T x) {
  return x * x;
}
template <typename T>
OPWEAVE_VM_INLINE T reciprocal_of(T x) {
  return T(1) / x;
}
// 1 for x > 0, -1 for x < 0, x itself for zeros (+0: TensorFlow's sign(-0.0) is +0) and NaN.
template <typename T>
OPWEAVE_VM_INLINE T sign_of(T x) {
  T out = select<T>(x > T(0), T(1), T(0));
  out = select<T>(x < T(0), T(-1), out);
  return select<T>(x != x, x, out);
}
template <typename T>
OPWEAVE_VM_INLINE T squared_difference_of(T a, T b) {
  const T d = a - b;
  return d * d;
}

// -- float32 functions computed in double ---------------------------------------------------------

// Where sin_f32 / cos_f32 reduce float32 x exactly enough: |x| <= 2^20 (elsewhere, including inf
// and NaN, the callers use the C library).
struct TrigF32Range {
  static constexpr std::uint32_t kLimit = 0x49800000u;  // the bits of 2^20
  static OPWEAVE_VM_INLINE std::uint32_t key(float x) { return abs_bits(x); }
};

// A float32 x with |x| <= 2^20 reduced in double: x = n pi/2 + r with a two-part pi/2 whose high
// part has 33 bits (n pi2_hi is exact for n < 2^20), |r| <= pi/4; sin r and cos r by their Taylor
// series, and the quadrant n mod 4 (of n + shift).
struct TrigReduced {
  double sin_r, cos_r;
  std::uint64_t quadrant;
};
OPWEAVE_VM_INLINE TrigReduced trig_reduce_f32(float xf, int quadrant_shift) {
  constexpr double kTwoOverPi = 0.63661977236758134308;
  constexpr double kPio2Hi = 1.5707963267341256e+00;  // 33 bits of pi/2
  constexpr double kPio2Lo = 6.0771005065061922e-11;  // pi/2 - kPio2Hi
  constexpr double kShifter = ExpTraits<double>::kShifter;
  const double x = static_cast<double>(xf);
  const double t = x * kTwoOverPi + kShifter;  // low mantissa bits: n mod 2^51, n = round(x 2/pi)
  const double n = t - kShifter;
  const std::uint64_t q = (to_bits<double>(t) + static_cast<std::uint64_t>(quadrant_shift)) & 3u;
  const double r = (x - n * kPio2Hi) - n * kPio2Lo;
  const double z = r * r;
  // sin r = r (1 - z/3! + z^2/5! - ... ), cos r = 1 - z/2! + z^2/4! - ...: enough terms for float.
  const double sin_r =
      r + r * z *
              (-1.0 / 6 +
               z * (1.0 / 120 + z * (-1.0 / 5040 + z * (1.0 / 362880 + z * (-1.0 / 39916800)))));
  const double cos_r =
      1.0 +
      z * (-0.5 + z * (1.0 / 24 + z * (-1.0 / 720 + z * (1.0 / 40320 + z * (-1.0 / 3628800)))));
  return {sin_r, cos_r, q};
}

// sin (quadrant_shift 0) or cos (1) of a float32 x with |x| <= 2^20: the series of sin or cos of r
// picked by the quadrant.
OPWEAVE_VM_INLINE float trig_f32(float xf, int quadrant_shift) {
  const TrigReduced t = trig_reduce_f32(xf, quadrant_shift);
  const double x = static_cast<double>(xf);
  double v = select<double>((t.quadrant & 1u) != 0, t.cos_r, t.sin_r);
  v = select<double>((t.quadrant & 2u) != 0, -v, v);
  v = select<double>((x == 0.0) & (quadrant_shift == 0), x, v);  // sin(-0) = -0
  return static_cast<float>(v);
}

// tan of a float32 x with |x| <= 2^20: sin r / cos r, or -cos r / sin r in the odd quadrants
// (tan(r + pi/2) = -1 / tan r), divided in double (each part within ~2^-36, so the float result is
// within an ulp). tan(+-0) = +-0.
OPWEAVE_VM_INLINE float tan_f32(float x) {
  const TrigReduced t = trig_reduce_f32(x, 0);
  const bool odd = (t.quadrant & 1u) != 0;
  const double num = select<double>(odd, -t.cos_r, t.sin_r);
  const double den = select<double>(odd, t.sin_r, t.cos_r);
  return select<float>(x == 0.0f, x, static_cast<float>(num / den));
}

OPWEAVE_VM_INLINE float sin_f32(float x) { return trig_f32(x, 0); }
OPWEAVE_VM_INLINE float cos_f32(float x) { return trig_f32(x, 1); }
OPWEAVE_VM_INLINE float sin_libm_f32(float x) { return std::sin(x); }
OPWEAVE_VM_INLINE float cos_libm_f32(float x) { return std::cos(x); }
OPWEAVE_VM_INLINE double sin_libm_f64(double x) { return std::sin(x); }
OPWEAVE_VM_INLINE double cos_libm_f64(double x) { return std::cos(x); }
OPWEAVE_VM_INLINE float tan_libm_f32(float x) { return std::tan(x); }
OPWEAVE_VM_INLINE double tan_libm_f64(double x) { return std::tan(x); }

// -- pow of float32
// ---------------------------------------------------------------------------------

// a * b + c rounded once (IEEE's fused multiply-add). The AVX2 and AVX-512 builds (-mfma) use the
// instruction, vectorised; the baseline build calls the C library's fma, correctly rounded too, so
// every build gives the same bits (there the loop runs element by element).
OPWEAVE_VM_INLINE double fused_multiply_add(double a, double b, double c) {
  return std::fma(a, b, c);
}

// The 16 pieces of [kPowOff, 2 kPowOff) (kPowOff = 0.69921875), cut by the top 4 mantissa bits of
// z - kPowOff: 1/c for a point c of each piece, and log2(c) = -log2(1/c) (to double precision of
// the double 1/c). c = 1 in the piece holding 1, so log2 near 1 is as accurate as r below.
inline constexpr std::uint32_t kPowOff = 0x3f330000u;
inline constexpr double kPowInvC[16] = {
    0x1.661ec6a5122f9p+0, 0x1.571ed3c506b3ap+0, 0x1.49539e3b2d067p+0, 0x1.3c995a47babe7p+0,
    0x1.30d190130d190p+0, 0x1.25e22708092f1p+0, 0x1.1bb4a4046ed29p+0, 0x1.12358e75d3033p+0,
    0x1.0953f39010954p+0, 0x1.0000000000000p+0, 0x1.e573ac901e574p-1, 0x1.ca4b3055ee191p-1,
    0x1.b2036406c80d9p-1, 0x1.9c2d14ee4a102p-1, 0x1.886e5f0abb04ap-1, 0x1.767dce434a9b1p-1};
inline constexpr double kPowLog2C[16] = {-0x1.efec61b011f85p-2, -0x1.b0b67f4f46812p-2,
                                         -0x1.7418acebbf18fp-2, -0x1.39de8e1559f6ep-2,
                                         -0x1.01d9bbcfa61d4p-2, -0x1.97c1cb13c7ec0p-3,
                                         -0x1.2f9e32d5bfdd1p-3, -0x1.960caf9abb7c1p-4,
                                         -0x1.a6f9c377dd31dp-5, 0.0,
                                         0x1.3aa2fdd27f1bfp-4,  0x1.476a9f983f74dp-3,
                                         0x1.e840be74e6a4dp-3,  0x1.406463b1b0448p-2,
                                         0x1.88e9c72e0b224p-2,  0x1.ce0a4923a587dp-2};

// 1 / (j ln 2) with alternating signs, j = 1..D: log2(1 + r) = r (c1 + c2 r + ... + cD r^(D-1)).
template <int D>
constexpr Coefficients<double, D> log2_series() {
  constexpr double kInvLn2 = 1.44269504088896340736;
  Coefficients<double, D> c{};
  c.v[0] = 0.0;
  for (int j = 1; j <= D; ++j) c.v[j] = (j % 2 == 1 ? kInvLn2 : -kInvLn2) / j;
  return c;
}

// log2 of a float32 x in double, for pow: x = 2^k z with z in [kPowOff, 2 kPowOff), z = c (1 + r)
// with the table's c of z's piece, |r| < 0.03 (r = z / c - 1 by one fused multiply-add: z has 24
// bits, so z (1/c) - 1 is within 2^-53 relative of r), then log2(1 + r) by 6 terms of its series
// (the first omitted, |r|^7 / 7, is below 2^-35 relative). x is |base|: >= 0, inf or NaN.
OPWEAVE_VM_INLINE double log2_of_float(float x) {
  using L = LogTraits<float>;
  const bool subnormal = x < L::kMinNormal;
  const bool finite_positive = (x > 0.0f) & (x < std::numeric_limits<float>::infinity());
  float xs = select<float>(subnormal, x * L::kSubnormalScale, x);
  xs = select<float>(finite_positive, xs, 1.0f);  // keeps the arithmetic below finite
  const std::uint32_t ix = to_bits<float>(xs);
  const std::uint32_t tmp = ix - kPowOff;
  // The index as 64 bits: GCC 12 gathers doubles only by 64-bit indices (with 32-bit ones the
  // loop stays scalar).
  const std::uint64_t i = (tmp >> 19) & 15u;
  const std::uint32_t top = tmp & 0xff800000u;
  const float z = from_bits<float>(ix - top);
  // k = tmp's exponent field as a signed number (an arithmetic shift), less 23 for subnormals.
  const auto k = static_cast<std::int32_t>(top) >> 23;
  const double kd = static_cast<double>(k) - select<double>(subnormal, 23.0, 0.0);
  const double r = fused_multiply_add(static_cast<double>(z), kPowInvC[i], -1.0);
  constexpr auto c = log2_series<6>();
  double p = c.v[6];
#pragma GCC unroll 16
  for (int j = 5; j >= 1; --j) p = fused_multiply_add(p, r, c.v[j]);
  double out = fused_multiply_add(r, p, kPowLog2C[i] + kd);
  out = select<double>(x == 0.0f, -std::numeric_limits<double>::infinity(), out);
  out = select<double>(x == std::numeric_limits<float>::infinity(),
                       std::numeric_limits<double>::infinity(), out);
  return select<double>(x != x, std::numeric_limits<double>::quiet_NaN(), out);
}

// (ln 2)^j / j!, j = 0..D: 2^f = sum of c_j f^j.
template <int D>
constexpr Coefficients<double, D> exp2_series() {
  constexpr double kLn2 = 0.69314718055994530942;
  Coefficients<double, D> c{};
  double term = 1.0;
  for (int j = 0; j <= D; ++j) {
    c.v[j] = term;
    term = term * kLn2 / (j + 1);
  }
  return c;
}

// 2^(j/16), j = 0..15, correctly rounded.
inline constexpr double kExp2Sixteenths[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};

// 1.5 * 2^48: t + this rounds t to a multiple of 1/16, held (times 16) in the low mantissa bits.
inline constexpr double kSixteenthsShifter = 422212465065984.0;

// 2^t in double for a result rounded to float32 (pow): t is clamped to [-200, 200], beyond which
// the float result is 0 or inf anyway, so 2^t stays a normal double; t = e + j/16 + f with
// |f| <= 1/32, 2^t = 2^e 2^(j/16) 2^f with 2^(j/16) from the table and 2^f by 5 terms of its
// series (the first omitted, (f ln2)^5 / 5!, is below 2^-34). NaN stays NaN.
OPWEAVE_VM_INLINE double exp2_for_float(double t) {
  double tc = select<double>(t < -200.0, -200.0, t);
  tc = select<double>(tc > 200.0, 200.0, tc);
  const double shifted = tc + kSixteenthsShifter;
  const double f = tc - (shifted - kSixteenthsShifter);  // exact
  // round(16 tc) as a two's-complement integer: its low 4 bits are j, the rest e.
  const std::uint64_t sixteenths = to_bits<double>(shifted) - to_bits<double>(kSixteenthsShifter);
  const auto e = static_cast<std::int64_t>(sixteenths) >> 4;  // an arithmetic shift
  const double scale = from_bits<double>(to_bits<double>(kExp2Sixteenths[sixteenths & 15u]) +
                                         (static_cast<std::uint64_t>(e) << 52));
  constexpr auto c = exp2_series<4>();
  double p = c.v[4];
#pragma GCC unroll 16
  for (int j = 3; j >= 0; --j) p = fused_multiply_add(p, f, c.v[j]);
  return p * scale;
}

// pow of float32 in double: |x|^y = 2^(y log2|x|) with log2 within 2^-35 and 2^t within 2^-33
// relative, so the float32 result is within 0.51 ulp where |y log2|x|| <= 32 (the log's error is
// scaled by t: measured up to 0.58 ulp for results near the ends of the float range and 0.67 ulp
// for a base near 1 with a huge exponent); then C's rules for signs and special values
// (pow(x, 0) = 1, pow(1, y) = 1, pow(-1, +-inf) = 1, a negative base with an odd integer exponent
// negates, with a non-integer exponent is NaN, zeros and infinities as C99 F.9.4.4).
OPWEAVE_VM_INLINE float pow_f32(float x, float y) {
  const float ax = abs(x);
  // Only the logarithm and the exponential need double; the sign and special-value rules are
  // exact in float (y * 0.5, floor and * 2 of a float are exact).
  const double e = exp2_for_float(static_cast<double>(y) * log2_of_float(ax));
  const float r = static_cast<float>(e);
  const bool y_integer = floor(y) == y;  // true for +-inf too
  const bool y_odd = y_integer & (floor(y * 0.5f) * 2.0f != y);
  float out = select<float>(signbit(x) & y_odd, -r, r);
  const bool negative_finite = (x < 0.0f) & (x > -std::numeric_limits<float>::infinity());
  out = select<float>(negative_finite & !y_integer, std::numeric_limits<float>::quiet_NaN(), out);
  out = select<float>((ax == 1.0f) & (abs(y) == std::numeric_limits<float>::infinity()), 1.0f, out);
  return select<float>((x == 1.0f) | (y == 0.0f), 1.0f, out);
}
OPWEAVE_VM_INLINE double pow_f64(double x, double y) { return std::pow(x, y); }

// Whether fmod_f32 is exact for these operands: |x / y| < 2^24 (elsewhere the callers use the C
// library). Infinite or NaN operands and y = 0 are handled by fmod_f32 itself.
OPWEAVE_VM_INLINE bool fmod_f32_in_range(float x, float y) {
  return !(abs(x) >= 16777216.0f * abs(y)) || abs(x) == std::numeric_limits<float>::infinity() ||
         y == 0.0f;
}

// C's fmod of float32 where |x / y| < 2^24, in double: the truncated quotient q = trunc(x / y) is
// exact there (the double quotient cannot round across an integer: a float quotient short of an
// integer is short by at least 2^-25 relative), q y is exact in double, and x - q y is the exact
// remainder, which a float holds. fmod(x, 0) and fmod(+-inf, y) are NaN, fmod(x, +-inf) = x.
OPWEAVE_VM_INLINE float fmod_f32(float xf, float yf) {
  const double x = static_cast<double>(xf);
  const double y = static_cast<double>(yf);
  const double qa = abs(x / y);
  const double q = copysign(floor(qa), x / y);
  double r = x - q * y;
  r = copysign(r, x);  // a zero remainder has the sign of x, as C's fmod
  r = select<double>(abs(y) == std::numeric_limits<double>::infinity(), x, r);
  const bool undefined = (y == 0.0) | (abs(x) == std::numeric_limits<double>::infinity());
  return static_cast<float>(select<double>(undefined, std::numeric_limits<double>::quiet_NaN(), r));
}

}  // namespace opweave::vector_math
