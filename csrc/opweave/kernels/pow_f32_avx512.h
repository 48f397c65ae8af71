// pow of float32 with AVX-512 intrinsics: vector_math::pow_f32's operations, with its roundings,
// on 64 floats at a time (eight vectors of 8 doubles), so every lane gets pow_f32's bits. Written
// by hand because GCC's vectorisation of pow_f32 builds each table lookup from scalar loads and
// keeps part of the select chains scalar (3.2 ns/element). Here each 16-entry table sits in two
// registers (a permute picks the entries), the special cases are mask blends that a block of
// ordinary operands skips, and the eight vectors go through each step together, which keeps more
// independent work in flight than one vector's chain of dependent steps (~10% faster than two
// vectors at a time on Zen 4). What is left is mostly the FMA units' work: 13 multiplies or
// multiply-adds per 8 lanes, the price of doing it in double (0.8 ns/element in cache on Zen 4).
// Included only by the AVX-512 build of unary_math_loops.h.
#pragma once

#if defined(__AVX512F__) && defined(__AVX512DQ__)

#include <immintrin.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "opweave/kernels/vector_math.h"

// GCC 12's intrinsics start many results from _mm512_undefined_*, which it reports as
// (maybe-)uninitialized once inlined (GCC bug 105593, fixed in 12.3).
#pragma GCC diagnostic push
#if !defined(__clang__)  // a GCC-only warning: clang would warn of an unknown option
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace opweave::vector_math::avx512 {

// A 16-entry double table as the two registers _mm512_permutex2var_pd indexes with 0..15 (it
// reads only the low 4 bits of each 64-bit index).
struct Table16 {
  __m512d low, high;
};

OPWEAVE_VM_INLINE Table16 load_table16(const double* t) {
  return {_mm512_loadu_pd(t), _mm512_loadu_pd(t + 8)};
}

OPWEAVE_VM_INLINE __m512d lookup(const Table16& t, __m512i index) {
  return _mm512_permutex2var_pd(t.low, index, t.high);
}

OPWEAVE_VM_INLINE __m512i lookup_bits(const Table16& t, __m512i index) {
  return _mm512_castpd_si512(lookup(t, index));
}

// The bits of kExp2Sixteenths[j] less j << 48, as a table (see exp2_for_float).
OPWEAVE_VM_INLINE Table16 exp2_table_less_j() {
  const Table16 t = load_table16(kExp2Sixteenths);
  const __m512i j_low = _mm512_slli_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), 48);
  const __m512i j_high = _mm512_slli_epi64(_mm512_set_epi64(15, 14, 13, 12, 11, 10, 9, 8), 48);
  return {_mm512_castsi512_pd(_mm512_sub_epi64(_mm512_castpd_si512(t.low), j_low)),
          _mm512_castsi512_pd(_mm512_sub_epi64(_mm512_castpd_si512(t.high), j_high))};
}

// The tables and constants a run keeps in registers, loaded once per run.
struct PowConstants {
  Table16 inv_c = load_table16(kPowInvC);
  Table16 log2_c = load_table16(kPowLog2C);
  Table16 exp2_sixteenths_less_j = exp2_table_less_j();
  __m512i offset_bits =
      _mm512_castpd_si512(_mm512_set1_pd(static_cast<double>(from_bits<float>(kPowOff))));
};

// The lower (half 0) or upper (half 1) 8 floats of v, widened to double.
template <int Half>
OPWEAVE_VM_INLINE __m512d widen_half(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), Half)));
}

// Sixteen floats from two vectors of 8 doubles, rounded.
OPWEAVE_VM_INLINE __m512 narrow(__m512d low, __m512d high) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(low)), _mm512_cvtpd_ps(high), 1);
}

// log2_of_float on U vectors of positive, finite floats widened to double, step by step across
// the vectors. The reduction works on the double's bits: x = 2^k z with z in [kPowOff, 2 kPowOff)
// and the table index from z's top 4 mantissa bits are the float reduction's values exactly (a
// float's mantissa is the top of the double's), and a float subnormal is a normal double, so it
// needs no scaling.
template <int U>
OPWEAVE_VM_INLINE void log2_of_widened(const PowConstants& k, const __m512d (&x)[U],
                                       __m512d (&out)[U]) {
  constexpr auto c = log2_series<6>();
  const __m512i exponent_mask = _mm512_set1_epi64(static_cast<std::int64_t>(0xfff0000000000000u));
  __m512i index[U];
  __m512d r[U], base[U], p[U];
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) {
    const __m512i ix = _mm512_castpd_si512(x[u]);
    const __m512i tmp = _mm512_sub_epi64(ix, k.offset_bits);
    const __m512i top = _mm512_and_si512(tmp, exponent_mask);
    const __m512d z = _mm512_castsi512_pd(_mm512_sub_epi64(ix, top));
    index[u] = _mm512_srli_epi64(tmp, 48);
    r[u] = _mm512_fmadd_pd(z, lookup(k.inv_c, index[u]), _mm512_set1_pd(-1.0));
    base[u] =
        _mm512_add_pd(lookup(k.log2_c, index[u]), _mm512_cvtepi64_pd(_mm512_srai_epi64(top, 52)));
    p[u] = _mm512_fmadd_pd(_mm512_set1_pd(c.v[6]), r[u], _mm512_set1_pd(c.v[5]));
  }
  for (int j = 4; j >= 1; --j) {
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) p[u] = _mm512_fmadd_pd(p[u], r[u], _mm512_set1_pd(c.v[j]));
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) out[u] = _mm512_fmadd_pd(r[u], p[u], base[u]);
}

