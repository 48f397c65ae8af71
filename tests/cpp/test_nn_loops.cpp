// The nn row loops (softmax, log-softmax, the softmax cross-entropies, the sum of squares) give the
// same bits in their baseline, AVX2 and AVX-512 builds, and are accurate against long double.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/nn_loops.h"
#include "testing.h"

using namespace opweave;

namespace {

// Rows of several lengths (shorter than the lanes, not a multiple of them, longer than a chunk),
// with logits spread wide enough that some exps underflow to subnormals and to zero.
template <typename T>
std::vector<T> random_rows(std::int64_t rows, std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 40.0);
  std::vector<T> x(static_cast<std::size_t>(rows * n));
  for (T& v : x) v = static_cast<T>(dist(rng));
  return x;
}

template <typename T>
std::vector<nn_loops::Table<T>> tables() {
  std::vector<nn_loops::Table<T>> out;
  if constexpr (std::is_same_v<T, float>) {
    out.push_back(nn_loops::table_baseline_f32());
#if defined(OPWEAVE_X86_64)
    if (isa_flags().can_run_avx2_files()) out.push_back(nn_loops::table_avx2_f32());
    if (isa_flags().can_run_avx512_files()) out.push_back(nn_loops::table_avx512_f32());
#endif
  } else {
    out.push_back(nn_loops::table_baseline_f64());
#if defined(OPWEAVE_X86_64)
    if (isa_flags().can_run_avx2_files()) out.push_back(nn_loops::table_avx2_f64());
    if (isa_flags().can_run_avx512_files()) out.push_back(nn_loops::table_avx512_f64());
#endif
  }
  return out;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0;
}

template <typename T>
void check_tables_agree() {
  const auto all = tables<T>();
  for (const std::int64_t n : {1, 7, 16, 17, 1000, 3000}) {
    const std::int64_t rows = 5;
    std::vector<T> x = random_rows<T>(rows, n, static_cast<std::uint32_t>(n));
    x[0] = std::numeric_limits<T>::quiet_NaN();  // a NaN row
    std::vector<T> z(x.size());
    for (std::size_t i = 0; i < z.size(); ++i) z[i] = T(1) / static_cast<T>(n);
    std::vector<std::int64_t> labels(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) labels[static_cast<std::size_t>(r)] = (r * 7) % n;
    std::vector<std::vector<T>> results;
    for (const auto& t : all) {
      std::vector<T> sm(x.size()), ls(x.size()), bp(x.size()), bp2(x.size());
      std::vector<T> loss(static_cast<std::size_t>(rows)), loss2(loss.size());
      t.softmax(x.data(), sm.data(), rows, n);
      t.log_softmax(x.data(), ls.data(), rows, n);
      t.xent(x.data(), z.data(), loss.data(), bp.data(), rows, n);
      t.sparse_xent(x.data(), labels.data(), loss2.data(), bp2.data(), rows, n);
      std::vector<T> all_out;
      for (const auto* v : {&sm, &ls, &bp, &bp2, &loss, &loss2}) {
        all_out.insert(all_out.end(), v->begin(), v->end());
      }
      all_out.push_back(t.sum_squares(x.data() + n, (rows - 1) * n));
      results.push_back(std::move(all_out));
    }
    for (std::size_t i = 1; i < results.size(); ++i) {
      OPWEAVE_CHECK(same_bits(results[0], results[i]));
    }
  }
}

// The error of log_softmax against long double, in ulps of T at max(|result|, 1): the sum of exps
// is rounded to T before its log, so results near 0 carry the absolute error of log(sum).
template <typename T>
double worst_log_softmax_ulps() {
  const std::int64_t rows = 50, n = 333;
  const std::vector<T> x = random_rows<T>(rows, n, 5);
  std::vector<T> y(x.size());
  tables<T>()[0].log_softmax(x.data(), y.data(), rows, n);
  double worst = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x.data() + r * n;
    long double m = xr[0];
    for (std::int64_t i = 1; i < n; ++i) m = std::max<long double>(m, xr[i]);
    long double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += std::exp(static_cast<long double>(xr[i]) - m);
    for (std::int64_t i = 0; i < n; ++i) {
      const long double ref = static_cast<long double>(xr[i]) - m - std::log(s);
      const T rt = std::max(static_cast<T>(std::fabs(ref)), T(1));
      const T ulp = std::nextafter(rt, std::numeric_limits<T>::infinity()) - rt;
      const T got = y[static_cast<std::size_t>(r * n + i)];
      worst = std::max(worst, static_cast<double>(std::fabs(got - ref) / ulp));
    }
  }
  return worst;
}

}  // namespace

OPWEAVE_TEST(baseline_avx2_and_avx512_nn_loops_give_the_same_bits) {
  check_tables_agree<float>();
  check_tables_agree<double>();
}

OPWEAVE_TEST(log_softmax_is_within_a_few_ulps_of_long_double) {
  OPWEAVE_CHECK(worst_log_softmax_ulps<float>() <= 4.0);
  OPWEAVE_CHECK(worst_log_softmax_ulps<double>() <= 4.0);
}

OPWEAVE_TEST_MAIN()
