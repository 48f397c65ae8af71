#include "opweave/executor/compiled_graph.h"

#include <algorithm>
#include <map>
#include <set>

#include "opweave/errors.h"

namespace opweave {

namespace {

// Initial cost estimate for measured nodes: above the inline threshold, so a node runs on the
// pool until measurements show it is cheap (a wrong "cheap" guess would serialise a big op).
constexpr std::int64_t kInitialCostNs = 1'000'000;

}  // namespace

std::shared_ptr<const CompiledGraph> CompiledGraph::compile(const Graph& graph,
                                                            const std::vector<TensorId>& feeds,
                                                            const std::vector<TensorId>& fetches,
                                                            const std::vector<int>& targets) {
  return build(graph, feeds, fetches, targets);
}

std::shared_ptr<const CompiledGraph> CompiledGraph::compile(
    std::shared_ptr<const Graph> graph, const std::vector<TensorId>& feeds,
    const std::vector<TensorId>& fetches, const std::vector<int>& targets,
    std::shared_ptr<const OptimizerReport> report) {
  std::shared_ptr<CompiledGraph> g = build(*graph, feeds, fetches, targets);
  g->source_ = std::move(graph);
  g->report_ = std::move(report);
  return g;
}

std::shared_ptr<CompiledGraph> CompiledGraph::build(const Graph& graph,
                                                    const std::vector<TensorId>& feeds,
                                                    const std::vector<TensorId>& fetches,
                                                    const std::vector<int>& targets) {
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
  std::map<TensorId, int> feed_slot;
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    check_tensor(feeds[i]);
    if (!feed_slot.emplace(feeds[i], static_cast<int>(i)).second) {
      throw_invalid_argument("a tensor is fed twice");
    }
  }

  // A control dependency on a fed placeholder is satisfied by the feed, as in TensorFlow (which
  // moves such edges to the node that receives the fed value): the placeholder does not run.
  auto fed_placeholder = [&](int c) {
    const std::string& op = defs[static_cast<std::size_t>(c)]->op;
    return (op == "Placeholder" || op == "PlaceholderV2" || op == "_Arg") &&
           feed_slot.count(TensorId{c, 0}) != 0;
  };

  // Backward reachability from fetches and targets, not crossing fed tensors. Inputs always have
  // smaller ids than their consumers, so one descending sweep visits everything needed.
  std::vector<char> needed(static_cast<std::size_t>(n), 0);
  for (const TensorId& f : fetches) {
    check_tensor(f);
    if (!feed_slot.count(f)) needed[static_cast<std::size_t>(f.node)] = 1;
  }
  for (int t : targets) {
    if (t < 0 || t >= n) throw OpError(ErrorCode::kNotFound, "target node is not in the graph");
    needed[static_cast<std::size_t>(t)] = 1;
  }
  for (int i = n - 1; i >= 0; --i) {
    if (!needed[static_cast<std::size_t>(i)]) continue;
    const NodeDef& d = *defs[static_cast<std::size_t>(i)];
    for (const TensorId& in : d.inputs) {
      if (!feed_slot.count(in)) needed[static_cast<std::size_t>(in.node)] = 1;
    }
    for (int c : d.control_inputs) {
      if (!fed_placeholder(c)) needed[static_cast<std::size_t>(c)] = 1;
    }
  }

  auto g = std::make_shared<CompiledGraph>();
  std::vector<int> compiled_index(static_cast<std::size_t>(n), -1);
  int next_slot = static_cast<int>(feeds.size());
  for (int i = 0; i < n; ++i) {
    if (!needed[static_cast<std::size_t>(i)]) continue;
    compiled_index[static_cast<std::size_t>(i)] = static_cast<int>(g->nodes_.size());
    auto node = std::make_unique<CompiledNode>();
    node->def = defs[static_cast<std::size_t>(i)];
    node->num_outputs = node->def->num_outputs;
    node->output_slot = next_slot;
    next_slot += node->num_outputs;
    g->nodes_.push_back(std::move(node));
  }
  g->num_slots_ = next_slot;

