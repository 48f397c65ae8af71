// Kernels of the optimizers' fused updates, TensorFlow 1's training ops: ApplyGradientDescent,
// ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad. Each is one pass
// over the variable, its slots and the gradient, split in blocks over the intra-op pool (not a
// chain of element-wise ops), with TensorFlow's formulas in TensorFlow's operation order. Every
// element's arithmetic depends only on its own inputs, so the bits are the same for any thread
// count. Concurrency follows opweave/state/variable.h (use_locking).
//
// This file is compiled with -fno-math-errno (CMakeLists.txt): std::sqrt then needs no errno
// check and the loops vectorise.
#include <cmath>
#include <initializer_list>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/state_util.h"
#include "opweave/state/variable.h"

// Each iteration of an update loop reads and writes element i alone, and a variable's input and
// output buffers are either the same (in place) or disjoint, so no iteration depends on another:
// the compiler may vectorise without its runtime aliasing check (which would see in == out as a
// possible overlap and fall back to scalar code for every in-place update).
#if defined(__clang__)
#define OPWEAVE_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define OPWEAVE_IVDEP _Pragma("GCC ivdep")
#else
#define OPWEAVE_IVDEP
#endif

namespace opweave {
namespace {

// The shared frame of a fused update: inputs [0, names.size()) are the refs of the variable and
// its slots, input `grad_index` the gradient. Checks that every variable is initialized and has
// the gradient's shape and dtype, then calls body(TypeTag<T>, update, grad, n) and commits.
template <typename Body>
void fused_update(KernelContext& ctx, std::initializer_list<const char*> names,
                  std::size_t grad_index, bool use_locking, Body&& body) {
  std::vector<Variable*> vars;
  for (std::size_t i = 0; i < names.size(); ++i) {
    vars.push_back(&ref_input(ctx, i, names.begin()[i]));
  }
  const Tensor grad = ctx.inputs[grad_index].contiguous();
  VariableUpdate update(vars, use_locking);
  for (std::size_t i = 0; i < vars.size(); ++i) {
    check_dtype(*vars[i], grad, "grad");
    if (update.shape(i) != grad.shape()) {
      throw_invalid_argument(std::string(names.begin()[0]) + " and " +
                             (i == 0 ? std::string("grad") : names.begin()[i]) +
                             " do not have the same shape" + shape_to_string(update.shape(i)) +
                             " " + shape_to_string(grad.shape()));
    }
  }
  kernel_detail::dispatch_float(grad.dtype(),
                                [&](auto tag) { body(tag, update, grad, grad.numel()); });
  update.commit();
  ctx.outputs[0] = ctx.inputs[0];
}

// var -= alpha * delta
Kernel apply_gradient_descent(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    fused_update(ctx, {"var"}, 2, use_locking,
                 [&](auto tag, VariableUpdate& up, const Tensor& grad, std::int64_t n) {
                   using T = typename decltype(tag)::type;
                   const T lr = scalar_input<T>(ctx, 1, "alpha");
                   const T* g = grad.data<T>();
                   const T* var_in = up.in<T>(0);
                   T* var = up.out<T>(0);
                   up.for_blocks(ctx.intra_pool, n, 1.0, [&](std::int64_t b, std::int64_t e) {
                     OPWEAVE_IVDEP
                     for (std::int64_t i = b; i < e; ++i) var[i] = var_in[i] - g[i] * lr;
                   });
                 });
  };
}

// accum = accum * momentum + grad; var -= lr * accum (Nesterov: grad * lr + accum * momentum * lr)
Kernel apply_momentum(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  const bool nesterov = bool_attr(node, "use_nesterov", false);
  return [use_locking, nesterov](KernelContext& ctx) {
    fused_update(ctx, {"var", "accum"}, 3, use_locking,
                 [&](auto tag, VariableUpdate& up, const Tensor& grad, std::int64_t n) {
                   using T = typename decltype(tag)::type;
                   const T lr = scalar_input<T>(ctx, 2, "lr");
                   const T momentum = scalar_input<T>(ctx, 4, "momentum");
                   const T* g = grad.data<T>();
                   const T* var_in = up.in<T>(0);
                   const T* acc_in = up.in<T>(1);
                   T* var = up.out<T>(0);
                   T* acc = up.out<T>(1);
                   up.for_blocks(ctx.intra_pool, n, 2.0, [&](std::int64_t b, std::int64_t e) {
                     if (nesterov) {
                       OPWEAVE_IVDEP
                       for (std::int64_t i = b; i < e; ++i) {
                         const T a = acc_in[i] * momentum + g[i];
                         acc[i] = a;
                         var[i] = var_in[i] - (g[i] * lr + a * momentum * lr);
                       }
                     } else {
                       OPWEAVE_IVDEP
                       for (std::int64_t i = b; i < e; ++i) {
                         const T a = acc_in[i] * momentum + g[i];
                         acc[i] = a;
                         var[i] = var_in[i] - a * lr;
                       }
                     }
                   });
                 });
  };
}

// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (g - m) * (1 - beta1);
// v += (g^2 - v) * (1 - beta2); var -= m * lr_t / (sqrt(v) + epsilon)
// (Nesterov: (g * (1 - beta1) + beta1 * m) in place of m).
Kernel apply_adam(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  const bool nesterov = bool_attr(node, "use_nesterov", false);
  return [use_locking, nesterov](KernelContext& ctx) {
    fused_update(ctx, {"var", "m", "v"}, 9, use_locking,
                 [&](auto tag, VariableUpdate& up, const Tensor& grad, std::int64_t n) {
                   using T = typename decltype(tag)::type;
                   const T beta1_power = scalar_input<T>(ctx, 3, "beta1_power");
                   const T beta2_power = scalar_input<T>(ctx, 4, "beta2_power");
                   const T lr = scalar_input<T>(ctx, 5, "lr");
                   const T beta1 = scalar_input<T>(ctx, 6, "beta1");
                   const T beta2 = scalar_input<T>(ctx, 7, "beta2");
                   const T epsilon = scalar_input<T>(ctx, 8, "epsilon");
                   const T alpha = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
                   const T one_minus_beta1 = T(1) - beta1;
                   const T one_minus_beta2 = T(1) - beta2;
                   const T* g = grad.data<T>();
                   const T* var_in = up.in<T>(0);
                   const T* m_in = up.in<T>(1);
                   const T* v_in = up.in<T>(2);
                   T* var = up.out<T>(0);
                   T* m = up.out<T>(1);
                   T* v = up.out<T>(2);
                   up.for_blocks(ctx.intra_pool, n, 8.0, [&](std::int64_t b, std::int64_t e) {
                     if (nesterov) {
                       OPWEAVE_IVDEP
                       for (std::int64_t i = b; i < e; ++i) {
                         const T gi = g[i];
                         const T mi = m_in[i] + (gi - m_in[i]) * one_minus_beta1;
                         const T vi = v_in[i] + (gi * gi - v_in[i]) * one_minus_beta2;
                         m[i] = mi;
                         v[i] = vi;
                         var[i] = var_in[i] - ((gi * one_minus_beta1 + beta1 * mi) * alpha) /
                                                  (std::sqrt(vi) + epsilon);
                       }
                     } else {
                       OPWEAVE_IVDEP
                       for (std::int64_t i = b; i < e; ++i) {
                         const T gi = g[i];
                         const T mi = m_in[i] + (gi - m_in[i]) * one_minus_beta1;
                         const T vi = v_in[i] + (gi * gi - v_in[i]) * one_minus_beta2;
                         m[i] = mi;
                         v[i] = vi;
                         var[i] = var_in[i] - (mi * alpha) / (std::sqrt(vi) + epsilon);
                       }
                     }
                   });
                 });
  };
}

// ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + g * lr / sqrt(ms + epsilon); var -= mom
Kernel apply_rms_prop(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    fused_update(ctx, {"var", "ms", "mom"}, 7, use_locking,
                 [&](auto tag, VariableUpdate& up, const Tensor& grad, std::int64_t n) {
                   using T = typename decltype(tag)::type;
                   const T lr = scalar_input<T>(ctx, 3, "lr");
                   const T rho = scalar_input<T>(ctx, 4, "rho");
                   const T momentum = scalar_input<T>(ctx, 5, "momentum");
                   const T epsilon = scalar_input<T>(ctx, 6, "epsilon");
                   const T one_minus_rho = T(1) - rho;
                   const T* g = grad.data<T>();
                   const T* var_in = up.in<T>(0);
                   const T* ms_in = up.in<T>(1);
                   const T* mom_in = up.in<T>(2);
                   T* var = up.out<T>(0);
                   T* ms = up.out<T>(1);
                   T* mom = up.out<T>(2);
                   up.for_blocks(ctx.intra_pool, n, 8.0, [&](std::int64_t b, std::int64_t e) {
                     OPWEAVE_IVDEP
                     for (std::int64_t i = b; i < e; ++i) {
                       const T gi = g[i];
                       const T s = ms_in[i] + (gi * gi - ms_in[i]) * one_minus_rho;
                       const T mo = mom_in[i] * momentum + (gi * lr) / std::sqrt(s + epsilon);
                       ms[i] = s;
                       mom[i] = mo;
                       var[i] = var_in[i] - mo;
                     }
                   });
                 });
  };
}

