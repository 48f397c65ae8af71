// The floating-point math loops (every row of elementwise_list.h) give the same bits in every
// build the CPU can run (baseline, AVX2, AVX-512): the wider builds do the same operations in the
// same order and fuse no multiply-add, so a result never depends on the machine's instruction set.
// Inputs cover every binade, zeros, infinities, NaN, subnormals and the float32 ranges with C
// library fallbacks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/unary_math_loops.h"
#include "opweave/kernels/vector_math.h"
#include "testing.h"

using namespace opweave;
using namespace opweave::unary_math;

namespace {

template <typename T>
std::vector<T> inputs() {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<T> v;
  const int max_exp = std::numeric_limits<T>::max_exponent;
  for (int e = -max_exp - 20; e <= max_exp; ++e) {
    for (int k = 0; k < 6; ++k) v.push_back(static_cast<T>(std::ldexp(unit(rng), e)));
  }
  for (int k = 0; k < 3000; ++k) v.push_back(static_cast<T>(unit(rng) * 20.0));
  const T inf = std::numeric_limits<T>::infinity();
  for (T s : {T(0), T(-0.0), inf, -inf, std::numeric_limits<T>::quiet_NaN(), T(1), T(-1), T(0.5),
              T(-0.5), T(2.5), T(-2.5), T(1e7), T(-3.3e20), std::numeric_limits<T>::max(),
              std::numeric_limits<T>::denorm_min()}) {
    v.push_back(s);
  }
  return v;
}

// The same bits, except that any NaN equals any NaN (the sign and payload of a NaN made from NaN
// operands depend on operand order, which the compiler may pick differently per build).
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& x,
               const char* name) {
  bool same = true;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      if (same) {
        std::fprintf(stderr, "%s(%.9g): %.17g vs %.17g\n", name, static_cast<double>(x[i]),
                     static_cast<double>(a[i]), static_cast<double>(b[i]));
      }
      same = false;
    }
  }
  return same;
}

template <typename T>
std::vector<Table<T>> tables();

template <>
std::vector<Table<float>> tables<float>() {
  std::vector<Table<float>> t = {table_baseline_f32()};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) t.push_back(table_avx2_f32());
  if (isa_flags().can_run_avx512_files()) t.push_back(table_avx512_f32());
#endif
  return t;
}

template <>
std::vector<Table<double>> tables<double>() {
  std::vector<Table<double>> t = {table_baseline_f64()};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) t.push_back(table_avx2_f64());
  if (isa_flags().can_run_avx512_files()) t.push_back(table_avx512_f64());
#endif
  return t;
}

template <typename T>
void check_every_build_matches_the_baseline() {
  const std::vector<T> x = inputs<T>();
  std::vector<T> y = x;
  std::shuffle(y.begin(), y.end(), std::mt19937_64(6));
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const std::vector<Table<T>> all = tables<T>();
  const Table<T>& base = all.front();
  for (std::size_t k = 1; k < all.size(); ++k) {
    const Table<T>& t = all[k];
    // Every row of elementwise_list.h.
#define OPWEAVE_UNARY_ROW(Name, name, ...) {#name, &Table<T>::name},
    const std::pair<const char*, RunFn<T> Table<T>::*> unary[] = {
        OPWEAVE_UNARY_OPS(OPWEAVE_UNARY_ROW)};
#undef OPWEAVE_UNARY_ROW
    for (const auto& [name, fn] : unary) {
      std::vector<T> want(x.size()), got(x.size());
      (base.*fn)(x.data(), 1, want.data(), n);
      (t.*fn)(x.data(), 1, got.data(), n);
      if (!same_bits(got, want, x, name)) testing::report_failure(__FILE__, __LINE__, name);
    }
#define OPWEAVE_BINARY_ROW(Name, name, ...) {#name, &Table<T>::name},
    const std::pair<const char*, BinaryRunFn<T> Table<T>::*> binary[] = {
        OPWEAVE_BINARY_OPS(OPWEAVE_BINARY_ROW)};
#undef OPWEAVE_BINARY_ROW
    for (const auto& [name, fn] : binary) {
      std::vector<T> want(x.size()), got(x.size());
      (base.*fn)(x.data(), 1, y.data(), 1, want.data(), n);
      (t.*fn)(x.data(), 1, y.data(), 1, got.data(), n);
      if (!same_bits(got, want, x, name)) testing::report_failure(__FILE__, __LINE__, name);
    }
  }
}

