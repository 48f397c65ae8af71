// Graph: the C++ mirror of a Python opweave.Graph. Nodes are appended as Python builds ops and are
// immutable afterwards, so a compiled executor can keep pointers to them while the graph grows.
//
//   Graph g;
//   NodeDef c{"c", "Const", {}, {}, {{"value", AttrValue{Tensor::zeros(DType::kFloat32, {2})}}}};
//   int id = g.add_node(std::move(c));
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "opweave/tensor.h"

namespace opweave {

// A host callback attribute (py_function): called with the input tensors, returns the outputs.
// The callable owns whatever it needs (e.g. a Python object, whose GIL handling is its business).
using HostFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

using AttrValue = std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>,
                               Tensor, DType, std::vector<DType>, std::shared_ptr<HostFunction>,
                               std::vector<double>, std::vector<std::string>>;

// A static shape as graph construction inferred it: dims (-1 = unknown), or an unknown rank.
struct StaticShape {
  bool known_rank = false;
  std::vector<std::int64_t> dims;  // when known_rank; -1 for an unknown dimension
  bool fully_known() const {
    if (!known_rank) return false;
    for (std::int64_t d : dims) {
      if (d < 0) return false;
    }
    return true;
  }
};

// One output of one node.
struct TensorId {
  int node = -1;
  int index = 0;
  bool operator==(const TensorId& o) const { return node == o.node && index == o.index; }
  bool operator<(const TensorId& o) const {
    return node < o.node || (node == o.node && index < o.index);
  }
};

struct NodeDef {
  std::string name;
  std::string op;
  std::vector<TensorId> inputs;
  std::vector<int> control_inputs;
  std::map<std::string, AttrValue> attrs;
  std::string device;
  int num_outputs = 1;
  // What graph construction inferred for each output (empty when it said nothing, e.g. a node
  // built in C++): the graph optimizer uses them to prove a rewrite keeps shapes and dtypes.
  std::vector<DType> output_dtypes;
  std::vector<StaticShape> output_shapes;
  // Set by the graph optimizer on a node that stands for others of the original graph (a folded
  // constant, a merged or rewritten node; phase 2: a fused kernel): their names, so traces and
  // errors can name what the user wrote. Empty for a node as written.
  std::vector<std::string> original_nodes;
  // The op's definition says it keeps state or has effects (OpDef.stateful in Python): the graph
  // optimizer never folds, merges, removes or moves it, whatever its kernel says.
  bool stateful = false;

  // Typed attribute access; throws OpError(kInvalidArgument) naming the node when missing.
  template <typename T>
  const T& attr(const std::string& key) const {
    auto it = attrs.find(key);
    const T* value = it == attrs.end() ? nullptr : std::get_if<T>(&it->second);
    if (!value) missing_attr(key);
    return *value;
  }
  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }

 private:
  [[noreturn]] void missing_attr(const std::string& key) const;
};

// Append-only node store. Thread-safe: Python may add nodes while other threads compile and run.
class Graph {
 public:
  // Validates the inputs (they must name existing nodes and outputs) and returns the new id.
  int add_node(NodeDef node);
  int num_nodes() const;
  // The node with this id; the pointer stays valid for the graph's lifetime.
  std::shared_ptr<const NodeDef> node(int id) const;
  // -1 when there is no node of that name.
  int find(const std::string& name) const;

 private:
  mutable std::mutex mutex_;  // guards nodes_ and by_name_ (appends vs. concurrent readers)
  std::vector<std::shared_ptr<const NodeDef>> nodes_;
  std::map<std::string, int> by_name_;
};

}  // namespace opweave
