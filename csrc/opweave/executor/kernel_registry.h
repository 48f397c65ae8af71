// The op kernel registry: op type -> a factory that binds one node's attributes into a callable
// kernel, plus a cost hint the executor uses before it has measured the node.
//
//   register_kernel("Identity", {[](const NodeDef&) -> Kernel {
//     return [](KernelContext& ctx) { ctx.outputs[0] = ctx.inputs[0]; };
//   }, CostHint::kCheap});
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "opweave/graph/graph.h"
#include "opweave/tensor.h"
#include "opweave/thread_pool.h"

namespace opweave {

// What a kernel sees during one execution. inputs are read-only handles; the kernel fills every
// entry of outputs (pre-sized to the node's num_outputs).
struct KernelContext {
  const NodeDef& node;
  const std::vector<Tensor>& inputs;
  std::vector<Tensor>& outputs;
  ThreadPool* intra_pool;  // the pool for parallelism inside this op (null = serial)
};

using Kernel = std::function<void(KernelContext&)>;

// kCheap: always inline (no queue hop is worth it); kExpensive: always spread over the inter-op
// pool; kMeasure: start as expensive, then let the measured moving-average cost decide.
enum class CostHint { kCheap, kExpensive, kMeasure };

struct KernelDef {
  std::function<Kernel(const NodeDef&)> make;  // may throw OpError for invalid attributes
  CostHint cost = CostHint::kMeasure;
};

// Thread-safe. Registering an op type again replaces it (the bindings register PyFunc late).
void register_kernel(const std::string& op, KernelDef def);
// Throws OpError(kNotFound) naming the op when nothing is registered for it.
KernelDef find_kernel(const std::string& op);

}  // namespace opweave
