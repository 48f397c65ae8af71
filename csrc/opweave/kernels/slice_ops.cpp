// Kernels of the slicing ops: Slice, StridedSlice (with TensorFlow's begin/end/ellipsis/new-axis/
// shrink-axis masks), StridedSliceGrad (its gradient: dy written into zeros of the input's shape)
// and ReverseV2. Each is a strided view of its input: returned as is when it is contiguous (the
// output shares the input's buffer, as TensorFlow's slices along dimension 0 do), else copied
// into a new contiguous tensor on the intra-op pool.
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/copy_util.h"

namespace opweave {
namespace {

using kernel_detail::materialize;
using kernel_detail::view_of;

std::string list_to_string(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

// -- Slice ---------------------------------------------------------------------------------------

// The view input[begin : begin + size] (size -1: to the end of the dimension).
Tensor slice_view(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const std::vector<std::int64_t> begin = int_list_input(ctx, 1, "begin");
  std::vector<std::int64_t> size = int_list_input(ctx, 2, "size");
  const auto rank = static_cast<std::size_t>(x.ndim());
  if (begin.size() != rank || size.size() != rank) {
    throw_node_error(ctx.node, "Expected begin and size arguments to be 1-D tensors of size " +
                                   std::to_string(rank) + ", but got shapes [" +
                                   std::to_string(begin.size()) + "] and [" +
                                   std::to_string(size.size()) + "] instead.");
  }
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t dim = x.shape()[i];
    if (begin[i] < 0 || begin[i] > dim) {
      throw_node_error(ctx.node, "Expected begin[" + std::to_string(i) + "] in [0, " +
                                     std::to_string(dim) + "], but got " +
                                     std::to_string(begin[i]));
    }
    if (size[i] == -1) size[i] = dim - begin[i];
    if (size[i] < 0 || begin[i] + size[i] > dim) {
      throw_node_error(ctx.node, "Expected size[" + std::to_string(i) + "] in [0, " +
                                     std::to_string(dim - begin[i]) + "], but got " +
                                     std::to_string(size[i]));
    }
    offset += begin[i] * x.strides()[i];
  }
  const bool empty = shape_numel(size) == 0;
  return view_of(x, empty ? 0 : offset, size, x.strides());
}

// -- StridedSlice's index arithmetic (TensorFlow's ValidateStridedSliceOp) ----------------------

constexpr std::int64_t kNewAxis = -1;
constexpr std::int64_t kShrinkAxis = -2;

struct StridedSliceMasks {
  std::int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink_axis = 0;

