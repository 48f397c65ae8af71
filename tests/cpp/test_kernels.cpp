// Kernel specifications: results agree with naive references, and are bit-identical for pools of
// 1, 2, 3 and 8 threads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>

#include "opweave/cpu_info.h"
#include "opweave/kernels/gemm.h"
#include "opweave/kernels/gemm_few_cols.h"
#include "opweave/kernels/gemm_microkernel.h"
#include "opweave/kernels/kernels.h"
#include "opweave/kernels/reduce_loops.h"
#include "opweave/kernels/unary_math_loops.h"
#include "testing.h"

using namespace opweave;

namespace {

template <typename T>
Tensor random_tensor(const Shape& shape, std::uint32_t seed) {
  Tensor t = Tensor::empty(DTypeOf<T>::value, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(dist(rng));
  return t;
}

// Element (i, j) of a 2-D tensor through its strides.
template <typename T>
T at(const Tensor& t, std::int64_t i, std::int64_t j) {
  return t.data<T>()[i * t.strides()[0] + j * t.strides()[1]];
}

template <typename T>
bool matches_reference(const Tensor& a, const Tensor& b, bool ta, bool tb, const Tensor& c) {
  const std::int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const std::int64_t n = tb ? b.dim(0) : b.dim(1);
  const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-11;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        ref += static_cast<double>(ta ? at<T>(a, p, i) : at<T>(a, i, p)) *
               static_cast<double>(tb ? at<T>(b, j, p) : at<T>(b, p, j));
      }
      const double got = c.data<T>()[i * n + j];
      if (std::fabs(got - ref) > tol * (1.0 + std::sqrt(static_cast<double>(k)))) {
        std::fprintf(stderr, "mismatch at (%lld, %lld): %g vs %g (m=%lld n=%lld k=%lld)\n",
                     static_cast<long long>(i), static_cast<long long>(j), got, ref,
                     static_cast<long long>(m), static_cast<long long>(n),
                     static_cast<long long>(k));
        return false;
      }
    }
  }
  return true;
}

bool same_bits(const Tensor& x, const Tensor& y) {
  return x.shape() == y.shape() && x.dtype() == y.dtype() &&
         std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// Pools with 0, 1, 2 and 7 workers: 1, 2, 3 and 8 threads counting the caller.
std::vector<std::unique_ptr<ThreadPool>> make_pools() {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int w : {0, 1, 2, 7}) pools.push_back(std::make_unique<ThreadPool>(PoolOptions{w, "test"}));
  return pools;
}

}  // namespace

OPWEAVE_TEST(broadcast_shapes_follows_numpy_rules) {
  OPWEAVE_CHECK(broadcast_shapes({3, 1, 5}, {4, 1}) == (Shape{3, 4, 5}));
  OPWEAVE_CHECK(broadcast_shapes({}, {2, 3}) == (Shape{2, 3}));
  OPWEAVE_CHECK(broadcast_shapes({0, 1}, {1, 7}) == (Shape{0, 7}));
  OPWEAVE_CHECK_THROWS(broadcast_shapes({2, 3}, {4, 3}));
}

OPWEAVE_TEST(matmul_matches_reference_for_edge_sizes_and_transposes) {
  const std::int64_t sizes[][3] = {{1, 1, 1},    {2, 3, 4},     {7, 13, 5},   {37, 41, 43},
                                   {6, 16, 256}, {97, 33, 257}, {145, 17, 3}, {5, 200, 300}};
  std::uint32_t seed = 1;
  for (const auto& s : sizes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const std::int64_t m = s[0], n = s[1], k = s[2];
      Tensor a32 = random_tensor<float>(ta ? Shape{k, m} : Shape{m, k}, seed++);
      Tensor b32 = random_tensor<float>(tb ? Shape{n, k} : Shape{k, n}, seed++);
      OPWEAVE_CHECK(matches_reference<float>(a32, b32, ta, tb, matmul(a32, b32, ta, tb, nullptr)));
      Tensor a64 = random_tensor<double>(ta ? Shape{k, m} : Shape{m, k}, seed++);
      Tensor b64 = random_tensor<double>(tb ? Shape{n, k} : Shape{k, n}, seed++);
      OPWEAVE_CHECK(matches_reference<double>(a64, b64, ta, tb, matmul(a64, b64, ta, tb, nullptr)));
    }
  }
}

