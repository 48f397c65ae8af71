#include "opweave/optimizer/work_graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "opweave/errors.h"
#include "opweave/executor/kernel_registry.h"

namespace opweave {

namespace {

[[noreturn]] void internal(const std::string& message) {
  throw OpError(ErrorCode::kInternal, "graph optimizer: " + message);
}

}  // namespace

WorkGraph::WorkGraph(const Graph& graph, const std::vector<TensorId>& feeds,
                     const std::vector<TensorId>& fetches, const std::vector<int>& targets)
    : source_(graph) {
  const int n = graph.num_nodes();
  std::vector<std::shared_ptr<const NodeDef>> defs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) defs[static_cast<std::size_t>(i)] = graph.node(i);
  auto check_tensor = [&](const TensorId& t) {
    if (t.node < 0 || t.node >= n || t.index < 0 ||
        t.index >= defs[static_cast<std::size_t>(t.node)]->num_outputs) {
      throw OpError(ErrorCode::kNotFound, "tensor id (" + std::to_string(t.node) + ", " +
                                              std::to_string(t.index) + ") is not in the graph");
    }
  };
  std::map<TensorId, int> feed_index;
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    check_tensor(feeds[i]);
    if (!feed_index.emplace(feeds[i], static_cast<int>(i)).second) {
      throw_invalid_argument("a tensor is fed twice");
    }
  }
  // What the signature needs, as CompiledGraph::compile decides it: inputs have smaller ids than
  // their consumers, so one descending sweep finds everything.
  std::vector<char> needed(static_cast<std::size_t>(n), 0);
  for (const TensorId& f : fetches) {
    check_tensor(f);
    if (!feed_index.count(f)) needed[static_cast<std::size_t>(f.node)] = 1;
  }
  for (int t : targets) {
    if (t < 0 || t >= n) throw OpError(ErrorCode::kNotFound, "target node is not in the graph");
    needed[static_cast<std::size_t>(t)] = 1;
  }
  // A control dependency on a fed placeholder waits for the feed (CompiledGraph::compile).
  auto fed_placeholder = [&](int c) {
    const std::string& op = defs[static_cast<std::size_t>(c)]->op;
    return (op == "Placeholder" || op == "PlaceholderV2") && feed_index.count(TensorId{c, 0});
  };
  for (int i = n - 1; i >= 0; --i) {
    if (!needed[static_cast<std::size_t>(i)]) continue;
    const NodeDef& d = *defs[static_cast<std::size_t>(i)];
    for (const TensorId& in : d.inputs) {
      if (!feed_index.count(in)) needed[static_cast<std::size_t>(in.node)] = 1;
    }
    for (int c : d.control_inputs) {
      if (!fed_placeholder(c)) needed[static_cast<std::size_t>(c)] = 1;
    }
  }

  // Feeds first: an _Arg per fed tensor, with the tensor's dtype and shape.
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    const NodeDef& producer = *defs[static_cast<std::size_t>(feeds[i].node)];
    NodeDef arg;
    arg.name = unique_name("_arg_" + producer.name + "_0_" + std::to_string(feeds[i].index));
    arg.op = "_Arg";
    arg.attrs["index"] = AttrValue{static_cast<std::int64_t>(i)};
    // What it stands for, as TensorFlow's _Recv of a feed says it: traces name it by this.
    arg.attrs["tensor_name"] = AttrValue{producer.name + ":" + std::to_string(feeds[i].index)};
    arg.device = producer.device;
    const auto k = static_cast<std::size_t>(feeds[i].index);
    if (!producer.output_dtypes.empty()) {
      arg.output_dtypes = {producer.output_dtypes[k]};
      arg.attrs["T"] = AttrValue{producer.output_dtypes[k]};
    }
    if (!producer.output_shapes.empty()) arg.output_shapes = {producer.output_shapes[k]};
    const int id = add_node(std::move(arg));
    at(id).protect = true;
    feed_nodes_.push_back(id);
  }
  std::vector<int> work_id(static_cast<std::size_t>(n), -1);
  auto map_tensor = [&](const TensorId& t) {
    auto it = feed_index.find(t);
    if (it != feed_index.end()) {
      return TensorId{feed_nodes_[static_cast<std::size_t>(it->second)], 0};
    }
    return TensorId{work_id[static_cast<std::size_t>(t.node)], t.index};
  };
  for (int i = 0; i < n; ++i) {
    if (!needed[static_cast<std::size_t>(i)]) continue;
    NodeDef d = *defs[static_cast<std::size_t>(i)];
    for (TensorId& in : d.inputs) in = map_tensor(in);
    for (int& c : d.control_inputs) {
      c = fed_placeholder(c) ? map_tensor({c, 0}).node : work_id[static_cast<std::size_t>(c)];
    }
    work_id[static_cast<std::size_t>(i)] = add_node(std::move(d));
  }
  for (const TensorId& f : fetches) {
    const TensorId t = map_tensor(f);
    fetches_.push_back(t);
    at(t.node).protect = true;
  }
  for (int t : targets) {
    const int id = work_id[static_cast<std::size_t>(t)];
    targets_.push_back(id);
    at(id).protect = true;
    at(id).target = true;
  }
}

