// Kernels that join tensors along an axis or cut one into pieces: ConcatV2, Pack (stack), Unpack
// (unstack), Split and SplitV. Seen around the axis, every tensor is a matrix [outer, chunk]
// (outer = the product of the dimensions before the axis, chunk = the axis and everything after
// it); joining copies each input's rows into its column range of the output's rows, cutting the
// reverse. The copies run over output (or input) rows cut into pieces, so even a concat along
// axis 0 (one long row) splits over threads. Pieces along axis 0 of a contiguous input are views
// of its buffer (no copy), as in TensorFlow.
#include <algorithm>
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

// The rows of `parts` (part k: `outer` rows of chunks[k] elements, contiguous) side by side in
// `out` (outer rows of the chunks' sum).
void join_rows(ThreadPool* pool, DType dtype, const std::vector<const void*>& parts,
               const std::vector<std::int64_t>& chunks, std::int64_t outer, void* out) {
  std::vector<std::int64_t> start(chunks.size() + 1, 0);  // where part k begins in a row
  for (std::size_t k = 0; k < chunks.size(); ++k) start[k + 1] = start[k] + chunks[k];
  const std::int64_t row = start.back();
  const std::size_t item = dtype_size(dtype);
  kernel_detail::for_row_pieces(
      pool, outer, row, item, [&](std::int64_t r, std::int64_t b, std::int64_t e) {
        // The part holding column b: the last start <= b, skipping
        // empty parts.
        auto k = static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), b) -
                                          start.begin() - 1);
        while (b < e) {
          const std::int64_t take = std::min(e, start[k + 1]) - b;
          copy_elements(dtype, element_ptr(out, r * row + b, item),
                        element_ptr(parts[k], r * chunks[k] + (b - start[k]), item), take);
          b += take;
          ++k;
        }
      });
}

// The reverse of join_rows: the rows of `in` cut into column ranges, one per output part.
void cut_rows(ThreadPool* pool, DType dtype, const void* in, std::int64_t outer,
              const std::vector<std::int64_t>& chunks, const std::vector<void*>& parts) {
  std::vector<std::int64_t> start(chunks.size() + 1, 0);
  for (std::size_t k = 0; k < chunks.size(); ++k) start[k + 1] = start[k] + chunks[k];
  const std::int64_t row = start.back();
  const std::size_t item = dtype_size(dtype);
  kernel_detail::for_row_pieces(
      pool, outer, row, item, [&](std::int64_t r, std::int64_t b, std::int64_t e) {
        auto k = static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), b) -
                                          start.begin() - 1);
        while (b < e) {
          const std::int64_t take = std::min(e, start[k + 1]) - b;
          copy_elements(dtype, element_ptr(parts[k], r * chunks[k] + (b - start[k]), item),
                        element_ptr(in, r * row + b, item), take);
          b += take;
          ++k;
        }
      });
}

// Joins same-rank inputs along `axis`: their shapes agree everywhere else.
Tensor join(const KernelContext& ctx, const std::vector<Tensor>& inputs, int axis,
            const Shape& out_shape) {
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t outer = product(out_shape, 0, a);
  std::vector<Tensor> parts;
  std::vector<const void*> ptrs;
  std::vector<std::int64_t> chunks;
  for (const Tensor& t : inputs) {
    parts.push_back(t.contiguous());
    ptrs.push_back(parts.back().raw_data());
    chunks.push_back(outer == 0 ? 0 : t.numel() / outer);
  }
  Tensor out = Tensor::empty(inputs[0].dtype(), out_shape);
  join_rows(ctx.intra_pool, out.dtype(), ptrs, chunks, outer, out.raw_data());
  return out;
}