OPWEAVE_TEST(every_micro_kernel_the_cpu_supports_matches_reference) {
  using namespace gemm_detail;
  std::vector<MicroKernel<float>> k32 = {portable_kernel_f32()};
  std::vector<MicroKernel<double>> k64 = {portable_kernel_f64()};
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx2_files()) {
    k32.push_back(avx2_kernel_f32());
    k64.push_back(avx2_kernel_f64());
  }
  if (isa.can_run_avx512_files()) {
    k32.push_back(avx512_kernel_f32());
    k64.push_back(avx512_kernel_f64());
  }
  // Just above/below MR, NR, KC and MC of every kernel.
  const std::int64_t m = 151, n = 35, k = 259;
  for (auto& uk : k32) {
    uk.kc = 64;  // several K blocks, exercising the accumulate path
    Tensor a = random_tensor<float>({m, k}, 7), b = random_tensor<float>({k, n}, 8);
    Tensor c = Tensor::empty(DType::kFloat32, {m, n});
    packed_gemm<float>(uk, m, n, k, {a.data<float>(), k, 1}, {b.data<float>(), n, 1},
                       c.data<float>(), n, nullptr);
    OPWEAVE_CHECK(matches_reference<float>(a, b, false, false, c));
  }
  for (auto& uk : k64) {
    uk.kc = 64;
    Tensor a = random_tensor<double>({m, k}, 9), b = random_tensor<double>({k, n}, 10);
    Tensor c = Tensor::empty(DType::kFloat64, {m, n});
    packed_gemm<double>(uk, m, n, k, {a.data<double>(), k, 1}, {b.data<double>(), n, 1},
                        c.data<double>(), n, nullptr);
    OPWEAVE_CHECK(matches_reference<double>(a, b, false, false, c));
  }
}

// Every kernel with a small NC: n spans several N blocks (the last one ragged), with K and M split
// too, reading A in place (fn_rows) and from packed panels. The real NC (1024..4096) is crossed by
// tests/test_kernels.py with the kernel this CPU selects.
template <typename T>
void check_across_nc_blocks(gemm_detail::MicroKernel<T> uk) {
  using namespace gemm_detail;
  auto pools = make_pools();
  const std::int64_t m = 151, n = 5 * uk.nr + 3, k = 259;
  Tensor a = random_tensor<T>({m, k}, 21), b = random_tensor<T>({k, n}, 22);
  uk.nc = 2 * uk.nr;
  uk.kc = 64;
  uk.mc = 2 * uk.mr;
  for (const bool in_place : {true, false}) {
    MicroKernel<T> kernel = uk;
    if (!in_place) kernel.fn_rows = nullptr;
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pools[2].get()}) {
      Tensor c = Tensor::empty(DTypeOf<T>::value, {m, n});
      packed_gemm<T>(kernel, m, n, k, {a.data<T>(), k, 1}, {b.data<T>(), n, 1}, c.data<T>(), n,
                     pool);
      OPWEAVE_CHECK(matches_reference<T>(a, b, false, false, c));
    }
  }
}

OPWEAVE_TEST(every_micro_kernel_matches_reference_across_several_nc_blocks) {
  using namespace gemm_detail;
  check_across_nc_blocks(portable_kernel_f32());
  check_across_nc_blocks(portable_kernel_f64());
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx2_files()) {
    check_across_nc_blocks(avx2_kernel_f32());
    check_across_nc_blocks(avx2_kernel_f64());
  }
  if (isa.can_run_avx512_files()) {
    check_across_nc_blocks(avx512_kernel_f32());
    check_across_nc_blocks(avx512_kernel_f64());
  }
}

