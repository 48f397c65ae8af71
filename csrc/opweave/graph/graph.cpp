#include "opweave/graph/graph.h"

#include "opweave/errors.h"

namespace opweave {

void NodeDef::missing_attr(const std::string& key) const {
  throw_invalid_argument("node '" + name + "' (op: " + op + ") has no attribute '" + key +
                         "' of the expected type");
}

int Graph::add_node(NodeDef node) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int id = static_cast<int>(nodes_.size());
  if (node.name.empty()) throw_invalid_argument("node name must not be empty");
  if (by_name_.count(node.name)) throw_invalid_argument("duplicate node name '" + node.name + "'");
  if (node.num_outputs < 0) throw_invalid_argument("negative num_outputs for " + node.name);
  const auto outputs = static_cast<std::size_t>(node.num_outputs);
  if ((!node.output_dtypes.empty() && node.output_dtypes.size() != outputs) ||
      (!node.output_shapes.empty() && node.output_shapes.size() != outputs)) {
    throw_invalid_argument("node '" + node.name + "' describes " +
                           std::to_string(node.output_dtypes.size()) + " dtypes and " +
                           std::to_string(node.output_shapes.size()) + " shapes for " +
                           std::to_string(outputs) + " outputs");
  }
  for (const TensorId& in : node.inputs) {
    if (in.node < 0 || in.node >= id || in.index < 0 ||
        in.index >= nodes_[static_cast<std::size_t>(in.node)]->num_outputs) {
      throw_invalid_argument("node '" + node.name + "' has an input that does not exist");
    }
  }
  for (int c : node.control_inputs) {
    if (c < 0 || c >= id) {
      throw_invalid_argument("node '" + node.name + "' has a control input that does not exist");
    }
  }
  by_name_.emplace(node.name, id);
  nodes_.push_back(std::make_shared<const NodeDef>(std::move(node)));
  return id;
}

int Graph::num_nodes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(nodes_.size());
}

std::shared_ptr<const NodeDef> Graph::node(int id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id < 0 || id >= static_cast<int>(nodes_.size())) {
    throw OpError(ErrorCode::kNotFound, "no node with id " + std::to_string(id));
  }
  return nodes_[static_cast<std::size_t>(id)];
}

int Graph::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

}  // namespace opweave