bool WorkGraph::is_stateful(int id) const {
  const NodeDef& d = def(id);
  if (d.stateful || d.op == "_Arg" || d.op == "Placeholder") return true;
  for (const auto& [key, value] : d.attrs) {
    if (std::holds_alternative<std::shared_ptr<HostFunction>>(value)) return true;
  }
  auto it = stateful_ops_.find(d.op);
  if (it == stateful_ops_.end()) {
    bool stateful = true;  // no kernel: nothing can run it, so nothing may touch it
    try {
      stateful = find_kernel(d.op).stateful;
    } catch (const OpError&) {
    }
    it = stateful_ops_.emplace(d.op, stateful).first;
  }
  return it->second;
}

bool WorkGraph::is_constant(int id) const {
  const NodeDef& d = def(id);
  if (!alive(id) || d.op != "Const") return false;
  auto it = d.attrs.find("value");
  return it != d.attrs.end() && std::holds_alternative<Tensor>(it->second);
}

int WorkGraph::num_uses(const TensorId& t) const {
  int count = 0;
  for (const Use& u : uses(t.node)) {
    if (def(u.node).inputs[static_cast<std::size_t>(u.input)] == t) ++count;
  }
  return count;
}

std::string WorkGraph::unique_name(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name) || source_.find(name) >= 0; ++k) {
    name = base + "_" + std::to_string(k);
  }
  names_.insert(name);
  return name;
}

int WorkGraph::add_node(NodeDef def) {
  const int id = size();
  for (const TensorId& in : def.inputs) {
    if (in.node < 0 || in.node >= id || !alive(in.node)) internal("input of a new node is gone");
  }
  for (int c : def.control_inputs) {
    if (c < 0 || c >= id || !alive(c)) internal("control input of a new node is gone");
  }
  names_.insert(def.name);
  nodes_.emplace_back();
  nodes_.back().def = std::move(def);
  ++alive_count_;
  const NodeDef& d = nodes_.back().def;
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    at(d.inputs[i].node).uses.push_back({id, static_cast<int>(i)});
  }
  for (int c : d.control_inputs) at(c).control_uses.push_back(id);
  return id;
}

int WorkGraph::add_constant(const std::string& name, const Tensor& value,
                            const std::vector<int>& control,
                            std::vector<std::string> original_nodes, const std::string& device) {
  NodeDef c;
  c.name = unique_name(name);
  c.op = "Const";
  c.attrs["value"] = AttrValue{value};
  c.attrs["dtype"] = AttrValue{value.dtype()};
  c.control_inputs = control;
  c.device = device;
  c.output_dtypes = {value.dtype()};
  c.output_shapes = {StaticShape{true, value.shape()}};
  c.original_nodes = std::move(original_nodes);
  return add_node(std::move(c));
}

void WorkGraph::drop_use(int producer, int node, int input) {
  std::vector<Use>& u = at(producer).uses;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (u[i].node == node && u[i].input == input) {
      u[i] = u.back();
      u.pop_back();
      return;
    }
  }
  internal("consumer lists out of step");
}

void WorkGraph::drop_control_use(int producer, int node) {
  std::vector<int>& u = at(producer).control_uses;
  auto it = std::find(u.begin(), u.end(), node);
  if (it == u.end()) internal("control consumer lists out of step");
  *it = u.back();
  u.pop_back();
}