// Kernels that read A in place -- row-major by fn_rows, or column-major (`columns`) by fn_cols --
// must give the bits of the packed path: same shape run with and without that entry point, ragged
// rows and columns, several K blocks, 1 and 3 threads, A a view into a wider (taller) matrix.
template <typename T>
void check_a_in_place_matches_packed(gemm_detail::MicroKernel<T> uk, bool columns) {
  using namespace gemm_detail;
  const std::int64_t sizes[][3] = {{256, 256, 256}, {151, 35, 259}, {13, 100, 70}, {25, 33, 5}};
  auto pools = make_pools();
  for (const auto& s : sizes) {
    const std::int64_t m = s[0], n = s[1], k = s[2];
    // A (A^T for columns) with a stride 3 more than its width.
    const Shape stored = columns ? Shape{k, m + 3} : Shape{m, k + 3};
    Tensor a = random_tensor<T>(stored, columns ? 13 : 11), b = random_tensor<T>({k, n}, 12);
    const StridedMatrix<T> av =
        columns ? StridedMatrix<T>{a.data<T>(), 1, m + 3} : StridedMatrix<T>{a.data<T>(), k + 3, 1};
    Tensor c_direct = Tensor::empty(DTypeOf<T>::value, {m, n});
    Tensor c_packed = Tensor::empty(DTypeOf<T>::value, {m, n});
    MicroKernel<T> packed = uk;
    (columns ? packed.fn_cols : packed.fn_rows) = nullptr;
    for (std::int64_t kc : {uk.kc, std::int64_t{64}}) {
      uk.kc = packed.kc = kc;
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pools[2].get()}) {
        packed_gemm<T>(uk, m, n, k, av, {b.data<T>(), n, 1}, c_direct.data<T>(), n, pool);
        packed_gemm<T>(packed, m, n, k, av, {b.data<T>(), n, 1}, c_packed.data<T>(), n, pool);
        OPWEAVE_CHECK(same_bits(c_direct, c_packed));
      }
    }
    const Shape logical = columns ? Shape{k, m} : Shape{m, k};
    const std::int64_t row_stride = columns ? m + 3 : k + 3;
    Tensor a_view =
        Tensor::wrap(DTypeOf<T>::value, logical, {row_stride, 1}, a.raw_data(), a.owner());
    OPWEAVE_CHECK(matches_reference<T>(a_view, b, columns, false, c_direct));
  }
}

OPWEAVE_TEST(reading_a_in_place_gives_the_bits_of_packing_it) {
  if (isa_flags().can_run_avx512_files()) {
    for (const bool columns : {false, true}) {
      check_a_in_place_matches_packed(gemm_detail::avx512_kernel_f32(), columns);
      check_a_in_place_matches_packed(gemm_detail::avx512_kernel_f64(), columns);
    }
  }
}

// The few-columns path gives the bits of the packed path: every column count it takes, A
// row-major (packed per block) and column-major (in place), B row-major, column-major and packed
// once, ragged row blocks, one and two K blocks, a bias + ReLU epilogue, 1 and 3 threads.
template <typename T>
void check_few_cols_matches_packed(const gemm_detail::MicroKernel<T>& uk) {
  using namespace gemm_detail;
  auto pools = make_pools();
  std::uint32_t seed = 40;
  for (const std::int64_t m :
       {std::int64_t{12}, std::int64_t{uk.few_rows + 5}, std::int64_t{100}}) {
    for (std::int64_t n = 1; n <= few_cols::kMaxCols; ++n) {
      for (const std::int64_t k : {std::int64_t{7}, std::int64_t{300}}) {
        for (int layout = 0; layout < 6; ++layout) {
          // A row-major, column-major, or every other element of a row-major matrix twice as
          // wide (neither: packed per block); B row-major or column-major.
          const int a_kind = layout % 3;
          const bool col_major_b = layout >= 3;
          Tensor a = random_tensor<T>(a_kind == 1 ? Shape{k, m} : Shape{m, a_kind == 2 ? 2 * k : k},
                                      seed++);
          Tensor b = random_tensor<T>(col_major_b ? Shape{n, k} : Shape{k, n}, seed++);
          Tensor bias = random_tensor<T>({n}, seed++);
          const StridedMatrix<T> av = a_kind == 0   ? StridedMatrix<T>{a.data<T>(), k, 1}
                                      : a_kind == 1 ? StridedMatrix<T>{a.data<T>(), 1, m}
                                                    : StridedMatrix<T>{a.data<T>(), 2 * k, 2};
          const StridedMatrix<T> bv = col_major_b ? StridedMatrix<T>{b.data<T>(), 1, k}
                                                  : StridedMatrix<T>{b.data<T>(), n, 1};
          const Tensor a_view = a_kind == 2 ? Tensor::wrap(DTypeOf<T>::value, {m, k}, {2 * k, 2},
                                                           a.raw_data(), a.owner())
                                            : a;
          const PackedB<T> packed(uk, k, n, bv, nullptr);
          Epilogue<T> relu;
          relu.bias = bias.data<T>();
          relu.activation = Activation::kRelu;
          for (const Epilogue<T>& ep : {Epilogue<T>{}, relu}) {
            Tensor want = Tensor::empty(DTypeOf<T>::value, {m, n});
            packed_gemm<T>(uk, m, n, k, av, bv, want.data<T>(), n, nullptr, ep);
            if (ep.empty()) {
              OPWEAVE_CHECK(matches_reference<T>(a_view, b, a_kind == 1, col_major_b, want));
            }
            for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pools[2].get()}) {
              for (const PackedB<T>* pb : {static_cast<const PackedB<T>*>(nullptr), &packed}) {
                Tensor got = Tensor::empty(DTypeOf<T>::value, {m, n});
                few_cols_gemm<T>(uk, m, n, k, av, bv, got.data<T>(), n, pool, ep, pb);
                if (!same_bits(got, want)) {
                  std::fprintf(stderr, "few-cols %s m=%lld n=%lld k=%lld layout=%d packed=%d\n",
                               uk.isa, static_cast<long long>(m), static_cast<long long>(n),
                               static_cast<long long>(k), layout, pb != nullptr);
                  OPWEAVE_CHECK(same_bits(got, want));
                }
              }
            }
          }
        }
      }
    }
  }
}