// The loops that take a shortcut over blocks of ordinary values (EACH_FAST, F32_IN_RANGE) give
// the element the same bits whether its block took the shortcut or not: each value is computed in
// a block of ordinary values, then again in blocks holding a NaN, an infinity or a huge value.
template <typename T>
void check_shortcuts_give_the_full_paths_bits() {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> angle(-30.0, 30.0);
  std::vector<T> x;
  for (int e = -60; e <= 60; ++e) {
    for (int k = 0; k < 20; ++k) x.push_back(static_cast<T>(std::ldexp(angle(rng), e) / 32));
  }
  for (int k = 0; k < 2000; ++k) x.push_back(static_cast<T>(angle(rng)));
  std::vector<T> spoiled = x;
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        T(-1e30), T(3e7)};
  for (std::size_t i = 0; i < spoiled.size(); i += 97) spoiled[i] = specials[(i / 97) % 4];
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  for (const Table<T>& t : tables<T>()) {
#define OPWEAVE_UNARY_ROW(Name, name, ...) {#name, t.name},
    const std::pair<const char*, RunFn<T>> unary[] = {OPWEAVE_UNARY_OPS(OPWEAVE_UNARY_ROW)};
#undef OPWEAVE_UNARY_ROW
    for (const auto& [name, fn] : unary) {
      std::vector<T> clean(x.size()), mixed(x.size());
      fn(x.data(), 1, clean.data(), n);
      fn(spoiled.data(), 1, mixed.data(), n);
      for (std::size_t i = 0; i < x.size(); i += 97) mixed[i] = clean[i];
      if (!same_bits(mixed, clean, x, name)) testing::report_failure(__FILE__, __LINE__, name);
      // In place (an input's buffer reused for the output) and strided take other paths.
      std::vector<T> in_place = spoiled;
      fn(in_place.data(), 1, in_place.data(), n);
      for (std::size_t i = 0; i < x.size(); i += 97) in_place[i] = clean[i];
      if (!same_bits(in_place, clean, x, name)) testing::report_failure(__FILE__, __LINE__, name);
      std::vector<T> wide(2 * x.size()), strided(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) wide[2 * i] = x[i];
      fn(wide.data(), 2, strided.data(), n);
      if (!same_bits(strided, clean, x, name)) testing::report_failure(__FILE__, __LINE__, name);
    }
  }
}

// Bases and exponents where pow's rules decide: zeros, infinities, NaN, 1 and -1, negative bases
// with odd, even and non-integer exponents, subnormals, exponents past 2^24 (all even), and
// results that overflow or underflow.
std::vector<float> pow_special_values() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f,
          -0.0f,
          inf,
          -inf,
          std::numeric_limits<float>::quiet_NaN(),
          1.0f,
          -1.0f,
          2.0f,
          -2.0f,
          3.0f,
          -3.0f,
          0.5f,
          -0.5f,
          2.5f,
          -2.5f,
          1e-40f,
          -1e-40f,
          1.4e-45f,
          1e30f,
          -1e30f,
          16777216.0f,
          -16777217.0f,
          300.0f,
          -300.0f,
          std::numeric_limits<float>::max(),
          std::numeric_limits<float>::min(),
          0.999f,
          1.001f,
          -8.0f,
          1.0f / 3.0f};
}

