// The runs micro-kernel (gemm_runs.h) and the direct convolutions built on it (conv_direct.h):
// the kernel computes exactly the documented FMA chain in every mode and row count, and the
// convolutions agree with the patch GEMM (gemm_sourced over a PatchSource) on geometries with
// strides, dilations, padding on every side and ragged channel counts, with the same bits for
// pools of 1, 2, 3 and 8 threads; a fused bias / activation epilogue gives the bits of the
// convolution followed by apply_epilogue.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/conv_direct.h"
#include "opweave/kernels/conv_packing.h"
#include "opweave/kernels/gemm_microkernel.h"
#include "testing.h"

using namespace opweave;
using namespace opweave::gemm_detail;

namespace {

template <typename T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

template <typename T>
std::vector<MicroKernel<T>> runs_kernels() {
  std::vector<MicroKernel<T>> out;
#if defined(OPWEAVE_X86_64)
  const IsaFlags isa = isa_flags();
  if constexpr (std::is_same_v<T, float>) {
    if (isa.can_run_avx2_files()) out.push_back(avx2_kernel_f32());
    if (isa.can_run_avx512_files()) out.push_back(avx512_kernel_f32());
  } else {
    if (isa.can_run_avx2_files()) out.push_back(avx2_kernel_f64());
    if (isa.can_run_avx512_files()) out.push_back(avx512_kernel_f64());
  }
#endif
  return out;
}

// One call of the runs kernel against the chain it documents, computed with std::fma: the same
// operations in the same order, so the same bits.
// A runs kernel of a micro-kernel: the GEMM-width one or the wide one.
template <typename T>
struct RunsKernel {
  MicroKernelRunsFn<T> fn;
  int mr, nr;
};

template <typename T>
std::vector<RunsKernel<T>> runs_kernels_of(const MicroKernel<T>& uk) {
  std::vector<RunsKernel<T>> out{{uk.fn_runs, uk.mr, uk.nr}};
  if (uk.fn_runs_wide != nullptr)
    out.push_back({uk.fn_runs_wide, uk.runs_wide_mr, uk.runs_wide_nr});
  return out;
}

template <typename T>
void check_runs_kernel(const RunsKernel<T>& uk, int rows, bool indirect, bool packed,
                       bool row_pointers_out, bool accumulate, bool epilogue) {
  const int nr = uk.nr;
  const std::int64_t nruns = 5, len = packed ? 9 : 7;
  const std::int64_t lda = packed ? 1 : (indirect ? 3 : 11), ldb = packed ? nr : nr + 5;
  const std::vector<T> a = random_values<T>(4096, 1 + rows);
  const std::vector<T> b = random_values<T>(static_cast<std::size_t>(nruns * len * ldb + nr), 2);
  std::vector<const T*> a_rows(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) a_rows[static_cast<std::size_t>(i)] = a.data() + 97 * i + 13;
  const T* a_base = a.data() + 5;
  std::vector<std::int64_t> a_off(nruns);
  std::vector<const T*> b_run(nruns);
  for (std::int64_t r = 0; r < nruns; ++r) {
    a_off[static_cast<std::size_t>(r)] = 41 * r + (indirect ? 0 : 300);
    b_run[static_cast<std::size_t>(r)] = b.data() + (nruns - 1 - r) * len * ldb;  // any order
  }
  const std::int64_t ldc = nr + 3;
  std::vector<T> c = random_values<T>(static_cast<std::size_t>(2 * 12 * ldc), 3);
  std::vector<T*> c_rows(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i)
    c_rows[static_cast<std::size_t>(i)] = c.data() + (rows - 1 - i) * 2 * ldc;
  auto out_row = [&](int i) {
    return row_pointers_out ? c_rows[static_cast<std::size_t>(i)] : c.data() + i * ldc;
  };
  // The fused epilogue's bias: a NaN lane, and a large negative one that ReLU must zero.
  std::vector<T> bias = random_values<T>(static_cast<std::size_t>(nr), 4);
  bias[1] = std::numeric_limits<T>::quiet_NaN();
  bias[2] = T(-100);
  std::vector<T> want(static_cast<std::size_t>(rows * nr));
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < nr; ++j) {
      T acc = 0;
      for (std::int64_t r = 0; r < nruns; ++r) {
        for (std::int64_t p = 0; p < len; ++p) {
          const std::int64_t at = a_off[static_cast<std::size_t>(r)] + p * lda;
          const T av = indirect ? a_rows[static_cast<std::size_t>(i)][at] : a_base[at + i];
          acc = std::fma(av, b_run[static_cast<std::size_t>(r)][p * ldb + j], acc);
        }
      }
      T value = accumulate ? out_row(i)[j] + acc : acc;
      if (epilogue) {
        value = value + bias[static_cast<std::size_t>(j)];
        value = value < T(0) ? T(0) : value;  // apply_epilogue's ReLU
      }
      want[static_cast<std::size_t>(i * nr + j)] = value;
    }
  }
  RunsArgs<T> x;
  x.rows = rows;
  x.a_rows = indirect ? a_rows.data() : nullptr;
  x.a_base = a_base;
  x.a_off = a_off.data();
  x.b_run = b_run.data();
  x.nruns = nruns;
  x.len = len;
  x.lda = lda;
  x.ldb = ldb;
  x.c = c.data();
  x.ldc = ldc;
  x.c_rows = row_pointers_out ? c_rows.data() : nullptr;
  x.accumulate = accumulate;
  x.bias = epilogue ? bias.data() : nullptr;
  x.relu = epilogue;
  uk.fn(x);
  for (int i = 0; i < rows; ++i) {
    OPWEAVE_CHECK(std::memcmp(out_row(i), want.data() + i * nr, sizeof(T) * nr) == 0);
  }
}

