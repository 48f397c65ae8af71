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
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/unary_math_loops.h"
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

}  // namespace

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
