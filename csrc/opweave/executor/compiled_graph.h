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
#include "opweave/optimizer/optimizer.h"

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
  // Bit i set (i < 32): this node is the only reader of input i's slot, through input i alone.
  std::uint32_t sole_reader_inputs = 0;
  CostHint hint = CostHint::kMeasure;
  bool may_block = false;  // KernelDef::may_block
  // The most nodes that are not cheap by nature on a path from this node to the end of the graph,
  // itself included: of two successors that become ready together, the thread that made them
  // ready runs the one with the longer road ahead and hands the other to the pool.
  int height = 0;
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
  // The same, keeping `graph` (the optimizer's graph of the signature, or the session's graph)
  // and the optimizer's report, for the traces and Session.optimizer_report().
  static std::shared_ptr<const CompiledGraph> compile(
      std::shared_ptr<const Graph> graph, const std::vector<TensorId>& feeds,
      const std::vector<TensorId>& fetches, const std::vector<int>& targets,
      std::shared_ptr<const OptimizerReport> report);

  // The graph the nodes' ids refer to (null from the first compile()), the fed tensors in it
  // (in slot order) and what the optimizer did (null when it did not run).
  const std::shared_ptr<const Graph>& source() const noexcept { return source_; }
  const std::vector<TensorId>& feeds() const noexcept { return feeds_; }
  const std::shared_ptr<const OptimizerReport>& optimizer_report() const noexcept {
    return report_;
  }

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
  // initial_pending of every node, in one array (the per-run counters start from a copy).
  const std::vector<int>& pending_template() const noexcept { return pending_template_; }
  // A number that differs between consecutive runs (0, 1, 2, ...; wraps): runs use it to time
  // a different sample of their cheap nodes each time. Thread-safe.
  std::uint32_t next_run_sequence() const noexcept {
    // Relaxed: only the spread of the values matters, nothing is published through it.
    return run_sequence_.fetch_add(1, std::memory_order_relaxed);
  }
  // Moving average of how long a run on the inter-op pool took, caller's view (0 until one ran).
  // A racy heuristic like cost_ns: concurrent runs may lose an update. Thread-safe.
  std::int64_t expected_run_ns() const noexcept {
    return run_ns_.load(std::memory_order_relaxed);  // relaxed: a heuristic, guards no data
  }
  void record_run_ns(std::int64_t ns) const noexcept {
    const std::int64_t old = run_ns_.load(std::memory_order_relaxed);  // relaxed: as above
    run_ns_.store(old == 0 ? ns : old + (ns - old) / 8, std::memory_order_relaxed);
  }

 private:
  static std::shared_ptr<CompiledGraph> build(const Graph& graph,
                                              const std::vector<TensorId>& feeds,
                                              const std::vector<TensorId>& fetches,
                                              const std::vector<int>& targets);

  std::vector<std::unique_ptr<CompiledNode>> nodes_;  // in graph (topological) order
  std::vector<int> successors_;
  std::vector<int> roots_;
  std::vector<int> fetch_slots_;
  std::vector<int> slot_readers_;
  std::vector<int> pending_template_;
  int num_slots_ = 0;
  std::shared_ptr<const Graph> source_;
  std::vector<TensorId> feeds_;
  std::shared_ptr<const OptimizerReport> report_;
  mutable std::atomic<std::uint32_t> run_sequence_{0};
  mutable std::atomic<std::int64_t> run_ns_{0};
};

}  // namespace opweave
