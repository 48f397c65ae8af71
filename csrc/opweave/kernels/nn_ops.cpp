// Kernels of the activations and their gradient ops (Relu6, Elu, Selu, LeakyRelu, Softplus,
// Softsign and *Grad) and of SigmoidCrossEntropyWithLogits, with TensorFlow's formulas. Each is
// element-wise: split over the intra-op pool in contiguous pieces, every element computed by the
// same expression whoever runs it. They write into an input's buffer when the executor may hand
// it over. register_nn_kernels() also registers the family's other files (softmax_ops.cpp,
// bias_ops.cpp, topk_ops.cpp).
#include <cmath>
#include <string>
#include <type_traits>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/vector_math.h"

namespace opweave {

void register_softmax_kernels();
void register_bias_kernels();
void register_topk_kernels();

namespace {

using kernel_detail::for_elements;
using kernel_detail::kElementwiseParallelThreshold;
namespace vm = vector_math;

// SELU's constants (Klambauer et al. 2017), as TensorFlow's kernel has them.
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluScaleAlpha = 1.7580993408473768599402175208123;

enum class Types { kFloats, kReals };

// Calls fn(TypeTag<T>{}) for float32 / float64 (kFloats) or every real type (kReals; not bool).
template <Types kTypes, typename Fn>
void dispatch(DType dtype, Fn&& fn) {
  kernel_detail::dispatch_all(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      kernel_detail::unsupported_dtype(dtype);
    } else if constexpr (kTypes == Types::kFloats && !std::is_floating_point_v<T>) {
      kernel_detail::unsupported_dtype(dtype);
    } else {
      fn(tag);
    }
  });
}

// out = f(x) element-wise; `cost`: CPU cycles per element.
template <Types kTypes, typename MakeFn>
void unary_kernel(KernelContext& ctx, const MakeFn& make_fn, double cost) {
  Tensor* reuse = ctx.forwardable_input(0);
  const bool in_place = reuse != nullptr && reuse->is_contiguous();
  const Tensor x = in_place ? *reuse : ctx.inputs[0].contiguous();
  Tensor out = in_place ? std::move(*reuse) : Tensor::empty(x.dtype(), x.shape());
  dispatch<kTypes>(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto f = make_fn(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for_elements(
        ctx.intra_pool, x.numel(), kElementwiseParallelThreshold,
        [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) po[i] = f(px[i]);
        },
        cost);
  });
  ctx.outputs[0] = std::move(out);
}

// out = f(a, b) element-wise for two inputs of one shape and dtype (a gradient op's gradients and
// features; a loss's logits and labels).
template <Types kTypes, typename MakeFn>
void binary_kernel(KernelContext& ctx, const MakeFn& make_fn, double cost) {
  const Tensor& a_in = ctx.inputs[0];
  const Tensor& b_in = ctx.inputs[1];
  if (a_in.dtype() != b_in.dtype() || a_in.shape() != b_in.shape()) {
    throw_node_error(ctx.node, "Inputs to operation " + ctx.node.name + " of type " + ctx.node.op +
                                   " must have the same size and shape.  Input 0: " +
                                   dtype_name(a_in.dtype()) + " " + shape_to_string(a_in.shape()) +
                                   " != input 1: " + dtype_name(b_in.dtype()) + " " +
                                   shape_to_string(b_in.shape()));
  }
  Tensor* reuse = nullptr;
  int into = -1;
  for (int i = 0; i < 2 && reuse == nullptr; ++i) {
    Tensor* t = ctx.forwardable_input(static_cast<std::size_t>(i));
    if (t != nullptr && t->is_contiguous()) {
      reuse = t;
      into = i;
    }
  }
  // Element i of the output is written after both inputs' element i were read, so either input's
  // buffer may hold it.
  const Tensor a = into == 0 ? *reuse : a_in.contiguous();
  const Tensor b = into == 1 ? *reuse : b_in.contiguous();
  Tensor out = reuse != nullptr ? std::move(*reuse) : Tensor::empty(a.dtype(), a.shape());
  dispatch<kTypes>(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto f = make_fn(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    for_elements(
        ctx.intra_pool, a.numel(), kElementwiseParallelThreshold,
        [&](std::int64_t s, std::int64_t e) {
          for (std::int64_t i = s; i < e; ++i) po[i] = f(pa[i], pb[i]);
        },
        cost);
  });
  ctx.outputs[0] = std::move(out);
}

