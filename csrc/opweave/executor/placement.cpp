#include "opweave/executor/placement.h"

#include <utility>

namespace opweave {

void DevicePlacement::place(const std::string& node, std::string device) {
  std::lock_guard<std::mutex> lock(mutex_);  // guards devices_
  devices_[node] = std::move(device);
}

std::string DevicePlacement::device_of(const NodeDef& def) const {
  std::lock_guard<std::mutex> lock(mutex_);  // guards devices_
  auto it = devices_.find(def.name);
  // A node the graph optimizer made (a folded constant) runs where what it stands for was placed.
  for (std::size_t i = 0; it == devices_.end() && i < def.original_nodes.size(); ++i) {
    it = devices_.find(def.original_nodes[i]);
  }
  return it == devices_.end() ? def.device : it->second;
}

}  // namespace opweave
