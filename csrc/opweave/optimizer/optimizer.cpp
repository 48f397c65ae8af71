#include "opweave/optimizer/optimizer.h"

#include <chrono>
#include <exception>
#include <memory>

#include "opweave/errors.h"
#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

// TensorFlow's meta optimizer order: model pruning, common subgraphs, constants, arithmetic,
// then dependencies (identities and no-ops). Phase 2's fusion ("remapping") goes after the
// arithmetic rewrites, which expose its patterns, and before identity_removal. Built at load
// time, not on first use: a fork() during a lazy initialiser would leave the child waiting on
// its guard (fork_guard.h).
const std::vector<PassInfo> g_passes = {
    {"pruning", run_pruning},
    {"common_subexpression", run_common_subexpression},
    {"constant_folding", run_constant_folding},
    {"arithmetic", run_arithmetic},
    {"elementwise_fusion", run_elementwise_fusion},
    {"identity_removal", run_identity_removal},
};

}  // namespace

const std::vector<PassInfo>& optimizer_passes() { return g_passes; }

OptimizerOptions OptimizerOptions::all() {
  OptimizerOptions o;
  for (const PassInfo& p : optimizer_passes()) o.passes.emplace_back(p.name);
  return o;
}

namespace {

PassFunction find_pass(const std::string& name) {
  for (const PassInfo& p : optimizer_passes()) {
    if (name == p.name) return p.run;
  }
  return nullptr;
}

std::int64_t micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

}  // namespace

OptimizedSignature optimize_signature(const Graph& graph, const std::vector<TensorId>& feeds,
                                      const std::vector<TensorId>& fetches,
                                      const std::vector<int>& targets,
                                      const OptimizerOptions& options, ThreadPool* intra_pool) {
  auto owned = std::make_unique<WorkGraph>(graph, feeds, fetches, targets);
  WorkGraph& work = *owned;
  auto report = std::make_shared<OptimizerReport>();
  report->nodes_before = work.num_alive();
  std::vector<std::pair<std::string, PassFunction>> pipeline;
  for (const std::string& name : options.passes) {
    if (PassFunction run = find_pass(name)) pipeline.emplace_back(name, run);
  }
  if (pipeline.empty()) {
    report->skipped = "no optimizer pass is switched on";
  } else if (options.min_graph_nodes >= 0 && work.num_alive() < options.min_graph_nodes) {
    report->skipped = "the signature has " + std::to_string(work.num_alive()) +
                      " nodes, fewer than min_graph_nodes (" +
                      std::to_string(options.min_graph_nodes) + ")";
    pipeline.clear();
  }
  bool failed = false;
  for (int iteration = 0; iteration < options.max_iterations && !pipeline.empty() && !failed;
       ++iteration) {
    bool changed = false;
    for (const auto& [name, run] : pipeline) {
      PassReport pass;
      pass.pass = name;
      pass.iteration = iteration;
      pass.nodes_before = work.num_alive();
      const auto t0 = std::chrono::steady_clock::now();
      PassContext ctx{options, intra_pool, pass};
      try {
        changed = run(work, ctx) || changed;
        // What the pass left unread (an input of a removed node) goes now, counted as its work.
        for (std::string& dead : work.prune_dead()) {
          ctx.note("removed", dead, "no longer needed");
          changed = true;
        }
      } catch (const std::exception& e) {
        if (options.fail_on_errors) {
          throw OpError(ErrorCode::kInternal,
                        "graph optimizer pass " + name + " failed: " + e.what());
        }
        pass.error = e.what();
        failed = true;
      }
      pass.micros = micros_since(t0);
      pass.nodes_after = work.num_alive();
      report->passes.push_back(std::move(pass));
      if (failed) break;
    }
    if (!changed) break;
  }
  if (failed) {
    // A pass stopped half-way through a rewrite: the graph as written is the safe result.
    owned = std::make_unique<WorkGraph>(graph, feeds, fetches, targets);
    report->skipped = "a pass failed; the signature runs as written";
  }
  report->nodes_after = owned->num_alive();
  WorkGraph::Exported out = owned->export_graph();
  OptimizedSignature s;
  s.graph = std::move(out.graph);
  s.feeds = std::move(out.feeds);
  s.fetches = std::move(out.fetches);
  s.targets = std::move(out.targets);
  s.report = std::move(report);
  return s;
}

}  // namespace opweave
