// CompiledGraph: one (feeds, fetches, targets) signature of a Graph, pruned and flattened into
// arrays the executor walks without allocation or lookups: per node its kernel, the value slots it
// reads and writes, a [begin, end) range into one successor array, and its initial in-degree.
// Immutable after construction except the cost estimates, which are racy-by-design heuristics.
//
//   auto compiled = CompiledGraph::compile(graph, feeds, fetches, targets);
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/graph/graph.h"

namespace opweave {

struct CompiledNode {
  std::shared_ptr<const NodeDef> def;
  Kernel kernel;
  std::vector<int> input_slots;  // value slot read by each input
  int output_slot = 0;           // first of num_outputs consecutive value slots written
  int num_outputs = 0;
  int succ_begin = 0;  // successors are successors()[succ_begin, succ_end)
  int succ_end = 0;
  int initial_pending = 0;  // distinct predecessors (data and control) inside the pruned graph
  CostHint hint = CostHint::kMeasure;
  // Moving-average run time in ns. Relaxed loads/stores: concurrent runs may lose an update, which
  // only nudges a scheduling heuristic and never affects results.
  mutable std::atomic<std::int64_t> cost_ns{0};
};

class CompiledGraph {
 public:
  // Prunes to what the fetches and targets need, stopping at fed tensors (a fed tensor's producer
  // runs only if something else needs it). Throws OpError naming the node for unknown ops.
  static std::shared_ptr<const CompiledGraph> compile(const Graph& graph,
                                                      const std::vector<TensorId>& feeds,
                                                      const std::vector<TensorId>& fetches,
                                                      const std::vector<int>& targets);

  int num_nodes() const noexcept { return static_cast<int>(nodes_.size()); }
  const CompiledNode& node(int i) const { return *nodes_[static_cast<std::size_t>(i)]; }
  const std::vector<int>& successors() const noexcept { return successors_; }
  const std::vector<int>& roots() const noexcept { return roots_; }
  int num_slots() const noexcept { return num_slots_; }
  // Feeds occupy slots [0, feeds.size()) in the order given to compile().
  const std::vector<int>& fetch_slots() const noexcept { return fetch_slots_; }
  // How many input edges read each slot; a slot is released when its last reader has copied it.
  // Fetched slots get one extra reference nobody drops, so they survive to the end of the run.
  const std::vector<int>& slot_readers() const noexcept { return slot_readers_; }

 private:
  std::vector<std::unique_ptr<CompiledNode>> nodes_;  // in graph (topological) order
  std::vector<int> successors_;
  std::vector<int> roots_;
  std::vector<int> fetch_slots_;
  std::vector<int> slot_readers_;
  int num_slots_ = 0;
};

}  // namespace opweave
