// Reductions (sum, mean, max, min, prod) over any set of axes.
//
// Plan: view the input in memory order (dims sorted by stride; a dense permuted or reversed
// layout is used in place, anything else is copied once), merge adjacent dims that are both
// reduced or both kept, then reduce one reduced group at a time, innermost first. Every pass is a
// contiguous [O, R, I] -> [O, I] problem:
//   I == 1: each output reduces a contiguous run of R values (pairwise, vectorised lanes);
//   I > 1:  rows of I values are streamed and combined element-wise (never walking columns).
//
// Determinism: blocks are fixed sizes that depend only on R (kBlock values, kRowBlock rows,
// kLeafRows-row leaves) and partial results are combined in fixed pairwise trees, so the bits never
// depend on which thread computed which block or on the pool size. Accuracy: a contiguous sum is
// NumPy's pairwise scheme (independent lanes taking 16 values each, a binary tree above) with the
// lanes kept apart up the tree; a strided-axis sum combines 16-row leaves pairwise where NumPy
// adds row after row. The inner loops live in reduce_loops.h (baseline and AVX2 builds).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>

#include "opweave/cpu_info.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/kernels/reduce_loops.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

// The element types the reduction loops are built for (reduce_loops.h instantiates these).
template <typename Fn>
decltype(auto) dispatch_reduce(DType dtype, Fn&& fn) {
  using kernel_detail::TypeTag;
  switch (dtype) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    case DType::kInt32:
      return fn(TypeTag<std::int32_t>{});
    case DType::kInt64:
      return fn(TypeTag<std::int64_t>{});
    case DType::kBool:
      return fn(TypeTag<bool>{});
    default:
      break;
  }
  kernel_detail::unsupported_dtype(dtype);
}

using kernel_detail::pool_threads;

const char* reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "reduce_sum";
    case ReduceOp::kMean:
      return "reduce_mean";
    case ReduceOp::kMax:
      return "reduce_max";
    case ReduceOp::kMin:
      return "reduce_min";
    case ReduceOp::kProd:
      return "reduce_prod";
  }
  return "reduce";
}

using reduce_detail::Combine;
using reduce_detail::LoopFns;

// The vectorised loops for this CPU (same results either way; see reduce_loops.h).
// A variable template, initialised at load time with the other globals of this file rather than
// on first use (a fork() could catch a lazy initialiser half done, see fork_guard.h).
template <Combine C, typename T>
const LoopFns<C, T> g_loops =
    isa_flags().can_run_avx2_files() ? reduce_detail::loops_avx2<C, T>()
                                     : reduce_detail::loops_baseline<C, T>();

template <Combine C, typename T>
const LoopFns<C, T>& loops() {
  return g_loops<C, T>;
}

template <Combine C, typename T>
T apply_scalar(T a, T b) {
  T r = a;
  loops<C, T>().combine(&r, &b, 1);
  return r;
}

// Fixed pairwise tree over partials (its shape depends only on their count).
template <Combine C, typename T>
T combine_tree(std::vector<T>& partial) {
  for (std::size_t width = 1; width < partial.size(); width *= 2) {
    for (std::size_t i = 0; i + width < partial.size(); i += 2 * width) {
      partial[i] = apply_scalar<C, T>(partial[i], partial[i + width]);
    }
  }
  return partial[0];
}

// Contiguous runs are cut into fixed blocks (the unit of parallel work for long rows); the
// block partials go through combine_tree. 64K values = 256 KiB of float32: big enough that
// scheduling is noise, small enough that 2..8 threads get several blocks of a 16 MiB array.
constexpr std::int64_t kBlock = 64 * 1024;

template <Combine C, typename T>
T reduce_run(const T* x, std::int64_t n, ThreadPool* pool) {
  const auto& fns = loops<C, T>();
  const std::int64_t nblocks = (n + kBlock - 1) / kBlock;
  if (nblocks == 1) return fns.run(x, n);
  std::vector<T> partial(static_cast<std::size_t>(nblocks));
  parallel_for(
      pool, 0, nblocks, 1,
      [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          const std::int64_t lo = b * kBlock;
          partial[static_cast<std::size_t>(b)] = fns.run(x + lo, std::min(kBlock, n - lo));
        }
      },
      static_cast<double>(kBlock));
  return combine_tree<C, T>(partial);
}

// Streaming rows: a unit of work reduces up to kRowBlock whole rows (for a C-order array, one
// sequential stream through memory, which is what DRAM prefetching wants), over a column chunk
// of at most 16 KiB so the output row stays in L1. Row-block partials are combined in a fixed
// pairwise tree, so the bits do not depend on how many threads took blocks.
constexpr std::int64_t kRowBlock = 256;
constexpr std::int64_t kColumnChunkBytes = 16 * 1024;