  explicit StridedSliceMasks(const NodeDef& node) {
    auto get = [&](const char* name) {
      return node.has_attr(name) ? node.attr<std::int64_t>(name) : std::int64_t{0};
    };
    begin = get("begin_mask");
    end = get("end_mask");
    ellipsis = get("ellipsis_mask");
    new_axis = get("new_axis_mask");
    shrink_axis = get("shrink_axis_mask");
  }
};

// The slice in terms of the input's dimensions: for each, the first index, the step and the
// number of elements taken (the "processing shape"); and the output's shape (new axes added,
// shrunk axes removed).
struct DenseSlice {
  Shape begin, strides, processing_shape, final_shape;
};

bool bit(std::int64_t mask, std::size_t i) { return i < 63 && ((mask >> i) & 1) != 0; }

DenseSlice strided_slice_spec(const NodeDef& node, const Shape& input_shape,
                              const std::vector<std::int64_t>& sparse_begin,
                              const std::vector<std::int64_t>& sparse_end,
                              const std::vector<std::int64_t>& sparse_strides,
                              const StridedSliceMasks& masks) {
  if (sparse_begin.size() != sparse_end.size() || sparse_begin.size() != sparse_strides.size()) {
    throw_node_error(node,
                     "Expected begin, end, and strides to be 1D equal size tensors, but got "
                     "shapes [" +
                         std::to_string(sparse_begin.size()) + "], [" +
                         std::to_string(sparse_end.size()) + "], and [" +
                         std::to_string(sparse_strides.size()) + "] instead.");
  }
  if (masks.ellipsis != 0 && (masks.ellipsis & (masks.ellipsis - 1)) != 0) {
    throw_node_error(node, "Multiple ellipses in slice spec not allowed");
  }
  // Step 1: count the new axes after the ellipsis; no ellipsis means one at the end.
  std::size_t sparse_dims = sparse_begin.size();
  std::int64_t ellipsis_mask = masks.ellipsis;
  std::int64_t new_axis_after_ellipsis = 0;
  bool ellipsis_seen = false;
  for (std::size_t i = 0; i < sparse_dims; ++i) {
    if (ellipsis_seen && bit(masks.new_axis, i)) ++new_axis_after_ellipsis;
    if (bit(masks.ellipsis, i)) ellipsis_seen = true;
  }
  if (!ellipsis_seen) {
    ellipsis_mask |= std::int64_t{1} << sparse_dims;
    ++sparse_dims;
  }
  // Step 2: the sparse spec (one entry per index expression) as one entry per input dimension.
  const std::size_t dims = input_shape.size();
  std::vector<std::int64_t> begin(dims, 0), end(dims, 0), strides(dims, 1);
  std::vector<bool> begin_masked(dims, false), end_masked(dims, false), shrink(dims, false);
  std::vector<std::int64_t> gather;  // per output dim: an input dim, kNewAxis or kShrinkAxis
  std::size_t full = 0;
  for (std::size_t i = 0; i < sparse_dims; ++i) {
    if (bit(ellipsis_mask, i)) {
      const auto next =
          std::min(static_cast<std::int64_t>(dims) - static_cast<std::int64_t>(sparse_dims - i) +
                       1 + new_axis_after_ellipsis,
                   static_cast<std::int64_t>(dims));
      for (; static_cast<std::int64_t>(full) < next; ++full) {
        begin_masked[full] = end_masked[full] = true;
        gather.push_back(static_cast<std::int64_t>(full));
      }
    } else if (bit(masks.new_axis, i)) {
      gather.push_back(kNewAxis);
    } else {
      if (full == dims) {
        throw_node_error(node, "Index out of range using input dim " + std::to_string(full) +
                                   "; input has only " + std::to_string(dims) + " dims");
      }
      begin[full] = sparse_begin[i];
      end[full] = sparse_end[i];
      strides[full] = sparse_strides[i];
      begin_masked[full] = bit(masks.begin, i);
      end_masked[full] = bit(masks.end, i);
      if (bit(masks.shrink_axis, i)) {
        gather.push_back(kShrinkAxis);
        shrink[full] = true;
      } else {
        gather.push_back(static_cast<std::int64_t>(full));
      }
      ++full;
    }
  }
  // Step 3: masked and negative bounds made explicit, clamped, and the number of elements.
  DenseSlice out;
  for (std::size_t i = 0; i < dims; ++i) {
    const std::int64_t dim = input_shape[i];
    const std::int64_t stride = strides[i];
    if (stride == 0) throw_node_error(node, "strides[" + std::to_string(i) + "] must be non-zero");
    if (shrink[i] && stride <= 0) {
      throw_node_error(node, "only stride 1 allowed on non-range indexing.");
    }
    const std::int64_t lo = stride > 0 ? 0 : -1;
    const std::int64_t hi = stride > 0 ? dim : dim - 1;
    auto canonical = [&](std::int64_t x, bool masked, bool is_end) {
      if (masked) return (stride > 0) != is_end ? lo : hi;
      const std::int64_t fwd = x < 0 ? dim + x : x;
      return fwd < lo ? lo : fwd > hi ? hi : fwd;
    };
    std::int64_t b = 0;
    std::int64_t e = 0;
    if (shrink[i]) {
      b = begin[i] < 0 ? dim + begin[i] : begin[i];
      e = b + 1;
      if (b < 0 || b >= dim) {
        throw_node_error(node, "slice index " + std::to_string(begin[i]) + " of dimension " +
                                   std::to_string(i) + " out of bounds.");
      }
    } else {
      b = canonical(begin[i], begin_masked[i], false);
      e = canonical(end[i], end_masked[i], true);
    }
    const std::int64_t interval = e - b;
    std::int64_t size = 0;
    if (interval != 0 && (interval < 0) == (stride < 0)) {
      size = interval / stride + (interval % stride != 0 ? 1 : 0);
    }
    out.begin.push_back(b);
    out.strides.push_back(stride);
    out.processing_shape.push_back(size);
  }
  for (std::int64_t g : gather) {
    if (g >= 0) {
      out.final_shape.push_back(out.processing_shape[static_cast<std::size_t>(g)]);
    } else if (g == kNewAxis) {
      out.final_shape.push_back(1);
    }
  }
  return out;
}

// The input's elements the slice takes, as a view of the input (processing shape).
Tensor strided_view(const Tensor& x, const DenseSlice& s) {
  std::int64_t offset = 0;
  Shape strides(s.begin.size());
  for (std::size_t i = 0; i < s.begin.size(); ++i) {
    offset += s.begin[i] * x.strides()[i];
    strides[i] = s.strides[i] * x.strides()[i];
  }
  return view_of(x, shape_numel(s.processing_shape) == 0 ? 0 : offset, s.processing_shape, strides);
}

Kernel make_strided_slice(const NodeDef& node) {
  const StridedSliceMasks masks(node);
  return [masks](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    const DenseSlice s =
        strided_slice_spec(ctx.node, x.shape(), int_list_input(ctx, 1, "begin"),
                           int_list_input(ctx, 2, "end"), int_list_input(ctx, 3, "strides"), masks);
    ctx.outputs[0] = materialize(strided_view(x, s), ctx.intra_pool).reshaped(s.final_shape);
  };
}

// StridedSliceGrad(shape, begin, end, strides, dy): zeros of `shape` with dy written where the
// slice took its elements.
Kernel make_strided_slice_grad(const NodeDef& node) {
  const StridedSliceMasks masks(node);
  return [masks](KernelContext& ctx) {
    const Shape shape = int_list_input(ctx, 0, "shape");
    for (std::int64_t d : shape) {
      if (d < 0) throw_node_error(ctx.node, "shape must be non-negative: " + list_to_string(shape));
    }
    const Tensor& dy = ctx.inputs[4];
    const DenseSlice s =
        strided_slice_spec(ctx.node, shape, int_list_input(ctx, 1, "begin"),
                           int_list_input(ctx, 2, "end"), int_list_input(ctx, 3, "strides"), masks);
    if (dy.shape() != s.final_shape) {
      throw_node_error(ctx.node, "shape of dy was " + shape_to_string(dy.shape()) + " instead of " +
                                     shape_to_string(s.final_shape));
    }
    Tensor out = Tensor::zeros(dy.dtype(), shape);
    const Tensor region = strided_view(out, s);
    const Tensor src = dy.contiguous().reshaped(s.processing_shape);
    kernel_detail::strided_copy(ctx.intra_pool, dy.dtype(), region.raw_data(), region.strides(),
                                src.raw_data(), src.strides(), src.shape());
    ctx.outputs[0] = std::move(out);
  };
}

// -- ReverseV2 -----------------------------------------------------------------------------------

Tensor reverse(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const int rank = x.ndim();
  std::vector<bool> flip(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : int_list_input(ctx, 1, "axis")) {
    if (a < -rank || a >= rank) {
      throw_node_error(ctx.node, "'axis'[" + std::to_string(a) + "] = " + std::to_string(a) +
                                     " is out of valid range [" + std::to_string(-rank) + ", " +
                                     std::to_string(rank - 1) + "]");
    }
    const auto axis = static_cast<std::size_t>(a < 0 ? a + rank : a);
    if (flip[axis]) {
      throw_node_error(ctx.node, "axis " + std::to_string(axis) + " specified more than once.");
    }
    flip[axis] = true;
  }
  std::int64_t offset = 0;
  Shape strides = x.strides();
  for (std::size_t i = 0; i < flip.size(); ++i) {
    if (flip[i] && x.shape()[i] > 1) {
      offset += (x.shape()[i] - 1) * strides[i];
      strides[i] = -strides[i];
    }
  }
  return materialize(view_of(x, x.numel() == 0 ? 0 : offset, x.shape(), strides), ctx.intra_pool);
}

}  // namespace

void register_slice_kernels() {
  register_kernel("Slice", {[](const NodeDef&) -> Kernel {
                              return [](KernelContext& ctx) {
                                ctx.outputs[0] = materialize(slice_view(ctx), ctx.intra_pool);
                              };
                            },
                            CostHint::kMeasure});
  register_kernel("StridedSlice", {make_strided_slice, CostHint::kMeasure});
  register_kernel("StridedSliceGrad", {make_strided_slice_grad, CostHint::kMeasure});
  register_kernel("ReverseV2", {[](const NodeDef&) -> Kernel {
                                  return [](KernelContext& ctx) { ctx.outputs[0] = reverse(ctx); };
                                },
                                CostHint::kMeasure});
}

}  // namespace opweave
