// ArgMax / ArgMin along one axis. The input is viewed as contiguous [O, R, I] (R the reduced
// axis). With I == 1 each row is scanned in fixed blocks of kBlock values, four vectors at a time
// (lane l keeps the best value and first index among elements l, l + 4L, ...), the lanes are
// merged by value and then index, and the blocks in order.
// With I > 1 rows of I values are streamed, each column keeping its best value and index.
//
// The rule is TensorFlow's CPU kernel's, a strict comparison against a running best that starts
// at the lowest value (argmax) or the highest (argmin): the first index holding the extreme wins
// ties, NaN never wins (no comparison with it is true), and a row where nothing beats the start --
// all NaN, or all -inf for argmax -- gives 0. Lanes and blocks merge with "greater value, or equal
// value and smaller index", which is that same rule, so the result is the same whatever the
// thread count and block split.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/argminmax_loops.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

constexpr std::int64_t kBlock = 64 * 1024;
constexpr int kLanes = 16;

using argminmax_detail::Best;

template <typename T, bool kMax>
constexpr T start_value() {
  return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
}

template <typename T, bool kMax>
inline bool beats(T a, T b) {
  return kMax ? a > b : a < b;
}

// The better of two candidates; b's index is larger when their values are equal only if it came
// from a later position, so ties keep the smaller index.
template <typename T, bool kMax>
inline Best<T, kMax> better(const Best<T, kMax>& a, const Best<T, kMax>& b) {
  if (beats<T, kMax>(b.value, a.value)) return b;
  if (beats<T, kMax>(a.value, b.value)) return a;
  return b.index < a.index ? b : a;
}

// 1- and 2-byte values (and bool as bytes): scalar lanes; the wider types use the vector loops.
template <typename T, bool kMax>
Best<T, kMax> best_of_run_scalar(const T* x, std::int64_t n) {
  T bv[kLanes];
  std::int64_t bi[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    bv[l] = start_value<T, kMax>();
    bi[l] = 0;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const int l = static_cast<int>(i % kLanes);
    if (beats<T, kMax>(x[i], bv[l])) {
      bv[l] = x[i];
      bi[l] = i;
    }
  }
  Best<T, kMax> best{bv[0], bi[0]};
  for (int l = 1; l < kLanes; ++l) best = better<T, kMax>(best, {bv[l], bi[l]});
  return best;
}

// The vector loops for this CPU, chosen at load time (see fork_guard.h).
template <typename T>
const argminmax_detail::RunFns<T> g_run_fns =
#if defined(OPWEAVE_X86_64)
    isa_flags().can_run_avx512_files() ? argminmax_detail::run_fns_avx512<T>()
    : isa_flags().can_run_avx2_files() ? argminmax_detail::run_fns_avx2<T>()
                                       :
#endif
                                       argminmax_detail::run_fns_baseline<T>();

template <typename T, bool kMax>
Best<T, kMax> best_of_run(const T* x, std::int64_t n) {
  if constexpr (sizeof(T) >= 4) {
    if constexpr (kMax) {
      return g_run_fns<T>.max(x, n);
    } else {
      return g_run_fns<T>.min(x, n);
    }
  } else {
    return best_of_run_scalar<T, kMax>(x, n);
  }
}

template <typename T, bool kMax, typename Out>
void arg_rows(const T* src, std::int64_t rows, std::int64_t r_count, Out* out, ThreadPool* pool) {
  const std::int64_t blocks = (r_count + kBlock - 1) / kBlock;
  auto row_result = [&](const T* row, ThreadPool* inner) {
    if (blocks == 1) return best_of_run<T, kMax>(row, r_count).index;
    std::vector<Best<T, kMax>> partial(static_cast<std::size_t>(blocks));
    parallel_for(
        inner, 0, blocks, 1,
        [&](std::int64_t b0, std::int64_t b1) {
          for (std::int64_t b = b0; b < b1; ++b) {
            const std::int64_t lo = b * kBlock;
            Best<T, kMax> r = best_of_run<T, kMax>(row + lo, std::min(kBlock, r_count - lo));
            r.index += lo;
            partial[static_cast<std::size_t>(b)] = r;
          }
        },
        static_cast<double>(kBlock));
    // In block order with the strict rule: a later block wins only with a better value.
    Best<T, kMax> best = partial[0];
    for (std::int64_t b = 1; b < blocks; ++b) {
      if (beats<T, kMax>(partial[static_cast<std::size_t>(b)].value, best.value)) {
        best = partial[static_cast<std::size_t>(b)];
      }
    }
    return best.index;
  };
  if (rows < 2 * kernel_detail::pool_threads(pool) && blocks > 1) {
    for (std::int64_t o = 0; o < rows; ++o) {
      out[o] = static_cast<Out>(row_result(src + o * r_count, pool));
    }
    return;
  }
  parallel_for(
      pool, 0, rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, r_count)),
      [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o) {
          out[o] = static_cast<Out>(row_result(src + o * r_count, nullptr));
        }
      },
      static_cast<double>(r_count));
}

