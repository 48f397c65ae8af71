// Kernels that move elements by index: GatherV2 (rows of params picked by indices),
// UnsortedSegmentSum (rows of data added into the rows segment_ids name: the gradient of gather)
// and OneHot. Indices are checked before anything is written: an index out of range is an
// InvalidArgument error naming it, as TensorFlow's CPU kernels do.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/copy_util.h"

namespace opweave {
namespace {

using kernel_detail::copy_elements;
using kernel_detail::element_ptr;

std::int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// "indices[1,0]": the multi-index of flat position `i` in a tensor of `shape`.
std::string index_string(const char* name, const Shape& shape, std::int64_t i) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  std::string s = std::string(name) + "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

// The values of an int32 / int64 index tensor, widened to int64 (contiguous, C order).
std::vector<std::int64_t> index_values(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<std::int64_t> out(static_cast<std::size_t>(c.numel()));
  kernel_detail::dispatch_index(c.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* p = c.data<I>();
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<std::int64_t>(p[k]);
  });
  return out;
}

// -- GatherV2 ------------------------------------------------------------------------------------

// Below this many bytes per gathered row, a chunk of rows is copied by one typed loop instead of
// one memcpy call per row.
constexpr std::int64_t kShortRowBytes = 256;

void gather_kernel(KernelContext& ctx, std::int64_t batch_dims) {
  const Tensor& params = ctx.inputs[0];
  const Tensor& indices_t = ctx.inputs[1];
  const std::int64_t axis_in = int_scalar_input(ctx, 2, "axis");
  const int rank = params.ndim();
  if (axis_in < -rank || axis_in >= rank) {
    throw_node_error(ctx.node, "Expected axis in the range [" + std::to_string(-rank) + ", " +
                                   std::to_string(rank) + "), but got " + std::to_string(axis_in));
  }
  if (batch_dims != 0) {
    throw_node_error(ctx.node, "batch_dims other than 0 is not supported");
  }
  const auto axis = static_cast<std::size_t>(axis_in < 0 ? axis_in + rank : axis_in);
  const std::int64_t outer = product(params.shape(), 0, axis);
  const std::int64_t limit = params.shape()[axis];
  const std::int64_t inner = product(params.shape(), axis + 1, params.shape().size());
  const std::vector<std::int64_t> idx = index_values(indices_t);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < 0 || idx[k] >= limit) {
      throw_node_error(
          ctx.node, index_string("indices", indices_t.shape(), static_cast<std::int64_t>(k)) +
                        " = " + std::to_string(idx[k]) + " is not in [0, " + std::to_string(limit) +
                        ")");
    }
  }
  Shape out_shape(params.shape().begin(), params.shape().begin() + static_cast<long>(axis));
  out_shape.insert(out_shape.end(), indices_t.shape().begin(), indices_t.shape().end());
  out_shape.insert(out_shape.end(), params.shape().begin() + static_cast<long>(axis) + 1,
                   params.shape().end());
  Tensor out = Tensor::empty(params.dtype(), out_shape);
  const auto m = static_cast<std::int64_t>(idx.size());
  const std::int64_t rows = outer * m;
  if (rows == 0 || inner == 0) {
    ctx.outputs[0] = std::move(out);
    return;
  }
  const Tensor src = params.contiguous();
  const DType dtype = params.dtype();
  const std::size_t item = dtype_size(dtype);
  const void* from = src.raw_data();
  void* to = out.raw_data();
  // Output row r = (o, j) takes params row (o, idx[j]).
  auto src_row = [&](std::int64_t r) {
    return (r / m * limit + idx[static_cast<std::size_t>(r % m)]) * inner;
  };
  const auto row_bytes = inner * static_cast<std::int64_t>(item);
  if (row_bytes >= kShortRowBytes || dtype == DType::kString) {
    kernel_detail::for_row_pieces(ctx.intra_pool, rows, inner, item,
                                  [&](std::int64_t r, std::int64_t b, std::int64_t e) {
                                    copy_elements(dtype, element_ptr(to, r * inner + b, item),
                                                  element_ptr(from, src_row(r) + b, item), e - b);
                                  });
  } else {
    kernel_detail::dispatch_by_size(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* s = static_cast<const T*>(from);
      T* d = static_cast<T*>(to);
      kernel_detail::for_rows(ctx.intra_pool, rows, row_bytes,
                              [&](std::int64_t r0, std::int64_t r1) {
                                for (std::int64_t r = r0; r < r1; ++r) {
                                  const T* row = s + src_row(r);
                                  T* dst = d + r * inner;
                                  for (std::int64_t c = 0; c < inner; ++c) dst[c] = row[c];
                                }
                              });
    });
  }
  ctx.outputs[0] = std::move(out);
}

// -- UnsortedSegmentSum --------------------------------------------------------------------------

