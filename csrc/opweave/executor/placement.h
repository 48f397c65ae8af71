// DevicePlacement: the device a session placed each node on. Placement is the session's (as in
// TensorFlow, two sessions of one graph may place it differently): the session decides, in
// Python, and records each decision here; traces (StepStatsCollector) report the recorded device.
//
//   DevicePlacement placement;
//   placement.place("matmul", "/device:CPU:1");
//   StepStatsCollector stats(&placement);  // its NodeExecStats::device is "/device:CPU:1"
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "opweave/graph/graph.h"

namespace opweave {

class DevicePlacement {
 public:
  // Records that the node called `node` runs on `device` (a later call for the same node
  // replaces it). Thread-safe.
  void place(const std::string& node, std::string device);
  // The device `def` was placed on (a node the optimizer made: that of the first of its
  // original_nodes placed); def.device (the device it asked for, maybe "") when it was never
  // placed. Thread-safe.
  std::string device_of(const NodeDef& def) const;

 private:
  // Guards devices_: a session places new nodes while its traced runs read it. A leaf lock.
  mutable std::mutex mutex_;
  std::map<std::string, std::string> devices_;
};

}  // namespace opweave
