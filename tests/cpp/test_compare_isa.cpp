// The comparison loops give the same bools in every build the CPU can run (baseline, AVX2,
// AVX-512): both operands laid out alike and either one a single element, on values with NaN,
// infinities, signed zeros and ties, for every comparison and element type.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/compare_loops.h"
#include "testing.h"

using namespace opweave;
using namespace opweave::compare_detail;

namespace {

// (A plain array: std::vector<bool> has no data().)
template <typename T>
std::unique_ptr<T[]> values(std::mt19937_64& rng, std::size_t n) {
  std::unique_ptr<T[]> v(new T[n]);
  std::uniform_int_distribution<int> small(-3, 3);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(small(rng));  // many ties
  if constexpr (std::is_floating_point_v<T>) {
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), T(-0.0), T(0.5)};
    for (std::size_t i = 0; i < n; i += 7) v[i] = specials[(i / 7) % 5];
  }
  return v;
}

template <typename T>
void check_builds_agree() {
  std::vector<FlatFns<T>> builds = {flat_fns_baseline<T>()};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) builds.push_back(flat_fns_avx2<T>());
  if (isa_flags().can_run_avx512_files()) builds.push_back(flat_fns_avx512<T>());
#endif
  std::mt19937_64 rng(3);
  const std::size_t n = 1000;  // not a multiple of any vector width
  const std::unique_ptr<T[]> a = values<T>(rng, n), b = values<T>(rng, n);
  for (int op = kEq; op <= kGe; ++op) {
    for (const auto& [sa, sb] : {std::pair<int, int>{1, 1}, {1, 0}, {0, 1}}) {
      std::unique_ptr<bool[]> want(new bool[n]), got(new bool[n]);
      builds[0].fn[op](a.get(), sa, b.get(), sb, want.get(), static_cast<std::int64_t>(n));
      for (std::size_t k = 1; k < builds.size(); ++k) {
        builds[k].fn[op](a.get(), sa, b.get(), sb, got.get(), static_cast<std::int64_t>(n));
        for (std::size_t i = 0; i < n; ++i) {
          if (got[i] != want[i]) {
            testing::report_failure(__FILE__, __LINE__,
                                    "build " + std::to_string(k) + " op " + std::to_string(op));
            break;
          }
        }
      }
    }
  }
}

}  // namespace

OPWEAVE_TEST(every_build_of_the_comparison_loops_gives_the_same_bools) {
  check_builds_agree<float>();
  check_builds_agree<double>();
  check_builds_agree<std::int32_t>();
  check_builds_agree<std::int64_t>();
  check_builds_agree<std::int8_t>();
  check_builds_agree<std::int16_t>();
  check_builds_agree<std::uint8_t>();
  check_builds_agree<bool>();
}

int main(int argc, char** argv) { return opweave::testing::run_all(argc, argv); }
