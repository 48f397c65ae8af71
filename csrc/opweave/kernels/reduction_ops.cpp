// Kernels of the reductions (Sum, Mean, Max, Min) with TensorFlow's signature: the axes are the
// integer input `reduction_indices` (a scalar or a vector, negative values count from the end,
// repeats allowed), `keep_dims` an attribute. The arithmetic is in reduce.cpp.
#include <algorithm>

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
}

}  // namespace opweave
