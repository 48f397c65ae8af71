// Kernels of TopKV2 (the k largest entries of each last-dimension row, with their int32 indices)
// and InTopKV2 (whether each row's target class is among its k largest predictions). Rows are
// split over the intra-op pool, each row computed by one thread.
//
// TopKV2 orders entries by value, larger first, and equal values by index, lower first (as
// TensorFlow's stable comparator); NaN counts as larger than every number, so the order is total
// and the result well defined. sorted=False returns the same k entries in the order they appear
// in the row (TensorFlow leaves that order unspecified).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

using kernel_detail::pool_threads;

// A chunk of rows handed to a thread holds at least this many input elements.
constexpr std::int64_t kTopKGrainElements = 16 * 1024;

// fn(row_begin, row_end) over [0, rows) in whole rows.
template <typename Fn>
void for_row_blocks(ThreadPool* pool, std::int64_t rows, std::int64_t n, double cycles_per_row,
                    const Fn& fn) {
  if (rows <= 0) return;
  const std::int64_t len = std::max<std::int64_t>(n, 1);
  if (rows * len < 2 * kTopKGrainElements || pool_threads(pool) == 1 || rows == 1) {
    fn(std::int64_t{0}, rows);
    return;
  }
  parallel_for(pool, 0, rows, std::max<std::int64_t>(1, kTopKGrainElements / len), fn,
               cycles_per_row);
}

// a comes before b: larger value first, NaN first of all, equal values by lower index.
template <typename T>
struct Before {
  const T* row;
  bool operator()(std::int32_t a, std::int32_t b) const {
    const T va = row[a];
    const T vb = row[b];
    if constexpr (std::is_floating_point_v<T>) {
      const bool na = std::isnan(va);
      const bool nb = std::isnan(vb);
      if (na || nb) return na != nb ? na : a < b;
    }
    if (va != vb) return va > vb;
    return a < b;
  }
};

template <typename T>
void top_k_rows(const T* in, T* values, std::int32_t* indices, std::int64_t r0, std::int64_t r1,
                std::int64_t n, std::int64_t k, bool sorted) {
  std::vector<std::int32_t> idx(static_cast<std::size_t>(k == 1 ? 0 : n));
  for (std::int64_t r = r0; r < r1; ++r) {
    const T* row = in + r * n;
    T* vo = values + r * k;
    std::int32_t* io = indices + r * k;
    const Before<T> before{row};
    if (k == 1) {
      std::int32_t best = 0;
      for (std::int32_t i = 1; i < static_cast<std::int32_t>(n); ++i) {
        if (before(i, best)) best = i;
      }
      vo[0] = row[best];
      io[0] = best;
      continue;
    }
    std::iota(idx.begin(), idx.end(), 0);
    const auto first = idx.begin();
    const auto kth = first + k;
    if (sorted && k * 8 <= n) {
      std::partial_sort(first, kth, idx.end(), before);  // O(n log k) for a small k
    } else {
      if (k < n) std::nth_element(first, kth - 1, idx.end(), before);
      if (sorted) {
        std::sort(first, kth, before);
      } else {
        std::sort(first, kth);  // the input's order
      }
    }
    for (std::int64_t i = 0; i < k; ++i) {
      io[i] = idx[static_cast<std::size_t>(i)];
      vo[i] = row[io[i]];
    }
  }
}

