// Kernels of the ops that hold, pass on or describe tensors without arithmetic: Const,
// Placeholder(WithDefault), Identity(N), StopGradient, NoOp, Reshape, Shape, Size, Rank,
// Transpose, Cast, Fill, ZerosLike, OnesLike, and BroadcastGradientArgs (the reduction axes that
// undo a broadcast in a gradient). Signatures are TensorFlow's: shapes, axes and permutations are
// integer input tensors, so they may be computed at run time.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "opweave/errors.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/state/variable.h"

namespace opweave {
namespace {

using kernel_detail::TypeTag;

Kernel pass_through(const NodeDef&) {
  return [](KernelContext& ctx) {
    for (std::size_t i = 0; i < ctx.outputs.size(); ++i) ctx.outputs[i] = ctx.inputs[i];
  };
}

// A 1-D int32 or int64 tensor holding `values`.
Tensor int_vector(DType dtype, const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::empty(dtype, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kInt32) {
      t.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
    } else {
      t.data<std::int64_t>()[i] = values[i];
    }
  }
  return t;
}

// int32 results must fit: TensorFlow's Shape with out_type=int32 fails the same way.
void check_fits_int32(const NodeDef& node, DType dtype, std::int64_t v) {
  if (dtype == DType::kInt32 && v > std::numeric_limits<std::int32_t>::max()) {
    throw_node_error(node,
                     "value " + std::to_string(v) + " does not fit in int32; use out_type=int64");
  }
}

// The output shape of Reshape: at most one -1 (inferred), every other entry >= 0, and the same
// number of elements as the input.
Shape reshape_target(const std::vector<std::int64_t>& spec, std::int64_t numel) {
  Shape out(spec.begin(), spec.end());
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) {
        throw_invalid_argument("only one input size may be -1, not both " + std::to_string(infer) +
                               " and " + std::to_string(i));
      }
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      throw_invalid_argument("size " + std::to_string(i) + " must be non-negative, not " +
                             std::to_string(out[i]));
    } else {
      if (out[i] != 0 && known > std::numeric_limits<std::int64_t>::max() / out[i]) {
        throw_invalid_argument("shape " + shape_to_string(out) + " has too many elements");
      }
      known *= out[i];
    }
  }
  if (infer >= 0) {
    if (known == 0) {
      throw_invalid_argument(
          "Reshape cannot infer the missing input size for an empty tensor unless all specified "
          "input sizes are non-zero");
    }
    if (numel % known != 0) {
      throw_invalid_argument("Input to reshape is a tensor with " + std::to_string(numel) +
                             " values, but the requested shape requires a multiple of " +
                             std::to_string(known));
    }
    out[static_cast<std::size_t>(infer)] = numel / known;
  } else if (known != numel) {
    throw_invalid_argument("Input to reshape is a tensor with " + std::to_string(numel) +
                           " values, but the requested shape has " + std::to_string(known));
  }
  return out;
}

// A tensor of `shape` with every element `value` (a scalar of the same dtype).
Tensor filled(const Tensor& value, const Shape& shape) {
  Tensor out = Tensor::empty(value.dtype(), shape);
  const std::int64_t n = out.numel();
  if (value.dtype() == DType::kString) {
    const std::string& v = value.data<std::string>()[0];
    for (std::int64_t i = 0; i < n; ++i) out.data<std::string>()[i] = v;
    return out;
  }
  kernel_detail::dispatch_by_size(value.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = *value.data<T>();
    T* po = out.data<T>();
    std::fill(po, po + n, v);
  });
  return out;
}

// A scalar of `dtype` holding 0 or 1.
Tensor scalar_number(DType dtype, int v) {
  Tensor t = Tensor::empty(dtype, {});
  if (dtype == DType::kFloat16) {
    t.data<Half>()[0] = Half::from_float(static_cast<float>(v));
    return t;
  }
  kernel_detail::dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    t.data<T>()[0] = static_cast<T>(v);
  });
  return t;
}

// For inputs broadcast to a common shape, the axes of the output that each input was broadcast
// along (TensorFlow's BroadcastGradientArgs): summing a gradient over them gives the input's.
void broadcast_gradient_args(const std::vector<std::int64_t>& s0,
                             const std::vector<std::int64_t>& s1, std::vector<std::int64_t>* r0,
                             std::vector<std::int64_t>* r1) {
  const std::size_t n = std::max(s0.size(), s1.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t d0 = i < n - s0.size() ? 1 : s0[i - (n - s0.size())];
    const std::int64_t d1 = i < n - s1.size() ? 1 : s1[i - (n - s1.size())];
    if (d0 != d1 && d0 != 1 && d1 != 1) {
      throw_invalid_argument("Incompatible shapes: " + shape_to_string(s0) + " vs. " +
                             shape_to_string(s1));
    }
    const auto axis = static_cast<std::int64_t>(i);
    if (d0 == 1 && d1 != 1) r0->push_back(axis);
    if (d1 == 1 && d0 != 1) r1->push_back(axis);
    if (d0 == 1 && d1 == 1) {  // both 1: summing over it changes nothing, TF lists it for both
      r0->push_back(axis);
      r1->push_back(axis);
    }
  }
}

}  // namespace