// ms and mg (the mean gradient) as RMSProp's ms; the denominator is sqrt(ms - mg^2 + epsilon).
Kernel apply_centered_rms_prop(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    fused_update(ctx, {"var", "mg", "ms", "mom"}, 8, use_locking,
                 [&](auto tag, VariableUpdate& up, const Tensor& grad, std::int64_t n) {
                   using T = typename decltype(tag)::type;
                   const T lr = scalar_input<T>(ctx, 4, "lr");
                   const T rho = scalar_input<T>(ctx, 5, "rho");
                   const T momentum = scalar_input<T>(ctx, 6, "momentum");
                   const T epsilon = scalar_input<T>(ctx, 7, "epsilon");
                   const T one_minus_rho = T(1) - rho;
                   const T* g = grad.data<T>();
                   const T* var_in = up.in<T>(0);
                   const T* mg_in = up.in<T>(1);
                   const T* ms_in = up.in<T>(2);
                   const T* mom_in = up.in<T>(3);
                   T* var = up.out<T>(0);
                   T* mg = up.out<T>(1);
                   T* ms = up.out<T>(2);
                   T* mom = up.out<T>(3);
                   up.for_blocks(ctx.intra_pool, n, 10.0, [&](std::int64_t b, std::int64_t e) {
                     OPWEAVE_IVDEP
                     for (std::int64_t i = b; i < e; ++i) {
                       const T gi = g[i];
                       const T s = ms_in[i] + (gi * gi - ms_in[i]) * one_minus_rho;
                       const T a = mg_in[i] + (gi - mg_in[i]) * one_minus_rho;
                       const T denom = (s - a * a) + epsilon;
                       const T mo = mom_in[i] * momentum + (gi * lr) / std::sqrt(denom);
                       ms[i] = s;
                       mg[i] = a;
                       mom[i] = mo;
                       var[i] = var_in[i] - mo;
                     }
                   });
                 });
  };
}