template <typename T>
void check_every_runs_kernel() {
  for (const MicroKernel<T>& micro : runs_kernels<T>()) {
    OPWEAVE_CHECK(micro.fn_runs != nullptr);
    for (const RunsKernel<T>& uk : runs_kernels_of(micro)) {
      for (int rows = 1; rows <= uk.mr; ++rows) {
        for (const bool indirect : {true, false}) {
          for (const bool packed : {true, false}) {
            if (packed && !indirect) continue;  // the packed steps are the forward's, indirect
            for (const bool row_pointers : {true, false}) {
              for (const bool accumulate : {false, true}) {
                for (const bool epilogue : {false, true}) {
                  check_runs_kernel(uk, rows, indirect, packed, row_pointers, accumulate, epilogue);
                }
              }
            }
          }
        }
      }
    }
  }
}

// A convolution geometry over a random NHWC image, with the forward patches of a filter.
struct Case {
  std::int64_t batch, height, width, channels, k_h, k_w, stride_h, stride_w, dil_h, dil_w;
  std::int64_t pad_top, pad_left, out_h, out_w, out_c;
};

PatchGeometry geometry(const Case& c) {
  PatchGeometry g;
  g.batch = c.batch, g.height = c.height, g.width = c.width, g.channels = c.channels;
  g.grid_h = c.out_h, g.grid_w = c.out_w, g.stride_h = c.stride_h, g.stride_w = c.stride_w;
  for (std::int64_t kh = 0; kh < c.k_h; ++kh) g.off_h.push_back(kh * c.dil_h - c.pad_top);
  for (std::int64_t kw = 0; kw < c.k_w; ++kw) g.off_w.push_back(kw * c.dil_w - c.pad_left);
  return g;
}

std::vector<Case> cases() {
  return {
      // batch, h, w, c, kh, kw, sh, sw, dh, dw, pad_t, pad_l, out_h, out_w, out_c
      {3, 9, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1, 9, 11, 37},     // SAME, ragged out_c
      {2, 14, 14, 32, 5, 5, 1, 1, 1, 1, 2, 2, 14, 14, 64},  // deep MNIST's second layer
      {2, 10, 13, 12, 3, 2, 2, 3, 1, 1, 1, 0, 5, 4, 20},    // strides, VALID-ish along w
      {1, 12, 12, 9, 3, 3, 1, 1, 2, 2, 2, 2, 12, 12, 33},   // dilation
      {2, 5, 6, 16, 5, 5, 1, 1, 1, 1, 4, 4, 9, 10, 16},     // padding wider than the image
      {1, 4, 4, 8, 3, 3, 1, 1, 1, 1, 5, 5, 12, 12, 16},     // outputs no tap reaches
      {2, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 9, 9, 8},        // runs of whole filter rows (6)
      {1, 9, 10, 4, 3, 3, 1, 1, 1, 2, 1, 2, 9, 10, 32},     // dilated taps: runs of one tap
      {4, 7, 7, 1, 5, 5, 1, 1, 1, 1, 2, 2, 7, 7, 32},       // one channel (a first layer)
      {2, 8, 9, 3, 3, 3, 2, 1, 1, 1, 1, 1, 4, 9, 40},       // three channels
      {1, 6, 6, 24, 1, 1, 2, 2, 1, 1, 0, 0, 3, 3, 70},      // 1x1, stride 2
  };
}