// One pass: src is contiguous [O, R, I]; dst is contiguous [O, I].
template <Combine C, typename T>
void reduce_pass(const T* src, std::int64_t o_count, std::int64_t r_count, std::int64_t i_count,
                 T* dst, ThreadPool* pool) {
  const auto& fns = loops<C, T>();
  if (i_count == 1) {
    const int threads = pool_threads(pool);
    if (o_count < 2 * threads && r_count >= 2 * kBlock) {
      // Few long rows: parallel inside each row (same blocks and tree as the serial path).
      for (std::int64_t o = 0; o < o_count; ++o) {
        dst[o] = reduce_run<C, T>(src + o * r_count, r_count, pool);
      }
    } else {
      parallel_for(
          pool, 0, o_count, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, r_count)),
          [&](std::int64_t o0, std::int64_t o1) {
            for (std::int64_t o = o0; o < o1; ++o) {
              dst[o] = reduce_run<C, T>(src + o * r_count, r_count, nullptr);
            }
          },
          static_cast<double>(r_count));
    }
    return;
  }
  const std::int64_t chunk = std::max<std::int64_t>(16, kColumnChunkBytes / sizeof(T));
  const std::int64_t chunks = (i_count + chunk - 1) / chunk;
  const std::int64_t rblocks = (r_count + kRowBlock - 1) / kRowBlock;
  const std::int64_t block_rows = std::min(r_count, kRowBlock);
  const int depth = reduce_detail::row_tree_depth(block_rows);
  // With one row block the units write dst directly; otherwise per-block partial rows.
  std::vector<T> partial(rblocks > 1 ? static_cast<std::size_t>(o_count * rblocks * i_count) : 0);
  parallel_for(
      pool, 0, o_count * rblocks * chunks, 1,
      [&](std::int64_t u0, std::int64_t u1) {
        std::vector<T> scratch(static_cast<std::size_t>(depth * std::min(chunk, i_count)));
        for (std::int64_t u = u0; u < u1; ++u) {
          const std::int64_t c = u % chunks;
          const std::int64_t rb = (u / chunks) % rblocks;
          const std::int64_t o = u / (chunks * rblocks);
          const std::int64_t j0 = c * chunk;
          const std::int64_t w = std::min(chunk, i_count - j0);
          const std::int64_t r0 = rb * kRowBlock;
          const std::int64_t nrows = std::min(kRowBlock, r_count - r0);
          T* out = rblocks > 1 ? partial.data() + (o * rblocks + rb) * i_count + j0
                               : dst + o * i_count + j0;
          fns.rows(src + (o * r_count + r0) * i_count + j0, nrows, i_count, w, out, scratch.data());
        }
      },
      static_cast<double>(block_rows * std::min(chunk, i_count)));
  if (rblocks == 1) return;
  parallel_for(
      pool, 0, o_count * chunks, 1,
      [&](std::int64_t u0, std::int64_t u1) {
        for (std::int64_t u = u0; u < u1; ++u) {
          const std::int64_t o = u / chunks;
          const std::int64_t j0 = (u % chunks) * chunk;
          const std::int64_t w = std::min(chunk, i_count - j0);
          T* base = partial.data() + o * rblocks * i_count + j0;
          for (std::int64_t width = 1; width < rblocks; width *= 2) {
            for (std::int64_t i = 0; i + width < rblocks; i += 2 * width) {
              fns.combine(base + i * i_count, base + (i + width) * i_count, w);
            }
          }
          std::memcpy(dst + o * i_count + j0, base, sizeof(T) * static_cast<std::size_t>(w));
        }
      },
      static_cast<double>(rblocks * std::min(chunk, i_count)));
}

struct Group {
  std::int64_t size;
  bool reduced;
  std::vector<int> axes;  // original axes, in memory order
};

// Dims of x in memory order (outermost first, size-1 dims dropped) if x is a dense permutation
// of a contiguous block (negative strides allowed: the base moves to the lowest address).
bool dense_order(const Tensor& x, std::vector<int>* order, std::int64_t* base_offset) {
  std::vector<int> dims;
  for (int d = 0; d < x.ndim(); ++d) {
    if (x.dim(d) != 1) dims.push_back(d);
  }
  std::stable_sort(dims.begin(), dims.end(), [&](int p, int q) {
    return std::llabs(x.strides()[static_cast<std::size_t>(p)]) >
           std::llabs(x.strides()[static_cast<std::size_t>(q)]);
  });
  std::int64_t expected = 1, offset = 0;
  for (std::size_t i = dims.size(); i-- > 0;) {
    const std::int64_t s = x.strides()[static_cast<std::size_t>(dims[i])];
    const std::int64_t n = x.dim(dims[i]);
    if (std::llabs(s) != expected) return false;
    if (s < 0) offset += (n - 1) * s;
    expected *= n;
  }
  *order = dims;
  *base_offset = offset;
  return true;
}

