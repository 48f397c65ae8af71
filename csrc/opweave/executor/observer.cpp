#include "opweave/executor/observer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>

namespace opweave {

std::int64_t now_micros() noexcept {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long current_thread_id() noexcept {
  thread_local long tid = static_cast<long>(::syscall(SYS_gettid));
  return tid;
}

void StepStatsCollector::on_ready(const NodeDef& node, std::int64_t micros) {
  std::lock_guard<std::mutex> lock(mutex_);
  NodeExecStats s;
  s.node_name = node.name;
  s.op = node.op;
  s.device = node.device;
  s.scheduled_micros = micros;
  open_.push_back(std::move(s));
}

void StepStatsCollector::on_start(const NodeDef& node, std::int64_t micros) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& s : open_) {
    if (s.node_name == node.name && s.start_micros == 0) {
      s.start_micros = micros;
      s.thread_id = current_thread_id();
      return;
    }
  }
}

void StepStatsCollector::on_end(const NodeDef& node, std::int64_t micros) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < open_.size(); ++i) {
    if (open_[i].node_name == node.name) {
      open_[i].end_micros = micros;
      done_.push_back(std::move(open_[i]));
      open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

std::vector<NodeExecStats> StepStatsCollector::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(done_);
}

}  // namespace opweave