template <Types kTypes, typename MakeFn>
void register_unary(const char* op, MakeFn make_fn, double cost) {
  register_kernel(op, {[make_fn, cost](const NodeDef&) -> Kernel {
                         return [make_fn, cost](KernelContext& ctx) {
                           unary_kernel<kTypes>(ctx, make_fn, cost);
                         };
                       },
                       CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

template <Types kTypes, typename MakeFn>
void register_binary(const char* op, MakeFn make_fn, double cost) {
  register_kernel(op, {[make_fn, cost](const NodeDef&) -> Kernel {
                         return [make_fn, cost](KernelContext& ctx) {
                           binary_kernel<kTypes>(ctx, make_fn, cost);
                         };
                       },
                       CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

// LeakyRelu and LeakyReluGrad read their slope from the node.
template <typename Body>
void register_with_alpha(const char* op, Body body) {
  register_kernel(op, {[body](const NodeDef& node) -> Kernel {
                         const double alpha =
                             node.has_attr("alpha") ? node.attr<double>("alpha") : 0.2;
                         return [body, alpha](KernelContext& ctx) { body(ctx, alpha); };
                       },
                       CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
}

}  // namespace

void register_nn_kernels() {
  constexpr Types kFloats = Types::kFloats;
  constexpr Types kReals = Types::kReals;
  register_unary<kReals>(
      "Relu6",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T x) { return x < T(0) ? T(0) : (x > T(6) ? T(6) : x); };  // NaN stays NaN
      },
      1.0);
  register_binary<kReals>(
      "Relu6Grad",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T g, T f) { return f > T(0) && f < T(6) ? g : T(0); };
      },
      1.0);
  register_unary<kFloats>(
      "Elu",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T x) { return vm::select<T>(x < T(0), vm::expm1_nonpositive<T>(x), x); };
      },
      20.0);
  register_binary<kFloats>(
      "EluGrad",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T g, T y) { return y < T(0) ? g * (y + T(1)) : g; };
      },
      1.0);
  register_unary<kFloats>(
      "Selu",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T x) {
          return vm::select<T>(x < T(0), T(kSeluScaleAlpha) * vm::expm1_nonpositive<T>(x),
                               T(kSeluScale) * x);
        };
      },
      20.0);
  register_binary<kFloats>(
      "SeluGrad",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T g, T y) { return y < T(0) ? g * (y + T(kSeluScaleAlpha)) : g * T(kSeluScale); };
      },
      1.0);
  register_unary<kFloats>(
      "Softplus",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        // log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, no cancellation.
        return [](T x) { return (x > T(0) ? x : T(0)) + std::log1p(vm::exp<T>(-std::fabs(x))); };
      },
      40.0);
  register_binary<kFloats>(
      "SoftplusGrad",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T g, T f) { return g * vm::sigmoid<T>(f); };
      },
      20.0);
  register_unary<kFloats>(
      "Softsign",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T x) { return x / (T(1) + std::fabs(x)); };
      },
      4.0);
  register_binary<kFloats>(
      "SoftsignGrad",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T g, T f) {
          const T d = T(1) + std::fabs(f);
          return g / (d * d);
        };
      },
      4.0);
  register_with_alpha("LeakyRelu", [](KernelContext& ctx, double alpha) {
    unary_kernel<kFloats>(
        ctx,
        [alpha](auto tag) {
          using T = typename decltype(tag)::type;
          const T a = static_cast<T>(alpha);
          return [a](T x) { return x > T(0) ? x : x * a; };
        },
        1.0);
  });
  register_with_alpha("LeakyReluGrad", [](KernelContext& ctx, double alpha) {
    binary_kernel<kFloats>(
        ctx,
        [alpha](auto tag) {
          using T = typename decltype(tag)::type;
          const T a = static_cast<T>(alpha);
          return [a](T g, T f) { return f > T(0) ? g : g * a; };
        },
        1.0);
  });
  // max(x, 0) - x z + log1p(e^-|x|): TensorFlow's stable formula, in one pass.
  register_binary<kFloats>(
      "SigmoidCrossEntropyWithLogits",
      [](auto tag) {
        using T = typename decltype(tag)::type;
        return [](T x, T z) {
          return ((x > T(0) ? x : T(0)) - x * z) + std::log1p(vm::exp<T>(-std::fabs(x)));
        };
      },
      40.0);
  register_softmax_kernels();
  register_bias_kernels();
  register_topk_kernels();
}

}  // namespace opweave
