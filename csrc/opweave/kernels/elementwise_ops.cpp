// Kernels of the element-wise ops (the arithmetic is in elementwise.cpp). They write into an
// input's buffer when the executor may hand it over (an intermediate nothing else reads): no
// allocation, which is most of a tiny op's cost. The executor measures their cost.
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernels.h"

namespace opweave {
namespace {

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
           CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
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
                       CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

}  // namespace

void register_elementwise_kernels() {
  register_binary("Add", BinaryOp::kAdd);
  register_binary("AddV2", BinaryOp::kAdd);
  register_binary("Sub", BinaryOp::kSub);
  register_binary("Mul", BinaryOp::kMul);
  register_binary("RealDiv", BinaryOp::kDiv);
  register_binary("FloorDiv", BinaryOp::kFloorDiv);
  register_binary("Div", BinaryOp::kTruncDiv);
  register_binary("Maximum", BinaryOp::kMaximum);
  register_binary("Minimum", BinaryOp::kMinimum);
  register_binary("ReluGrad", BinaryOp::kReluGrad);
  register_unary("Neg", UnaryOp::kNeg);
  register_unary("Relu", UnaryOp::kRelu);
  register_unary("Exp", UnaryOp::kExp);
  register_unary("Tanh", UnaryOp::kTanh);
  register_unary("Sigmoid", UnaryOp::kSigmoid);
  register_binary("Pow", BinaryOp::kPow);
  register_binary("FloorMod", BinaryOp::kFloorMod);
  register_binary("SquaredDifference", BinaryOp::kSquaredDifference);
  // On bool, Mul is a && b and Add is a || b.
  register_binary("LogicalAnd", BinaryOp::kMul);
  register_binary("LogicalOr", BinaryOp::kAdd);
  const std::pair<const char*, UnaryOp> unaries[] = {
      {"Abs", UnaryOp::kAbs},        {"Sign", UnaryOp::kSign},
      {"Square", UnaryOp::kSquare},  {"Sqrt", UnaryOp::kSqrt},
      {"Rsqrt", UnaryOp::kRsqrt},    {"Log", UnaryOp::kLog},
      {"Log1p", UnaryOp::kLog1p},    {"Expm1", UnaryOp::kExpm1},
      {"Floor", UnaryOp::kFloor},    {"Ceil", UnaryOp::kCeil},
      {"Round", UnaryOp::kRound},    {"Reciprocal", UnaryOp::kReciprocal},
      {"Inv", UnaryOp::kReciprocal}, {"Sin", UnaryOp::kSin},
      {"Cos", UnaryOp::kCos},        {"LogicalNot", UnaryOp::kLogicalNot},
  };
  for (const auto& [op, kind] : unaries) register_unary(op, kind);
  const std::pair<const char*, PredicateOp> predicates[] = {{"IsNan", PredicateOp::kIsNan},
                                                            {"IsInf", PredicateOp::kIsInf},
                                                            {"IsFinite", PredicateOp::kIsFinite}};
  for (const auto& [op, kind] : predicates) {
    register_kernel(op, {[kind = kind](const NodeDef&) -> Kernel {
                           return [kind](KernelContext& ctx) {
                             ctx.outputs[0] = predicate(kind, ctx.inputs[0], ctx.intra_pool);
                           };
                         },
                         CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  }
  const std::pair<const char*, CompareOp> comparisons[] = {
      {"Equal", CompareOp::kEqual},     {"NotEqual", CompareOp::kNotEqual},
      {"Less", CompareOp::kLess},       {"LessEqual", CompareOp::kLessEqual},
      {"Greater", CompareOp::kGreater}, {"GreaterEqual", CompareOp::kGreaterEqual}};
  for (const auto& [op, kind] : comparisons) {
    register_kernel(op, {[kind = kind](const NodeDef&) -> Kernel {
                           return [kind](KernelContext& ctx) {
                             ctx.outputs[0] =
                                 compare(kind, ctx.inputs[0], ctx.inputs[1], ctx.intra_pool);
                           };
                         },
                         CostHint::kMeasure});
  }
  register_kernel("SelectV2", {[](const NodeDef&) -> Kernel {
                                 return [](KernelContext& ctx) {
                                   ctx.outputs[0] = select(ctx.inputs[0], ctx.inputs[1],
                                                           ctx.inputs[2], ctx.intra_pool);
                                 };
                               },
                               CostHint::kMeasure});
  register_kernel("Select", {[](const NodeDef&) -> Kernel {
                               return [](KernelContext& ctx) {
                                 ctx.outputs[0] = select_rows(ctx.inputs[0], ctx.inputs[1],
                                                              ctx.inputs[2], ctx.intra_pool);
                               };
                             },
                             CostHint::kMeasure});
  register_kernel("ClipByValue",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       ctx.outputs[0] = clip_by_value(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2],
                                                      ctx.intra_pool);
                     };
                   },
                   CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  register_kernel("Where", {[](const NodeDef&) -> Kernel {
                              return [](KernelContext& ctx) {
                                ctx.outputs[0] = where_indices(ctx.inputs[0], ctx.intra_pool);
                              };
                            },
                            CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  register_kernel("AddN", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) {
                               ctx.outputs[0] = add_n(ctx.inputs.to_vector(), ctx.intra_pool);
                             };
                           },
                           CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

}  // namespace opweave
