// The array-manipulation op family: ExpandDims and Squeeze (new shapes of the same buffer),
// LinSpace, and the diagonal ops (Diag, DiagPart, MatrixDiag, MatrixDiagPart, MatrixSetDiag).
// register_array_kernels() also registers the family's other files: concat / split
// (concat_split_ops.cpp), gather / segment sums / one-hot (gather_ops.cpp), pad / tile
// (pad_tile_ops.cpp) and slicing / reverse (slice_ops.cpp).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/copy_util.h"

namespace opweave {

void register_concat_split_kernels();
void register_gather_kernels();
void register_pad_tile_kernels();
void register_slice_kernels();

namespace {

using kernel_detail::element_ptr;

Tensor expand_dims(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const std::int64_t dim = int_scalar_input(ctx, 1, "dim");
  const int rank = x.ndim();
  if (dim < -rank - 1 || dim > rank) {
    throw_node_error(ctx.node, "Tried to expand dim index " + std::to_string(dim) +
                                   " for tensor with " + std::to_string(rank) + " dimensions.");
  }
  const std::int64_t at = dim < 0 ? dim + rank + 1 : dim;
  Shape shape = x.shape();
  shape.insert(shape.begin() + at, 1);
  return x.reshaped(shape);
}

Kernel make_squeeze(const NodeDef& node) {
  std::vector<std::int64_t> dims;
  if (node.has_attr("squeeze_dims")) dims = node.attr<std::vector<std::int64_t>>("squeeze_dims");
  return [dims](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    const int rank = x.ndim();
    std::vector<bool> drop(static_cast<std::size_t>(rank), false);
    for (std::int64_t d : dims) {
      if (d < -rank || d >= rank) {
        throw_node_error(ctx.node, "Tried to squeeze dim index " + std::to_string(d) +
                                       " for tensor with " + std::to_string(rank) + " dimensions.");
      }
      const auto a = static_cast<std::size_t>(d < 0 ? d + rank : d);
      if (x.shape()[a] != 1) {
        throw_node_error(ctx.node, "Can not squeeze dim[" + std::to_string(a) +
                                       "], expected a dimension of 1, got " +
                                       std::to_string(x.shape()[a]));
      }
      drop[a] = true;
    }
    Shape shape;
    for (std::size_t a = 0; a < drop.size(); ++a) {
      const bool squeeze = dims.empty() ? x.shape()[a] == 1 : drop[a];
      if (!squeeze) shape.push_back(x.shape()[a]);
    }
    ctx.outputs[0] = x.reshaped(shape);
  };
}

// TensorFlow's LinSpace: start + i * step for i < num - 1, then exactly stop.
Tensor lin_space(const KernelContext& ctx) {
  const Tensor& start = ctx.inputs[0];
  const Tensor& stop = ctx.inputs[1];
  if (start.ndim() != 0) {
    throw_node_error(ctx.node,
                     "start must be a scalar, not shape " + shape_to_string(start.shape()));
  }
  if (stop.ndim() != 0) {
    throw_node_error(ctx.node, "stop must be a scalar, not shape " + shape_to_string(stop.shape()));
  }
  const std::int64_t num = int_scalar_input(ctx, 2, "num");
  if (num <= 0) throw_node_error(ctx.node, "Requires num > 0: " + std::to_string(num));
  Tensor out = Tensor::empty(start.dtype(), {num});
  kernel_detail::dispatch_float(start.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T a = *start.data<T>();
    const T b = *stop.data<T>();
    T* o = out.data<T>();
    if (num == 1) {
      o[0] = a;
      return;
    }
    const T step = (b - a) / static_cast<T>(num - 1);
    for (std::int64_t i = 0; i < num - 1; ++i) o[i] = a + step * static_cast<T>(i);
    o[num - 1] = b;
  });
  return out;
}

// -- diagonals -----------------------------------------------------------------------------------

// Diag: a tensor of shape D + D, zero except out[i..., i...] = x[i...].
Tensor diag(const KernelContext& ctx) {
  const Tensor x = ctx.inputs[0].contiguous();
  if (x.ndim() < 1) {
    throw_node_error(ctx.node, "Input must be at least rank 1, got " + std::to_string(x.ndim()));
  }
  Shape shape = x.shape();
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  Tensor out = Tensor::zeros(x.dtype(), shape);
  const std::int64_t n = x.numel();
  const std::size_t item = dtype_size(x.dtype());
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(element_ptr(out.raw_data(), i * n + i, item), element_ptr(x.raw_data(), i, item),
                item);
  }
  return out;
}

// DiagPart: the inverse of Diag, for a tensor of shape D + D.
Tensor diag_part(const KernelContext& ctx) {
  const Tensor x = ctx.inputs[0].contiguous();
  const int rank = x.ndim();
  if (rank == 0 || rank % 2 != 0) {
    throw_node_error(ctx.node, "The rank of the tensor should be even and positive, got shape " +
                                   shape_to_string(x.shape()));
  }
  const auto half = static_cast<std::size_t>(rank / 2);
  for (std::size_t i = 0; i < half; ++i) {
    if (x.shape()[i] != x.shape()[i + half]) {
      throw_node_error(ctx.node, "Invalid shape " + shape_to_string(x.shape()) + ": dimensions " +
                                     std::to_string(i) + " and " + std::to_string(i + half) +
                                     " do not match.");
    }
  }
  const Shape shape(x.shape().begin(), x.shape().begin() + static_cast<long>(half));
  Tensor out = Tensor::empty(x.dtype(), shape);
  const std::int64_t n = out.numel();
  const std::size_t item = dtype_size(x.dtype());
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(element_ptr(out.raw_data(), i, item), element_ptr(x.raw_data(), i * n + i, item),
                item);
  }
  return out;
}