void unsorted_segment_sum_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.inputs[0];
  const Tensor& ids_t = ctx.inputs[1];
  const std::int64_t num = int_scalar_input(ctx, 2, "num_segments");
  if (num < 0) {
    throw_node_error(ctx.node, "num_segments must be non-negative, got " + std::to_string(num));
  }
  const std::size_t id_rank = ids_t.shape().size();
  if (id_rank > data.shape().size() ||
      !std::equal(ids_t.shape().begin(), ids_t.shape().end(), data.shape().begin())) {
    throw_node_error(
        ctx.node, "data.shape = " + shape_to_string(data.shape()) +
                      " does not start with segment_ids.shape = " + shape_to_string(ids_t.shape()));
  }
  const std::vector<std::int64_t> ids = index_values(ids_t);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] >= num) {
      throw_node_error(ctx.node,
                       index_string("segment_ids", ids_t.shape(), static_cast<std::int64_t>(k)) +
                           " = " + std::to_string(ids[k]) + " is out of range [0, " +
                           std::to_string(num) + ")");
    }
  }
  Shape out_shape{num};
  out_shape.insert(out_shape.end(), data.shape().begin() + static_cast<long>(id_rank),
                   data.shape().end());
  const std::int64_t inner = product(data.shape(), id_rank, data.shape().size());
  Tensor out = Tensor::zeros(data.dtype(), out_shape);
  const Tensor src = data.contiguous();
  kernel_detail::dispatch_all(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      kernel_detail::unsupported_dtype(DType::kBool);
    } else {
      const T* s = src.data<T>();
      T* d = out.data<T>();
      // Each thread owns a range of columns and adds the rows in index order, so every output
      // element is the same sum in the same order whoever computes it.
      auto body = [&](std::int64_t c0, std::int64_t c1) {
        for (std::size_t i = 0; i < ids.size(); ++i) {
          if (ids[i] < 0) continue;  // negative ids are dropped, as in TensorFlow
          const T* row = s + static_cast<std::int64_t>(i) * inner;
          T* acc = d + ids[i] * inner;
          for (std::int64_t c = c0; c < c1; ++c) acc[c] = static_cast<T>(acc[c] + row[c]);
        }
      };
      const auto total = static_cast<std::int64_t>(ids.size()) * inner;
      if (total < kernel_detail::kElementwiseParallelThreshold || inner < 64) {
        body(0, inner);
      } else {
        parallel_for(ctx.intra_pool, 0, inner, 64, body, static_cast<double>(ids.size()) * 2.0);
      }
    }
  });
  ctx.outputs[0] = std::move(out);
}

// -- OneHot --------------------------------------------------------------------------------------

Kernel make_one_hot(const NodeDef& node) {
  const std::int64_t axis_attr = node.has_attr("axis") ? node.attr<std::int64_t>("axis") : -1;
  return [axis_attr](KernelContext& ctx) {
    const Tensor& indices_t = ctx.inputs[0];
    const std::int64_t depth = int_scalar_input(ctx, 1, "depth");
    const Tensor on = ctx.inputs[2].contiguous();
    const Tensor off = ctx.inputs[3].contiguous();
    const int rank = indices_t.ndim();
    if (axis_attr < -1 || axis_attr > rank) {
      throw_node_error(ctx.node, "Expected axis to be -1 or between [0, " +
                                     std::to_string(rank + 1) +
                                     ").  But received: " + std::to_string(axis_attr));
    }
    if (depth < 0) {
      throw_node_error(ctx.node, "depth must be non-negative, got: " + std::to_string(depth));
    }
    if (on.numel() != 1 || on.ndim() != 0 || off.numel() != 1 || off.ndim() != 0) {
      throw_node_error(ctx.node, "on_value and off_value must be scalars, got shapes " +
                                     shape_to_string(on.shape()) + " and " +
                                     shape_to_string(off.shape()));
    }
    const auto axis = static_cast<std::size_t>(axis_attr == -1 ? rank : axis_attr);
    Shape out_shape = indices_t.shape();
    out_shape.insert(out_shape.begin() + static_cast<long>(axis), depth);
    Tensor out = Tensor::empty(on.dtype(), out_shape);
    const std::int64_t outer = product(indices_t.shape(), 0, axis);
    const std::int64_t inner = product(indices_t.shape(), axis, indices_t.shape().size());
    const Tensor idx_c = indices_t.contiguous();
    std::vector<std::int64_t> idx(static_cast<std::size_t>(idx_c.numel()));
    if (idx_c.dtype() == DType::kUInt8) {
      for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = idx_c.data<std::uint8_t>()[k];
    } else {
      idx = index_values(idx_c);
    }
    const DType dtype = on.dtype();
    const std::size_t item = dtype_size(dtype);
    // Output row (o, d) holds inner elements: on where indices[o, i] == d.
    auto fill = [&](auto* dst, const auto& on_v, const auto& off_v) {
      kernel_detail::for_rows(ctx.intra_pool, outer * depth,
                              inner * static_cast<std::int64_t>(item),
                              [&](std::int64_t r0, std::int64_t r1) {
                                for (std::int64_t r = r0; r < r1; ++r) {
                                  const std::int64_t d = r % depth;
                                  const std::int64_t* row = idx.data() + r / depth * inner;
                                  auto* o = dst + r * inner;
                                  for (std::int64_t i = 0; i < inner; ++i) {
                                    o[i] = row[i] == d ? on_v : off_v;
                                  }
                                }
                              });
    };
    if (dtype == DType::kString) {
      fill(out.data<std::string>(), *on.data<std::string>(), *off.data<std::string>());
    } else {
      kernel_detail::dispatch_by_size(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T on_v;
        T off_v;
        std::memcpy(&on_v, on.raw_data(), sizeof(T));  // the bits, whatever the dtype
        std::memcpy(&off_v, off.raw_data(), sizeof(T));
        fill(out.data<T>(), on_v, off_v);
      });
    }
    ctx.outputs[0] = std::move(out);
  };
}

}  // namespace

void register_gather_kernels() {
  register_kernel("GatherV2",
                  {[](const NodeDef& node) -> Kernel {
                     const std::int64_t batch_dims =
                         node.has_attr("batch_dims") ? node.attr<std::int64_t>("batch_dims") : 0;
                     return [batch_dims](KernelContext& ctx) { gather_kernel(ctx, batch_dims); };
                   },
                   CostHint::kMeasure});
  register_kernel("UnsortedSegmentSum",
                  {[](const NodeDef&) -> Kernel { return unsorted_segment_sum_kernel; },
                   CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  register_kernel("OneHot", {make_one_hot, CostHint::kMeasure});
}

}  // namespace opweave
