// Kernels of the reductions (Sum, Mean, Max, Min, Prod, Any, All) with TensorFlow's signature:
// the axes are the integer input `reduction_indices` (a scalar or a vector, negative values count
// from the end, repeats allowed), `keep_dims` an attribute; ArgMax / ArgMin (one axis, an integer
// input) and the scans Cumsum / Cumprod (one axis; exclusive and reverse attributes). The
// arithmetic is in reduce.cpp, argminmax.cpp and scan.cpp.
#include <algorithm>
#include <utility>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernels.h"

namespace opweave {
namespace {

// The distinct, non-negative axes named by reduction_indices.
std::vector<int> reduction_axes(const KernelContext& ctx) {
  const int rank = ctx.inputs[0].ndim();
  std::vector<int> axes;
  for (std::int64_t a : int_list_input(ctx, 1, "reduction_indices")) {
    if (a < -rank || a >= rank) {
      throw_invalid_argument("Invalid reduction dimension (" + std::to_string(a) +
                             " for input with " + std::to_string(rank) + " dimension(s)");
    }
    const int axis = static_cast<int>(a < 0 ? a + rank : a);
    if (std::find(axes.begin(), axes.end(), axis) == axes.end()) axes.push_back(axis);
  }
  return axes;
}

void register_reduce(const std::string& op, ReduceOp kind) {
  register_kernel(op, {[kind](const NodeDef& node) -> Kernel {
                         const bool keep_dims =
                             node.has_attr("keep_dims") && node.attr<bool>("keep_dims");
                         return [kind, keep_dims](KernelContext& ctx) {
                           ctx.outputs[0] = reduce(kind, ctx.inputs[0], reduction_axes(ctx),
                                                   keep_dims, ctx.intra_pool);
                         };
                       },
                       CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

}  // namespace

void register_reduction_kernels() {
  register_reduce("Sum", ReduceOp::kSum);
  register_reduce("Mean", ReduceOp::kMean);
  register_reduce("Max", ReduceOp::kMax);
  register_reduce("Min", ReduceOp::kMin);
  register_reduce("Prod", ReduceOp::kProd);
  // On bool, max is any and min is all.
  register_reduce("Any", ReduceOp::kMax);
  register_reduce("All", ReduceOp::kMin);
  for (const auto& [op, is_max] :
       {std::pair<const char*, bool>{"ArgMax", true}, {"ArgMin", false}}) {
    register_kernel(
        op, {[is_max = is_max](const NodeDef& node) -> Kernel {
               const DType out =
                   node.has_attr("output_type") ? node.attr<DType>("output_type") : DType::kInt64;
               return [is_max, out](KernelContext& ctx) {
                 const std::int64_t axis = int_scalar_input(ctx, 1, "dimension");
                 ctx.outputs[0] =
                     arg_reduce(is_max, ctx.inputs[0], static_cast<int>(axis), out, ctx.intra_pool);
               };
             },
             CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  }
  for (const auto& [op, product] :
       {std::pair<const char*, bool>{"Cumsum", false}, {"Cumprod", true}}) {
    register_kernel(
        op, {[product = product](const NodeDef& node) -> Kernel {
               const bool exclusive = node.has_attr("exclusive") && node.attr<bool>("exclusive");
               const bool reverse = node.has_attr("reverse") && node.attr<bool>("reverse");
               return [product, exclusive, reverse](KernelContext& ctx) {
                 const std::int64_t axis = int_scalar_input(ctx, 1, "axis");
                 ctx.outputs[0] = scan(product, ctx.inputs[0], static_cast<int>(axis), exclusive,
                                       reverse, ctx.intra_pool);
               };
             },
             CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  }
}

}  // namespace opweave