// accum += g^2 (when update_slots); var -= g * lr * (1 / sqrt(accum))
Kernel apply_adagrad(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  const bool update_slots = bool_attr(node, "update_slots", true);
  return [use_locking, update_slots](KernelContext& ctx) {
    fused_update(ctx, {"var", "accum"}, 3, use_locking,
                 [&](auto tag, VariableUpdate& up, const Tensor& grad, std::int64_t n) {
                   using T = typename decltype(tag)::type;
                   const T lr = scalar_input<T>(ctx, 2, "lr");
                   const T* g = grad.data<T>();
                   const T* var_in = up.in<T>(0);
                   const T* acc_in = up.in<T>(1);
                   T* var = up.out<T>(0);
                   T* acc = up.out<T>(1);
                   up.for_blocks(ctx.intra_pool, n, 6.0, [&](std::int64_t b, std::int64_t e) {
                     OPWEAVE_IVDEP
                     for (std::int64_t i = b; i < e; ++i) {
                       const T gi = g[i];
                       const T a = update_slots ? acc_in[i] + gi * gi : acc_in[i];
                       acc[i] = a;
                       var[i] = var_in[i] - gi * lr * (T(1) / std::sqrt(a));
                     }
                   });
                 });
  };
}

}  // namespace

void register_training_kernels() {
  // Stateful: they write the session's variables. Measured: tiny variables update inline.
  register_kernel("ApplyGradientDescent",
                  {apply_gradient_descent, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ApplyMomentum", {apply_momentum, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ApplyAdam", {apply_adam, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ApplyRMSProp", {apply_rms_prop, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ApplyCenteredRMSProp",
                  {apply_centered_rms_prop, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ApplyAdagrad", {apply_adagrad, CostHint::kMeasure, /*stateful=*/true});
}

}  // namespace opweave