// exp2_for_float on U vectors, step by step across them. max/min return their second operand
// when either is NaN, so the constant goes first and a NaN t stays NaN, as through
// exp2_for_float's selects.
template <int U, bool kClamp = true>
OPWEAVE_VM_INLINE void exp2_for_float(const PowConstants& k, __m512d (&t)[U]) {
  constexpr auto c = exp2_series<4>();
  const __m512d shifter = _mm512_set1_pd(kSixteenthsShifter);
  __m512d f[U], p[U];
  __m512i scale_bits[U];
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) {
    __m512d tc = t[u];
    if constexpr (kClamp) {
      tc = _mm512_max_pd(_mm512_set1_pd(-200.0), tc);
      tc = _mm512_min_pd(_mm512_set1_pd(200.0), tc);
    }
    const __m512d shifted = _mm512_add_pd(tc, shifter);
    f[u] = _mm512_sub_pd(tc, _mm512_sub_pd(shifted, shifter));
    // The bits of shifted are the shifter's plus round(16 tc) = 16 e + j, and the shifter's low
    // 16 bits are 0: shifted's low 4 bits are j, and shifted << 48 is (e << 52) + (j << 48)
    // modulo 2^64. The table holds the bits of 2^(j/16) less j << 48, so the sum is 2^(j/16)
    // with e added to its exponent.
    const __m512i shifted_bits = _mm512_castpd_si512(shifted);
    scale_bits[u] = _mm512_add_epi64(lookup_bits(k.exp2_sixteenths_less_j, shifted_bits),
                                     _mm512_slli_epi64(shifted_bits, 48));
    p[u] = _mm512_fmadd_pd(_mm512_set1_pd(c.v[4]), f[u], _mm512_set1_pd(c.v[3]));
  }
  for (int j = 2; j >= 0; --j) {
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) p[u] = _mm512_fmadd_pd(p[u], f[u], _mm512_set1_pd(c.v[j]));
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) t[u] = _mm512_mul_pd(p[u], _mm512_castsi512_pd(scale_bits[u]));
}

// How a block of lanes may be computed: kAnyOperands through every rule of pow_f32; kOrdinary
// when every lane has a positive, finite, normal x and a finite y, where pow_f32 is
// float(exp2_for_float(y log2_of_float(x))) with no rule changing it (x = 1 gives log2 = +0 and
// y = +-0 gives t = +-0, so both give exactly 1 on their own); kUnclamped when besides |y| <= 7:
// then |t| <= 7 * 128 and 2^t is a normal double, so exp2_for_float's clamp to [-200, 200]
// changes no result (beyond 200 the float is inf or 0 either way) and is skipped.
enum class PowBlock { kAnyOperands, kOrdinary, kUnclamped };

// Blocks of 64 lanes: 4 vectors of 16 floats, 8 of 8 doubles.
constexpr int kFloatVectors = 4;
constexpr int kDoubleVectors = 2 * kFloatVectors;
constexpr std::int64_t kBlockLanes = 16 * kFloatVectors;

OPWEAVE_VM_INLINE PowBlock classify(const __m512 (&x)[kFloatVectors],
                                    const __m512 (&y)[kFloatVectors]) {
  // Lanes that are not normal, positive and finite: NaN, zeros, infinities, subnormals,
  // negatives (vfpclassps categories 0x01 to 0x80).
  constexpr int kNotPositiveNormal = 0xff;
  __mmask16 x_special = 0, y_large = 0, y_special = 0;
  for (int v = 0; v < kFloatVectors; ++v) {
    x_special |= _mm512_fpclass_ps_mask(x[v], kNotPositiveNormal);
    const __m512 abs_y = _mm512_abs_ps(y[v]);
    y_large |= _mm512_cmp_ps_mask(abs_y, _mm512_set1_ps(7.0f), _CMP_NLE_UQ);
    y_special |= _mm512_cmp_ps_mask(abs_y, _mm512_set1_ps(std::numeric_limits<float>::infinity()),
                                    _CMP_NLT_UQ);
  }
  if (x_special != 0) return PowBlock::kAnyOperands;
  if (y_large == 0) return PowBlock::kUnclamped;
  return y_special == 0 ? PowBlock::kOrdinary : PowBlock::kAnyOperands;
}