// pow(x, y) for every pair of the values, in each flat shape the loop has a path for: both
// operands contiguous, a scalar exponent (x ** 2.5), a scalar base. Lengths that are not a
// multiple of the vector width also cover the masked tail.
void check_pow_f32_on_pairs(const std::vector<float>& values, const Table<float>& t,
                            const Table<float>& base) {
  const std::size_t m = values.size();
  std::vector<float> x, y;
  for (float a : values) {
    for (float b : values) {
      x.push_back(a);
      y.push_back(b);
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  std::vector<float> want(x.size()), got(x.size());
  base.pow(x.data(), 1, y.data(), 1, want.data(), n);
  t.pow(x.data(), 1, y.data(), 1, got.data(), n);
  if (!same_bits(got, want, x, "pow")) testing::report_failure(__FILE__, __LINE__, "pow");
  for (std::size_t j = 0; j < m; ++j) {
    const std::int64_t rows = static_cast<std::int64_t>(m);
    std::vector<float> w(m), g(m);
    base.pow(values.data(), 1, &values[j], 0, w.data(), rows);
    t.pow(values.data(), 1, &values[j], 0, g.data(), rows);
    if (!same_bits(g, w, values, "pow, a scalar exponent")) {
      testing::report_failure(__FILE__, __LINE__, "pow, a scalar exponent");
    }
    base.pow(&values[j], 0, values.data(), 1, w.data(), rows);
    t.pow(&values[j], 0, values.data(), 1, g.data(), rows);
    if (!same_bits(g, w, values, "pow, a scalar base")) {
      testing::report_failure(__FILE__, __LINE__, "pow, a scalar base");
    }
  }
}

}  // namespace

// Every build follows C's pow on the special values (C99 F.9.4.4; the C library's float pow is
// exact there) and gives the baseline's bits for them in every operand shape.
OPWEAVE_TEST(float32_pow_follows_c_on_special_values_in_every_build) {
  const std::vector<float> values = pow_special_values();
  const std::vector<Table<float>> all = tables<float>();
  for (const Table<float>& t : all) {
    for (float a : values) {
      for (float b : values) {
        float got;
        t.pow(&a, 1, &b, 1, &got, 1);
        const float want = std::pow(a, b);
        const bool special = !std::isfinite(want) || want == 0.0f || std::abs(a) == 1.0f ||
                             b == 0.0f || !std::isfinite(a) || !std::isfinite(b);
        if (!special) continue;  // finite non-zero results: the accuracy tests below
        if (std::isnan(want) ? !std::isnan(got) : std::memcmp(&want, &got, sizeof(float)) != 0) {
          std::fprintf(stderr, "pow(%.9g, %.9g): %.9g, C gives %.9g\n", a, b, got, want);
          testing::report_failure(__FILE__, __LINE__, "pow special value");
        }
      }
    }
    check_pow_f32_on_pairs(values, t, all.front());
  }
}

// Within 0.51 ulp of the exact |x|^y (a long double pow) where |y log2 x| <= 32, on random
// operands, through each operand shape, and with the baseline's bits in every build; the signs
// of negative bases with integer exponents as C's.
OPWEAVE_TEST(float32_pow_is_within_half_an_ulp_in_every_build) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<float> x, y;
  for (int k = 0; k < 200000; ++k) {
    x.push_back(static_cast<float>(std::exp2(unit(rng) * 16.0 - 8.0)));
    y.push_back(static_cast<float>(unit(rng) * 8.0 - 4.0));
  }
  for (int k = 0; k < 2000; ++k) {  // negative bases, integer exponents
    x.push_back(-static_cast<float>(std::exp2(unit(rng) * 8.0 - 4.0)));
    y.push_back(static_cast<float>(std::floor(unit(rng) * 16.0 - 8.0)));
  }
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const std::vector<Table<float>> all = tables<float>();
  std::vector<float> want(x.size());
  all.front().pow(x.data(), 1, y.data(), 1, want.data(), n);
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double exact =
        std::pow(static_cast<long double>(x[i]), static_cast<long double>(y[i]));
    int e;
    std::frexp(static_cast<double>(std::fabs(exact)), &e);
    const long double ulp = std::ldexp(1.0L, e - 24);
    worst = std::max(worst, static_cast<double>(std::fabs(want[i] - exact) / ulp));
  }
  if (worst > 0.51) {
    std::fprintf(stderr, "pow: %.4f ulp\n", worst);
    testing::report_failure(__FILE__, __LINE__, "pow accuracy");
  }
  for (const Table<float>& t : all) {
    std::vector<float> got(x.size());
    t.pow(x.data(), 1, y.data(), 1, got.data(), n);
    if (!same_bits(got, want, x, "pow")) testing::report_failure(__FILE__, __LINE__, "pow");
    // A scalar exponent and a scalar base: the same bits as the element-wise pairs.
    for (float s : {2.5f, -1.75f, 3.0f}) {
      std::vector<float> pairs(x.size()), scalar(x.size()), ys(x.size(), s);
      all.front().pow(x.data(), 1, ys.data(), 1, pairs.data(), n);
      t.pow(x.data(), 1, &s, 0, scalar.data(), n);
      if (!same_bits(scalar, pairs, x, "x ** s"))
        testing::report_failure(__FILE__, __LINE__, "x ** s");
      const float b = std::abs(s);
      std::vector<float> bs(x.size(), b);
      all.front().pow(bs.data(), 1, y.data(), 1, pairs.data(), n);
      t.pow(&b, 0, y.data(), 1, scalar.data(), n);
      if (!same_bits(scalar, pairs, y, "s ** y"))
        testing::report_failure(__FILE__, __LINE__, "s ** y");
    }
  }
}

// Bases across the whole float range with exponents up to 7 (results that overflow and underflow
// in blocks the AVX-512 loop computes without clamping), up to 8.5 (where |y log2 x| can pass
// 1022, past a double's exponent range) and up to 1e4: the baseline's bits in every build.
OPWEAVE_TEST(float32_pow_of_wide_ranges_gives_the_same_bits_in_every_build) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (double max_exponent : {7.0, 8.5, 1e4}) {
    std::vector<float> x, y;
    for (int k = 0; k < 100000; ++k) {
      x.push_back(static_cast<float>(std::exp2(unit(rng) * 253.0 - 126.0)));
      y.push_back(static_cast<float>((unit(rng) * 2.0 - 1.0) * max_exponent));
    }
    const std::int64_t n = static_cast<std::int64_t>(x.size());
    const std::vector<Table<float>> all = tables<float>();
    std::vector<float> want(x.size()), got(x.size());
    all.front().pow(x.data(), 1, y.data(), 1, want.data(), n);
    for (const Table<float>& t : all) {
      t.pow(x.data(), 1, y.data(), 1, got.data(), n);
      if (!same_bits(got, want, x, "pow")) testing::report_failure(__FILE__, __LINE__, "pow");
    }
  }
}