// Cuts `x` along `axis` into pieces of `sizes` there; views of x's buffer when the pieces are
// contiguous in it (axis 0, or only size-1 dimensions before it).
void cut(KernelContext& ctx, const Tensor& x, int axis, const std::vector<std::int64_t>& sizes,
         bool drop_axis) {
  const auto a = static_cast<std::size_t>(axis);
  const std::int64_t outer = product(x.shape(), 0, a);
  const std::int64_t inner = product(x.shape(), a + 1, x.shape().size());
  std::vector<Shape> shapes;
  for (std::int64_t s : sizes) {
    Shape shape = x.shape();
    if (drop_axis) {
      shape.erase(shape.begin() + axis);
    } else {
      shape[a] = s;
    }
    shapes.push_back(shape);
  }
  if (outer == 1 && x.is_contiguous()) {
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const bool empty = sizes[k] * inner == 0;
      ctx.outputs[k] =
          kernel_detail::view_of(x, empty ? 0 : offset, shapes[k], contiguous_strides(shapes[k]));
      offset += sizes[k] * inner;
    }
    return;
  }
  const Tensor src = x.contiguous();
  std::vector<void*> ptrs;
  std::vector<std::int64_t> chunks;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    ctx.outputs[k] = Tensor::empty(x.dtype(), shapes[k]);
    ptrs.push_back(ctx.outputs[k].raw_data());
    chunks.push_back(sizes[k] * inner);
  }
  cut_rows(ctx.intra_pool, x.dtype(), src.raw_data(), outer, chunks, ptrs);
}

int checked_axis(const KernelContext& ctx, std::int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    throw_node_error(ctx.node, std::string(what) + " must be in [" + std::to_string(-rank) + ", " +
                                   std::to_string(rank) + "), but got " + std::to_string(axis));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

void concat_kernel(KernelContext& ctx) {
  const std::size_t n = ctx.inputs.size() - 1;
  const std::int64_t axis_in = int_scalar_input(ctx, n, "axis");
  const Tensor& first = ctx.inputs[0];
  const int rank = first.ndim();
  if (rank == 0) {
    throw_node_error(ctx.node, "ConcatOp : Can't concatenate scalars (use tf.stack instead)");
  }
  if (axis_in < -rank || axis_in >= rank) {
    throw_node_error(ctx.node, "ConcatOp : Expected concatenating dimensions in the range [" +
                                   std::to_string(-rank) + ", " + std::to_string(rank) +
                                   "), but got " + std::to_string(axis_in));
  }
  const int axis = static_cast<int>(axis_in < 0 ? axis_in + rank : axis_in);
  Shape out_shape = first.shape();
  out_shape[static_cast<std::size_t>(axis)] = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const Tensor& t = ctx.inputs[k];
    bool match = t.ndim() == rank;
    for (int d = 0; match && d < rank; ++d) {
      match = d == axis ||
              t.shape()[static_cast<std::size_t>(d)] == first.shape()[static_cast<std::size_t>(d)];
    }
    if (!match) {
      throw_node_error(ctx.node, "ConcatOp : Dimensions of inputs should match: shape[0] = " +
                                     shape_to_string(first.shape()) + " vs. shape[" +
                                     std::to_string(k) + "] = " + shape_to_string(t.shape()));
    }
    out_shape[static_cast<std::size_t>(axis)] += t.shape()[static_cast<std::size_t>(axis)];
  }
  if (n == 1) {
    ctx.outputs[0] = first;
    return;
  }
  std::vector<Tensor> inputs;
  for (std::size_t k = 0; k < n; ++k) inputs.push_back(ctx.inputs[k]);
  ctx.outputs[0] = join(ctx, inputs, axis, out_shape);
}

Kernel make_pack(const NodeDef& node) {
  const std::int64_t axis_attr = node.has_attr("axis") ? node.attr<std::int64_t>("axis") : 0;
  return [axis_attr](KernelContext& ctx) {
    const Tensor& first = ctx.inputs[0];
    const int rank = first.ndim() + 1;
    const int axis = checked_axis(ctx, axis_attr, rank, "axis");
    std::vector<Tensor> inputs;
    for (std::size_t k = 0; k < ctx.inputs.size(); ++k) {
      const Tensor& t = ctx.inputs[k];
      if (t.shape() != first.shape()) {
        throw_node_error(
            ctx.node,
            "Shapes of all inputs must match: values[0].shape = " + shape_to_string(first.shape()) +
                " != values[" + std::to_string(k) + "].shape = " + shape_to_string(t.shape()));
      }
      Shape s = t.shape();
      s.insert(s.begin() + axis, 1);
      // A view with the new axis: strides of the size-1 axis never move the pointer.
      Shape strides = t.strides();
      strides.insert(strides.begin() + axis, 0);
      inputs.push_back(Tensor::wrap(t.dtype(), s, strides, t.raw_data(), t.owner()));
    }
    Shape out_shape = first.shape();
    out_shape.insert(out_shape.begin() + axis, static_cast<std::int64_t>(ctx.inputs.size()));
    ctx.outputs[0] = join(ctx, inputs, axis, out_shape);
  };
}

