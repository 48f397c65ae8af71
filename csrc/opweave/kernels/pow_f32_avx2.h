// pow of float32 with AVX2 intrinsics for the common case: blocks of 16 elements whose bases are
// positive, finite and normal and whose exponents are finite go through vector_math::pow_f32's
// operations, with its roundings, 4 doubles to a register (the tables by gathers, AVX2 having no
// two-register permute); any other block goes element by element through pow_f32 itself. So
// every element gets pow_f32's bits. On Zen 4, where gathers are slow, 3.9 ns/element against
// 4.5 for GCC's vectorisation of pow_f32; CPUs with faster gathers gain more. Included only by
// the AVX2 build of unary_math_loops.h (the AVX-512 build has pow_f32_avx512.h).
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && !defined(__AVX512F__)

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "opweave/kernels/vector_math.h"

// GCC 12's gather intrinsics start from _mm256_undefined_*, which it reports as
// maybe-uninitialized once inlined (GCC bug 105593, fixed in 12.3).
#pragma GCC diagnostic push
#if !defined(__clang__)  // a GCC-only warning: clang would warn of an unknown option
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace opweave::vector_math::avx2 {

// exp2_for_float's table as bits of 2^(j/16) less j << 48 (see exp2_x4).
struct PowTables {
  std::int64_t exp2_sixteenths_less_j[16];
  PowTables() {
    for (int j = 0; j < 16; ++j) {
      exp2_sixteenths_less_j[j] = static_cast<std::int64_t>(to_bits<double>(kExp2Sixteenths[j]) -
                                                            (static_cast<std::uint64_t>(j) << 48));
    }
  }
};

// log2_of_float of a positive, finite, normal float, given its reduction (z widened, the
// exponent k widened, the table index), on 4 lanes.
OPWEAVE_VM_INLINE __m256d log2_x4(__m256d z, __m256d k, __m128i index) {
  constexpr auto c = log2_series<6>();
  const __m256d r =
      _mm256_fmadd_pd(z, _mm256_i32gather_pd(kPowInvC, index, 8), _mm256_set1_pd(-1.0));
  __m256d p = _mm256_set1_pd(c.v[6]);
  for (int j = 5; j >= 1; --j) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c.v[j]));
  return _mm256_fmadd_pd(r, p, _mm256_add_pd(_mm256_i32gather_pd(kPowLog2C, index, 8), k));
}

// exp2_for_float on 4 lanes. max/min return their second operand when either is NaN, so the
// constant goes first, as in exp2_for_float's selects. The bits of tc + shifter are the
// shifter's plus round(16 tc) = 16 e + j, whose low 16 bits are 0: their low 4 bits are j, and
// << 48 they are (e << 52) + (j << 48) modulo 2^64, which added to the table's 2^(j/16) less
// j << 48 is 2^(j/16) with e added to its exponent.
OPWEAVE_VM_INLINE __m256d exp2_x4(const PowTables& tables, __m256d t) {
  constexpr auto c = exp2_series<4>();
  const __m256d shifter = _mm256_set1_pd(kSixteenthsShifter);
  __m256d tc = _mm256_max_pd(_mm256_set1_pd(-200.0), t);
  tc = _mm256_min_pd(_mm256_set1_pd(200.0), tc);
  const __m256d shifted = _mm256_add_pd(tc, shifter);
  const __m256d f = _mm256_sub_pd(tc, _mm256_sub_pd(shifted, shifter));
  const __m256i bits = _mm256_castpd_si256(shifted);
  const __m256i j = _mm256_and_si256(bits, _mm256_set1_epi64x(15));
  const __m256i scale =
      _mm256_add_epi64(_mm256_i64gather_epi64(
                           reinterpret_cast<const long long*>(tables.exp2_sixteenths_less_j), j, 8),
                       _mm256_slli_epi64(bits, 48));
  __m256d p = _mm256_set1_pd(c.v[4]);
  for (int i = 3; i >= 0; --i) p = _mm256_fmadd_pd(p, f, _mm256_set1_pd(c.v[i]));
  return _mm256_mul_pd(p, _mm256_castsi256_pd(scale));
}