OPWEAVE_TEST(the_few_columns_path_gives_the_bits_of_the_packed_path) {
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx2_files()) {
    check_few_cols_matches_packed(gemm_detail::avx2_kernel_f32());
    check_few_cols_matches_packed(gemm_detail::avx2_kernel_f64());
  }
  if (isa.can_run_avx512_files()) {
    check_few_cols_matches_packed(gemm_detail::avx512_kernel_f32());
    check_few_cols_matches_packed(gemm_detail::avx512_kernel_f64());
  }
}

OPWEAVE_TEST(matmul_with_few_columns_matches_reference_in_every_layout) {
  // gemm() routes these to the few-columns path on CPUs that have it, to the packed one otherwise.
  std::uint32_t seed = 90;
  for (int t = 0; t < 4; ++t) {
    const bool ta = t & 1, tb = t & 2;
    Tensor a = random_tensor<float>(ta ? Shape{256, 512} : Shape{512, 256}, seed++);
    Tensor b = random_tensor<float>(tb ? Shape{10, 256} : Shape{256, 10}, seed++);
    OPWEAVE_CHECK(matches_reference<float>(a, b, ta, tb, matmul(a, b, ta, tb, nullptr)));
  }
}

OPWEAVE_TEST(matmul_reads_strided_views_without_copying_them_first) {
  // Every other column of a 40 x 60 matrix, and a Fortran-order B.
  Tensor base = random_tensor<double>({40, 60}, 3);
  Tensor a = Tensor::wrap(DType::kFloat64, {40, 30}, {60, 2}, base.raw_data(), base.owner());
  Tensor bf = random_tensor<double>({50, 30}, 4);
  Tensor b = Tensor::wrap(DType::kFloat64, {30, 50}, {1, 30}, bf.raw_data(), bf.owner());
  OPWEAVE_CHECK(matches_reference<double>(a, b, false, false, matmul(a, b, false, false, nullptr)));
}

OPWEAVE_TEST(batched_matmul_broadcasts_leading_dims_and_promotes_vectors) {
  OPWEAVE_CHECK(matmul_result_shape({2, 1, 3, 4}, {5, 4, 6}, false, false) == (Shape{2, 5, 3, 6}));
  OPWEAVE_CHECK(matmul_result_shape({4}, {3, 4, 6}, false, false) == (Shape{3, 6}));
  OPWEAVE_CHECK(matmul_result_shape({3, 4}, {4}, false, false) == (Shape{3}));
  OPWEAVE_CHECK(matmul_result_shape({4}, {4}, false, false) == (Shape{}));
  OPWEAVE_CHECK(matmul_result_shape({4, 3}, {5, 4}, true, true) == (Shape{3, 5}));
  Tensor a = random_tensor<float>({3, 1, 8, 9}, 5), b = random_tensor<float>({2, 9, 7}, 6);
  Tensor c = matmul(a, b, false, false, nullptr);
  OPWEAVE_CHECK(c.shape() == (Shape{3, 2, 8, 7}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      Tensor ai = Tensor::wrap(DType::kFloat32, {8, 9}, {9, 1}, a.data<float>() + i * 72, nullptr);
      Tensor bj = Tensor::wrap(DType::kFloat32, {9, 7}, {7, 1}, b.data<float>() + j * 63, nullptr);
      Tensor cij = Tensor::wrap(DType::kFloat32, {8, 7}, {7, 1}, c.data<float>() + (i * 2 + j) * 56,
                                nullptr);
      OPWEAVE_CHECK(matches_reference<float>(ai, bj, false, false, cij));
    }
  }
}

