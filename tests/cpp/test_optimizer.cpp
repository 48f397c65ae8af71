// The graph optimizer's contract, without Python: what each pass may and may not do (stateful
// nodes, fetches, feeds, control dependencies), its report, and that an Executor with it on
// gives the values of one with it off.
#include <algorithm>
#include <atomic>
#include <map>
#include <string>

#include "opweave/executor/executor.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/optimizer/optimizer.h"
#include "testing.h"

using namespace opweave;

namespace {

Tensor scalar(std::int64_t v) {
  Tensor t = Tensor::empty(DType::kInt64, {});
  t.data<std::int64_t>()[0] = v;
  return t;
}

std::int64_t value(const Tensor& t) { return t.data<std::int64_t>()[0]; }

std::atomic<int> g_sum_calls{0};
std::atomic<int> g_ticks{0};

// OSum adds int64 scalars (pure, counts its calls); OTick is stateful: it counts its runs and
// returns the count; OPair returns (x, x + 1).
void register_test_kernels() {
  register_kernel("OSum", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) {
                               g_sum_calls.fetch_add(1);
                               std::int64_t s = 0;
                               for (const Tensor& t : ctx.inputs) s += value(t);
                               ctx.outputs[0] = scalar(s);
                             };
                           },
                           CostHint::kCheap});
  register_kernel("OTick", {[](const NodeDef&) -> Kernel {
                              return [](KernelContext& ctx) {
                                ctx.outputs[0] = scalar(g_ticks.fetch_add(1) + 1);
                              };
                            },
                            CostHint::kCheap, /*stateful=*/true});
  register_kernel("OPair", {[](const NodeDef&) -> Kernel {
                              return [](KernelContext& ctx) {
                                ctx.outputs[0] = scalar(value(ctx.inputs[0]));
                                ctx.outputs[1] = scalar(value(ctx.inputs[0]) + 1);
                              };
                            },
                            CostHint::kCheap});
}

int add(Graph& g, const std::string& name, const std::string& op, std::vector<TensorId> inputs,
        std::vector<int> control = {}, int num_outputs = 1) {
  NodeDef d;
  d.name = name;
  d.op = op;
  d.inputs = std::move(inputs);
  d.control_inputs = std::move(control);
  d.num_outputs = num_outputs;
  return g.add_node(std::move(d));
}

int constant(Graph& g, const std::string& name, std::int64_t v) {
  NodeDef d;
  d.name = name;
  d.op = "Const";
  d.attrs["value"] = AttrValue{scalar(v)};
  return g.add_node(std::move(d));
}

OptimizerOptions all_passes() {
  OptimizerOptions o = OptimizerOptions::all();
  o.min_graph_nodes = -1;  // the tests' graphs are small
  return o;
}

std::vector<std::string> names_of(const Graph& g) {
  std::vector<std::string> out;
  for (int i = 0; i < g.num_nodes(); ++i) out.push_back(g.node(i)->name);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

int count_kind(const OptimizerReport& r, const std::string& kind) {
  int n = 0;
  for (const PassReport& p : r.passes) {
    for (const OptimizerChange& c : p.changes) n += c.kind == kind;
  }
  return n;
}

std::vector<Tensor> run(Executor& ex, std::vector<std::pair<TensorId, Tensor>> feeds,
                        std::vector<TensorId> fetches, std::vector<int> targets = {}) {
  RunRequest req;
  req.feeds = std::move(feeds);
  req.fetches = std::move(fetches);
  req.targets = std::move(targets);
  return ex.run(req);
}

}  // namespace

OPWEAVE_TEST(constant_subgraphs_are_computed_once_at_compile_time) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int a = constant(*g, "a", 1), b = constant(*g, "b", 2);
  const int c = add(*g, "c", "OSum", {{a, 0}, {b, 0}});
  const int d = add(*g, "d", "OSum", {{c, 0}, {c, 0}});
  Executor ex(g, all_passes());
  const int before = g_sum_calls.load();
  OPWEAVE_CHECK_EQ(value(run(ex, {}, {{d, 0}})[0]), 6);
  OPWEAVE_CHECK_EQ(g_sum_calls.load() - before, 2);  // both folded while compiling
  OPWEAVE_CHECK_EQ(value(run(ex, {}, {{d, 0}})[0]), 6);
  OPWEAVE_CHECK_EQ(g_sum_calls.load() - before, 2);  // and never run again
  auto report = ex.last_optimizer_report();
  OPWEAVE_CHECK(report != nullptr);
  OPWEAVE_CHECK_EQ(report->nodes_after, 1);  // d, a Const now, under its own name
  OPWEAVE_CHECK_EQ(count_kind(*report, "folded"), 2);
  auto compiled = ex.compiled({}, {{d, 0}}, {});
  OPWEAVE_CHECK_EQ(compiled->num_nodes(), 1);
  OPWEAVE_CHECK_EQ(compiled->node(0).def->name, std::string("d"));
  OPWEAVE_CHECK_EQ(compiled->node(0).def->op, std::string("Const"));
  // It stands for both sums.
  const std::vector<std::string>& orig = compiled->node(0).def->original_nodes;
  OPWEAVE_CHECK(has(orig, "c") && has(orig, "d"));
}

