// The pooling row loops (pool_loops.h) give the same bits in every build the CPU can run
// (baseline, AVX2, AVX-512), and the bits of a plain reference loop: max pooling and its
// gradient over disjoint windows (alone, and with ReluGrad fused after it), on rows whose channel
// counts are and are not multiples of the vector widths, with windows clipped by padding, and
// values with NaN, infinities, signed zeros and ties (the first maximum in row-major order wins; a
// NaN cell only when it comes first).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/pool_loops.h"
#include "testing.h"

using namespace opweave;
using namespace opweave::pool_loops;

namespace {

template <typename T>
std::vector<Table<T>> builds();
template <>
std::vector<Table<float>> builds<float>() {
  std::vector<Table<float>> b = {table_baseline_f32()};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) b.push_back(table_avx2_f32());
  if (isa_flags().can_run_avx512_files()) b.push_back(table_avx512_f32());
#endif
  return b;
}
template <>
std::vector<Table<double>> builds<double>() {
  std::vector<Table<double>> b = {table_baseline_f64()};
#if defined(OPWEAVE_X86_64)
  if (isa_flags().can_run_avx2_files()) b.push_back(table_avx2_f64());
  if (isa_flags().can_run_avx512_files()) b.push_back(table_avx512_f64());
#endif
  return b;
}

template <typename T>
std::vector<T> values(std::mt19937_64& rng, std::size_t n) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> small(-3, 3);
  for (auto& x : v) x = static_cast<T>(small(rng));  // many ties
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(-0.0), T(0.5)};
  for (std::size_t i = 0; i < n; i += 5) v[i] = specials[(i / 5) % 5];
  return v;
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// One image row of windows (k x k, stride k, `pad` cells of padding on the left and top), as
// pool_ops.cpp calls the loops for output row `oh`.
template <typename T>
Row<T> make_row(const std::vector<T>& x, std::int64_t width, std::int64_t height,
                std::int64_t channels, std::int64_t k, std::int64_t pad, std::int64_t oh) {
  Row<T> r;
  r.x = x.data();
  r.width = width, r.channels = channels;
  r.h0 = std::max<std::int64_t>(oh * k - pad, 0), r.h1 = std::min(oh * k - pad + k, height);
  r.out_w = (width + pad + k - 1) / k, r.k_w = k, r.stride_w = k, r.pad_left = pad;
  return r;
}

template <typename T>
void check_type() {
  const std::vector<Table<T>> tables = builds<T>();
  std::mt19937_64 rng(7);
  for (const std::int64_t channels : {1, 3, 8, 16, 17, 32, 40, 64}) {
    for (const std::int64_t k : {2, 3}) {
      for (const std::int64_t pad : {0, 1}) {
        const std::int64_t width = 7, height = 5;
        const std::vector<T> x =
            values<T>(rng, static_cast<std::size_t>(width * height * channels));
        const std::int64_t out_h = (height + pad + k - 1) / k;
        for (std::int64_t oh = 0; oh < out_h; ++oh) {
          Row<T> r = make_row(x, width, height, channels, k, pad, oh);
          const std::vector<T> dy = values<T>(rng, static_cast<std::size_t>(r.out_w * channels));
          r.dy = dy.data();
          // The reference: a running maximum per channel.
          std::vector<T> want_y(static_cast<std::size_t>(r.out_w * channels));
          std::vector<T> want_dx(x.size(), T(0)), want_dx_relu(x.size(), T(0));
          for (std::int64_t ow = 0; ow < r.out_w; ++ow) {
            const std::int64_t w0 = std::max<std::int64_t>(ow * k - pad, 0);
            const std::int64_t w1 = std::min(ow * k - pad + k, width);
            for (std::int64_t c = 0; c < channels; ++c) {
              T best = std::numeric_limits<T>::lowest(), first_best = T(0);
              std::int64_t pick = -1;
              for (std::int64_t h = r.h0; h < r.h1; ++h) {
                for (std::int64_t w = w0; w < w1; ++w) {
                  const T v = x[static_cast<std::size_t>((h * width + w) * channels + c)];
                  if (best < v) best = v;
                  if (pick < 0 || first_best < v) {
                    first_best = v;
                    pick = h * width + w;
                  }
                }
              }
              want_y[static_cast<std::size_t>(ow * channels + c)] = best;
              if (pick >= 0) {
                const T g = T(0) + dy[static_cast<std::size_t>(ow * channels + c)];
                want_dx[static_cast<std::size_t>(pick * channels + c)] = g;
                // ReluGrad(dx, x) after it: x > 0 ? dx : 0, where x is the chosen value.
                want_dx_relu[static_cast<std::size_t>(pick * channels + c)] =
                    first_best > T(0) ? g : T(0);
              }
            }
          }
          for (std::size_t b = 0; b < tables.size(); ++b) {
            std::vector<T> y(want_y.size(), T(42));
            std::vector<T> dx(x.size(), T(0));
            r.y = y.data();
            r.dx = dx.data();
            tables[b].max_pool_row(r);
            tables[b].max_grad_disjoint_row(r);
            const std::string where = "build " + std::to_string(b) + " channels " +
                                      std::to_string(channels) + " k " + std::to_string(k) +
                                      " pad " + std::to_string(pad) + " row " + std::to_string(oh);
            for (std::size_t i = 0; i < y.size(); ++i) {
              if (!same_bits(y[i], want_y[i])) {
                testing::report_failure(__FILE__, __LINE__, "max_pool_row " + where);
                break;
              }
            }
            // Only the row's window rows are written; the rest stays as the caller left it.
            for (std::size_t i = 0; i < dx.size(); ++i) {
              if (!same_bits(dx[i], want_dx[i])) {
                testing::report_failure(__FILE__, __LINE__, "max_grad_disjoint_row " + where);
                break;
              }
            }
            std::fill(dx.begin(), dx.end(), T(0));
            r.relu_grad = true;
            tables[b].max_grad_disjoint_row(r);
            r.relu_grad = false;
            for (std::size_t i = 0; i < dx.size(); ++i) {
              if (!same_bits(dx[i], want_dx_relu[i])) {
                testing::report_failure(__FILE__, __LINE__, "relu_grad " + where);
                break;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

OPWEAVE_TEST(every_build_of_the_pooling_loops_gives_the_reference_bits) {
  check_type<float>();
  check_type<double>();
}

int main(int argc, char** argv) { return opweave::testing::run_all(argc, argv); }
