#include "opweave/executor/observer.h"

#include <new>
#include <utility>

namespace opweave {

NodeExecStats& StepStatsCollector::slot(int node) {
  const auto i = static_cast<std::size_t>(node);
  if (i >= nodes_.size()) nodes_.resize(i + 1);
  return nodes_[i];
}

void StepStatsCollector::on_thread(long thread_id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  thread_names_[thread_id] = name;
}

void StepStatsCollector::on_ready(int node, const NodeDef& def, std::int64_t nanos) {
  // Outside mutex_: the placement has its own lock, and no lock order between the two is needed.
  std::string device = placement_ != nullptr ? placement_->device_of(def) : def.device;
  std::lock_guard<std::mutex> lock(mutex_);
  NodeExecStats& s = slot(node);
  s.node_name = def.name;
  s.op = def.op;
  s.device = std::move(device);
  s.scheduled_nanos = nanos;
  s.original_nodes = def.original_nodes;
}

void StepStatsCollector::on_start(int node, const NodeDef& def, std::int64_t nanos,
                                  const InputList& inputs) {
  const long tid = current_thread_id();  // outside the lock: a system call
  std::lock_guard<std::mutex> lock(mutex_);
  NodeExecStats& s = slot(node);
  s.start_nanos = nanos;
  s.thread_id = tid;
  for (const Tensor& t : inputs) s.input_shapes.push_back(t.shape());
}

void StepStatsCollector::on_chunk(int node, const ChunkRecord& chunk) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    slot(node).chunks.push_back(chunk);
  } catch (const std::bad_alloc&) {
    // A trace short of a chunk is better than a kernel failing for its tracing.
  }
}

void StepStatsCollector::on_end(int node, const NodeDef& def, std::int64_t nanos,
                                const OutputList& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  NodeExecStats& s = slot(node);
  s.end_nanos = nanos;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    s.output_shapes.push_back(t.defined() ? t.shape() : Shape{});
    s.output_dtypes.push_back(t.dtype());
  }
  ended_.push_back(node);
}

std::vector<NodeExecStats> StepStatsCollector::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<NodeExecStats> out;
  out.reserve(ended_.size());
  for (int node : ended_) out.push_back(std::move(nodes_[static_cast<std::size_t>(node)]));
  nodes_.clear();
  ended_.clear();
  return out;
}

std::map<long, std::string> StepStatsCollector::thread_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return thread_names_;
}

}  // namespace opweave