OPWEAVE_TEST(stateful_nodes_are_never_folded_or_merged) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int t1 = add(*g, "t1", "OTick", {});
  const int t2 = add(*g, "t2", "OTick", {});  // same op, inputs, attrs: still two draws
  const int s = add(*g, "s", "OSum", {{t1, 0}, {t2, 0}});
  Executor ex(g, all_passes());
  const int before = g_ticks.load();
  run(ex, {}, {{s, 0}});
  run(ex, {}, {{s, 0}});
  OPWEAVE_CHECK_EQ(g_ticks.load() - before, 4);
  auto compiled = ex.compiled({}, {{s, 0}}, {});
  OPWEAVE_CHECK_EQ(compiled->num_nodes(), 3);
  OPWEAVE_CHECK_EQ(count_kind(*ex.last_optimizer_report(), "merged"), 0);
}

OPWEAVE_TEST(pure_twins_are_merged_and_the_survivor_names_both) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int x = add(*g, "x", "Placeholder", {});
  const int one = constant(*g, "one", 1), one_again = constant(*g, "one_again", 1);
  const int p = add(*g, "p", "OSum", {{x, 0}, {one, 0}});
  const int q = add(*g, "q", "OSum", {{one_again, 0}, {x, 0}});  // OSum is not commutative here
  const int r = add(*g, "r", "OSum", {{x, 0}, {one_again, 0}});  // p's twin once consts merge
  const int s = add(*g, "s", "OSum", {{p, 0}, {q, 0}, {r, 0}});
  Executor ex(g, all_passes());
  OPWEAVE_CHECK_EQ(value(run(ex, {{{x, 0}, scalar(10)}}, {{s, 0}})[0]), 33);
  auto compiled = ex.compiled({{x, 0}}, {{s, 0}}, {});
  std::vector<std::string> names;
  for (int i = 0; i < compiled->num_nodes(); ++i) names.push_back(compiled->node(i).def->name);
  OPWEAVE_CHECK(has(names, "p") && has(names, "q") && !has(names, "r"));
  OPWEAVE_CHECK(has(names, "one") && !has(names, "one_again"));
  for (int i = 0; i < compiled->num_nodes(); ++i) {
    if (compiled->node(i).def->name == "p") {
      OPWEAVE_CHECK(has(compiled->node(i).def->original_nodes, "r"));
    }
  }
}

OPWEAVE_TEST(fetched_and_fed_tensors_stay) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int x = add(*g, "x", "Placeholder", {});
  const int i1 = add(*g, "i1", "Identity", {{x, 0}});
  const int i2 = add(*g, "i2", "Identity", {{i1, 0}});
  const int y = add(*g, "y", "OSum", {{i2, 0}, {i2, 0}});
  Executor ex(g, all_passes());
  // Fetching i1 keeps it; i2 goes. Feeding i2 replaces what is upstream of it.
  std::vector<Tensor> out = run(ex, {{{x, 0}, scalar(3)}}, {{y, 0}, {i1, 0}});
  OPWEAVE_CHECK_EQ(value(out[0]), 6);
  OPWEAVE_CHECK_EQ(value(out[1]), 3);
  std::vector<std::string> names =
      names_of(*ex.compiled({{x, 0}}, {{y, 0}, {i1, 0}}, {})->source());
  OPWEAVE_CHECK(has(names, "i1") && !has(names, "i2"));
  out = run(ex, {{{i2, 0}, scalar(5)}}, {{y, 0}, {i2, 0}});
  OPWEAVE_CHECK_EQ(value(out[0]), 10);
  OPWEAVE_CHECK_EQ(value(out[1]), 5);
}

