// Model pruning (TensorFlow's model pruner): StopGradient, PreventGradient and Snapshot only
// matter while gradients are built (or copy a value nothing writes to); at run time they pass
// their input on, so their consumers read the input instead. Off with
// RewriterConfig.disable_model_pruning. Nodes that no fetch or target needs are removed after
// every pass by the pipeline itself (WorkGraph::prune_dead), as the executor always did.
#include "opweave/optimizer/pass.h"

namespace opweave {

bool run_pruning(WorkGraph& g, PassContext& ctx) {
  bool changed = false;
  for (int n : g.topological_order()) {
    if (!g.alive(n)) continue;
    const std::string& op = g.def(n).op;
    if (op == "StopGradient" || op == "PreventGradient" || op == "Snapshot") {
      changed = bypass_pass_through(g, n, ctx, ": passes its input on at run time") || changed;
    }
  }
  return changed;
}

}  // namespace opweave