OPWEAVE_TEST(matmul_with_mismatched_shapes_or_dtypes_is_invalid_argument) {
  Tensor a = random_tensor<float>({3, 4}, 1), b = random_tensor<float>({5, 6}, 2);
  Tensor d = random_tensor<double>({4, 6}, 2);
  OPWEAVE_CHECK_THROWS(matmul(a, b, false, false, nullptr));
  OPWEAVE_CHECK_THROWS(matmul(a, d, false, false, nullptr));
  Tensor i = Tensor::zeros(DType::kInt8, {4, 4});  // int32 and int64 multiply; int8 does not
  OPWEAVE_CHECK_THROWS(matmul(i, i, false, false, nullptr));
  bool named = false;
  try {
    matmul(a, b, false, false, nullptr);
  } catch (const OpError& e) {
    named = std::string(e.what()).find("[3, 4]") != std::string::npos &&
            std::string(e.what()).find("[5, 6]") != std::string::npos;
  }
  OPWEAVE_CHECK(named);
}

OPWEAVE_TEST(matmul_is_bit_identical_for_1_2_3_and_8_threads) {
  auto pools = make_pools();
  for (std::int64_t n : {64, 131, 300}) {
    Tensor a = random_tensor<float>({n, n + 3}, 11), b = random_tensor<float>({n + 3, n}, 12);
    Tensor ref = matmul(a, b, false, false, nullptr);
    for (auto& pool : pools) OPWEAVE_CHECK(same_bits(ref, matmul(a, b, false, false, pool.get())));
    Tensor a64 = random_tensor<double>({5, n, 20}, 13), b64 = random_tensor<double>({20, n}, 14);
    Tensor ref64 = matmul(a64, b64, false, false, nullptr);
    for (auto& pool : pools) {
      OPWEAVE_CHECK(same_bits(ref64, matmul(a64, b64, false, false, pool.get())));
    }
  }
}

OPWEAVE_TEST(reduce_sum_over_each_axis_matches_reference) {
  Tensor x = random_tensor<double>({5, 7, 300}, 21);
  const Shape expect_shapes[] = {{7, 300}, {5, 300}, {5, 7}};
  for (int axis = 0; axis < 3; ++axis) {
    Tensor s = reduce(ReduceOp::kSum, x, std::vector<int>{axis}, false, nullptr);
    OPWEAVE_CHECK(s.shape() == expect_shapes[axis]);
    const double* p = x.data<double>();
    // Reference by explicit loops.
    std::vector<double> ref(static_cast<std::size_t>(s.numel()), 0.0);
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 7; ++j) {
        for (int k = 0; k < 300; ++k) {
          const int o = axis == 0 ? j * 300 + k : axis == 1 ? i * 300 + k : i * 7 + j;
          ref[static_cast<std::size_t>(o)] += p[(i * 7 + j) * 300 + k];
        }
      }
    }
    for (std::int64_t o = 0; o < s.numel(); ++o) {
      OPWEAVE_CHECK(std::fabs(s.data<double>()[o] - ref[static_cast<std::size_t>(o)]) < 1e-10);
    }
  }
  Tensor all = reduce(ReduceOp::kSum, x, std::nullopt, true, nullptr);
  OPWEAVE_CHECK(all.shape() == (Shape{1, 1, 1}));
}