template <Combine C, typename T>
Tensor reduce_groups(const Tensor& x, std::int64_t base_offset, std::vector<Group> groups,
                     ThreadPool* pool, std::vector<int>* kept_axes) {
  const DType dtype = x.dtype();
  // Merge neighbours of the same kind (they are contiguous in memory).
  std::vector<Group> merged;
  for (Group& g : groups) {
    if (!merged.empty() && merged.back().reduced == g.reduced) {
      merged.back().size *= g.size;
      merged.back().axes.insert(merged.back().axes.end(), g.axes.begin(), g.axes.end());
    } else {
      merged.push_back(std::move(g));
    }
  }
  const T* src = x.data<T>() + base_offset;
  Tensor current;  // owns src after the first pass
  while (true) {
    int r = -1;
    for (int i = static_cast<int>(merged.size()) - 1; i >= 0; --i) {
      if (merged[static_cast<std::size_t>(i)].reduced) {
        r = i;
        break;
      }
    }
    if (r < 0) break;
    std::int64_t o_count = 1, i_count = 1;
    for (int i = 0; i < r; ++i) o_count *= merged[static_cast<std::size_t>(i)].size;
    for (std::size_t i = static_cast<std::size_t>(r) + 1; i < merged.size(); ++i)
      i_count *= merged[i].size;
    Tensor next = Tensor::empty(dtype, {o_count * i_count});
    reduce_pass<C, T>(src, o_count, merged[static_cast<std::size_t>(r)].size, i_count,
                      next.data<T>(), pool);
    current = next;
    src = current.data<T>();
    // Drop the reduced group; re-merge the kept groups on either side.
    merged.erase(merged.begin() + r);
    if (r > 0 && static_cast<std::size_t>(r) < merged.size() &&
        !merged[static_cast<std::size_t>(r - 1)].reduced) {
      Group& left = merged[static_cast<std::size_t>(r - 1)];
      left.size *= merged[static_cast<std::size_t>(r)].size;
      const auto& ra = merged[static_cast<std::size_t>(r)].axes;
      left.axes.insert(left.axes.end(), ra.begin(), ra.end());
      merged.erase(merged.begin() + r);
    }
  }
  kept_axes->clear();
  for (const Group& g : merged) kept_axes->insert(kept_axes->end(), g.axes.begin(), g.axes.end());
  return current;
}

}  // namespace