Kernel make_unpack(const NodeDef& node) {
  const std::int64_t axis_attr = node.has_attr("axis") ? node.attr<std::int64_t>("axis") : 0;
  return [axis_attr](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    const int axis = checked_axis(ctx, axis_attr, x.ndim(), "axis");
    const std::int64_t num = x.shape()[static_cast<std::size_t>(axis)];
    if (num != static_cast<std::int64_t>(ctx.outputs.size())) {
      throw_node_error(ctx.node, "Input shape axis " + std::to_string(axis) + " must equal " +
                                     std::to_string(ctx.outputs.size()) + ", got shape " +
                                     shape_to_string(x.shape()));
    }
    cut(ctx, x, axis, std::vector<std::int64_t>(static_cast<std::size_t>(num), 1), true);
  };
}

void split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  const std::int64_t dim = int_scalar_input(ctx, 0, "split_dim");
  const int rank = x.ndim();
  if (dim < -rank || dim >= rank) {
    throw_node_error(ctx.node, "-input rank(-" + std::to_string(rank) +
                                   ") <= split_dim < input rank (" + std::to_string(rank) +
                                   "), but got " + std::to_string(dim));
  }
  const int axis = static_cast<int>(dim < 0 ? dim + rank : dim);
  const auto num = static_cast<std::int64_t>(ctx.outputs.size());
  const std::int64_t size = x.shape()[static_cast<std::size_t>(axis)];
  if (size % num != 0) {
    throw_node_error(ctx.node,
                     "Number of ways to split should evenly divide the split dimension, but got "
                     "split_dim " +
                         std::to_string(axis) + " (size = " + std::to_string(size) +
                         ") and num_split " + std::to_string(num));
  }
  if (num == 1) {
    ctx.outputs[0] = x;
    return;
  }
  cut(ctx, x, axis, std::vector<std::int64_t>(static_cast<std::size_t>(num), size / num), false);
}

void split_v_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  std::vector<std::int64_t> sizes = int_list_input(ctx, 1, "size_splits");
  const std::int64_t dim = int_scalar_input(ctx, 2, "split_dim");
  const int rank = x.ndim();
  if (dim < -rank || dim >= rank) {
    throw_node_error(ctx.node, "-input rank(-" + std::to_string(rank) +
                                   ") <= split_dim < input rank (" + std::to_string(rank) +
                                   "), but got " + std::to_string(dim));
  }
  const int axis = static_cast<int>(dim < 0 ? dim + rank : dim);
  if (sizes.size() != ctx.outputs.size()) {
    throw_node_error(ctx.node, "size_splits has " + std::to_string(sizes.size()) +
                                   " values, but num_split is " +
                                   std::to_string(ctx.outputs.size()));
  }
  const std::int64_t size = x.shape()[static_cast<std::size_t>(axis)];
  std::int64_t known = 0;
  int infer = -1;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == -1) {
      if (infer >= 0) throw_node_error(ctx.node, "There can only be one -1 in the input.");
      infer = static_cast<int>(k);
    } else if (sizes[k] < 0) {
      throw_node_error(ctx.node, "Split sizes must be non-negative (or -1 once), got " +
                                     std::to_string(sizes[k]));
    } else {
      known += sizes[k];
    }
  }
  if ((infer < 0 && known != size) || (infer >= 0 && known > size)) {
    throw_node_error(ctx.node,
                     "Determined shape must either match input shape along split_dim exactly if "
                     "fully specified, or be less than the size of the input along split_dim if "
                     "not fully specified.  Got: " +
                         std::to_string(known));
  }
  if (infer >= 0) sizes[static_cast<std::size_t>(infer)] = size - known;
  if (sizes.size() == 1) {
    ctx.outputs[0] = x;
    return;
  }
  cut(ctx, x, axis, sizes, false);
}

}  // namespace

void register_concat_split_kernels() {
  register_kernel("ConcatV2",
                  {[](const NodeDef&) -> Kernel { return concat_kernel; }, CostHint::kMeasure});
  register_kernel("Pack", {make_pack, CostHint::kMeasure});
  register_kernel("Unpack", {make_unpack, CostHint::kMeasure});
  register_kernel("Split",
                  {[](const NodeDef&) -> Kernel { return split_kernel; }, CostHint::kMeasure});
  register_kernel("SplitV",
                  {[](const NodeDef&) -> Kernel { return split_v_kernel; }, CostHint::kMeasure});
}

}  // namespace opweave
