// Kernels of the optimizers' fused updates, TensorFlow 1's training ops: ApplyGradientDescent,
// ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyCenteredRMSProp, ApplyAdagrad. Each is one pass
// over the variable, its slots and the gradient, split in blocks over the intra-op pool (not a
// chain of element-wise ops), with TensorFlow's formulas in TensorFlow's operation order. Every
// element's arithmetic depends only on its own inputs, so the bits are the same for any thread
// count. Concurrency follows opweave/state/variable.h (use_locking).
//
// The loops themselves are in training_loops.h, built for each instruction set.
#include <cmath>
#include <initializer_list>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/state_util.h"
#include "opweave/kernels/training_loops.h"
#include "opweave/state/variable.h"

namespace opweave {
namespace {

// One fused update: inputs [0, names.size()) are the refs of the variable and its slots, input
// `grad_index` the gradient. Checks that every variable is initialized and has the gradient's
// shape and dtype, then runs the loop pick(training_loops::selected_table<T>()) over the elements
// (`cost` per element for for_blocks) with the op's scalars read by set_scalars(TypeTag<T>,
// UpdateArgs<T>&), and commits.
template <typename Pick, typename SetScalars>
void run_update(KernelContext& ctx, std::initializer_list<const char*> names,
                std::size_t grad_index, bool use_locking, double cost, Pick&& pick,
                SetScalars&& set_scalars) {
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
  kernel_detail::dispatch_float(grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    training_loops::UpdateArgs<T> args;
    args.grad = grad.data<T>();
    for (std::size_t i = 0; i < vars.size(); ++i) {
      args.in[i] = update.in<T>(i);
      args.out[i] = update.out<T>(i);
    }
    set_scalars(tag, args);
    const training_loops::UpdateFn<T> loop = pick(training_loops::selected_table<T>());
    update.for_blocks(ctx.intra_pool, grad.numel(), cost,
                      [&](std::int64_t b, std::int64_t e) { loop(args, b, e); });
  });
  update.commit();
  ctx.outputs[0] = ctx.inputs[0];
}

// var -= alpha * delta
Kernel apply_gradient_descent(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    run_update(
        ctx, {"var"}, 2, use_locking, 1.0, [](const auto& t) { return t.gradient_descent; },
        [&](auto tag, auto& a) {
          using T = typename decltype(tag)::type;
          a.lr = scalar_input<T>(ctx, 1, "alpha");
        });
  };
}

// accum = accum * momentum + grad; var -= lr * accum (Nesterov: grad * lr + accum * momentum * lr)
Kernel apply_momentum(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  const bool nesterov = bool_attr(node, "use_nesterov", false);
  return [use_locking, nesterov](KernelContext& ctx) {
    run_update(
        ctx, {"var", "accum"}, 3, use_locking, 2.0, [](const auto& t) { return t.momentum; },
        [&](auto tag, auto& a) {
          using T = typename decltype(tag)::type;
          a.lr = scalar_input<T>(ctx, 2, "lr");
          a.momentum = scalar_input<T>(ctx, 4, "momentum");
          a.nesterov = nesterov;
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
    run_update(
        ctx, {"var", "m", "v"}, 9, use_locking, 8.0, [](const auto& t) { return t.adam; },
        [&](auto tag, auto& a) {
          using T = typename decltype(tag)::type;
          const T beta1_power = scalar_input<T>(ctx, 3, "beta1_power");
          const T beta2_power = scalar_input<T>(ctx, 4, "beta2_power");
          const T lr = scalar_input<T>(ctx, 5, "lr");
          a.beta1 = scalar_input<T>(ctx, 6, "beta1");
          const T beta2 = scalar_input<T>(ctx, 7, "beta2");
          a.epsilon = scalar_input<T>(ctx, 8, "epsilon");
          a.lr = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
          a.one_minus_beta1 = T(1) - a.beta1;
          a.one_minus_beta2 = T(1) - beta2;
          a.nesterov = nesterov;
        });
  };
}

// ms += (g^2 - ms) * (1 - rho); mom = mom * momentum + g * lr / sqrt(ms + epsilon); var -= mom
Kernel apply_rms_prop(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    run_update(
        ctx, {"var", "ms", "mom"}, 7, use_locking, 8.0, [](const auto& t) { return t.rms_prop; },
        [&](auto tag, auto& a) {
          using T = typename decltype(tag)::type;
          a.lr = scalar_input<T>(ctx, 3, "lr");
          a.one_minus_rho = T(1) - scalar_input<T>(ctx, 4, "rho");
          a.momentum = scalar_input<T>(ctx, 5, "momentum");
          a.epsilon = scalar_input<T>(ctx, 6, "epsilon");
        });
  };
}

// ms and mg (the mean gradient) as RMSProp's ms; the denominator is sqrt(ms - mg^2 + epsilon).
Kernel apply_centered_rms_prop(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    run_update(
        ctx, {"var", "mg", "ms", "mom"}, 8, use_locking, 10.0,
        [](const auto& t) { return t.centered_rms_prop; },
        [&](auto tag, auto& a) {
          using T = typename decltype(tag)::type;
          a.lr = scalar_input<T>(ctx, 4, "lr");
          a.one_minus_rho = T(1) - scalar_input<T>(ctx, 5, "rho");
          a.momentum = scalar_input<T>(ctx, 6, "momentum");
          a.epsilon = scalar_input<T>(ctx, 7, "epsilon");
        });
  };
}

// accum += g^2 (when update_slots); var -= g * lr * (1 / sqrt(accum))
Kernel apply_adagrad(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  const bool update_slots = bool_attr(node, "update_slots", true);
  return [use_locking, update_slots](KernelContext& ctx) {
    run_update(
        ctx, {"var", "accum"}, 3, use_locking, 6.0, [](const auto& t) { return t.adagrad; },
        [&](auto tag, auto& a) {
          using T = typename decltype(tag)::type;
          a.lr = scalar_input<T>(ctx, 2, "lr");
          a.update_slots = update_slots;
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
