// Kernels of the graph optimizer's fused ops (optimizer/remapping.cpp makes them; they exist only
// in optimized graphs, so they have no Python OpDef):
//
// - _FusedMatMul(a, b[, bias]): MatMul (transpose_a, transpose_b) whose epilogue -- the bias row
//   of a BiasAdd or Add, then an activation (fused_ops = ["BiasAdd", "Relu"], ...) -- is applied
//   to each tile of C right after its last K block (gemm.h's Epilogue), and whose b may be packed
//   once per compiled signature (pack_weights: b is a Const or a variable read; kept by buffer
//   identity, packed_weights.h).
//
// The same gemm() call as MatMul's kernel (matmul.cpp), the bias added after the full K sum and
// the activation after it, each with the op's formula: the bits of the unfused nodes. Errors name
// the MatMul as written (matmul_name), with the messages its kernels give.
//
// The fused convolution, _FusedConv2D, is with the convolutions (conv_ops.cpp).
#include <memory>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/fused_util.h"
#include "opweave/kernels/gemm.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/packed_weights.h"

namespace opweave {

namespace {

using gemm_detail::Activation;

struct FusedMatMul {
  bool ta = false, tb = false;
  fused::Spec spec;
  bool pack = false;
  std::string matmul;  // the MatMul's name as written, for errors
  std::shared_ptr<PackedWeightCache> cache;
};

[[noreturn]] void fail(const KernelContext& ctx, const FusedMatMul& f, const std::string& what) {
  throw_node_error(ctx.node, what + " (in MatMul '" + f.matmul + "', fused into this node)");
}

template <typename T>
void run(KernelContext& ctx, const FusedMatMul& f, const Tensor& a, const Tensor& b, std::int64_t m,
         std::int64_t n, std::int64_t k, Tensor& out) {
  const std::int64_t a_rs = f.ta ? a.strides()[1] : a.strides()[0];
  const std::int64_t a_cs = f.ta ? a.strides()[0] : a.strides()[1];
  const std::int64_t b_rs = f.tb ? b.strides()[1] : b.strides()[0];
  const std::int64_t b_cs = f.tb ? b.strides()[0] : b.strides()[1];
  const gemm_detail::StridedMatrix<T> av{a.data<T>(), a_rs, a_cs};
  const gemm_detail::StridedMatrix<T> bv{b.data<T>(), b_rs, b_cs};
  Tensor bias;
  gemm_detail::Epilogue<T> ep;
  if (f.spec.bias) {
    bias = fused::check_bias(ctx, ctx.inputs[2], a.dtype(), n).contiguous();
    ep.bias = bias.data<T>();
  }
  ep.activation = f.spec.activation;
  ep.alpha = static_cast<T>(f.spec.alpha);
  std::shared_ptr<const gemm_detail::PackedB<T>> packed;
  if (f.pack && m > 0 && n > 0 && k > 0) packed = f.cache->get<T>(b, bv, k, n, ctx.intra_pool);
  gemm_detail::gemm<T>(m, n, k, av, bv, out.data<T>(), n, ctx.intra_pool, ep, packed.get());
}

void fused_matmul(KernelContext& ctx, const FusedMatMul& f) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  if (a.ndim() != 2 || b.ndim() != 2) {
    fail(ctx, f,
         "MatMul: In[0] and In[1] must be matrices, got shapes " + shape_to_string(a.shape()) +
             " and " + shape_to_string(b.shape()));
  }
  if (a.dtype() != b.dtype() || (a.dtype() != DType::kFloat32 && a.dtype() != DType::kFloat64)) {
    fail(ctx, f,
         std::string("matmul: needs two float32 or float64 operands, got ") +
             dtype_name(a.dtype()) + " " + shape_to_string(a.shape()) + " and " +
             dtype_name(b.dtype()) + " " + shape_to_string(b.shape()));
  }
  const std::int64_t m = f.ta ? a.shape()[1] : a.shape()[0];
  const std::int64_t k = f.ta ? a.shape()[0] : a.shape()[1];
  const std::int64_t kb = f.tb ? b.shape()[1] : b.shape()[0];
  const std::int64_t n = f.tb ? b.shape()[0] : b.shape()[1];
  if (k != kb) {
    fail(ctx, f,
         "matmul: inner dimensions differ (" + std::to_string(k) + " vs " + std::to_string(kb) +
             "): a " + shape_to_string(a.shape()) + (f.ta ? " (transposed)" : "") + ", b " +
             shape_to_string(b.shape()) + (f.tb ? " (transposed)" : ""));
  }
  Tensor out = Tensor::empty(a.dtype(), {m, n});
  if (a.dtype() == DType::kFloat32) {
    run<float>(ctx, f, a, b, m, n, k, out);
  } else {
    run<double>(ctx, f, a, b, m, n, k, out);
  }
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void register_fused_kernels() {
  register_kernel("_FusedMatMul",
                  {[](const NodeDef& node) -> Kernel {
                     FusedMatMul f;
                     f.ta = node.attr<bool>("transpose_a");
                     f.tb = node.attr<bool>("transpose_b");
                     f.spec = fused::read_spec(node);
                     f.pack = node.has_attr("pack_weights") && node.attr<bool>("pack_weights");
                     f.matmul = node.has_attr("matmul_name") ? node.attr<std::string>("matmul_name")
                                                             : node.name;
                     // Made once per compiled signature: every run of it
                     // (concurrent ones too) shares this cache.
                     f.cache = std::make_shared<PackedWeightCache>();
                     return [f = std::move(f)](KernelContext& ctx) { fused_matmul(ctx, f); };
                   },
                   CostHint::kExpensive});
}

}  // namespace opweave
