// Kernels that move tensors around without arithmetic: Const, Placeholder, Identity, NoOp,
// Reshape. All are cheap: the executor always runs them inline.
#include "opweave/errors.h"
#include "opweave/executor/kernel_registry.h"

namespace opweave {

void register_standard_kernels() {
  register_kernel("Const", {[](const NodeDef& node) -> Kernel {
                              Tensor value = node.attr<Tensor>("value");
                              return [value](KernelContext& ctx) { ctx.outputs[0] = value; };
                            },
                            CostHint::kCheap});
  // A placeholder that is not fed cannot produce anything; feeding it bypasses this kernel.
  register_kernel("Placeholder",
                  {[](const NodeDef& node) -> Kernel {
                     const std::string message =
                         "You must feed a value for placeholder tensor '" + node.name +
                         "' with dtype " + dtype_name(node.attr<DType>("dtype")) +
                         (node.has_attr("shape_str")
                              ? " and shape " + node.attr<std::string>("shape_str")
                              : std::string());
                     return [message](KernelContext&) { throw_invalid_argument(message); };
                   },
                   CostHint::kCheap});
  register_kernel("Identity", {[](const NodeDef&) -> Kernel {
                                 return [](KernelContext& ctx) { ctx.outputs[0] = ctx.inputs[0]; };
                               },
                               CostHint::kCheap});
  register_kernel(
      "NoOp", {[](const NodeDef&) -> Kernel { return [](KernelContext&) {}; }, CostHint::kCheap});
  register_kernel("Reshape", {[](const NodeDef& node) -> Kernel {
                                Shape shape = node.attr<std::vector<std::int64_t>>("shape");
                                return [shape](KernelContext& ctx) {
                                  const Tensor& x = ctx.inputs[0];
                                  Shape out = shape;
                                  std::int64_t known = 1;
                                  int infer = -1;
                                  for (std::size_t i = 0; i < out.size(); ++i) {
                                    if (out[i] == -1) {
                                      infer = static_cast<int>(i);
                                    } else {
                                      known *= out[i];
                                    }
                                  }
                                  if (infer >= 0 && known > 0)
                                    out[static_cast<std::size_t>(infer)] = x.numel() / known;
                                  if (shape_numel(out) != x.numel()) {
                                    throw_invalid_argument("Cannot reshape a tensor with " +
                                                           std::to_string(x.numel()) +
                                                           " elements to shape " +
                                                           shape_to_string(shape));
                                  }
                                  ctx.outputs[0] = x.contiguous().reshaped(out);
                                };
                              },
                              CostHint::kCheap});
}

}  // namespace opweave
