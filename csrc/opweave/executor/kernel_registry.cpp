#include "opweave/executor/kernel_registry.h"

#include <map>
#include <mutex>

#include "opweave/errors.h"
#include "opweave/fork_guard.h"
#include "opweave/kernels/kernels.h"

namespace opweave {

// One per op family, defined in csrc/opweave/kernels/*_ops.cpp; called once from the registry so
// a static library link keeps them (self-registering statics in a static library would be dropped
// by the linker).
void register_core_kernels();
void register_elementwise_kernels();
void register_reduction_kernels();
void register_matmul_kernels();
void register_array_kernels();
void register_nn_kernels();
void register_random_kernels();
void register_conv_kernels();
void register_pool_kernels();
void register_state_kernels();
void register_training_kernels();
void register_fused_elementwise_kernels();  // fused_elementwise.cpp (graph optimizer output)

namespace {

struct Registry {
  std::mutex mutex;  // guards kernels: registration may race with compilation on other threads
  std::map<std::string, KernelDef> kernels;
};

// Leaked so it outlives static teardown. Constant-initialised to null, filled at load time below.
Registry* g_registry = nullptr;

Registry& storage() { return *g_registry; }

// Built at load time, not on first use: a fork() while another thread ran a lazy initialiser would
// leave the child waiting on its guard forever (fork_guard.h). Compilation may run on any thread.
[[maybe_unused]] const bool g_builtins_registered = [] {
  g_registry = new Registry;
  hold_across_fork(&g_registry->mutex);
  register_core_kernels();
  register_elementwise_kernels();
  register_reduction_kernels();
  register_matmul_kernels();
  register_array_kernels();
  register_nn_kernels();
  register_random_kernels();
  register_conv_kernels();
  register_pool_kernels();
  register_state_kernels();
  register_training_kernels();
  register_fused_elementwise_kernels();
  return true;
}();

}  // namespace

namespace {

// Runs `kernel` on float32 copies of the float16 inputs and rounds its float32 outputs back.
Kernel widen_float16(Kernel kernel) {
  return [kernel = std::move(kernel)](KernelContext& ctx) {
    bool any_half = false;
    for (const Tensor& t : ctx.inputs) any_half = any_half || t.dtype() == DType::kFloat16;
    if (!any_half) {
      kernel(ctx);
      return;
    }
    std::vector<Tensor> slots;
    slots.reserve(ctx.inputs.size() + ctx.outputs.size());
    for (const Tensor& t : ctx.inputs) {
      slots.push_back(t.dtype() == DType::kFloat16 ? cast(t, DType::kFloat32, ctx.intra_pool) : t);
    }
    std::vector<int> index(ctx.inputs.size());
    for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
    slots.resize(ctx.inputs.size() + ctx.outputs.size());
    KernelContext wide{ctx.node,
                       InputList(slots.data(), index.data(), index.size()),
                       OutputList(slots.data() + index.size(), ctx.outputs.size()),
                       ctx.intra_pool,
                       0,
                       ctx.state,
                       ctx.cancelled};
    kernel(wide);
    for (std::size_t i = 0; i < ctx.outputs.size(); ++i) {
      Tensor& out = wide.outputs[i];
      ctx.outputs[i] =
          out.dtype() == DType::kFloat32 ? cast(out, DType::kFloat16, ctx.intra_pool) : out;
    }
  };
}

}  // namespace

void register_kernel(const std::string& op, KernelDef def) {
  if (def.float16_via_float32) {
    def.make = [make = std::move(def.make)](const NodeDef& node) {
      return widen_float16(make(node));
    };
  }
  Registry& r = storage();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[op] = std::move(def);
}

KernelDef find_kernel(const std::string& op) {
  Registry& r = storage();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(op);
  if (it == r.kernels.end()) {
    throw OpError(ErrorCode::kNotFound, "no kernel registered for op type '" + op + "'");
  }
  return it->second;
}

SessionState& KernelContext::session_state() const {
  if (state == nullptr) {
    throw OpError(ErrorCode::kFailedPrecondition,
                  "op " + node.op + " '" + node.name + "' keeps state and runs only in a Session");
  }
  return *state;
}

void throw_node_error(const NodeDef& node, const std::string& message) {
  throw OpError(ErrorCode::kInvalidArgument, message);
}

std::vector<std::int64_t> int_list_input(const KernelContext& ctx, std::size_t i,
                                         const char* what) {
  const Tensor& t = ctx.inputs[i];
  if (t.ndim() > 1 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) {
    throw_node_error(ctx.node,
                     std::string(what) + " must be an int32 or int64 scalar or vector, got " +
                         dtype_name(t.dtype()) + " of shape " + shape_to_string(t.shape()));
  }
  std::vector<std::int64_t> out(static_cast<std::size_t>(t.numel()));
  const std::int64_t stride = t.ndim() == 1 ? t.strides()[0] : 0;
  for (std::int64_t k = 0; k < t.numel(); ++k) {
    out[static_cast<std::size_t>(k)] = t.dtype() == DType::kInt32
                                           ? std::int64_t{t.data<std::int32_t>()[k * stride]}
                                           : t.data<std::int64_t>()[k * stride];
  }
  return out;
}

std::int64_t int_scalar_input(const KernelContext& ctx, std::size_t i, const char* what) {
  const std::vector<std::int64_t> v = int_list_input(ctx, i, what);
  if (v.size() != 1) {
    throw_node_error(ctx.node, std::string(what) + " must be a single integer, got " +
                                   std::to_string(v.size()) + " values");
  }
  return v[0];
}

}  // namespace opweave
