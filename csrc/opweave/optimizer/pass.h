// The optimizer's passes and what they share. A pass is a function over the WorkGraph of one
// signature that returns whether it changed anything and notes each change in its report; the
// registry below names them in their default order, and OptimizerOptions::passes picks and
// orders them. Adding a pass (phase 2's fusions: GEMM epilogues, element-wise loop fusion,
// softmax + cross-entropy) is one file defining `bool run_<name>(WorkGraph&, PassContext&)` and
// one row here; see docs/optimizer.md, "Adding a pass".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "opweave/optimizer/optimizer.h"
#include "opweave/optimizer/work_graph.h"

namespace opweave {

// What a running pass may use besides the graph.
struct PassContext {
  const OptimizerOptions& options;
  ThreadPool* intra_pool;  // for kernels run at compile time (constant folding); may be null
  PassReport& report;      // the running pass's report

  void note(const char* kind, const std::string& node, std::string detail) {
    report.changes.push_back({kind, node, std::move(detail)});
  }
};

using PassFunction = bool (*)(WorkGraph& graph, PassContext& ctx);

struct PassInfo {
  const char* name;  // what OptimizerOptions::passes says (and the report shows)
  PassFunction run;
};

// Every pass, in the default order. Thread-safe (constant).
const std::vector<PassInfo>& optimizer_passes();

// The passes (one file each).
bool run_common_subexpression(WorkGraph& graph, PassContext& ctx);  // common_subexpression.cpp
bool run_constant_folding(WorkGraph& graph, PassContext& ctx);      // constant_folding.cpp
bool run_arithmetic(WorkGraph& graph, PassContext& ctx);            // arithmetic.cpp
bool run_identity_removal(WorkGraph& graph, PassContext& ctx);      // identity_removal.cpp
bool run_pruning(WorkGraph& graph, PassContext& ctx);               // pruning.cpp
bool run_elementwise_fusion(WorkGraph& graph, PassContext& ctx);    // elementwise_fusion.cpp

// --- shared by the passes ---------------------------------------------------------------------

// Removes node `n`, a single-input op that passes its input on (Identity, StopGradient...), its
// consumers reading the input instead and inheriting its ordering; notes "<op><why>". False
// (nothing changed) for a protected node, a read of a stateful node's output, or when rewiring
// its control inputs to its consumers would add edges. identity_removal.cpp.
bool bypass_pass_through(WorkGraph& graph, int n, PassContext& ctx, const char* why);

// Runs node `id`'s kernel on `inputs` now (constant_folding.cpp); its outputs, or nothing when it
// may not or cannot be computed ahead of time: stateful, no kernel, the kernel threw (the run will
// report it, naming the node), or an output larger than ctx.options.max_constant_bytes (`why` says
// which).
std::optional<std::vector<Tensor>> evaluate_now(const WorkGraph& graph, int id, const NodeDef& def,
                                                const std::vector<Tensor>& inputs, PassContext& ctx,
                                                std::string* why = nullptr);

// The rest: pass_util.cpp.
// Every element of `t` (a number tensor) equals `value`; false for strings and empty tensors.
bool all_elements_equal(const Tensor& t, double value);

// The integers of a constant int32 / int64 vector (or scalar), or nothing.
std::optional<std::vector<std::int64_t>> int_values(const Tensor& t);

// Broadcasting a tensor of static shape `x` with one of shape `c` certainly gives `x`'s shape
// (at run time, whatever the unknown dimensions turn out to be): every dimension of `c`, aligned
// from the right, is 1 or equals a known dimension of `x`, and `c` has no more dimensions.
bool broadcasts_into(const StaticShape& x, const Shape& c);

// The static shape of output `t`, unknown when graph construction did not say.
StaticShape static_shape_of(const WorkGraph& graph, const TensorId& t);
// The dtype of output `t` when known: from graph construction, or a constant's value.
std::optional<DType> dtype_of(const WorkGraph& graph, const TensorId& t);

}  // namespace opweave
