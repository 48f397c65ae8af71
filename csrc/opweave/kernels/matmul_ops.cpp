// Kernels of MatMul (two matrices, transpose_a / transpose_b) and BatchMatMul(V2) (leading
// dimensions batch, broadcasting in V2; adj_x / adj_y transpose, real types only). The blocked
// GEMM in gemm.cpp does the work; every op is worth spreading over the inter-op pool.
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernels.h"

namespace opweave {
namespace {

void check_rank(const Tensor& t, const char* op, bool exactly_two) {
  if (exactly_two ? t.ndim() != 2 : t.ndim() < 2) {
    throw_invalid_argument(
        std::string(op) +
        (exactly_two ? ": In[0] and In[1] must be matrices" : ": inputs must have rank >= 2") +
        ", got shape " + shape_to_string(t.shape()));
  }
}

}  // namespace

void register_matmul_kernels() {
  register_kernel(
      "MatMul", {[](const NodeDef& node) -> Kernel {
                   const bool ta = node.attr<bool>("transpose_a");
                   const bool tb = node.attr<bool>("transpose_b");
                   return [ta, tb](KernelContext& ctx) {
                     check_rank(ctx.inputs[0], "MatMul", true);
                     check_rank(ctx.inputs[1], "MatMul", true);
                     ctx.outputs[0] = matmul(ctx.inputs[0], ctx.inputs[1], ta, tb, ctx.intra_pool);
                   };
                 },
                 CostHint::kExpensive, /*stateful=*/false, /*float16_via_float32=*/true});
  for (const char* op : {"BatchMatMul", "BatchMatMulV2"}) {
    register_kernel(op, {[op](const NodeDef& node) -> Kernel {
                           const bool ta = node.has_attr("adj_x") && node.attr<bool>("adj_x");
                           const bool tb = node.has_attr("adj_y") && node.attr<bool>("adj_y");
                           return [op, ta, tb](KernelContext& ctx) {
                             check_rank(ctx.inputs[0], op, false);
                             check_rank(ctx.inputs[1], op, false);
                             ctx.outputs[0] =
                                 matmul(ctx.inputs[0], ctx.inputs[1], ta, tb, ctx.intra_pool);
                           };
                         },
                         CostHint::kExpensive, /*stateful=*/false, /*float16_via_float32=*/true});
  }
}

}  // namespace opweave