// Calls fn(offset of element (i, i) in the matrices, offset of element i in the diagonals) over
// the diagonals of a batch of rows x cols matrices (min(rows, cols) elements each).
template <typename Fn>
void for_diagonals(std::int64_t batch, std::int64_t rows, std::int64_t cols, const Fn& fn) {
  const std::int64_t k = std::min(rows, cols);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < k; ++i) fn(b * rows * cols + i * cols + i, b * k + i);
  }
}

// MatrixDiag: [..., k] -> [..., k, k] with the vectors on the diagonals.
Tensor matrix_diag(const KernelContext& ctx) {
  const Tensor x = ctx.inputs[0].contiguous();
  if (x.ndim() < 1) {
    throw_node_error(ctx.node,
                     "input must be at least 1-dim, received shape: " + shape_to_string(x.shape()));
  }
  const std::int64_t k = x.shape().back();
  Shape shape = x.shape();
  shape.push_back(k);
  Tensor out = Tensor::zeros(x.dtype(), shape);
  const std::size_t item = dtype_size(x.dtype());
  for_diagonals(k == 0 ? 0 : x.numel() / k, k, k, [&](std::int64_t m, std::int64_t d) {
    std::memcpy(element_ptr(out.raw_data(), m, item), element_ptr(x.raw_data(), d, item), item);
  });
  return out;
}

void check_matrix(const KernelContext& ctx, const Tensor& x) {
  if (x.ndim() < 2) {
    throw_node_error(ctx.node,
                     "input must be at least 2-dim, received shape: " + shape_to_string(x.shape()));
  }
}

// MatrixDiagPart: [..., m, n] -> [..., min(m, n)].
Tensor matrix_diag_part(const KernelContext& ctx) {
  const Tensor x = ctx.inputs[0].contiguous();
  check_matrix(ctx, x);
  const std::int64_t rows = x.shape()[x.shape().size() - 2];
  const std::int64_t cols = x.shape().back();
  Shape shape(x.shape().begin(), x.shape().end() - 2);
  shape.push_back(std::min(rows, cols));
  Tensor out = Tensor::empty(x.dtype(), shape);
  const std::size_t item = dtype_size(x.dtype());
  const std::int64_t batch = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  for_diagonals(batch, rows, cols, [&](std::int64_t m, std::int64_t d) {
    std::memcpy(element_ptr(out.raw_data(), d, item), element_ptr(x.raw_data(), m, item), item);
  });
  return out;
}

// MatrixSetDiag: a copy of [..., m, n] with its diagonals replaced by [..., min(m, n)].
Tensor matrix_set_diag(const KernelContext& ctx) {
  const Tensor x = ctx.inputs[0].contiguous();
  const Tensor diagonal = ctx.inputs[1].contiguous();
  check_matrix(ctx, x);
  const std::int64_t rows = x.shape()[x.shape().size() - 2];
  const std::int64_t cols = x.shape().back();
  Shape want(x.shape().begin(), x.shape().end() - 2);
  want.push_back(std::min(rows, cols));
  if (diagonal.shape() != want) {
    throw_node_error(ctx.node, "diagonal must have shape " + shape_to_string(want) + ", got " +
                                   shape_to_string(diagonal.shape()));
  }
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  const std::size_t item = dtype_size(x.dtype());
  if (x.nbytes()) std::memcpy(out.raw_data(), x.raw_data(), x.nbytes());
  const std::int64_t batch = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  for_diagonals(batch, rows, cols, [&](std::int64_t m, std::int64_t d) {
    std::memcpy(element_ptr(out.raw_data(), m, item), element_ptr(diagonal.raw_data(), d, item),
                item);
  });
  return out;
}

void check_not_string(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::kString) {
    throw_node_error(ctx.node, "string tensors are not supported by " + ctx.node.op);
  }
}

void register_simple(const char* op, Tensor (*fn)(const KernelContext&), bool strings) {
  register_kernel(op, {[fn, strings](const NodeDef&) -> Kernel {
                         return [fn, strings](KernelContext& ctx) {
                           if (!strings) check_not_string(ctx);
                           ctx.outputs[0] = fn(ctx);
                         };
                       },
                       CostHint::kMeasure});
}

}  // namespace

void register_array_kernels() {
  register_kernel("ExpandDims", {[](const NodeDef&) -> Kernel {
                                   return [](KernelContext& ctx) {
                                     ctx.outputs[0] = expand_dims(ctx);
                                   };
                                 },
                                 CostHint::kCheap});
  register_kernel("Squeeze", {make_squeeze, CostHint::kCheap});
  register_simple("LinSpace", lin_space, false);
  register_simple("Diag", diag, false);
  register_simple("DiagPart", diag_part, false);
  register_simple("MatrixDiag", matrix_diag, false);
  register_simple("MatrixDiagPart", matrix_diag_part, false);
  register_simple("MatrixSetDiag", matrix_set_diag, false);
  register_concat_split_kernels();
  register_gather_kernels();
  register_pad_tile_kernels();
  register_slice_kernels();
}

}  // namespace opweave
