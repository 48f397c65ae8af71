// The graph optimizer ("Grappler" for opweave): rewrites one signature (feeds, fetches, targets)
// of a Graph once, when the executor compiles it, before it is flattened. A pipeline of small
// passes, each in its own file and each switchable (pass.h lists them):
//
//   common_subexpression  same op, inputs and attributes computed once
//   constant_folding      subgraphs of constants computed now, with the real kernels
//   arithmetic            x*1, x+0, (x+c1)+c2, double negation / transpose, reshape of reshape...
//   remapping             MatMul + bias + activation -> one _FusedMatMul (weights packed once);
//                         Conv2D (NHWC) + bias + activation -> one _FusedConv2D
//   identity_removal      Identity and NoOp chains, control dependencies rewired
//   pruning               StopGradient / PreventGradient / Snapshot (TensorFlow's model pruner)
//
// and, after every pass, the removal of whatever no fetch or target needs any more. Stateful ops
// are never folded, merged, removed or moved; fed and fetched tensors and targets stay; control
// dependencies are kept (a removed node's ordering passes to its consumers).
//
//   OptimizerOptions options = OptimizerOptions::all();
//   OptimizedSignature s = optimize_signature(graph, feeds, fetches, targets, options, pool);
//   CompiledGraph::compile(*s.graph, s.feeds, s.fetches, s.targets);
//   for (const PassReport& p : s.report->passes) print(p.pass, p.nodes_before, p.nodes_after);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "opweave/graph/graph.h"
#include "opweave/thread_pool.h"

namespace opweave {

struct OptimizerOptions {
  // The passes to run, by name, in this order (pass.h's registry); empty: the graph runs as
  // written. Unknown names are ignored (TensorFlow's optimizer names that opweave lacks).
  std::vector<std::string> passes;
  // The arithmetic rewrites that TensorFlow does inside constant folding (x*1, x+0, x-0, x/1
  // and (x+c1)+c2 -> x+(c1+c2)); off when constant folding is switched off.
  bool arithmetic_with_constants = true;
  // Largest output constant folding may create (TensorFlow's max_folded_constant_in_bytes).
  std::int64_t max_constant_bytes = 10 * 1024 * 1024;
  // Signatures with fewer nodes run as written (TensorFlow's min_graph_nodes; its default is 4).
  int min_graph_nodes = 4;
  // Rounds of the whole pipeline; stops early after a round that changed nothing.
  int max_iterations = 2;
  // A pass that throws fails the compilation instead of being skipped.
  bool fail_on_errors = false;

  bool enabled() const noexcept { return !passes.empty(); }
  // Every pass in the default order (the C++ tests' and TensorFlow's defaults).
  static OptimizerOptions all();
};

// One change a pass made, for Session.optimizer_report().
struct OptimizerChange {
  std::string kind;    // "folded", "merged", "removed", "rewritten", "added", "kept"
  std::string node;    // the node it concerns, by name
  std::string detail;  // what happened, for people
};

struct PassReport {
  std::string pass;
  int iteration = 0;  // 0 for the first round
  int nodes_before = 0;
  int nodes_after = 0;
  std::int64_t micros = 0;
  std::vector<OptimizerChange> changes;
  std::string error;  // the pass threw and was skipped (its changes so far stay)
};

struct OptimizerReport {
  int nodes_before = 0;  // the signature as written (what it needs, fed tensors as _Arg nodes)
  int nodes_after = 0;
  std::vector<PassReport> passes;  // in the order they ran
  std::string skipped;             // why nothing ran, when nothing did
};

struct OptimizedSignature {
  std::shared_ptr<const Graph> graph;  // only what the signature needs, topologically ordered
  std::vector<TensorId> feeds;         // the signature's ids in `graph`, in the order given
  std::vector<TensorId> fetches;
  std::vector<int> targets;
  std::shared_ptr<const OptimizerReport> report;
};

// Optimizes one signature of `graph`. Constant folding runs kernels on `intra_pool` (null:
// serially). Throws OpError for ids outside the graph, and for a failing pass when
// options.fail_on_errors. Thread-safe (touches only its own copies and the kernel registry).
OptimizedSignature optimize_signature(const Graph& graph, const std::vector<TensorId>& feeds,
                                      const std::vector<TensorId>& fetches,
                                      const std::vector<int>& targets,
                                      const OptimizerOptions& options, ThreadPool* intra_pool);

}  // namespace opweave
