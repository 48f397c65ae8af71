// WorkGraph: one signature (feeds, fetches, targets) of a Graph as the optimizer's passes edit it.
// Built from the nodes the fetches and targets need (stopping at fed tensors, as the executor
// does); each fed tensor becomes an `_Arg` node of its own, so a pass never looks through a feed.
// Nodes are edited in place or added; removed ones keep their id (alive() says so). Passes read
// definitions with def() and change op, attrs and original_nodes through edit(); inputs and
// control inputs change only through the edge methods, which keep the consumer lists right.
//
//   WorkGraph g(graph, feeds, fetches, targets);
//   for (int n : g.topological_order()) { ... g.replace_uses({n, 0}, x); g.remove(n); }
//   WorkGraph::Exported out = g.export_graph();  // a Graph plus the signature's ids in it
//
// Not thread-safe: one compilation owns it.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "opweave/graph/graph.h"

namespace opweave {

class WorkGraph {
 public:
  // Data input `input` of node `node` reads the tensor in question.
  struct Use {
    int node;
    int input;
  };

  // The nodes `fetches` and `targets` need, not crossing fed tensors. Throws OpError(kNotFound)
  // for ids outside the graph, kInvalidArgument for a tensor fed twice.
  WorkGraph(const Graph& graph, const std::vector<TensorId>& feeds,
            const std::vector<TensorId>& fetches, const std::vector<int>& targets);

  int size() const noexcept { return static_cast<int>(nodes_.size()); }  // removed ones included
  // References from def() and edit() stay valid when nodes are added.
  int num_alive() const noexcept { return alive_count_; }
  bool alive(int id) const { return nodes_[static_cast<std::size_t>(id)].alive; }
  const NodeDef& def(int id) const { return nodes_[static_cast<std::size_t>(id)].def; }
  // For op, attrs, original_nodes and the output descriptions; not inputs or control inputs.
  NodeDef& edit(int id) { return nodes_[static_cast<std::size_t>(id)].def; }

  // Protected nodes are never removed: a fetched tensor's producer, a target, a feed's _Arg.
  // A pass may still rewrite a protected node in place if it keeps its name, outputs and value.
  bool is_protected(int id) const { return nodes_[static_cast<std::size_t>(id)].protect; }
  bool is_target(int id) const { return nodes_[static_cast<std::size_t>(id)].target; }
  // Keeps state or has effects: never folded, merged, removed or rewritten (its kernel says
  // stateful, its op definition did, it calls back into Python, or it is a placeholder or feed).
  bool is_stateful(int id) const;
  // A Const node (with a value).
  bool is_constant(int id) const;
  const Tensor& constant_value(int id) const { return def(id).attr<Tensor>("value"); }

  // Data consumers of any output of `id`, and nodes with a control input on `id`.
  const std::vector<Use>& uses(int id) const { return nodes_[static_cast<std::size_t>(id)].uses; }
  const std::vector<int>& control_uses(int id) const {
    return nodes_[static_cast<std::size_t>(id)].control_uses;
  }
  int num_uses(const TensorId& t) const;

  // A name used by no node of this signature nor of the original graph, from `base`.
  std::string unique_name(const std::string& base);
  // Adds a node (inputs and control inputs must be alive ids); returns its id.
  int add_node(NodeDef def);
  // A Const node holding `value`, with these control inputs and original nodes.
  int add_constant(const std::string& name, const Tensor& value, const std::vector<int>& control,
                   std::vector<std::string> original_nodes, const std::string& device);

  void set_input(int node, int input, const TensorId& t);
  void set_inputs(int node, const std::vector<TensorId>& inputs);
  void set_control_inputs(int node, const std::vector<int>& control);
  void add_control_input(int node, int control);  // no duplicates, never the node itself
  // Every data consumer of `from` reads `to` instead.
  void replace_uses(const TensorId& from, const TensorId& to);
  // Every node with a control input on `from` gets control inputs on `to` instead.
  void replace_control_uses(int from, const std::vector<int>& to);
  // Removes a node nothing reads any more (OpError(kInternal) otherwise, or if it is protected).
  void remove(int id);

  // What a node's removal leaves to others so that nothing that had to run first is forgotten:
  // its control inputs, with Const nodes among them replaced by their own (a constant orders
  // nothing), sorted and unique.
  std::vector<int> ordering_of(const std::vector<int>& control) const;
  // Appends what `gone` stood for (its original_nodes, or its name) to `into`'s original_nodes,
  // which start with `into`'s own name. Moves from `gone`, which must be about to disappear.
  void absorb_names(int into, int gone);
  // Makes `into`'s original_nodes start with its own name, so it says it was rewritten.
  void mark_rewritten(int into);

  // Replaces node `id`'s single output by `with` everywhere: consumers read `with`, control
  // consumers wait for `with`'s producer, and both inherit `id`'s ordering (ordering_of its
  // control inputs plus `extra_control`). A protected node becomes Identity(with) instead,
  // keeping its name. Returns false (changing nothing) when `id` is stateful.
  bool bypass(int id, const TensorId& with, const std::vector<int>& extra_control = {});

  // The alive nodes, producers before consumers (ties by id, so the order is deterministic).
  std::vector<int> topological_order() const;
  // Removes alive nodes that no fetch or target needs any more; returns their names.
  std::vector<std::string> prune_dead();

  struct Exported {
    std::shared_ptr<const Graph> graph;
    std::vector<TensorId> feeds;  // in the order given to the constructor
    std::vector<TensorId> fetches;
    std::vector<int> targets;
  };
  // The alive nodes as a Graph in topological order, and the signature's ids in it.
  Exported export_graph() const;

 private:
  struct Node {
    NodeDef def;
    bool alive = true;
    bool protect = false;
    bool target = false;
    std::vector<Use> uses;
    std::vector<int> control_uses;
  };
  Node& at(int id) { return nodes_[static_cast<std::size_t>(id)]; }
  const Node& at(int id) const { return nodes_[static_cast<std::size_t>(id)]; }
  void drop_use(int producer, int node, int input);
  void drop_control_use(int producer, int node);

  const Graph& source_;
  std::deque<Node> nodes_;  // a deque: adding a node leaves references to the others valid
  int alive_count_ = 0;
  std::set<std::string> names_;
  std::vector<int> feed_nodes_;                       // the _Arg of feed i
  std::vector<TensorId> fetches_;                     // in this graph's ids
  std::vector<int> targets_;                          // in this graph's ids
  mutable std::map<std::string, bool> stateful_ops_;  // op type -> its kernel says stateful
};

}  // namespace opweave
