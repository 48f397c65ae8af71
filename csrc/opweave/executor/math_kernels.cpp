// Kernels that wrap the arithmetic in kernels/kernels.h. Their cost depends on the sizes, so the
// executor measures them (CostHint::kMeasure) except matmul, which is always worth spreading.
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernels.h"

namespace opweave {

namespace {

// Element-wise ops write into an input's buffer when the executor may hand it over (an
// intermediate nothing else reads): no allocation, which is most of a tiny op's cost.
void register_binary(const std::string& op, BinaryOp kind) {
  register_kernel(
      op, {[kind](const NodeDef&) -> Kernel {
             return [kind](KernelContext& ctx) {
               for (int i = 0; i < 2; ++i) {
                 Tensor* reuse = ctx.forwardable_input(static_cast<std::size_t>(i));
                 if (reuse != nullptr &&
                     binary_in_place(kind, ctx.inputs[0], ctx.inputs[1], i, ctx.intra_pool)) {
                   ctx.outputs[0] = std::move(*reuse);
                   return;
                 }
               }
               ctx.outputs[0] = binary(kind, ctx.inputs[0], ctx.inputs[1], ctx.intra_pool);
             };
           },
           CostHint::kMeasure});
}

void register_unary(const std::string& op, UnaryOp kind) {
  register_kernel(op, {[kind](const NodeDef&) -> Kernel {
                         return [kind](KernelContext& ctx) {
                           Tensor* reuse = ctx.forwardable_input(0);
                           if (reuse != nullptr && unary_in_place(kind, *reuse, ctx.intra_pool)) {
                             ctx.outputs[0] = std::move(*reuse);
                             return;
                           }
                           ctx.outputs[0] = unary(kind, ctx.inputs[0], ctx.intra_pool);
                         };
                       },
                       CostHint::kMeasure});
}

void register_reduce(const std::string& op, ReduceOp kind) {
  register_kernel(op, {[kind](const NodeDef& node) -> Kernel {
                         std::optional<std::vector<int>> axes;
                         if (!node.attr<bool>("all_axes")) {
                           const auto& a = node.attr<std::vector<std::int64_t>>("axes");
                           axes = std::vector<int>(a.begin(), a.end());
                         }
                         const bool keepdims = node.attr<bool>("keepdims");
                         return [kind, axes, keepdims](KernelContext& ctx) {
                           ctx.outputs[0] =
                               reduce(kind, ctx.inputs[0], axes, keepdims, ctx.intra_pool);
                         };
                       },
                       CostHint::kMeasure});
}

}  // namespace

void register_math_kernels() {
  register_binary("Add", BinaryOp::kAdd);
  register_binary("Sub", BinaryOp::kSub);
  register_binary("Mul", BinaryOp::kMul);
  register_binary("Div", BinaryOp::kDiv);
  register_binary("Maximum", BinaryOp::kMaximum);
  register_binary("Minimum", BinaryOp::kMinimum);
  register_unary("Neg", UnaryOp::kNeg);
  register_unary("Relu", UnaryOp::kRelu);
  register_unary("Exp", UnaryOp::kExp);
  register_unary("Tanh", UnaryOp::kTanh);
  register_unary("Sigmoid", UnaryOp::kSigmoid);
  register_reduce("Sum", ReduceOp::kSum);
  register_reduce("Mean", ReduceOp::kMean);
  register_reduce("Max", ReduceOp::kMax);
  register_reduce("Min", ReduceOp::kMin);
  register_kernel("MatMul", {[](const NodeDef& node) -> Kernel {
                               const bool ta = node.attr<bool>("transpose_a");
                               const bool tb = node.attr<bool>("transpose_b");
                               return [ta, tb](KernelContext& ctx) {
                                 ctx.outputs[0] =
                                     matmul(ctx.inputs[0], ctx.inputs[1], ta, tb, ctx.intra_pool);
                               };
                             },
                             CostHint::kExpensive});
  register_kernel("AddN", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) {
                               ctx.outputs[0] = add_n(ctx.inputs.to_vector(), ctx.intra_pool);
                             };
                           },
                           CostHint::kMeasure});
  register_kernel("Cast", {[](const NodeDef& node) -> Kernel {
                             const DType to = node.attr<DType>("DstT");
                             return [to](KernelContext& ctx) {
                               ctx.outputs[0] = cast(ctx.inputs[0], to, ctx.intra_pool);
                             };
                           },
                           CostHint::kMeasure});
  register_kernel("Transpose", {[](const NodeDef& node) -> Kernel {
                                  const auto& p = node.attr<std::vector<std::int64_t>>("perm");
                                  std::vector<int> perm(p.begin(), p.end());
                                  return [perm](KernelContext& ctx) {
                                    ctx.outputs[0] = transpose(ctx.inputs[0], perm, ctx.intra_pool);
                                  };
                                },
                                CostHint::kMeasure});
}

}  // namespace opweave
