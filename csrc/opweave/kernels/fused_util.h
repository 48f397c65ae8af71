// What the fused kernels (_FusedMatMul in fused_ops.cpp, _FusedConv2D in conv_ops.cpp) share: their
// epilogue attributes (TensorFlow's `fused_ops`, e.g. ["BiasAdd", "Relu"], and `leakyrelu_alpha`)
// and the bias check.
#pragma once

#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/gemm.h"

namespace opweave::fused {

struct Spec {
  bool bias = false;  // the node has a third input, a bias row
  gemm_detail::Activation activation = gemm_detail::Activation::kNone;
  double alpha = 0.2;  // LeakyRelu
};

// The activation named by an op type ("Relu", "Relu6", "Elu", "LeakyRelu", "Sigmoid", "Tanh"), or
// false.
inline bool activation_of(const std::string& op, gemm_detail::Activation* out) {
  using gemm_detail::Activation;
  static const std::pair<const char*, Activation> kNames[] = {
      {"Relu", Activation::kRelu},       {"Relu6", Activation::kRelu6},
      {"Elu", Activation::kElu},         {"LeakyRelu", Activation::kLeakyRelu},
      {"Sigmoid", Activation::kSigmoid}, {"Tanh", Activation::kTanh}};
  for (const auto& [name, act] : kNames) {
    if (op == name) {
      *out = act;
      return true;
    }
  }
  return false;
}

// fused_ops: [] (packed weights only), ["BiasAdd"], ["BiasAdd", <activation>] or [<activation>].
inline Spec read_spec(const NodeDef& node) {
  Spec s;
  const auto& ops = node.attr<std::vector<std::string>>("fused_ops");
  std::size_t i = 0;
  if (i < ops.size() && ops[i] == "BiasAdd") {
    s.bias = true;
    ++i;
  }
  if (i < ops.size() && activation_of(ops[i], &s.activation)) ++i;
  if (i != ops.size()) {
    throw_node_error(node, "unsupported fused_ops for " + node.op);
  }
  if (node.has_attr("leakyrelu_alpha")) s.alpha = node.attr<double>("leakyrelu_alpha");
  return s;
}

// The bias of a fused node: `channels` values of the result's dtype, as a 1-D tensor (an Add's
// [1, n] row is accepted too). Errors say what BiasAdd says.
inline Tensor check_bias(const KernelContext& ctx, const Tensor& bias, DType dtype,
                         std::int64_t channels) {
  if (bias.dtype() != dtype) {
    throw_node_error(ctx.node, std::string("value and bias must have the same dtype, got ") +
                                   dtype_name(dtype) + " and " + dtype_name(bias.dtype()));
  }
  const bool row = bias.ndim() == 1 || (bias.ndim() == 2 && bias.shape()[0] == 1);
  if (!row || bias.numel() != channels) {
    throw_node_error(ctx.node,
                     "Must provide as many biases as the last dimension of the input "
                     "tensor: " +
                         shape_to_string(bias.shape()) + " vs. " + std::to_string(channels) +
                         " channels");
  }
  return bias.ndim() == 1 ? bias : bias.contiguous().reshaped({channels});
}

}  // namespace opweave::fused