// A scalar operand, read once: its lanes, and for a base its log2_of_float (by the per-lane
// operations, so the same bits; used only in ordinary blocks, where the base is ordinary) or for
// an exponent its lanes as doubles.
struct ScalarOperand {
  __m512 lanes;
  __m512d log2_or_wide;
};

// dst[0..kBlockLanes) = pow_f32 of a kOrdinary (kClamp) or kUnclamped block; a scalar operand
// from sa (base) or sb (exponent) instead of memory. The floats are loaded 8 at a time straight
// into the conversion (no extracting halves of a 16-float register).
template <bool kScalarA, bool kScalarB, bool kClamp>
OPWEAVE_VM_INLINE void pow_ordinary_block(const PowConstants& k, const float* a, const float* b,
                                          const ScalarOperand& sa, const ScalarOperand& sb,
                                          float* dst) {
  constexpr int U = kDoubleVectors;
  __m512d y[U], t[U];
  if constexpr (kScalarA) {
    for (__m512d& v : t) v = sa.log2_or_wide;
  } else {
    __m512d x[U];
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) x[u] = _mm512_cvtps_pd(_mm256_loadu_ps(a + 8 * u));
    log2_of_widened<U>(k, x, t);
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) {
    y[u] = kScalarB ? sb.log2_or_wide : _mm512_cvtps_pd(_mm256_loadu_ps(b + 8 * u));
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) t[u] = _mm512_mul_pd(y[u], t[u]);
  exp2_for_float<U, kClamp>(k, t);
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) _mm256_storeu_ps(dst + 8 * u, _mm512_cvtpd_ps(t[u]));
}

// vector_math::pow_f32 on 16 lanes, any operands.
OPWEAVE_VM_INLINE __m512 pow_f32_x16(const PowConstants& k, __m512 x, __m512 y) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr double kInfD = std::numeric_limits<double>::infinity();
  const __m512 inf = _mm512_set1_ps(kInf);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 ax = _mm512_abs_ps(x);
  // log2_of_float's special bases: zero, inf and NaN give -inf, inf and NaN; 1 stands in for
  // them in the arithmetic, to keep it finite.
  const __mmask16 zero_base = _mm512_cmp_ps_mask(ax, _mm512_setzero_ps(), _CMP_EQ_OQ);
  const __mmask16 inf_base = _mm512_cmp_ps_mask(ax, inf, _CMP_EQ_OQ);
  const __mmask16 nan_base = _mm512_cmp_ps_mask(ax, ax, _CMP_UNORD_Q);
  const __mmask16 finite_positive = _mm512_cmp_ps_mask(ax, _mm512_setzero_ps(), _CMP_GT_OQ) &
                                    _mm512_cmp_ps_mask(ax, inf, _CMP_LT_OQ);
  const __m512 xs = _mm512_mask_mov_ps(one, finite_positive, ax);
  const __m512d xd[2] = {widen_half<0>(xs), widen_half<1>(xs)};
  __m512d t[2];
  log2_of_widened<2>(k, xd, t);
  const __m512d y_d[2] = {widen_half<0>(y), widen_half<1>(y)};
#pragma GCC unroll 2
  for (int u = 0; u < 2; ++u) {
    const auto lanes = [u](__mmask16 m) { return static_cast<__mmask8>(m >> (8 * u)); };
    t[u] = _mm512_mask_mov_pd(t[u], lanes(zero_base), _mm512_set1_pd(-kInfD));
    t[u] = _mm512_mask_mov_pd(t[u], lanes(inf_base), _mm512_set1_pd(kInfD));
    t[u] = _mm512_mask_mov_pd(t[u], lanes(nan_base),
                              _mm512_set1_pd(std::numeric_limits<double>::quiet_NaN()));
    t[u] = _mm512_mul_pd(y_d[u], t[u]);
  }
  exp2_for_float<2>(k, t);
  const __m512 r = narrow(t[0], t[1]);
  // pow_f32's sign and special-value rules. floor(y) == y and floor(y / 2) * 2 != y by the
  // rounding instruction: the same truth values as pow_f32's floor (both floors are exact).
  constexpr int kFloor = _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC;
  const __mmask16 y_integer = _mm512_cmp_ps_mask(_mm512_roundscale_ps(y, kFloor), y, _CMP_EQ_OQ);
  const __m512 half_y_floor2 = _mm512_mul_ps(
      _mm512_roundscale_ps(_mm512_mul_ps(y, _mm512_set1_ps(0.5f)), kFloor), _mm512_set1_ps(2.0f));
  const __mmask16 y_odd = y_integer & _mm512_cmp_ps_mask(half_y_floor2, y, _CMP_NEQ_UQ);
  const __mmask16 negative_base = _mm512_movepi32_mask(_mm512_castps_si512(x));  // signbit(x)
  __m512 out = _mm512_mask_xor_ps(r, negative_base & y_odd, r, _mm512_set1_ps(-0.0f));
  const __mmask16 negative_finite = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ) &
                                    _mm512_cmp_ps_mask(ax, inf, _CMP_LT_OQ);
  out = _mm512_mask_mov_ps(out, negative_finite & ~y_integer,
                           _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  const __mmask16 unit_base_inf_exponent = _mm512_cmp_ps_mask(ax, one, _CMP_EQ_OQ) &
                                           _mm512_cmp_ps_mask(_mm512_abs_ps(y), inf, _CMP_EQ_OQ);
  const __mmask16 one_result = _mm512_cmp_ps_mask(x, one, _CMP_EQ_OQ) |
                               _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_EQ_OQ) |
                               unit_base_inf_exponent;
  return _mm512_mask_mov_ps(out, one_result, one);
}

