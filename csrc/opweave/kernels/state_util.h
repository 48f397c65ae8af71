// Helpers shared by the kernels of the variable ops (state_ops.cpp) and of the optimizers' fused
// updates (training_ops.cpp): reading a ref input, boolean attributes, scalar inputs.
// Internal to csrc/opweave/kernels.
#pragma once

#include <string>

#include "opweave/executor/kernel_registry.h"
#include "opweave/state/variable.h"

namespace opweave {

// The attribute `key`, or `fallback` when the node has none.
inline bool bool_attr(const NodeDef& node, const char* key, bool fallback) {
  return node.has_attr(key) ? node.attr<bool>(key) : fallback;
}

// The variable input i refers to; InvalidArgument naming the input when it is a plain value (a
// tensor fed in the variable's place, say).
inline Variable& ref_input(const KernelContext& ctx, std::size_t i, const char* what) {
  Variable* var = ref_variable(ctx.inputs[i]);
  if (var == nullptr) {
    throw_invalid_argument(ctx.node.op + ": input '" + what +
                           "' must be a variable, but it is a value (was it fed?)");
  }
  return *var;
}

// InvalidArgument unless `value` has the variable's dtype (the Python layer checks it first).
inline void check_dtype(const Variable& var, const Tensor& value, const char* what) {
  if (value.dtype() != var.dtype()) {
    throw_invalid_argument(std::string(what) + " has dtype " + dtype_name(value.dtype()) +
                           " but variable " + var.name() + " has dtype " + dtype_name(var.dtype()));
  }
}

// Input i as a scalar of type T (its dtype already checked), TensorFlow's "lr is not a scalar: "
// error otherwise.
template <typename T>
T scalar_input(const KernelContext& ctx, std::size_t i, const char* what) {
  const Tensor& t = ctx.inputs[i];
  if (t.ndim() != 0) {
    throw_invalid_argument(std::string(what) + " is not a scalar: " + shape_to_string(t.shape()));
  }
  if (t.dtype() != DTypeOf<T>::value) {
    throw_invalid_argument(std::string(what) + " has dtype " + dtype_name(t.dtype()) +
                           ", expected " + dtype_name(DTypeOf<T>::value));
  }
  return *t.data<T>();
}

}  // namespace opweave