template <typename T>
void check_conv_direct() {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int w : {0, 1, 2, 7}) pools.push_back(std::make_unique<ThreadPool>(PoolOptions{w, "test"}));
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  for (const Case& cs : cases()) {
    const PatchGeometry g = geometry(cs);
    const std::int64_t m = g.rows(), k = g.cols(), n = cs.out_c;
    const auto image = random_values<T>(
        static_cast<std::size_t>(cs.batch * cs.height * cs.width * cs.channels), 5);
    const auto filter = random_values<T>(static_cast<std::size_t>(k * n), 6);
    const auto dy = random_values<T>(static_cast<std::size_t>(m * n), 7);
    // The patch GEMM's results, the reference.
    std::vector<T> fwd_ref(static_cast<std::size_t>(m * n)),
        grad_ref(static_cast<std::size_t>(k * n));
    const PatchSource<T> patches(image.data(), g);
    gemm_sourced<T>(m, n, k, patches, StridedSource<T>({filter.data(), n, 1}), fwd_ref.data(), n,
                    nullptr, cs.channels);
    gemm_sourced<T>(k, n, m, TransposedSource<T>(patches), StridedSource<T>({dy.data(), n, 1}),
                    grad_ref.data(), n, nullptr, 1);
    std::vector<T> fwd_first, grad_first;
    for (const auto& pool : pools) {
      std::vector<T> fwd(static_cast<std::size_t>(m * n), T(-7)),
          grad(static_cast<std::size_t>(k * n), T(-7));
      const bool did_fwd =
          conv_direct<T>(g, image.data(), filter.data(), n, fwd.data(), n, pool.get());
      const bool did_grad =
          conv_direct_transposed<T>(g, image.data(), dy.data(), n, grad.data(), n, pool.get());
      // Without a runs kernel (a CPU without AVX2) both decline; the forward also declines runs
      // of fewer than 8 channels.
      if (!did_fwd) fwd = fwd_ref;
      if (!did_grad) grad = grad_ref;
      for (std::size_t e = 0; e < fwd.size(); ++e) {
        OPWEAVE_CHECK(std::fabs(static_cast<double>(fwd[e] - fwd_ref[e])) <=
                      tol * std::sqrt(static_cast<double>(k)) * 4);
      }
      for (std::size_t e = 0; e < grad.size(); ++e) {
        OPWEAVE_CHECK(std::fabs(static_cast<double>(grad[e] - grad_ref[e])) <=
                      tol * std::sqrt(static_cast<double>(m)) * 4);
      }
      if (fwd_first.empty()) {
        fwd_first = fwd, grad_first = grad;
      } else {
        OPWEAVE_CHECK(std::memcmp(fwd.data(), fwd_first.data(), sizeof(T) * fwd.size()) == 0);
        OPWEAVE_CHECK(std::memcmp(grad.data(), grad_first.data(), sizeof(T) * grad.size()) == 0);
      }
    }
  }
}