Kernel make_top_k(const NodeDef& node) {
  const bool sorted = !node.has_attr("sorted") || node.attr<bool>("sorted");
  return [sorted](KernelContext& ctx) {
    const Tensor& input = ctx.inputs[0];
    const std::int64_t k = int_scalar_input(ctx, 1, "k");
    if (k < 0) throw_node_error(ctx.node, "Need k >= 0, got " + std::to_string(k));
    if (input.ndim() < 1) {
      throw_node_error(ctx.node,
                       "input must be >= 1-D, got shape " + shape_to_string(input.shape()));
    }
    const std::int64_t n = input.shape().back();
    if (n < k) {
      throw_node_error(ctx.node, "input must have at least k columns. Had " + std::to_string(n) +
                                     ", needed " + std::to_string(k));
    }
    if (n > std::numeric_limits<std::int32_t>::max()) {
      throw_node_error(ctx.node, "input's last dimension " + std::to_string(n) +
                                     " does not fit the int32 indices");
    }
    Shape out_shape = input.shape();
    out_shape.back() = k;
    Tensor values = Tensor::empty(input.dtype(), out_shape);
    Tensor indices = Tensor::empty(DType::kInt32, out_shape);
    if (values.numel() > 0) {
      const Tensor x = input.contiguous();
      const std::int64_t rows = x.numel() / n;
      const double log_k = std::log2(static_cast<double>(k) + 1.0);
      kernel_detail::dispatch_all(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) {
          kernel_detail::unsupported_dtype(DType::kBool);
        } else {
          const T* px = x.data<T>();
          T* pv = values.data<T>();
          std::int32_t* pi = indices.data<std::int32_t>();
          for_row_blocks(ctx.intra_pool, rows, n, 4.0 * static_cast<double>(n) * log_k,
                         [&](std::int64_t r0, std::int64_t r1) {
                           top_k_rows<T>(px, pv, pi, r0, r1, n, k, sorted);
                         });
        }
      });
    }
    ctx.outputs[0] = std::move(values);
    ctx.outputs[1] = std::move(indices);
  };
}

// InTopKV2: out[b] is true when fewer than k predictions of row b are larger than the target's;
// ties count in the target's favour. A target out of range, or a non-finite prediction anywhere in
// the row, gives false (TensorFlow's CPU kernel).
void in_top_k_kernel(KernelContext& ctx) {
  const Tensor& predictions = ctx.inputs[0];
  const Tensor& targets_t = ctx.inputs[1];
  if (predictions.ndim() != 2) {
    throw_node_error(ctx.node, "predictions must be 2-dimensional, got shape " +
                                   shape_to_string(predictions.shape()));
  }
  if (targets_t.ndim() != 1) {
    throw_node_error(
        ctx.node, "targets must be 1-dimensional, got shape " + shape_to_string(targets_t.shape()));
  }
  if (ctx.inputs[2].ndim() != 0) {
    throw_node_error(ctx.node,
                     "k must be 0-D, got shape " + shape_to_string(ctx.inputs[2].shape()));
  }
  const std::int64_t k = int_scalar_input(ctx, 2, "k");
  const std::int64_t rows = predictions.shape()[0];
  const std::int64_t n = predictions.shape()[1];
  if (targets_t.shape()[0] != rows) {
    throw_node_error(ctx.node, "First dimension of predictions " + std::to_string(rows) +
                                   " must match length of targets " +
                                   std::to_string(targets_t.shape()[0]));
  }
  std::vector<std::int64_t> targets(static_cast<std::size_t>(rows));
  {
    const Tensor c = targets_t.contiguous();
    kernel_detail::dispatch_index(c.dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      const I* p = c.data<I>();
      for (std::size_t i = 0; i < targets.size(); ++i) targets[i] = p[i];
    });
  }
  Tensor out = Tensor::empty(DType::kBool, {rows});
  const Tensor x = predictions.contiguous();
  kernel_detail::dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    bool* po = out.data<bool>();
    for_row_blocks(ctx.intra_pool, rows, n, 2.0 * static_cast<double>(n),
                   [&](std::int64_t r0, std::int64_t r1) {
                     for (std::int64_t r = r0; r < r1; ++r) {
                       const T* row = px + r * n;
                       const std::int64_t t = targets[static_cast<std::size_t>(r)];
                       if (t < 0 || t >= n || !std::isfinite(row[t])) {
                         po[r] = false;
                         continue;
                       }
                       const T target = row[t];
                       std::int64_t larger = 0;
                       bool finite = true;
                       for (std::int64_t i = 0; i < n; ++i) {
                         finite = finite && std::isfinite(row[i]);
                         larger += row[i] > target ? 1 : 0;
                       }
                       po[r] = finite && larger < k;
                     }
                   });
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void register_topk_kernels() {
  register_kernel("TopKV2", {make_top_k, CostHint::kMeasure, /*stateful=*/false,
                             /*float16_via_float32=*/true});
  register_kernel("InTopKV2", {[](const NodeDef&) -> Kernel { return in_top_k_kernel; },
                               CostHint::kMeasure, /*stateful=*/false,
                               /*float16_via_float32=*/true});
}

}  // namespace opweave