  auto slot_of = [&](const TensorId& t) {
    auto it = feed_slot.find(t);
    if (it != feed_slot.end()) return it->second;
    const int c = compiled_index[static_cast<std::size_t>(t.node)];
    return g->nodes_[static_cast<std::size_t>(c)]->output_slot + t.index;
  };

  // Predecessor sets (distinct: two edges from one producer count once), then successor ranges.
  std::vector<std::set<int>> preds(g->nodes_.size());
  for (std::size_t c = 0; c < g->nodes_.size(); ++c) {
    CompiledNode& node = *g->nodes_[c];
    const NodeDef& d = *node.def;
    for (const TensorId& in : d.inputs) {
      node.input_slots.push_back(slot_of(in));
      if (!feed_slot.count(in)) preds[c].insert(compiled_index[static_cast<std::size_t>(in.node)]);
    }
    for (int ctl : d.control_inputs) {
      if (!fed_placeholder(ctl)) preds[c].insert(compiled_index[static_cast<std::size_t>(ctl)]);
    }
    node.initial_pending = static_cast<int>(preds[c].size());
    g->pending_template_.push_back(node.initial_pending);
    if (node.initial_pending == 0) g->roots_.push_back(static_cast<int>(c));
    try {
      KernelDef kdef = find_kernel(d.op);
      node.kernel = kdef.make(d);
      node.hint = kdef.cost;
      node.may_block = kdef.may_block;
    } catch (const OpError& e) {
      throw OpError(e.code(), std::string(e.what()) + " (node '" + d.name + "', op " + d.op + ")");
    }
    node.cost_ns.store(node.hint == CostHint::kCheap ? 0 : kInitialCostNs,
                       std::memory_order_relaxed);
  }
  std::vector<std::vector<int>> succ(g->nodes_.size());
  for (std::size_t c = 0; c < preds.size(); ++c) {
    for (int p : preds[c]) succ[static_cast<std::size_t>(p)].push_back(static_cast<int>(c));
  }
  for (std::size_t c = 0; c < succ.size(); ++c) {
    g->nodes_[c]->succ_begin = static_cast<int>(g->successors_.size());
    g->successors_.insert(g->successors_.end(), succ[c].begin(), succ[c].end());
    g->nodes_[c]->succ_end = static_cast<int>(g->successors_.size());
  }
  // Nodes are in topological order (successors have larger indices), so one backward pass.
  for (std::size_t c = succ.size(); c-- > 0;) {
    int below = 0;
    for (int s : succ[c]) below = std::max(below, g->nodes_[static_cast<std::size_t>(s)]->height);
    g->nodes_[c]->height = below + (g->nodes_[c]->hint == CostHint::kCheap ? 0 : 1);
  }
  g->slot_readers_.assign(static_cast<std::size_t>(g->num_slots_), 0);
  for (const auto& node : g->nodes_) {
    for (int s : node->input_slots) ++g->slot_readers_[static_cast<std::size_t>(s)];
  }
  for (const TensorId& f : fetches) {
    g->fetch_slots_.push_back(slot_of(f));
    ++g->slot_readers_[static_cast<std::size_t>(g->fetch_slots_.back())];
  }
  // Fed slots never qualify: their buffers belong to the caller (e.g. a NumPy array).
  const int num_fed = static_cast<int>(feeds.size());
  for (const auto& node : g->nodes_) {
    for (std::size_t i = 0; i < node->input_slots.size() && i < 32; ++i) {
      const int s = node->input_slots[i];
      if (s >= num_fed && g->slot_readers_[static_cast<std::size_t>(s)] == 1) {
        node->sole_reader_inputs |= 1u << i;
      }
    }
  }
  g->feeds_ = feeds;
  return g;
}

}  // namespace opweave