OPWEAVE_TEST(reduce_of_a_reversed_dense_view_keeps_the_logical_order_of_kept_axes) {
  // x[::-1, :] and x[:, ::-1] of a contiguous (4, 3): dense, so read in place; the kept axis
  // runs backwards in memory and the result must still follow the view's index order.
  Tensor base = random_tensor<double>({4, 3}, 23);
  const double* p = base.data<double>();
  Tensor rows_reversed =
      Tensor::wrap(DType::kFloat64, {4, 3}, {-3, 1}, base.data<double>() + 9, base.owner());
  Tensor cols_reversed =
      Tensor::wrap(DType::kFloat64, {4, 3}, {3, -1}, base.data<double>() + 2, base.owner());
  Tensor s1 = reduce(ReduceOp::kSum, rows_reversed, std::vector<int>{1}, false, nullptr);
  for (int i = 0; i < 4; ++i) {
    const double want = p[(3 - i) * 3] + p[(3 - i) * 3 + 1] + p[(3 - i) * 3 + 2];
    OPWEAVE_CHECK(std::fabs(s1.data<double>()[i] - want) < 1e-12);
  }
  Tensor s0 = reduce(ReduceOp::kMax, cols_reversed, std::vector<int>{0}, true, nullptr);
  OPWEAVE_CHECK(s0.shape() == (Shape{1, 3}));
  for (int j = 0; j < 3; ++j) {
    double want = p[2 - j];
    for (int i = 1; i < 4; ++i) want = std::max(want, p[i * 3 + 2 - j]);
    OPWEAVE_CHECK_EQ(s0.data<double>()[j], want);
  }
}

OPWEAVE_TEST(reduce_max_propagates_nan_and_min_of_bool_is_all) {
  Tensor x = random_tensor<float>({4, 100}, 22);
  x.data<float>()[2 * 100 + 37] = std::numeric_limits<float>::quiet_NaN();
  Tensor m = reduce(ReduceOp::kMax, x, std::vector<int>{1}, false, nullptr);
  OPWEAVE_CHECK(!std::isnan(m.data<float>()[0]));
  OPWEAVE_CHECK(std::isnan(m.data<float>()[2]));
  Tensor m0 = reduce(ReduceOp::kMin, x, std::vector<int>{0}, false, nullptr);
  OPWEAVE_CHECK(std::isnan(m0.data<float>()[37]));
  OPWEAVE_CHECK(!std::isnan(m0.data<float>()[36]));
  Tensor b = Tensor::zeros(DType::kBool, {2, 3});
  b.data<bool>()[0] = b.data<bool>()[1] = b.data<bool>()[2] = true;
  b.data<bool>()[4] = true;
  Tensor all = reduce(ReduceOp::kMin, b, std::vector<int>{1}, false, nullptr);
  Tensor any = reduce(ReduceOp::kMax, b, std::vector<int>{1}, false, nullptr);
  OPWEAVE_CHECK(all.data<bool>()[0] && !all.data<bool>()[1]);
  OPWEAVE_CHECK(any.data<bool>()[0] && any.data<bool>()[1]);
  OPWEAVE_CHECK_THROWS(reduce(ReduceOp::kSum, b, std::nullopt, false, nullptr));
}

OPWEAVE_TEST(integer_mean_truncates_toward_zero_and_empty_axes_follow_the_contract) {
  Tensor x = Tensor::empty(DType::kInt32, {3});
  x.data<std::int32_t>()[0] = -3;
  x.data<std::int32_t>()[1] = -1;
  x.data<std::int32_t>()[2] = 0;
  Tensor m = reduce(ReduceOp::kMean, x, std::nullopt, false, nullptr);
  OPWEAVE_CHECK_EQ(m.data<std::int32_t>()[0], -1);  // -4 / 3 truncates to -1
  Tensor e = Tensor::empty(DType::kFloat32, {0, 4});
  Tensor s = reduce(ReduceOp::kSum, e, std::vector<int>{0}, false, nullptr);
  OPWEAVE_CHECK(s.shape() == (Shape{4}) && s.data<float>()[3] == 0.0f);
  Tensor mean = reduce(ReduceOp::kMean, e, std::vector<int>{0}, false, nullptr);
  OPWEAVE_CHECK(std::isnan(mean.data<float>()[0]));
  // TensorFlow's max / min of nothing: the identities -inf / +inf.
  Tensor mx = reduce(ReduceOp::kMax, e, std::vector<int>{0}, false, nullptr);
  OPWEAVE_CHECK(std::isinf(mx.data<float>()[0]) && mx.data<float>()[0] < 0);
  Tensor mn = reduce(ReduceOp::kMin, e, std::vector<int>{0}, false, nullptr);
  OPWEAVE_CHECK(std::isinf(mn.data<float>()[0]) && mn.data<float>()[0] > 0);
  OPWEAVE_CHECK_THROWS(reduce(ReduceOp::kSum, e, std::vector<int>{2}, false, nullptr));
}