// Whether all 8 lanes have a positive, finite, normal x and a finite y: there pow_f32 is
// float(exp2_for_float(y log2_of_float(x))) with no rule changing it.
OPWEAVE_VM_INLINE bool all_ordinary(__m256 x, __m256 y) {
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 abs_y = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), y);
  const __m256 ordinary = _mm256_and_ps(
      _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(LogTraits<float>::kMinNormal), _CMP_GE_OQ),
                    _mm256_cmp_ps(x, inf, _CMP_LT_OQ)),
      _mm256_cmp_ps(abs_y, inf, _CMP_LT_OQ));
  return _mm256_movemask_ps(ordinary) == 0xff;
}

// pow_f32 of 8 ordinary lanes: log2_of_float's reduction in float (x = 2^k z, z in
// [kPowOff, 2 kPowOff), the index from z's top 4 mantissa bits), the rest in double.
OPWEAVE_VM_INLINE __m256 pow_ordinary_x8(const PowTables& tables, __m256 x, __m256 y) {
  const __m256i ix = _mm256_castps_si256(x);
  const __m256i tmp = _mm256_sub_epi32(ix, _mm256_set1_epi32(static_cast<int>(kPowOff)));
  const __m256i index = _mm256_and_si256(_mm256_srli_epi32(tmp, 19), _mm256_set1_epi32(15));
  const __m256i top = _mm256_and_si256(tmp, _mm256_set1_epi32(static_cast<int>(0xff800000u)));
  const __m256 z = _mm256_castsi256_ps(_mm256_sub_epi32(ix, top));
  const __m256i k = _mm256_srai_epi32(top, 23);
  __m128 half[2];
  for (int h = 0; h < 2; ++h) {
    const __m128 zh = h == 0 ? _mm256_castps256_ps128(z) : _mm256_extractf128_ps(z, 1);
    const __m128 yh = h == 0 ? _mm256_castps256_ps128(y) : _mm256_extractf128_ps(y, 1);
    const __m128i kh = h == 0 ? _mm256_castsi256_si128(k) : _mm256_extracti128_si256(k, 1);
    const __m128i ih = h == 0 ? _mm256_castsi256_si128(index) : _mm256_extracti128_si256(index, 1);
    const __m256d lg = log2_x4(_mm256_cvtps_pd(zh), _mm256_cvtepi32_pd(kh), ih);
    half[h] = _mm256_cvtpd_ps(exp2_x4(tables, _mm256_mul_pd(_mm256_cvtps_pd(yh), lg)));
  }
  return _mm256_set_m128(half[1], half[0]);
}

// pow_f32 over the flat shapes (strides 1 or 0); returns false for any other strides. Blocks of
// 16 with every lane ordinary take the vector path, the rest (and the last n % 16) pow_f32.
inline bool pow_f32_flat(const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                         float* dst, std::int64_t n) {
  if ((sa != 0 && sa != 1) || (sb != 0 && sb != 1)) return false;
  const PowTables tables;
  auto load = [](const float* p, std::int64_t stride, std::int64_t i) {
    return stride == 0 ? _mm256_set1_ps(*p) : _mm256_loadu_ps(p + i);
  };
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = load(a, sa, i), x1 = load(a, sa, i + 8);
    const __m256 y0 = load(b, sb, i), y1 = load(b, sb, i + 8);
    if (all_ordinary(x0, y0) && all_ordinary(x1, y1)) {
      const __m256 out0 = pow_ordinary_x8(tables, x0, y0);
      const __m256 out1 = pow_ordinary_x8(tables, x1, y1);
      _mm256_storeu_ps(dst + i, out0);
      _mm256_storeu_ps(dst + i + 8, out1);
    } else {
      for (std::int64_t j = i; j < i + 16; ++j) dst[j] = pow_f32(a[j * sa], b[j * sb]);
    }
  }
  for (; i < n; ++i) dst[i] = pow_f32(a[i * sa], b[i * sb]);
  return true;
}

}  // namespace opweave::vector_math::avx2

#pragma GCC diagnostic pop

#endif
