// Kernels of TensorFlow 1's variable ops: VariableV2 (the variable itself: it outputs a ref that
// names the session's Variable), Assign, AssignAdd, AssignSub, ScatterUpdate, ScatterAdd,
// ScatterSub and IsVariableInitialized. The values live in the session's state
// (opweave/state/variable.h, which says what concurrent runs may rely on); every op that writes
// returns its ref input, so what reads its output reads the variable after the write. An
// Identity of a ref reads the value (core_ops.cpp), as does a fetch of one (the executor).
#include <algorithm>
#include <type_traits>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/state_util.h"
#include "opweave/state/variable.h"

namespace opweave {
namespace {

using kernel_detail::TypeTag;

// a + b and a - b; integers wrap around (two's complement) instead of overflowing, which C++
// leaves undefined for signed types.
template <typename T>
T add(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::from_float(a.to_float() + b.to_float());
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <typename T>
T sub(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half::from_float(a.to_float() - b.to_float());
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}

// fn(TypeTag<T>) for the numeric dtypes of AssignAdd and the scatter ops (float16 included, not
// bool or string).
template <typename Fn>
void dispatch_numeric(DType dtype, Fn&& fn) {
  if (dtype == DType::kBool || dtype == DType::kString) kernel_detail::unsupported_dtype(dtype);
  kernel_detail::dispatch_with_half(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) fn(tag);
  });
}

Kernel variable_kernel(const NodeDef& node) {
  const DType dtype = node.attr<DType>("dtype");
  std::optional<Shape> declared;
  if (node.has_attr("shape")) declared = node.attr<std::vector<std::int64_t>>("shape");
  const std::string shared =
      node.has_attr("shared_name") ? node.attr<std::string>("shared_name") : "";
  const std::string container =
      node.has_attr("container") ? node.attr<std::string>("container") : "";
  const std::string state_key = variable_key(container, shared, node.name);
  const std::string key = shared.empty() ? node.name : shared;
  const std::string name = node.name;
  return [dtype, declared, key, state_key, name](KernelContext& ctx) {
    std::shared_ptr<Variable> var = ctx.session_state().get_or_create<Variable>(
        state_key, [&] { return make_variable(name, dtype, declared); });
    if (var->dtype() != dtype) {
      throw_invalid_argument("Trying to share variable " + key + " with dtype " +
                             dtype_name(dtype) + ", but it has dtype " + dtype_name(var->dtype()));
    }
    ctx.outputs[0] = variable_ref(var);
  };
}

Kernel assign_kernel(const NodeDef& node) {
  const bool validate_shape = bool_attr(node, "validate_shape", true);
  const bool use_locking = bool_attr(node, "use_locking", true);
  return [validate_shape, use_locking](KernelContext& ctx) {
    Variable& var = ref_input(ctx, 0, "ref");
    // A value no one else holds becomes the variable's buffer as it is, without a copy.
    Tensor* own = ctx.forwardable_input(1);
    if (own != nullptr) {
      var.assign(std::move(*own), validate_shape, use_locking, /*adopt=*/true, ctx.intra_pool);
    } else {
      var.assign(ctx.inputs[1], validate_shape, use_locking, /*adopt=*/false, ctx.intra_pool);
    }
    ctx.outputs[0] = ctx.inputs[0];
  };
}

template <bool kSubtract>
Kernel assign_add_kernel(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", false);
  return [use_locking](KernelContext& ctx) {
    Variable& var = ref_input(ctx, 0, "ref");
    const Tensor value = ctx.inputs[1].contiguous();
    VariableUpdate update({&var}, use_locking);
    if (update.shape(0) != value.shape()) {
      throw_invalid_argument("Parameters and update must be the same size: variable " + var.name() +
                             " has shape " + shape_to_string(update.shape(0)) + ", the update " +
                             shape_to_string(value.shape()));
    }
    check_dtype(var, value, "value");
    dispatch_numeric(value.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = update.in<T>(0);
      T* out = update.out<T>(0);
      const T* d = value.data<T>();
      update.for_blocks(ctx.intra_pool, value.numel(), 1.0, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i)
          out[i] = kSubtract ? sub(in[i], d[i]) : add(in[i], d[i]);
      });
    });
    update.commit();
    ctx.outputs[0] = ctx.inputs[0];
  };
}

enum class Scatter { kUpdate, kAdd, kSub };

