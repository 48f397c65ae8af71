#include "opweave/executor/placement.h"

#include <utility>

namespace opweave {

void DevicePlacement::place(const std::string& node, std::string device) {
  std::lock_guard<std::mutex> lock(mutex_);  // guards devices_
  devices_[node] = std::move(device);
}

std::string DevicePlacement::device_of(const NodeDef& def) const {
  std::lock_guard<std::mutex> lock(mutex_);  // guards devices_
  const auto it = devices_.find(def.name);
  return it == devices_.end() ? def.device : it->second;
}

}  // namespace opweave