// I > 1: out[o, j] over r of src[o, r, j], streaming whole rows; columns in chunks that stay in
// L1 with their running bests.
template <typename T, bool kMax, typename Out>
void arg_columns(const T* src, std::int64_t o_count, std::int64_t r_count, std::int64_t i_count,
                 Out* out, ThreadPool* pool) {
  using Idx = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;
  constexpr std::int64_t kChunk = 2048;
  const std::int64_t chunks = (i_count + kChunk - 1) / kChunk;
  parallel_for(
      pool, 0, o_count * chunks, 1,
      [&](std::int64_t u0, std::int64_t u1) {
        std::vector<T> bv(static_cast<std::size_t>(kChunk));
        std::vector<Idx> bi(static_cast<std::size_t>(kChunk));
        for (std::int64_t u = u0; u < u1; ++u) {
          const std::int64_t o = u / chunks;
          const std::int64_t j0 = (u % chunks) * kChunk;
          const std::int64_t w = std::min(kChunk, i_count - j0);
          T* pv = bv.data();
          Idx* pi = bi.data();
          for (std::int64_t j = 0; j < w; ++j) {
            pv[j] = start_value<T, kMax>();
            pi[j] = 0;
          }
          for (std::int64_t r = 0; r < r_count; ++r) {
            const T* row = src + (o * r_count + r) * i_count + j0;
            const Idx ri = static_cast<Idx>(r);
            for (std::int64_t j = 0; j < w; ++j) {
              const bool win = beats<T, kMax>(row[j], pv[j]);
              pv[j] = win ? row[j] : pv[j];
              pi[j] = win ? ri : pi[j];
            }
          }
          for (std::int64_t j = 0; j < w; ++j) out[o * i_count + j0 + j] = static_cast<Out>(pi[j]);
        }
      },
      static_cast<double>(r_count * std::min(kChunk, i_count)));
}

template <typename T, bool kMax, typename Out>
void arg_typed(const T* src, std::int64_t o, std::int64_t r, std::int64_t i, Out* out,
               ThreadPool* pool) {
  if (i == 1) {
    arg_rows<T, kMax, Out>(src, o, r, out, pool);
  } else {
    arg_columns<T, kMax, Out>(src, o, r, i, out, pool);
  }
}

}  // namespace

Tensor arg_reduce(bool is_max, const Tensor& x, int axis, DType out_dtype, ThreadPool* pool) {
  const char* name = is_max ? "argmax" : "argmin";
  if (x.ndim() == 0) {
    throw_invalid_argument(std::string(name) +
                           ": Expected dimension in the range [0, 0), but got " +
                           std::to_string(axis));
  }
  if (axis < -x.ndim() || axis >= x.ndim()) {
    throw_invalid_argument(std::string(name) + ": Expected dimension in the range [" +
                           std::to_string(-x.ndim()) + ", " + std::to_string(x.ndim()) +
                           "), but got " + std::to_string(axis));
  }
  const int a = axis < 0 ? axis + x.ndim() : axis;
  if (out_dtype != DType::kInt64 && out_dtype != DType::kInt32 && out_dtype != DType::kInt16) {
    throw_invalid_argument(std::string(name) + ": output_type must be int16, int32 or int64, got " +
                           dtype_name(out_dtype));
  }
  Shape out_shape;
  std::int64_t o_count = 1, i_count = 1;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d != a) out_shape.push_back(x.dim(d));
    if (d < a) o_count *= x.dim(d);
    if (d > a) i_count *= x.dim(d);
  }
  const std::int64_t r_count = x.dim(a);
  Tensor out = Tensor::empty(out_dtype, out_shape);
  if (out.numel() == 0) return out;
  if (r_count == 0) {
    throw_invalid_argument("Reduction axis " + std::to_string(a) + " is empty in shape " +
                           shape_to_string(x.shape()));
  }
  const Tensor src = x.contiguous();
  auto with_out = [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    // bool compares as the bytes 0 and 1.
    using V = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
    const V* p = static_cast<const V*>(src.raw_data());
    auto run = [&](auto* po) {
      using Out = std::remove_pointer_t<decltype(po)>;
      if (is_max) {
        arg_typed<V, true, Out>(p, o_count, r_count, i_count, po, pool);
      } else {
        arg_typed<V, false, Out>(p, o_count, r_count, i_count, po, pool);
      }
    };
    if (out_dtype == DType::kInt64) {
      run(out.data<std::int64_t>());
    } else if (out_dtype == DType::kInt32) {
      run(out.data<std::int32_t>());
    } else {
      run(out.data<std::int16_t>());
    }
  };
  kernel_detail::dispatch_all(src.dtype(), with_out);
  return out;
}

}  // namespace opweave