OPWEAVE_TEST(reductions_are_bit_identical_for_1_2_3_and_8_threads) {
  auto pools = make_pools();
  Tensor x = random_tensor<float>({300, 1000}, 31);
  Tensor big = random_tensor<float>({3 * 65536 + 17}, 32);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
    using Axes = std::optional<std::vector<int>>;
    for (const Axes& axes : {Axes{}, Axes{std::vector<int>{0}}, Axes{std::vector<int>{1}}}) {
      Tensor ref = reduce(op, x, axes, false, nullptr);
      for (auto& pool : pools)
        OPWEAVE_CHECK(same_bits(ref, reduce(op, x, axes, false, pool.get())));
    }
    Tensor ref = reduce(op, big, std::nullopt, false, nullptr);
    for (auto& pool : pools) {
      OPWEAVE_CHECK(same_bits(ref, reduce(op, big, std::nullopt, false, pool.get())));
    }
  }
}

OPWEAVE_TEST(binary_ops_broadcast_and_integer_division_floors) {
  Tensor a = Tensor::empty(DType::kInt64, {2, 1});
  a.data<std::int64_t>()[0] = 7;
  a.data<std::int64_t>()[1] = -7;
  Tensor b = Tensor::empty(DType::kInt64, {3});
  b.data<std::int64_t>()[0] = 2;
  b.data<std::int64_t>()[1] = -2;
  b.data<std::int64_t>()[2] = 7;
  Tensor q = binary(BinaryOp::kDiv, a, b, nullptr);
  OPWEAVE_CHECK(q.shape() == (Shape{2, 3}));
  const std::int64_t expected[] = {3, -4, 1, -4, 3, -1};
  for (int i = 0; i < 6; ++i) OPWEAVE_CHECK_EQ(q.data<std::int64_t>()[i], expected[i]);
  Tensor zero = Tensor::zeros(DType::kInt64, {1});
  OPWEAVE_CHECK_THROWS(binary(BinaryOp::kDiv, a, zero, nullptr));
  Tensor f = Tensor::empty(DType::kFloat32, {3});
  OPWEAVE_CHECK_THROWS(binary(BinaryOp::kAdd, a, f, nullptr));
  Tensor x = random_tensor<float>({1000, 70}, 41), y = random_tensor<float>({70}, 42);
  Tensor s = binary(BinaryOp::kMaximum, x, y, nullptr);
  for (int i = 0; i < 1000; ++i) {
    for (int j = 0; j < 70; ++j) {
      const float expected = std::max(x.data<float>()[i * 70 + j], y.data<float>()[j]);
      OPWEAVE_CHECK_EQ(s.data<float>()[i * 70 + j], expected);
    }
  }
}

OPWEAVE_TEST(unary_add_n_cast_and_transpose) {
  Tensor x = random_tensor<double>({3, 4}, 51);
  Tensor r = unary(UnaryOp::kRelu, x, nullptr);
  Tensor sg = unary(UnaryOp::kSigmoid, x, nullptr);
  for (int i = 0; i < 12; ++i) {
    const double relu = x.data<double>()[i] > 0 ? x.data<double>()[i] : 0.0;
    OPWEAVE_CHECK_EQ(r.data<double>()[i], relu);
    OPWEAVE_CHECK(std::fabs(sg.data<double>()[i] - 1.0 / (1.0 + std::exp(-x.data<double>()[i]))) <
                  1e-15);
  }
  OPWEAVE_CHECK_THROWS(unary(UnaryOp::kExp, Tensor::zeros(DType::kInt32, {2}), nullptr));
  Tensor s = add_n({x, x, x}, nullptr);
  for (int i = 0; i < 12; ++i)
    OPWEAVE_CHECK_EQ(s.data<double>()[i],
                     (x.data<double>()[i] + x.data<double>()[i]) + x.data<double>()[i]);
  Tensor c = cast(x, DType::kInt32, nullptr);
  for (int i = 0; i < 12; ++i)
    OPWEAVE_CHECK_EQ(c.data<std::int32_t>()[i], static_cast<std::int32_t>(x.data<double>()[i]));
  Tensor t = transpose(x, {}, nullptr);
  OPWEAVE_CHECK(t.shape() == (Shape{4, 3}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j)
      OPWEAVE_CHECK_EQ(t.data<double>()[j * 3 + i], x.data<double>()[i * 4 + j]);
  }
  OPWEAVE_CHECK_THROWS(transpose(x, {0, 0}, nullptr));
}