// dst[i] = pow_f32(a[i], b[i]), where an operand marked scalar is the one element *a (*b) for
// every i, read once (as run2 reads it): blocks of kBlockLanes at a time, ordinary ones without
// the rules, others 16 lanes at a time through every rule; the last n % kBlockLanes 16 at a time,
// by masked loads and stores at the end. Each vector is loaded before its result is stored, so
// dst may be a or b.
template <bool kScalarA, bool kScalarB>
void pow_f32_run(const float* a, const float* b, float* dst, std::int64_t n) {
  const PowConstants k;
  ScalarOperand sa{}, sb{};
  if constexpr (kScalarA) {
    sa.lanes = _mm512_set1_ps(*a);
    const __m512d base[1] = {_mm512_set1_pd(static_cast<double>(*a))};
    __m512d log2_base[1];
    log2_of_widened<1>(k, base, log2_base);
    sa.log2_or_wide = log2_base[0];
  }
  if constexpr (kScalarB) {
    sb.lanes = _mm512_set1_ps(*b);
    sb.log2_or_wide = _mm512_set1_pd(static_cast<double>(*b));
  }
  auto load = [](const float* p, const ScalarOperand& s, auto scalar, std::int64_t i, __mmask16 m) {
    if constexpr (decltype(scalar)::value) {
      return s.lanes;
    } else {
      return _mm512_maskz_loadu_ps(m, p + i);
    }
  };
  const std::bool_constant<kScalarA> scalar_a;
  const std::bool_constant<kScalarB> scalar_b;
  std::int64_t i = 0;
  for (; i + kBlockLanes <= n; i += kBlockLanes) {
    __m512 x[kFloatVectors], y[kFloatVectors];
    for (int v = 0; v < kFloatVectors; ++v) {
      x[v] = load(a, sa, scalar_a, i + 16 * v, 0xffff);
      y[v] = load(b, sb, scalar_b, i + 16 * v, 0xffff);
    }
    const PowBlock block = classify(x, y);
    if (block == PowBlock::kUnclamped) {
      pow_ordinary_block<kScalarA, kScalarB, false>(k, a + i, b + i, sa, sb, dst + i);
    } else if (block == PowBlock::kOrdinary) {
      pow_ordinary_block<kScalarA, kScalarB, true>(k, a + i, b + i, sa, sb, dst + i);
    } else {
      __m512 out[kFloatVectors];
      for (int v = 0; v < kFloatVectors; ++v) out[v] = pow_f32_x16(k, x[v], y[v]);
      for (int v = 0; v < kFloatVectors; ++v) _mm512_storeu_ps(dst + i + 16 * v, out[v]);
    }
  }
  for (; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1u);
    const __m512 x = load(a, sa, scalar_a, i, m);
    const __m512 y = load(b, sb, scalar_b, i, m);
    _mm512_mask_storeu_ps(dst + i, m, pow_f32_x16(k, x, y));
  }
}

// pow_f32 over the flat shapes (strides 1 or 0); returns false for any other strides.
inline bool pow_f32_flat(const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                         float* dst, std::int64_t n) {
  if (sa == 1 && sb == 1) {
    pow_f32_run<false, false>(a, b, dst, n);
  } else if (sa == 1 && sb == 0) {
    pow_f32_run<false, true>(a, b, dst, n);
  } else if (sa == 0 && sb == 1) {
    pow_f32_run<true, false>(a, b, dst, n);
  } else {
    return false;
  }
  return true;
}

}  // namespace opweave::vector_math::avx512

#pragma GCC diagnostic pop

#endif