// Output channels in multiples of the wide kernel's width take it, others the GEMM-width kernel;
// both compute each element by the same chain, so the first 64 channels of a 70-channel
// convolution (narrow) are the bits of the 64-channel one (wide where the CPU has it), with and
// without the fused bias and ReLU, for any pool.
template <typename T>
void check_wide_and_narrow_give_the_same_bits() {
  ThreadPool one(PoolOptions{0, "test"}), three(PoolOptions{3, "test"});
  const std::int64_t wide_n = 64, narrow_n = 70;
  for (const Case& base : cases()) {
    const PatchGeometry g = geometry(base);
    const std::int64_t m = g.rows(), k = g.cols();
    const auto image = random_values<T>(
        static_cast<std::size_t>(base.batch * base.height * base.width * base.channels), 5);
    const auto narrow_filter = random_values<T>(static_cast<std::size_t>(k * narrow_n), 6);
    std::vector<T> wide_filter(static_cast<std::size_t>(k * wide_n));
    for (std::int64_t r = 0; r < k; ++r) {
      std::copy(narrow_filter.begin() + r * narrow_n, narrow_filter.begin() + r * narrow_n + wide_n,
                wide_filter.begin() + r * wide_n);
    }
    const auto bias = random_values<T>(static_cast<std::size_t>(narrow_n), 8);
    for (const bool fused : {false, true}) {
      Epilogue<T> ep;
      if (fused) ep.bias = bias.data(), ep.activation = Activation::kRelu;
      std::vector<T> narrow(static_cast<std::size_t>(m * narrow_n));
      if (!conv_direct<T>(g, image.data(), narrow_filter.data(), narrow_n, narrow.data(), narrow_n,
                          &one, ep)) {
        continue;  // no runs kernel here, or runs too short: the patch GEMM's business
      }
      for (ThreadPool* pool : {&one, &three}) {
        std::vector<T> wide(static_cast<std::size_t>(m * wide_n));
        OPWEAVE_CHECK(conv_direct<T>(g, image.data(), wide_filter.data(), wide_n, wide.data(),
                                     wide_n, pool, ep));
        for (std::int64_t i = 0; i < m; ++i) {
          OPWEAVE_CHECK(std::memcmp(wide.data() + i * wide_n, narrow.data() + i * narrow_n,
                                    sizeof(T) * static_cast<std::size_t>(wide_n)) == 0);
        }
      }
    }
  }
}

// A fused epilogue (bias with ReLU in the kernel's registers, other activations after it, a
// ragged last panel through the tile) gives the bits of the plain convolution followed by
// apply_epilogue.
template <typename T>
void check_conv_direct_epilogue() {
  ThreadPool pool(PoolOptions{1, "test"});
  for (const Case& cs : cases()) {
    const PatchGeometry g = geometry(cs);
    const std::int64_t m = g.rows(), k = g.cols(), n = cs.out_c;
    const auto image = random_values<T>(
        static_cast<std::size_t>(cs.batch * cs.height * cs.width * cs.channels), 5);
    const auto filter = random_values<T>(static_cast<std::size_t>(k * n), 6);
    auto bias = random_values<T>(static_cast<std::size_t>(n), 8);
    bias[0] = std::numeric_limits<T>::quiet_NaN();
    for (const Activation act : {Activation::kNone, Activation::kRelu, Activation::kRelu6}) {
      for (const bool with_bias : {true, false}) {
        Epilogue<T> ep;
        ep.bias = with_bias ? bias.data() : nullptr;
        ep.activation = act;
        if (ep.empty()) continue;
        std::vector<T> want(static_cast<std::size_t>(m * n)), got(want.size());
        if (!conv_direct<T>(g, image.data(), filter.data(), n, want.data(), n, &pool)) continue;
        apply_epilogue(ep, m, n, 0, want.data(), n);
        OPWEAVE_CHECK(conv_direct<T>(g, image.data(), filter.data(), n, got.data(), n, &pool, ep));
        OPWEAVE_CHECK(std::memcmp(got.data(), want.data(), sizeof(T) * want.size()) == 0);
      }
    }
  }
}

}  // namespace

OPWEAVE_TEST(a_fused_epilogue_gives_the_bits_of_the_convolution_then_the_epilogue_float32) {
  check_conv_direct_epilogue<float>();
}

OPWEAVE_TEST(a_fused_epilogue_gives_the_bits_of_the_convolution_then_the_epilogue_float64) {
  check_conv_direct_epilogue<double>();
}

OPWEAVE_TEST(wide_and_narrow_runs_kernels_give_the_same_bits_float32) {
  check_wide_and_narrow_give_the_same_bits<float>();
}

OPWEAVE_TEST(wide_and_narrow_runs_kernels_give_the_same_bits_float64) {
  check_wide_and_narrow_give_the_same_bits<double>();
}

OPWEAVE_TEST(the_runs_kernel_of_every_isa_computes_its_documented_chain_float32) {
  check_every_runs_kernel<float>();
}

OPWEAVE_TEST(the_runs_kernel_of_every_isa_computes_its_documented_chain_float64) {
  check_every_runs_kernel<double>();
}

OPWEAVE_TEST(direct_convolutions_agree_with_the_patch_gemm_and_across_pools_float32) {
  check_conv_direct<float>();
}

OPWEAVE_TEST(direct_convolutions_agree_with_the_patch_gemm_and_across_pools_float64) {
  check_conv_direct<double>();
}

OPWEAVE_TEST_MAIN()
