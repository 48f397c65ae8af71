// Kernels of BiasAdd (a vector added along the channel dimension, NHWC or NCHW) and BiasAddGrad
// (its gradient: the sum over every other dimension). BiasAdd streams its input once, in
// contiguous runs of one bias element (NCHW) or of the whole bias (NHWC), split over the intra-op
// pool by elements; BiasAddGrad is the deterministic reduction of reduce.cpp, so it gives the bits
// of reduce_sum over the same axes for any thread count.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"

namespace opweave {
namespace {

using kernel_detail::for_elements;
using kernel_detail::kElementwiseParallelThreshold;

bool nchw_format(const NodeDef& node) {
  if (!node.has_attr("data_format")) return false;
  const std::string& f = node.attr<std::string>("data_format");
  if (f != "NHWC" && f != "NCHW") {
    throw_node_error(node, "data_format must be NHWC or NCHW, got '" + f + "'");
  }
  return f == "NCHW";
}

// The channel dimension: 1 for NCHW (rank >= 3), else the last.
int channel_dim(bool nchw, int rank) { return nchw && rank >= 3 ? 1 : rank - 1; }

// a + b, wrapping for integers (no signed-overflow UB), as TensorFlow's CPU kernels.
template <typename T>
inline T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

void bias_add_kernel(KernelContext& ctx, bool nchw) {
  const Tensor& value = ctx.inputs[0];
  const Tensor& bias_in = ctx.inputs[1];
  if (value.ndim() < 2) {
    throw_node_error(ctx.node,
                     "Input tensor must be at least 2D: " + shape_to_string(value.shape()));
  }
  if (bias_in.ndim() != 1) {
    throw_node_error(ctx.node, "Biases must be 1D: " + shape_to_string(bias_in.shape()));
  }
  if (bias_in.dtype() != value.dtype()) {
    throw_node_error(ctx.node, std::string("value and bias must have the same dtype, got ") +
                                   dtype_name(value.dtype()) + " and " +
                                   dtype_name(bias_in.dtype()));
  }
  const int cdim = channel_dim(nchw, value.ndim());
  const std::int64_t channels = value.shape()[static_cast<std::size_t>(cdim)];
  if (bias_in.shape()[0] != channels) {
    throw_node_error(ctx.node,
                     std::string("Must provide as many biases as the ") +
                         (cdim == value.ndim() - 1 ? "last" : "channel") +
                         " dimension of the input tensor: " + shape_to_string(bias_in.shape()) +
                         " vs. " + shape_to_string(value.shape()));
  }
  std::int64_t inner = 1;
  for (int d = cdim + 1; d < value.ndim(); ++d) inner *= value.shape()[static_cast<std::size_t>(d)];
  // Element i is read before it is written, so the input's own buffer may take the result.
  Tensor* reuse = ctx.forwardable_input(0);
  const bool in_place = reuse != nullptr && reuse->is_contiguous();
  const Tensor x = in_place ? *reuse : value.contiguous();
  const Tensor bias = bias_in.contiguous();
  Tensor out = in_place ? std::move(*reuse) : Tensor::empty(x.dtype(), x.shape());
  const std::int64_t n = x.numel();
  if (n > 0) {
    kernel_detail::dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        kernel_detail::unsupported_dtype(DType::kBool);
      } else {
        const T* px = x.data<T>();
        const T* pb = bias.data<T>();
        T* po = out.data<T>();
        auto body = [&](std::int64_t b, std::int64_t e) {
          // Runs that share the bias layout: inner == 1 walks the bias along with the row; else
          // each run of `inner` elements adds one bias element.
          while (b < e) {
            if (inner == 1) {
              const std::int64_t c0 = b % channels;
              const std::int64_t len = std::min(channels - c0, e - b);
              const T* bc = pb + c0;
              for (std::int64_t j = 0; j < len; ++j) po[b + j] = add<T>(px[b + j], bc[j]);
              b += len;
            } else {
              const std::int64_t off = b % inner;
              const std::int64_t len = std::min(inner - off, e - b);
              const T bv = pb[(b / inner) % channels];
              for (std::int64_t j = 0; j < len; ++j) po[b + j] = add<T>(px[b + j], bv);
              b += len;
            }
          }
        };
        for_elements(ctx.intra_pool, n, kElementwiseParallelThreshold, body, 1.0);
      }
    });
  }
  ctx.outputs[0] = std::move(out);
}

void bias_add_grad_kernel(KernelContext& ctx, bool nchw) {
  const Tensor& grad = ctx.inputs[0];
  if (grad.ndim() < 2) {
    throw_node_error(ctx.node,
                     "Input tensor must be at least 2D: " + shape_to_string(grad.shape()));
  }
  const int cdim = channel_dim(nchw, grad.ndim());
  std::vector<int> axes;
  for (int d = 0; d < grad.ndim(); ++d) {
    if (d != cdim) axes.push_back(d);
  }
  ctx.outputs[0] = reduce(ReduceOp::kSum, grad, axes, /*keepdims=*/false, ctx.intra_pool);
}

}  // namespace

void register_bias_kernels() {
  register_kernel("BiasAdd",
                  {[](const NodeDef& node) -> Kernel {
                     const bool nchw = nchw_format(node);
                     return [nchw](KernelContext& ctx) { bias_add_kernel(ctx, nchw); };
                   },
                   CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  register_kernel("BiasAddGrad",
                  {[](const NodeDef& node) -> Kernel {
                     const bool nchw = nchw_format(node);
                     return [nchw](KernelContext& ctx) { bias_add_grad_kernel(ctx, nchw); };
                   },
                   CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

}  // namespace opweave