void WorkGraph::set_input(int node, int input, const TensorId& t) {
  if (t.node < 0 || t.node >= size() || !alive(t.node)) internal("new input is gone");
  TensorId& slot = at(node).def.inputs[static_cast<std::size_t>(input)];
  drop_use(slot.node, node, input);
  slot = t;
  at(t.node).uses.push_back({node, input});
}

void WorkGraph::set_inputs(int node, const std::vector<TensorId>& inputs) {
  std::vector<TensorId>& slots = at(node).def.inputs;
  for (std::size_t i = 0; i < slots.size(); ++i) drop_use(slots[i].node, node, static_cast<int>(i));
  slots.clear();
  for (const TensorId& t : inputs) {
    if (t.node < 0 || t.node >= size() || !alive(t.node)) internal("new input is gone");
    at(t.node).uses.push_back({node, static_cast<int>(slots.size())});
    slots.push_back(t);
  }
}

void WorkGraph::set_control_inputs(int node, const std::vector<int>& control) {
  std::vector<int>& slots = at(node).def.control_inputs;
  for (int c : slots) drop_control_use(c, node);
  slots.clear();
  for (int c : control) add_control_input(node, c);
}

void WorkGraph::add_control_input(int node, int control) {
  if (control == node) return;
  if (control < 0 || control >= size() || !alive(control)) internal("control input is gone");
  std::vector<int>& slots = at(node).def.control_inputs;
  if (std::find(slots.begin(), slots.end(), control) != slots.end()) return;
  slots.push_back(control);
  at(control).control_uses.push_back(node);
}

void WorkGraph::replace_uses(const TensorId& from, const TensorId& to) {
  if (from == to) return;
  const std::vector<Use> uses_copy = uses(from.node);  // set_input edits the list
  for (const Use& u : uses_copy) {
    if (def(u.node).inputs[static_cast<std::size_t>(u.input)] == from)
      set_input(u.node, u.input, to);
  }
}

void WorkGraph::replace_control_uses(int from, const std::vector<int>& to) {
  const std::vector<int> users = control_uses(from);
  for (int u : users) {
    std::vector<int>& slots = at(u).def.control_inputs;
    slots.erase(std::find(slots.begin(), slots.end(), from));
    drop_control_use(from, u);
    for (int t : to) add_control_input(u, t);
  }
}

void WorkGraph::remove(int id) {
  Node& node = at(id);
  if (!node.alive) return;
  if (node.protect) internal("removing protected node '" + node.def.name + "'");
  if (!node.uses.empty() || !node.control_uses.empty()) {
    internal("removing node '" + node.def.name + "' that is still read");
  }
  set_inputs(id, {});
  set_control_inputs(id, {});
  node.alive = false;
  --alive_count_;
}

std::vector<int> WorkGraph::ordering_of(const std::vector<int>& control) const {
  std::set<int> out;
  std::vector<int> work(control.begin(), control.end());
  std::set<int> seen;
  while (!work.empty()) {
    const int c = work.back();
    work.pop_back();
    if (!seen.insert(c).second) continue;
    if (is_constant(c)) {
      const std::vector<int>& more = def(c).control_inputs;
      work.insert(work.end(), more.begin(), more.end());
    } else {
      out.insert(c);
    }
  }
  return std::vector<int>(out.begin(), out.end());
}

void WorkGraph::mark_rewritten(int into) {
  std::vector<std::string>& names = at(into).def.original_nodes;
  if (names.empty() || names.front() != def(into).name) names.insert(names.begin(), def(into).name);
}

void WorkGraph::absorb_names(int into, int gone) {
  mark_rewritten(into);
  NodeDef& g = at(gone).def;
  std::vector<std::string>& names = at(into).def.original_nodes;
  if (g.original_nodes.empty()) {
    names.push_back(g.name);
  } else if (names.size() == 1) {
    // Long chains absorb one node at a time: keep the longer list and add to it, so absorbing is
    // linear overall instead of quadratic. The node's own name stays first.
    std::string own = std::move(names.front());
    names = std::move(g.original_nodes);
    names.insert(names.begin(), std::move(own));
  } else {
    names.insert(names.end(), std::make_move_iterator(g.original_nodes.begin()),
                 std::make_move_iterator(g.original_nodes.end()));
  }
  g.original_nodes.clear();
}

