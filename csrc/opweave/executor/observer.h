// ExecutionObserver: hooks the executor calls around each node when tracing is on. The executor
// holds a plain pointer and tests it for null, so the hot path pays one branch when tracing is off.
//
//   StepStatsCollector stats(&placement);  // placement: where the session put each node
//   request.observer = &stats;
//   executor.run(request);
//   for (const NodeExecStats& s : stats.take()) print(s.node_name, s.thread_id);
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/executor/placement.h"
#include "opweave/graph/graph.h"
#include "opweave/tensor.h"
#include "opweave/trace.h"

namespace opweave {

// Every method may be called concurrently from many threads. `node` is the node's index in the
// run's compiled graph: each index is reported at most once per run, in the order ready, start,
// then chunks (from any thread, between start and end), then end.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // Which pool thread plays which part in this run ("caller", "inter-op 0", "intra-op 1", ...);
  // called by the run's caller before any node starts.
  virtual void on_thread(long thread_id, const std::string& name) = 0;
  // The node became ready to run (its inputs exist).
  virtual void on_ready(int node, const NodeDef& def, std::int64_t nanos) = 0;
  // The kernel starts on the calling thread, with these inputs.
  virtual void on_start(int node, const NodeDef& def, std::int64_t nanos,
                        const InputList& inputs) = 0;
  // A parallel_for chunk of the node's kernel finished, on chunk.thread_id.
  virtual void on_chunk(int node, const ChunkRecord& chunk) noexcept = 0;
  // The kernel returned with these outputs (or threw: then some may be undefined tensors).
  virtual void on_end(int node, const NodeDef& def, std::int64_t nanos,
                      const OutputList& outputs) = 0;
};

struct NodeExecStats {
  std::string node_name;
  std::string op;
  std::string device;                // where the session placed the node (DevicePlacement)
  std::int64_t scheduled_nanos = 0;  // became ready
  std::int64_t start_nanos = 0;
  std::int64_t end_nanos = 0;
  long thread_id = 0;  // the thread that ran the kernel
  std::vector<Shape> input_shapes;
  std::vector<Shape> output_shapes;  // empty entries for outputs a failed kernel did not make
  std::vector<DType> output_dtypes;  // kFloat32 for outputs a failed kernel did not make
  std::vector<ChunkRecord> chunks;   // its parallel_for pieces, in the order they finished
  // The nodes of the graph as written that this one stands for, when the graph optimizer made or
  // rewrote it (NodeDef::original_nodes); empty for a node as written.
  std::vector<std::string> original_nodes;
};

// Collects one NodeExecStats per executed node and the names of the run's threads. Thread-safe.
class StepStatsCollector : public ExecutionObserver {
 public:
  // `placement` (may be null: each node's requested device) must outlive the collector.
  explicit StepStatsCollector(const DevicePlacement* placement = nullptr) noexcept
      : placement_(placement) {}
  void on_thread(long thread_id, const std::string& name) override;
  void on_ready(int node, const NodeDef& def, std::int64_t nanos) override;
  void on_start(int node, const NodeDef& def, std::int64_t nanos, const InputList& inputs) override;
  void on_chunk(int node, const ChunkRecord& chunk) noexcept override;
  void on_end(int node, const NodeDef& def, std::int64_t nanos, const OutputList& outputs) override;
  // The nodes that ran to the end, in the order they ended.
  std::vector<NodeExecStats> take();
  // Thread id -> role, as reported by on_thread.
  std::map<long, std::string> thread_names() const;

 private:
  NodeExecStats& slot(int node);  // requires mutex_

  const DevicePlacement* const placement_;
  mutable std::mutex mutex_;  // guards everything below: nodes report from many threads at once
  std::vector<NodeExecStats> nodes_;  // by compiled node index
  std::vector<int> ended_;            // indices of nodes_ whose kernel returned, in that order
  std::map<long, std::string> thread_names_;
};

}  // namespace opweave
