// The argmax / argmin loops give the same index in every build the CPU can run (baseline, AVX2,
// AVX-512), whatever their lane count: ties keep the first index, NaN never wins, a run where
// nothing beats the start value gives 0. Runs of every length up to a few vectors, for each type.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/argminmax_loops.h"
#include "testing.h"

using namespace opweave;
using namespace opweave::argminmax_detail;

namespace {

template <typename T>
void check_builds_agree() {
  std::vector<RunFns<T>> builds = {run_fns_baseline<T>()};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) builds.push_back(run_fns_avx2<T>());
  if (isa_flags().can_run_avx512_files()) builds.push_back(run_fns_avx512<T>());
#endif
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> small(-4, 4);
  for (std::int64_t n = 1; n <= 300; n += (n < 70 ? 1 : 17)) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<T> x(static_cast<std::size_t>(n));
      for (auto& v : x) v = static_cast<T>(small(rng));  // many ties
      if constexpr (std::is_floating_point_v<T>) {
        if (trial == 1) {
          for (std::size_t i = 0; i < x.size(); i += 5) x[i] = std::numeric_limits<T>::quiet_NaN();
        }
        if (trial == 2) {
          for (auto& v : x) v = std::numeric_limits<T>::quiet_NaN();
        }
      }
      if (trial == 3) {
        for (auto& v : x) v = std::numeric_limits<T>::lowest();
      }
      const auto max0 = builds[0].max(x.data(), n);
      const auto min0 = builds[0].min(x.data(), n);
      for (std::size_t k = 1; k < builds.size(); ++k) {
        const auto mx = builds[k].max(x.data(), n);
        const auto mn = builds[k].min(x.data(), n);
        if (mx.index != max0.index || mn.index != min0.index) {
          testing::report_failure(__FILE__, __LINE__,
                                  "build " + std::to_string(k) + " n " + std::to_string(n));
        }
      }
    }
  }
}

}  // namespace

OPWEAVE_TEST(every_build_of_the_argmax_loops_gives_the_same_index) {
  check_builds_agree<float>();
  check_builds_agree<double>();
  check_builds_agree<std::int32_t>();
  check_builds_agree<std::int64_t>();
}

int main(int argc, char** argv) { return opweave::testing::run_all(argc, argv); }