// Blocks of ordinary operands with one special base or exponent among them (each special value
// in turn, one element in 97): every element keeps the baseline's bits, whichever path its block
// took.
OPWEAVE_TEST(float32_pow_of_blocks_with_one_special_operand_gives_the_same_bits) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<float> x, y;
  for (int k = 0; k < 20000; ++k) {
    x.push_back(static_cast<float>(std::exp2(unit(rng) * 16.0 - 8.0)));
    y.push_back(static_cast<float>(unit(rng) * 8.0 - 4.0));
  }
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const std::vector<Table<float>> all = tables<float>();
  for (float special : pow_special_values()) {
    for (bool in_base : {true, false}) {
      std::vector<float> xs = x, ys = y;
      for (std::size_t i = 0; i < xs.size(); i += 97) (in_base ? xs : ys)[i] = special;
      std::vector<float> want(x.size()), got(x.size());
      all.front().pow(xs.data(), 1, ys.data(), 1, want.data(), n);
      for (const Table<float>& t : all) {
        t.pow(xs.data(), 1, ys.data(), 1, got.data(), n);
        if (!same_bits(got, want, xs, "pow")) testing::report_failure(__FILE__, __LINE__, "pow");
      }
    }
  }
}

// Each range's key interval holds exactly the values its comment names: both ends, the values
// just outside them, zeros, infinities and NaNs of either sign.
template <typename T>
void check_range_keys() {
  namespace vm = vector_math;
  using Lim = std::numeric_limits<T>;
  const T inf = Lim::infinity(), nan = Lim::quiet_NaN();
  const T bound = sizeof(T) == 4 ? T(87) : T(708);
  const std::vector<std::pair<T, bool>> exp_cases = {{T(0), true},
                                                     {-T(0), true},
                                                     {bound, true},
                                                     {-bound, true},
                                                     {std::nextafter(bound, inf), false},
                                                     {std::nextafter(-bound, -inf), false},
                                                     {inf, false},
                                                     {-inf, false},
                                                     {nan, false},
                                                     {-nan, false},
                                                     {Lim::denorm_min(), true}};
  for (const auto& [x, in] : exp_cases) {
    OPWEAVE_CHECK_EQ(vm::in_range<vm::ExpNormalRange<T>>(x), in);
  }
  const std::vector<std::pair<T, bool>> log_cases = {{Lim::min(), true},
                                                     {Lim::max(), true},
                                                     {T(1), true},
                                                     {std::nextafter(Lim::min(), T(0)), false},
                                                     {Lim::denorm_min(), false},
                                                     {T(0), false},
                                                     {-T(0), false},
                                                     {-Lim::min(), false},
                                                     {-T(1), false},
                                                     {inf, false},
                                                     {-inf, false},
                                                     {nan, false},
                                                     {-nan, false}};
  for (const auto& [x, in] : log_cases) {
    OPWEAVE_CHECK_EQ(vm::in_range<vm::LogNormalRange<T>>(x), in);
  }
}

OPWEAVE_TEST(range_keys_hold_exactly_their_intervals) {
  check_range_keys<float>();
  check_range_keys<double>();
  namespace vm = vector_math;
  const float inf = std::numeric_limits<float>::infinity();
  OPWEAVE_CHECK(vm::in_range<vm::TrigF32Range>(1048576.0f));
  OPWEAVE_CHECK(vm::in_range<vm::TrigF32Range>(-1048576.0f));
  OPWEAVE_CHECK(!vm::in_range<vm::TrigF32Range>(std::nextafter(1048576.0f, inf)));
  OPWEAVE_CHECK(!vm::in_range<vm::TrigF32Range>(std::numeric_limits<float>::quiet_NaN()));
  OPWEAVE_CHECK(!vm::in_range<vm::TrigF32Range>(-inf));
}

OPWEAVE_TEST(float32_shortcuts_give_the_full_paths_bits) {
  check_shortcuts_give_the_full_paths_bits<float>();
}

OPWEAVE_TEST(float64_shortcuts_give_the_full_paths_bits) {
  check_shortcuts_give_the_full_paths_bits<double>();
}

OPWEAVE_TEST(float32_math_loops_give_the_same_bits_in_every_build) {
  check_every_build_matches_the_baseline<float>();
}

OPWEAVE_TEST(float64_math_loops_give_the_same_bits_in_every_build) {
  check_every_build_matches_the_baseline<double>();
}

int main(int argc, char** argv) { return opweave::testing::run_all(argc, argv); }
