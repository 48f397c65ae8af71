// The flat loops of the comparisons (compare_select.cpp): both operands laid out like the output,
// or one of them a single element. Compiled twice from this one source: compare_loops.cpp
// (baseline x86-64, 16-byte vectors), compare_loops_avx2.cpp (-mavx2, 32-byte vectors) and
// compare_loops_avx512.cpp (mask registers). A comparison is exact, so every build gives the same
// bools.
#pragma once

#include <cstdint>

// No other opweave header: the AVX2 build must not instantiate inline functions the baseline
// code could end up calling.
namespace opweave::compare_detail {

// CompareOp's values (kernels.h; compare_select.cpp checks that they match).
enum Cmp : int { kEq, kNe, kLt, kLe, kGt, kGe };

// out[i] = a[i * sa] op b[i * sb] for i in [0, n); sa and sb are 0 or 1, not both 0.
template <typename T>
using FlatFn = void (*)(const T* a, std::int64_t sa, const T* b, std::int64_t sb, bool* out,
                        std::int64_t n);

// One loop per comparison, indexed by Cmp.
template <typename T>
struct FlatFns {
  FlatFn<T> fn[6];
};

template <typename T>
FlatFns<T> flat_fns_baseline();
template <typename T>
FlatFns<T> flat_fns_avx2();
template <typename T>
FlatFns<T> flat_fns_avx512();

}  // namespace opweave::compare_detail

// Only the two loop files define OPWEAVE_COMPARE_LOOPS_IMPL. The templates below sit in an
// unnamed namespace: each file gets its own copy, so the linker can never substitute the AVX2
// instantiation for the baseline one.
#ifdef OPWEAVE_COMPARE_LOOPS_IMPL
namespace opweave::compare_detail {
namespace {

template <int Op, typename T>
inline bool compare_one(T a, T b) {
  if constexpr (Op == kEq) return a == b;
  if constexpr (Op == kNe) return a != b;
  if constexpr (Op == kLt) return a < b;
  if constexpr (Op == kLe) return a <= b;
  if constexpr (Op == kGt) return a > b;
  if constexpr (Op == kGe) return a >= b;
}

// Three plain loops the compiler vectorises at this file's width.
template <int Op, typename T>
void compare_flat(const T* pa, std::int64_t sa, const T* pb, std::int64_t sb, bool* po,
                  std::int64_t n) {
  if (sa == 1 && sb == 1) {
    for (std::int64_t i = 0; i < n; ++i) po[i] = compare_one<Op>(pa[i], pb[i]);
  } else if (sa == 1) {
    const T bv = *pb;
    for (std::int64_t i = 0; i < n; ++i) po[i] = compare_one<Op>(pa[i], bv);
  } else {
    const T av = *pa;
    for (std::int64_t i = 0; i < n; ++i) po[i] = compare_one<Op>(av, pb[i]);
  }
}

template <typename T>
FlatFns<T> make_flat_fns() {
  return {{&compare_flat<kEq, T>, &compare_flat<kNe, T>, &compare_flat<kLt, T>,
           &compare_flat<kLe, T>, &compare_flat<kGt, T>, &compare_flat<kGe, T>}};
}

}  // namespace
}  // namespace opweave::compare_detail

#define OPWEAVE_COMPARE_INSTANTIATE(NAME)              \
  namespace opweave::compare_detail {                  \
  template <typename T>                                \
  FlatFns<T> NAME() {                                  \
    return make_flat_fns<T>();                         \
  }                                                    \
  template FlatFns<float> NAME<float>();               \
  template FlatFns<double> NAME<double>();             \
  template FlatFns<std::int32_t> NAME<std::int32_t>(); \
  template FlatFns<std::int64_t> NAME<std::int64_t>(); \
  template FlatFns<std::int8_t> NAME<std::int8_t>();   \
  template FlatFns<std::int16_t> NAME<std::int16_t>(); \
  template FlatFns<std::uint8_t> NAME<std::uint8_t>(); \
  template FlatFns<bool> NAME<bool>();                 \
  }
#endif
