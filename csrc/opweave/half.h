// Half: IEEE 754 binary16 (float16) storage with exact conversions to and from float. opweave
// stores and casts float16 tensors; arithmetic on them is done in float32 and rounded back, as
// TensorFlow does on CPUs without native half arithmetic.
//
//   Half h = Half::from_float(1.5f);
//   float f = h.to_float();  // 1.5f
#pragma once

#include <cstdint>
#include <cstring>

namespace opweave {

struct Half {
  std::uint16_t bits = 0;

  // Round to nearest, ties to even; overflow gives +-inf, NaN stays NaN (quiet).
  static Half from_float(float f) noexcept {
    std::uint32_t x;
    std::memcpy(&x, &f, sizeof(x));
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t abs = x & 0x7fffffffu;
    Half h;
    if (abs >= 0x7f800000u) {  // inf or NaN
      h.bits = static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
      return h;
    }
    if (abs >= 0x477ff000u) {  // rounds to a value >= 65520: overflow to inf
      h.bits = static_cast<std::uint16_t>(sign | 0x7c00u);
      return h;
    }
    if (abs < 0x38800000u) {    // below the smallest normal half (2^-14): subnormal or zero
      if (abs < 0x33000000u) {  // below half the smallest subnormal (2^-25): rounds to zero
        h.bits = static_cast<std::uint16_t>(sign);
        return h;
      }
      // The value is m * 2^(e - 150) with the implicit bit set; the subnormal unit is 2^-24.
      const std::uint32_t e = abs >> 23;
      const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
      const std::uint32_t shift = 126u - e;  // 14..24: bits dropped to reach units of 2^-24
      std::uint32_t q = m >> shift;
      const std::uint32_t rem = m & ((1u << shift) - 1u);
      const std::uint32_t halfway = 1u << (shift - 1u);
      if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
      h.bits = static_cast<std::uint16_t>(sign | q);
      return h;
    }
    // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits; a carry
    // out of the mantissa correctly bumps the exponent.
    std::uint32_t v = abs - 0x38000000u;
    const std::uint32_t rem = v & 0x1fffu;
    v >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
    h.bits = static_cast<std::uint16_t>(sign | v);
    return h;
  }

  float to_float() const noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exp = (bits >> 10) & 0x1fu;
    std::uint32_t mant = bits & 0x3ffu;
    std::uint32_t x;
    if (exp == 0x1fu) {
      x = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
      x = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      std::uint32_t e = 113;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --e;
      }
      x = sign | (e << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &x, sizeof(f));
    return f;
  }
};

}  // namespace opweave