Tensor reduce(ReduceOp op, const Tensor& x, const std::optional<std::vector<int>>& axes,
              bool keepdims, ThreadPool* pool) {
  const char* name = reduce_name(op);
  const int nd = x.ndim();
  // int8, int16 and uint8 are reduced in int32: sums and products wrap the same modulo 2^8 or
  // 2^16, maxima are exact. Integer means add in int64 (no overflow for any real size) and
  // truncate, as TensorFlow's.
  const DType dt = x.dtype();
  const bool small_int = dt == DType::kInt8 || dt == DType::kInt16 || dt == DType::kUInt8;
  if (small_int || (op == ReduceOp::kMean && dtype_is_integer(dt) && dt != DType::kInt64)) {
    const DType wide = op == ReduceOp::kMean ? DType::kInt64 : DType::kInt32;
    return cast(reduce(op, cast(x, wide, pool), axes, keepdims, pool), dt, pool);
  }
  if (x.dtype() == DType::kBool &&
      (op == ReduceOp::kSum || op == ReduceOp::kMean || op == ReduceOp::kProd)) {
    throw_invalid_argument(std::string(name) + " does not support dtype bool (input shape " +
                           shape_to_string(x.shape()) + ")");
  }
  std::vector<bool> reduced(static_cast<std::size_t>(nd), !axes.has_value());
  if (axes) {
    for (int a : *axes) {
      const int n = kernel_detail::normalize_axis(name, a, nd);
      if (reduced[static_cast<std::size_t>(n)]) {
        throw_invalid_argument(std::string(name) + ": axis " + std::to_string(a) +
                               " is listed twice (input shape " + shape_to_string(x.shape()) + ")");
      }
      reduced[static_cast<std::size_t>(n)] = true;
    }
  }
  Shape out_shape;
  std::int64_t count = 1;
  for (int d = 0; d < nd; ++d) {
    if (reduced[static_cast<std::size_t>(d)]) {
      count *= x.dim(d);
      if (keepdims) out_shape.push_back(1);
    } else {
      out_shape.push_back(x.dim(d));
    }
  }
  const DType dtype = x.dtype();
  Tensor out = Tensor::empty(dtype, out_shape);
  if (count == 0) {
    if (op == ReduceOp::kMean && !dtype_is_floating(dtype) && out.numel() > 0) {
      throw_invalid_argument(std::string(name) + ": mean of an empty axis of an integer tensor " +
                             "(input shape " + shape_to_string(x.shape()) + ")");
    }
    // The identity of each reduction, as TensorFlow gives: 0 for sums, NaN for means, the lowest
    // value (-inf for floats) for max and the highest for min.
    dispatch_reduce(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Limits = std::numeric_limits<T>;
      T fill = T(0);
      if (op == ReduceOp::kProd) {
        fill = T(1);
      } else if (op == ReduceOp::kMean) {
        fill = static_cast<T>(std::numeric_limits<double>::quiet_NaN());
      } else if (op == ReduceOp::kMax) {
        fill = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
      } else if (op == ReduceOp::kMin) {
        fill = Limits::has_infinity ? Limits::infinity() : Limits::max();
      }
      std::fill(out.data<T>(), out.data<T>() + out.numel(), fill);
    });
    return out;
  }
  if (out.numel() == 0) return out;

  Tensor src = x;
  std::vector<int> order;
  std::int64_t base = 0;
  if (!dense_order(src, &order, &base)) {
    src = x.contiguous();
    dense_order(src, &order, &base);
  }
  std::vector<Group> groups;
  for (int d : order) groups.push_back({src.dim(d), reduced[static_cast<std::size_t>(d)], {d}});
  const bool any_reduced =
      std::any_of(groups.begin(), groups.end(), [](const Group& g) { return g.reduced; });
  if (!any_reduced) {
    // Nothing to combine (only size-1 axes are reduced): the result is a fresh copy.
    std::vector<int> identity(static_cast<std::size_t>(nd));
    std::iota(identity.begin(), identity.end(), 0);
    return transpose(x, identity, pool).reshaped(out_shape);
  }

  dispatch_reduce(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // bool max/min are any/all: on bytes 0/1 they are exactly max/min.
    using W = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
    const Tensor& wsrc = src;
    std::vector<int> kept;
    Tensor result;
    auto run = [&](auto combine_tag) {
      constexpr Combine C = decltype(combine_tag)::value;
      result = reduce_groups<C, W>(wsrc, base, groups, pool, &kept);
    };
    if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
      if constexpr (!std::is_same_v<T, bool>) run(std::integral_constant<Combine, Combine::kAdd>{});
    } else if (op == ReduceOp::kProd) {
      if constexpr (!std::is_same_v<T, bool>) run(std::integral_constant<Combine, Combine::kMul>{});
    } else if (op == ReduceOp::kMax) {
      run(std::integral_constant<Combine, Combine::kMax>{});
    } else {
      run(std::integral_constant<Combine, Combine::kMin>{});
    }
    W* r = result.data<W>();
    const std::int64_t n = result.numel();
    if (op == ReduceOp::kMean) {
      if constexpr (std::is_floating_point_v<T>) {
        const T c = static_cast<T>(count);
        for (std::int64_t i = 0; i < n; ++i) r[i] = r[i] / c;
      } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        for (std::int64_t i = 0; i < n; ++i) r[i] = static_cast<T>(r[i] / static_cast<T>(count));
      }
    }
    // result holds the kept axes in memory order; write them out in the original axis order. A
    // kept axis with a negative stride in src was walked from its last index to its first, so
    // its view runs backwards from the far end.
    Shape view_shape, view_strides;
    std::int64_t view_offset = 0;
    {
      Shape strides_by_axis(static_cast<std::size_t>(nd), 0);
      std::int64_t s = 1;
      for (std::size_t i = kept.size(); i-- > 0;) {
        const auto d = static_cast<std::size_t>(kept[i]);
        if (src.strides()[d] < 0) {
          strides_by_axis[d] = -s;
          view_offset += (x.dim(kept[i]) - 1) * s;
        } else {
          strides_by_axis[d] = s;
        }
        s *= x.dim(kept[i]);
      }
      for (int d = 0; d < nd; ++d) {
        if (reduced[static_cast<std::size_t>(d)]) {
          if (keepdims) {
            view_shape.push_back(1);
            view_strides.push_back(0);
          }
        } else {
          view_shape.push_back(x.dim(d));
          view_strides.push_back(strides_by_axis[static_cast<std::size_t>(d)]);
        }
      }
    }
    Tensor view = Tensor::wrap(dtype, view_shape, view_strides, result.data<W>() + view_offset,
                               result.owner());
    if (view.is_contiguous()) {
      out = view;
    } else {
      std::vector<int> identity(view_shape.size());
      std::iota(identity.begin(), identity.end(), 0);
      out = transpose(view, identity, pool);
    }
  });
  return out;
}

}  // namespace opweave