template <Scatter kKind>
Kernel scatter_kernel(const NodeDef& node) {
  const bool use_locking = bool_attr(node, "use_locking", kKind == Scatter::kUpdate);
  return [use_locking](KernelContext& ctx) {
    Variable& var = ref_input(ctx, 0, "ref");
    const Tensor indices = ctx.inputs[1].contiguous();
    const Tensor updates = ctx.inputs[2].contiguous();
    check_dtype(var, updates, "updates");
    VariableUpdate update({&var}, use_locking);
    const Shape& params = update.shape(0);
    if (params.empty()) {
      throw_invalid_argument("Scatter: variable " + var.name() +
                             " must be at least 1-D, but it is a scalar");
    }
    Shape want = indices.shape();
    want.insert(want.end(), params.begin() + 1, params.end());
    if (updates.ndim() != 0 && updates.shape() != want) {
      throw_invalid_argument(
          "Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], "
          "got updates.shape " +
          shape_to_string(updates.shape()) + ", indices.shape " + shape_to_string(indices.shape()) +
          ", params.shape " + shape_to_string(params));
    }
    const std::int64_t rows = params[0];
    std::int64_t row_size = 1;
    for (std::size_t d = 1; d < params.size(); ++d) row_size *= params[d];
    const std::int64_t count = indices.numel();
    std::vector<std::int64_t> index(static_cast<std::size_t>(count));
    kernel_detail::dispatch_index(indices.dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      for (std::int64_t k = 0; k < count; ++k) {
        const std::int64_t r = indices.data<I>()[k];
        if (r < 0 || r >= rows) {
          throw_invalid_argument("indices[" + std::to_string(k) + "] = " + std::to_string(r) +
                                 " is not in [0, " + std::to_string(rows) + ")");
        }
        index[static_cast<std::size_t>(k)] = r;
      }
    });
    update.copy_unwritten(0, ctx.intra_pool);  // a fresh target starts as the old value
    const bool scalar = updates.ndim() == 0;
    dispatch_numeric(updates.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = update.out<T>(0);
      const T* u = updates.data<T>();
      // Columns [c0, c1) of every listed row, rows in index order: each element sees its updates
      // in the order of `indices` whoever runs the columns, so the bits do not depend on threads.
      auto columns = [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t k = 0; k < count; ++k) {
          const std::int64_t base = index[static_cast<std::size_t>(k)] * row_size;
          const T* src = scalar ? u : u + k * row_size;
          update.with_range_locked(0, base + c0, base + c1, [&] {
            for (std::int64_t c = c0; c < c1; ++c) {
              const T x = scalar ? *src : src[c];
              T& y = out[base + c];
              if constexpr (kKind == Scatter::kUpdate) {
                y = x;
              } else if constexpr (kKind == Scatter::kAdd) {
                y = add(y, x);
              } else {
                y = sub(y, x);
              }
            }
          });
        }
      };
      kernel_detail::for_elements(
          ctx.intra_pool, row_size,
          std::max<std::int64_t>(
              kernel_detail::kElementwiseParallelThreshold / std::max<std::int64_t>(count, 1),
              1024),
          columns, static_cast<double>(count));
    });
    update.commit();
    ctx.outputs[0] = ctx.inputs[0];
  };
}

Kernel is_initialized_kernel(const NodeDef&) {
  return [](KernelContext& ctx) {
    const Variable* var = ref_variable(ctx.inputs[0]);
    Tensor out = Tensor::empty(DType::kBool, {});
    // A value fed in place of the variable is a value: initialized.
    *out.data<bool>() = var == nullptr || var->is_initialized();
    ctx.outputs[0] = std::move(out);
  };
}

}  // namespace

void register_state_kernels() {
  // Stateful: their results depend on the session's state, so no optimizer may fold or merge them.
  register_kernel("VariableV2", {variable_kernel, CostHint::kCheap, /*stateful=*/true});
  register_kernel("Assign", {assign_kernel, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("AssignAdd", {assign_add_kernel<false>, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("AssignSub", {assign_add_kernel<true>, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ScatterUpdate",
                  {scatter_kernel<Scatter::kUpdate>, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ScatterAdd",
                  {scatter_kernel<Scatter::kAdd>, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("ScatterSub",
                  {scatter_kernel<Scatter::kSub>, CostHint::kMeasure, /*stateful=*/true});
  register_kernel("IsVariableInitialized",
                  {is_initialized_kernel, CostHint::kCheap, /*stateful=*/true});
}

}  // namespace opweave