bool WorkGraph::bypass(int id, const TensorId& with, const std::vector<int>& extra_control) {
  if (is_stateful(id)) return false;
  std::vector<int> control = def(id).control_inputs;
  control.insert(control.end(), extra_control.begin(), extra_control.end());
  std::vector<int> ordering = ordering_of(control);
  if (is_protected(id)) {
    // Fetched (or a target): it must stay, so it becomes an Identity of the value it equals.
    NodeDef& d = edit(id);
    d.op = "Identity";
    d.attrs.clear();
    if (!d.output_dtypes.empty()) d.attrs["T"] = AttrValue{d.output_dtypes[0]};
    mark_rewritten(id);
    set_inputs(id, {with});
    set_control_inputs(id, ordering);
    return true;
  }
  // Consumers inherit the node's ordering; control consumers wait for `with` instead.
  if (!ordering.empty()) {
    for (const Use& u : std::vector<Use>(uses(id))) {
      for (int c : ordering) add_control_input(u.node, c);
    }
  }
  std::vector<int> instead = ordering;
  if (!is_constant(with.node)) instead.push_back(with.node);
  replace_control_uses(id, instead);
  replace_uses({id, 0}, with);
  remove(id);
  return true;
}

std::vector<int> WorkGraph::topological_order() const {
  std::vector<int> pending(nodes_.size(), 0);
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < size(); ++i) {
    if (!alive(i)) continue;
    const NodeDef& d = def(i);
    // Distinct producers: a node reading one producer twice waits for it once.
    std::set<int> preds(d.control_inputs.begin(), d.control_inputs.end());
    for (const TensorId& in : d.inputs) preds.insert(in.node);
    pending[static_cast<std::size_t>(i)] = static_cast<int>(preds.size());
    if (preds.empty()) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(alive_count_));
  while (!ready.empty()) {
    const int n = ready.top();
    ready.pop();
    order.push_back(n);
    std::set<int> succ(control_uses(n).begin(), control_uses(n).end());
    for (const Use& u : uses(n)) succ.insert(u.node);
    for (int s : succ) {
      if (--pending[static_cast<std::size_t>(s)] == 0) ready.push(s);
    }
  }
  if (static_cast<int>(order.size()) != alive_count_) internal("the graph has a cycle");
  return order;
}

std::vector<std::string> WorkGraph::prune_dead() {
  std::vector<char> live(nodes_.size(), 0);
  std::vector<int> work;
  for (int i = 0; i < size(); ++i) {
    if (alive(i) && is_protected(i)) work.push_back(i);
  }
  while (!work.empty()) {
    const int n = work.back();
    work.pop_back();
    if (live[static_cast<std::size_t>(n)]) continue;
    live[static_cast<std::size_t>(n)] = 1;
    for (const TensorId& in : def(n).inputs) work.push_back(in.node);
    for (int c : def(n).control_inputs) work.push_back(c);
  }
  std::vector<std::string> removed;
  // Consumers before producers, so each node is unread when its turn comes.
  const std::vector<int> order = topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (live[static_cast<std::size_t>(*it)]) continue;
    removed.push_back(def(*it).name);
    remove(*it);
  }
  return removed;
}

WorkGraph::Exported WorkGraph::export_graph() const {
  auto graph = std::make_shared<Graph>();
  std::vector<int> new_id(nodes_.size(), -1);
  for (int n : topological_order()) {
    NodeDef d = def(n);
    for (TensorId& in : d.inputs) in.node = new_id[static_cast<std::size_t>(in.node)];
    for (int& c : d.control_inputs) c = new_id[static_cast<std::size_t>(c)];
    new_id[static_cast<std::size_t>(n)] = graph->add_node(std::move(d));
  }
  Exported out;
  for (int f : feed_nodes_) out.feeds.push_back({new_id[static_cast<std::size_t>(f)], 0});
  for (const TensorId& f : fetches_) {
    out.fetches.push_back({new_id[static_cast<std::size_t>(f.node)], f.index});
  }
  for (int t : targets_) out.targets.push_back(new_id[static_cast<std::size_t>(t)]);
  out.graph = std::move(graph);
  return out;
}

}  // namespace opweave