void register_core_kernels() {
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
  // Identity also reads variables: TensorFlow 1's `v/read` is an Identity of the VariableV2's
  // ref, whose value it outputs (a value that is not a ref passes through).
  register_kernel("Identity", {[](const NodeDef&) -> Kernel {
                                 return [](KernelContext& ctx) {
                                   ctx.outputs[0] = deref(ctx.inputs[0], ctx.intra_pool);
                                 };
                               },
                               CostHint::kCheap});
  for (const char* op :
       {"IdentityN", "StopGradient", "PreventGradient", "PlaceholderWithDefault", "Snapshot"}) {
    register_kernel(op, {pass_through, CostHint::kCheap});
  }
  register_kernel(
      "NoOp", {[](const NodeDef&) -> Kernel { return [](KernelContext&) {}; }, CostHint::kCheap});
  register_kernel("Reshape", {[](const NodeDef&) -> Kernel {
                                return [](KernelContext& ctx) {
                                  const Tensor& x = ctx.inputs[0];
                                  const Shape out =
                                      reshape_target(int_list_input(ctx, 1, "shape"), x.numel());
                                  ctx.outputs[0] = x.contiguous().reshaped(out);
                                };
                              },
                              CostHint::kCheap});
  register_kernel("Shape", {[](const NodeDef& node) -> Kernel {
                              const DType out = node.has_attr("out_type")
                                                    ? node.attr<DType>("out_type")
                                                    : DType::kInt32;
                              return [out](KernelContext& ctx) {
                                for (std::int64_t d : ctx.inputs[0].shape())
                                  check_fits_int32(ctx.node, out, d);
                                ctx.outputs[0] = int_vector(out, ctx.inputs[0].shape());
                              };
                            },
                            CostHint::kCheap});
  register_kernel("Size", {[](const NodeDef& node) -> Kernel {
                             const DType out = node.has_attr("out_type")
                                                   ? node.attr<DType>("out_type")
                                                   : DType::kInt32;
                             return [out](KernelContext& ctx) {
                               const std::int64_t n = ctx.inputs[0].numel();
                               check_fits_int32(ctx.node, out, n);
                               ctx.outputs[0] = int_vector(out, {n}).reshaped({});
                             };
                           },
                           CostHint::kCheap});
  register_kernel("Rank", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) {
                               ctx.outputs[0] =
                                   int_vector(DType::kInt32, {ctx.inputs[0].ndim()}).reshaped({});
                             };
                           },
                           CostHint::kCheap});
  register_kernel("Transpose",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       const std::vector<std::int64_t> p = int_list_input(ctx, 1, "perm");
                       std::vector<int> perm;
                       for (std::int64_t v : p) {
                         if (v < -ctx.inputs[0].ndim() || v >= ctx.inputs[0].ndim()) {
                           throw_invalid_argument("transpose expects a vector of size " +
                                                  std::to_string(ctx.inputs[0].ndim()) +
                                                  "; perm entry " + std::to_string(v) +
                                                  " is out of range");
                         }
                         perm.push_back(static_cast<int>(v));
                       }
                       if (perm.empty() && ctx.inputs[0].ndim() > 0) {
                         throw_invalid_argument("transpose: perm is empty for a tensor of shape " +
                                                shape_to_string(ctx.inputs[0].shape()));
                       }
                       ctx.outputs[0] = transpose(ctx.inputs[0], perm, ctx.intra_pool);
                     };
                   },
                   CostHint::kMeasure});
  register_kernel("Cast", {[](const NodeDef& node) -> Kernel {
                             const DType to = node.attr<DType>("DstT");
                             return [to](KernelContext& ctx) {
                               ctx.outputs[0] = ctx.inputs[0].dtype() == to
                                                    ? ctx.inputs[0]
                                                    : cast(ctx.inputs[0], to, ctx.intra_pool);
                             };
                           },
                           CostHint::kMeasure});
  register_kernel("Fill", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) {
                               const std::vector<std::int64_t> dims =
                                   int_list_input(ctx, 0, "dims");
                               for (std::int64_t d : dims) {
                                 if (d < 0) {
                                   throw_invalid_argument("Fill: dims must be non-negative, got " +
                                                          shape_to_string(dims));
                                 }
                               }
                               if (ctx.inputs[1].numel() != 1 || ctx.inputs[1].ndim() != 0) {
                                 throw_invalid_argument("Fill: value must be a scalar, got shape " +
                                                        shape_to_string(ctx.inputs[1].shape()));
                               }
                               ctx.outputs[0] = filled(ctx.inputs[1].contiguous(), dims);
                             };
                           },
                           CostHint::kMeasure});
  register_kernel("ZerosLike", {[](const NodeDef&) -> Kernel {
                                  return [](KernelContext& ctx) {
                                    const Tensor& x = ctx.inputs[0];
                                    ctx.outputs[0] =
                                        x.dtype() == DType::kString
                                            ? Tensor::zeros(x.dtype(), x.shape())
                                            : filled(scalar_number(x.dtype(), 0), x.shape());
                                  };
                                },
                                CostHint::kMeasure});
  register_kernel("OnesLike", {[](const NodeDef&) -> Kernel {
                                 return [](KernelContext& ctx) {
                                   const Tensor& x = ctx.inputs[0];
                                   ctx.outputs[0] = filled(scalar_number(x.dtype(), 1), x.shape());
                                 };
                               },
                               CostHint::kMeasure});
  register_kernel("BroadcastTo",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       const std::vector<std::int64_t> s = int_list_input(ctx, 1, "shape");
                       ctx.outputs[0] = broadcast_to(ctx.inputs[0], s, ctx.intra_pool);
                     };
                   },
                   CostHint::kMeasure});
  // The input shape with the reduced axes set to 1 (a reduction gradient's target shape).
  register_kernel("ReducedShape", {[](const NodeDef&) -> Kernel {
                                     return [](KernelContext& ctx) {
                                       std::vector<std::int64_t> s =
                                           int_list_input(ctx, 0, "input_shape");
                                       const auto rank = static_cast<std::int64_t>(s.size());
                                       for (std::int64_t a : int_list_input(ctx, 1, "axes")) {
                                         if (a < -rank || a >= rank)
                                           throw_invalid_argument("axis out of range");
                                         s[static_cast<std::size_t>(a < 0 ? a + rank : a)] = 1;
                                       }
                                       ctx.outputs[0] = int_vector(ctx.inputs[0].dtype(), s);
                                     };
                                   },
                                   CostHint::kCheap});
  register_kernel("InvertPermutation",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       const std::vector<std::int64_t> p = int_list_input(ctx, 0, "x");
                       std::vector<std::int64_t> inv(p.size(), -1);
                       for (std::size_t i = 0; i < p.size(); ++i) {
                         if (p[i] < 0 || p[i] >= static_cast<std::int64_t>(p.size()) ||
                             inv[static_cast<std::size_t>(p[i])] != -1) {
                           throw_invalid_argument("InvertPermutation: " + shape_to_string(p) +
                                                  " is not a permutation");
                         }
                         inv[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
                       }
                       ctx.outputs[0] = int_vector(ctx.inputs[0].dtype(), inv);
                     };
                   },
                   CostHint::kCheap});
  register_kernel(
      "Range",
      {[](const NodeDef&) -> Kernel {
         return [](KernelContext& ctx) {
           const DType dt = ctx.inputs[0].dtype();
           for (int i = 0; i < 3; ++i) {
             if (ctx.inputs[static_cast<std::size_t>(i)].numel() != 1) {
               throw_invalid_argument("Range: start, limit and delta must be scalars");
             }
           }
           kernel_detail::dispatch_all(dt, [&](auto tag) {
             using T = typename decltype(tag)::type;
             if constexpr (std::is_same_v<T, bool>) {
               kernel_detail::unsupported_dtype(dt);
             } else {
               const double start = static_cast<double>(ctx.inputs[0].contiguous().data<T>()[0]);
               const double limit = static_cast<double>(ctx.inputs[1].contiguous().data<T>()[0]);
               const double delta = static_cast<double>(ctx.inputs[2].contiguous().data<T>()[0]);
               if (delta == 0) throw_invalid_argument("Requires delta != 0");
               if ((delta > 0 && start > limit) || (delta < 0 && start < limit)) {
                 ctx.outputs[0] = Tensor::empty(dt, {0});
                 return;
               }
               const double count = std::ceil(std::abs((limit - start) / delta));
               if (!(count < 1e15)) throw_invalid_argument("Range: too many elements");
               const auto n = static_cast<std::int64_t>(count);
               Tensor out = Tensor::empty(dt, {n});
               T* po = out.data<T>();
               const T s0 = ctx.inputs[0].contiguous().data<T>()[0];
               const T d0 = ctx.inputs[2].contiguous().data<T>()[0];
               for (std::int64_t i = 0; i < n; ++i)
                 po[i] = static_cast<T>(s0 + static_cast<T>(i) * d0);
               ctx.outputs[0] = std::move(out);
             }
           });
         };
       },
       CostHint::kCheap});
  register_kernel("BroadcastGradientArgs",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       std::vector<std::int64_t> r0, r1;
                       broadcast_gradient_args(int_list_input(ctx, 0, "s0"),
                                               int_list_input(ctx, 1, "s1"), &r0, &r1);
                       ctx.outputs[0] = int_vector(ctx.inputs[0].dtype(), r0);
                       ctx.outputs[1] = int_vector(ctx.inputs[0].dtype(), r1);
                     };
                   },
                   CostHint::kCheap});
}

}  // namespace opweave
