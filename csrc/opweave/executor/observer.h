// ExecutionObserver: hooks the executor calls around each node when tracing is on. The executor
// holds a plain pointer and tests it for null, so the hot path pays one branch when tracing is off.
//
//   StepStatsCollector stats;
//   request.observer = &stats;
//   executor.run(request);
//   for (const NodeExecStats& s : stats.take()) print(s.node_name, s.thread_id);
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "opweave/graph/graph.h"

namespace opweave {

// Microseconds since the Unix epoch (as TensorFlow's step stats report them).
std::int64_t now_micros() noexcept;
// The kernel thread id (gettid) of the calling thread.
long current_thread_id() noexcept;

// Every method may be called concurrently from many threads.
class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // The node became ready (scheduled_micros).
  virtual void on_ready(const NodeDef& node, std::int64_t micros) = 0;
  virtual void on_start(const NodeDef& node, std::int64_t micros) = 0;
  virtual void on_end(const NodeDef& node, std::int64_t micros) = 0;
};

struct NodeExecStats {
  std::string node_name;
  std::string op;
  std::string device;
  std::int64_t scheduled_micros = 0;
  std::int64_t start_micros = 0;
  std::int64_t end_micros = 0;
  long thread_id = 0;
};

// Collects one NodeExecStats per executed node. Thread-safe.
class StepStatsCollector : public ExecutionObserver {
 public:
  void on_ready(const NodeDef& node, std::int64_t micros) override;
  void on_start(const NodeDef& node, std::int64_t micros) override;
  void on_end(const NodeDef& node, std::int64_t micros) override;
  // The finished records, in completion order.
  std::vector<NodeExecStats> take();

 private:
  std::mutex mutex_;  // guards both vectors: nodes start and end on many threads at once
  std::vector<NodeExecStats> open_;
  std::vector<NodeExecStats> done_;
};

}  // namespace opweave