OPWEAVE_TEST(control_dependencies_of_removed_and_folded_nodes_still_run_first) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int tick = add(*g, "tick", "OTick", {});
  const int a = constant(*g, "a", 1);
  // A foldable node and an identity, each waiting for the stateful tick.
  const int folded = add(*g, "folded", "OSum", {{a, 0}, {a, 0}}, {tick});
  const int x = add(*g, "x", "Placeholder", {});
  const int ident = add(*g, "ident", "Identity", {{x, 0}}, {tick});
  const int y = add(*g, "y", "OSum", {{folded, 0}, {ident, 0}});
  Executor ex(g, all_passes());
  const int before = g_ticks.load();
  OPWEAVE_CHECK_EQ(value(run(ex, {{{x, 0}, scalar(4)}}, {{y, 0}})[0]), 6);
  OPWEAVE_CHECK_EQ(g_ticks.load() - before, 1);  // the tick still ran, once
  auto compiled = ex.compiled({{x, 0}}, {{y, 0}}, {});
  // y waits for the tick (through the folded constant or directly).
  bool tick_before_y = false;
  for (int i = 0; i < compiled->num_nodes(); ++i) {
    const CompiledNode& n = compiled->node(i);
    if (n.def->name != "tick") continue;
    tick_before_y = n.succ_end > n.succ_begin;
  }
  OPWEAVE_CHECK(tick_before_y);
  OPWEAVE_CHECK(!has(names_of(*compiled->source()), "ident"));
}

OPWEAVE_TEST(noop_chains_collapse_and_keep_their_ordering) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int tick = add(*g, "tick", "OTick", {});
  int prev = add(*g, "n0", "NoOp", {}, {tick}, 0);
  for (int i = 1; i < 5; ++i) prev = add(*g, "n" + std::to_string(i), "NoOp", {}, {prev}, 0);
  const int after = add(*g, "after", "OTick", {}, {prev});
  Executor ex(g, all_passes());
  const int before = g_ticks.load();
  std::vector<Tensor> out = run(ex, {}, {{after, 0}});
  OPWEAVE_CHECK_EQ(g_ticks.load() - before, 2);
  OPWEAVE_CHECK_EQ(value(out[0]), before + 2);  // after ran second
  auto compiled = ex.compiled({}, {{after, 0}}, {});
  OPWEAVE_CHECK_EQ(compiled->num_nodes(), 2);  // tick -> after, the NoOps gone
}

OPWEAVE_TEST(a_multi_output_node_folds_into_one_constant_per_output_read) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int a = constant(*g, "a", 7);
  const int pair = add(*g, "pair", "OPair", {{a, 0}}, {}, 2);
  const int x = add(*g, "x", "Placeholder", {});
  const int y = add(*g, "y", "OSum", {{pair, 1}, {x, 0}});
  Executor ex(g, all_passes());
  OPWEAVE_CHECK_EQ(value(run(ex, {{{x, 0}, scalar(1)}}, {{y, 0}})[0]), 9);
  std::vector<std::string> names = names_of(*ex.compiled({{x, 0}}, {{y, 0}}, {})->source());
  OPWEAVE_CHECK(!has(names, "pair") && has(names, "pair/folded_1"));
}

OPWEAVE_TEST(optimizer_off_compiles_the_graph_as_written) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int a = constant(*g, "a", 1);
  const int c = add(*g, "c", "OSum", {{a, 0}, {a, 0}});
  Executor ex(g);  // the default: no pass
  const int before = g_sum_calls.load();
  OPWEAVE_CHECK_EQ(value(run(ex, {}, {{c, 0}})[0]), 2);
  OPWEAVE_CHECK_EQ(g_sum_calls.load() - before, 1);
  auto report = ex.last_optimizer_report();
  OPWEAVE_CHECK(report != nullptr && report->passes.empty() && !report->skipped.empty());
  OPWEAVE_CHECK_EQ(ex.compiled({}, {{c, 0}}, {})->num_nodes(), 2);
}

OPWEAVE_TEST(small_signatures_are_left_alone_below_min_graph_nodes) {
  register_test_kernels();
  auto g = std::make_shared<Graph>();
  const int a = constant(*g, "a", 1);
  const int c = add(*g, "c", "OSum", {{a, 0}, {a, 0}});
  OptimizerOptions o = OptimizerOptions::all();  // min_graph_nodes 4, as in TensorFlow
  Executor ex(g, o);
  OPWEAVE_CHECK_EQ(value(run(ex, {}, {{c, 0}})[0]), 2);
  OPWEAVE_CHECK_EQ(ex.compiled({}, {{c, 0}}, {})->num_nodes(), 2);
  OPWEAVE_CHECK(ex.last_optimizer_report()->skipped.find("min_graph_nodes") != std::string::npos);
}

int main(int argc, char** argv) { return opweave::testing::run_all(argc, argv); }