OPWEAVE_TEST(baseline_and_avx2_reduction_loops_give_the_same_bits) {
  using namespace reduce_detail;
  if (!isa_flags().can_run_avx2_files()) return;  // nothing to compare on this CPU
  Tensor x = random_tensor<float>({40, 1001}, 61);
  const float* p = x.data<float>();
  const auto base = loops_baseline<Combine::kAdd, float>();
  const auto avx2 = loops_avx2<Combine::kAdd, float>();
  const float s0 = base.run(p, x.numel()), s1 = avx2.run(p, x.numel());
  OPWEAVE_CHECK(std::memcmp(&s0, &s1, sizeof(float)) == 0);
  std::vector<float> r0(1001), r1(1001), scratch(1001 * 8);
  base.rows(p, 40, 1001, 1001, r0.data(), scratch.data());
  avx2.rows(p, 40, 1001, 1001, r1.data(), scratch.data());
  OPWEAVE_CHECK(std::memcmp(r0.data(), r1.data(), sizeof(float) * r0.size()) == 0);
}

template <typename T>
void check_unary_math_tables_agree() {
  using namespace unary_math;
  // Wide range (overflow, underflow, tanh's saturation), the small-argument region, specials.
  std::vector<T> x;
  for (int i = -20000; i <= 20000; ++i) x.push_back(static_cast<T>(i) * T(0.04));
  for (int i = 1; i <= 2000; ++i) x.push_back(static_cast<T>(std::ldexp(1.37 * i, -12 - i % 60)));
  for (T v : {T(0), T(-0.0), std::numeric_limits<T>::infinity(),
              -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN()}) {
    x.push_back(v);
  }
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  Table<T> base, avx2;
  if constexpr (std::is_same_v<T, float>) {
    base = table_baseline_f32();
    avx2 = table_avx2_f32();
  } else {
    base = table_baseline_f64();
    avx2 = table_avx2_f64();
  }
  std::vector<T> r0(x.size()), r1(x.size());
  for (auto fn : {&Table<T>::exp, &Table<T>::tanh, &Table<T>::sigmoid}) {
    (base.*fn)(x.data(), 1, r0.data(), n);
    (avx2.*fn)(x.data(), 1, r1.data(), n);
    OPWEAVE_CHECK(std::memcmp(r0.data(), r1.data(), sizeof(T) * x.size()) == 0);
  }
  // tanh: within 4 ulp of the long double libm result (measured worst: ~3), exact specials.
  base.tanh(x.data(), 1, r0.data(), n);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double ref = std::tanh(static_cast<long double>(x[i]));
    if (std::isnan(x[i])) {
      OPWEAVE_CHECK(std::isnan(r0[i]));
      continue;
    }
    const T rt = static_cast<T>(ref);
    if (rt == 0 || std::isinf(x[i])) {
      OPWEAVE_CHECK(r0[i] == rt && std::signbit(r0[i]) == std::signbit(x[i]));
      continue;
    }
    const T ulp = std::nextafter(std::fabs(rt), std::numeric_limits<T>::infinity()) - std::fabs(rt);
    worst = std::max(worst, static_cast<double>(std::fabs(r0[i] - ref) / ulp));
  }
  OPWEAVE_CHECK(worst <= 4.0);
}

OPWEAVE_TEST(baseline_and_avx2_unary_math_give_the_same_bits_and_tanh_is_accurate) {
  if (!isa_flags().can_run_avx2_files()) return;  // nothing to compare on this CPU
  check_unary_math_tables_agree<float>();
  check_unary_math_tables_agree<double>();
}

OPWEAVE_TEST_MAIN()
