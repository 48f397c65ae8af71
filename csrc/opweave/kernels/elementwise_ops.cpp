// Kernels of the element-wise ops (the arithmetic is in elementwise.cpp). They write into an
// input's buffer when the executor may hand it over (an intermediate nothing else reads): no
// allocation, which is most of a tiny op's cost. The executor measures their cost.
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/elementwise_list.h"
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
  // One kernel per row of elementwise_list.h, under its op type and its aliases.
#define OPWEAVE_REGISTER_BINARY(Name, name, type, ...) register_binary(type, BinaryOp::k##Name);
#define OPWEAVE_REGISTER_UNARY(Name, name, type, ...) register_unary(type, UnaryOp::k##Name);
#define OPWEAVE_REGISTER_BINARY_ALIAS(type, Name) register_binary(type, BinaryOp::k##Name);
#define OPWEAVE_REGISTER_UNARY_ALIAS(type, Name) register_unary(type, UnaryOp::k##Name);
  OPWEAVE_BINARY_OPS(OPWEAVE_REGISTER_BINARY)
  OPWEAVE_UNARY_OPS(OPWEAVE_REGISTER_UNARY)
  OPWEAVE_BINARY_ALIASES(OPWEAVE_REGISTER_BINARY_ALIAS)
  OPWEAVE_UNARY_ALIASES(OPWEAVE_REGISTER_UNARY_ALIAS)
#undef OPWEAVE_REGISTER_BINARY
#undef OPWEAVE_REGISTER_UNARY
#undef OPWEAVE_REGISTER_BINARY_ALIAS
#undef OPWEAVE_REGISTER_UNARY_ALIAS
  // On bool, Mul is a && b and Add is a || b.
  register_binary("LogicalAnd", BinaryOp::kMul);
  register_binary("LogicalOr", BinaryOp::kAdd);
  register_unary("LogicalNot", UnaryOp::kLogicalNot);
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
