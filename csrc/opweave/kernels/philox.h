// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw ("Parallel random
// numbers: as easy as 1, 2, 3", SC'11), which TensorFlow's random ops also use; written here from
// the published algorithm. A block of four 32-bit words is a pure function of a 64-bit key and a
// 128-bit counter, so any block can be computed without computing the ones before it: the random
// kernels give each output element a fixed counter and fill the output on any number of threads
// with the same bits.
//
//   constexpr philox::Words w = philox::block({0, 0, 0, 0}, {0, 0});  // 0x6627e8d5, ...
//   float u = philox::uniform_float(w[0]);                            // in [0, 1)
#pragma once

#include <array>
#include <cstdint>

namespace opweave::philox {

using Words = std::array<std::uint32_t, 4>;
using Key = std::array<std::uint32_t, 2>;

namespace detail {

// The multipliers and the key increments (the golden ratio and sqrt(3) - 1, as 32-bit fractions)
// of the paper's Philox4x32.
inline constexpr std::uint32_t kM0 = 0xD2511F53u;
inline constexpr std::uint32_t kM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kW0 = 0x9E3779B9u;
inline constexpr std::uint32_t kW1 = 0xBB67AE85u;

// One round: two 32x32 -> 64-bit products; their high halves mixed with the other two words and
// the round key, their low halves moved across (the Feistel-like permutation of the paper).
constexpr Words round(const Words& c, const Key& k) {
  const std::uint64_t p0 = std::uint64_t{kM0} * c[0];
  const std::uint64_t p1 = std::uint64_t{kM1} * c[2];
  return {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
          static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
}

}  // namespace detail

// The ten-round block of `counter` under `key`. Pure; constexpr so the known-answer checks
// below run at compile time.
constexpr Words block(Words counter, Key key) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {  // the key schedule advances between rounds, not before the first
      key[0] += detail::kW0;
      key[1] += detail::kW1;
    }
    counter = detail::round(counter, key);
  }
  return counter;
}

namespace detail {
// std::array's == is constexpr only from C++20.
constexpr bool same(const Words& a, const Words& b) {
  return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}
}  // namespace detail

// The Random123 known-answer vectors for philox4x32-10 (counter, key -> block).
static_assert(detail::same(block({0, 0, 0, 0}, {0, 0}),
                           {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
static_assert(detail::same(block({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                 {0xffffffffu, 0xffffffffu}),
                           {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
static_assert(detail::same(block({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                                 {0xa4093822u, 0x299f31d0u}),
                           {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));

// The stream of one execution of one random op: key (the op's two seeds) and run number (how many
// times the op ran before in its session) fixed; block i is block({i, run} as 2 x 64 bits, key).
class Stream {
 public:
  constexpr Stream(Key key, std::uint64_t run) : key_(key), run_(run) {}
  constexpr Words operator()(std::uint64_t position) const {
    return block({static_cast<std::uint32_t>(position), static_cast<std::uint32_t>(position >> 32),
                  static_cast<std::uint32_t>(run_), static_cast<std::uint32_t>(run_ >> 32)},
                 key_);
  }

 private:
  Key key_;
  std::uint64_t run_;
};

// Two words as one 64-bit value.
constexpr std::uint64_t join(std::uint32_t lo, std::uint32_t hi) {
  return std::uint64_t{lo} | (std::uint64_t{hi} << 32);
}

// Uniform in [0, 1) on the grid of 2^-24 (every float of that grid is exact): the top 24 bits.
inline float uniform_float(std::uint32_t x) {
  return static_cast<float>(x >> 8) * 5.9604644775390625e-08f;  // 2^-24
}

// Uniform in [0, 1) on the grid of 2^-53: the top 53 bits of a 64-bit value.
inline double uniform_double(std::uint64_t x) {
  return static_cast<double>(x >> 11) * 1.1102230246251565e-16;  // 2^-53
}

}  // namespace opweave::philox
