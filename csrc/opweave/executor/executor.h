// Executor: runs one Graph for many (feeds, fetches, targets) signatures. Each signature is
// compiled once (CompiledGraph) and cached; a run copies the in-degree template into atomic
// counters, and a node becomes ready when its counter's fetch_sub(1) returns 1. The thread that
// finishes a node runs one ready successor itself (continuation) plus every cheap one (inline,
// by a moving-average cost estimate) and pushes the other expensive ones to the inter-op pool.
//
//   Executor exec(graph);
//   RunRequest req;
//   req.fetches = {{y, 0}};
//   req.inter_pool = pool;            // null: every node runs in the caller's thread
//   std::vector<Tensor> out = exec.run(req);
//
// run() is thread-safe: many threads may run the same Executor at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "opweave/errors.h"
#include "opweave/executor/compiled_graph.h"
#include "opweave/executor/observer.h"
#include "opweave/executor/session_state.h"
#include "opweave/graph/graph.h"
#include "opweave/thread_pool.h"

namespace opweave {

struct RunRequest {
  std::vector<std::pair<TensorId, Tensor>> feeds;
  std::vector<TensorId> fetches;
  std::vector<int> targets;
  ThreadPool* inter_pool = nullptr;  // null: every node runs in the caller's thread
  ThreadPool* intra_pool = nullptr;  // handed to kernels (null: kernels run serially)
  std::int64_t timeout_ms = 0;       // <= 0: no deadline
  ExecutionObserver* observer = nullptr;
  // Called by the waiting caller about every poll_interval (and between nodes in caller-thread
  // mode); returning false cancels the run (e.g. a pending KeyboardInterrupt).
  std::function<bool()> poll;
  std::chrono::milliseconds poll_interval{50};
  // When set, receives the compiled signature the run used (its graph, its optimizer report).
  std::shared_ptr<const CompiledGraph>* compiled_out = nullptr;
  // Whatever the run reads that its caller owns (a per-session pool, the observer): kept alive
  // until the run's last node finished, also when the run is abandoned at its deadline.
  std::shared_ptr<void> keep_alive;
};

// A run failed: code and message come from the failing node (or the deadline / cancellation),
// node_name/op_type name it (empty for run-level failures), cause is the kernel's exception.
class RunFailure : public OpError {
 public:
  RunFailure(ErrorCode code, const std::string& message, std::string node_name, std::string op_type,
             std::exception_ptr cause)
      : OpError(code, message),
        node_name_(std::move(node_name)),
        op_type_(std::move(op_type)),
        cause_(std::move(cause)) {}
  const std::string& node_name() const noexcept { return node_name_; }
  const std::string& op_type() const noexcept { return op_type_; }
  const std::exception_ptr& cause() const noexcept { return cause_; }

 private:
  std::string node_name_;
  std::string op_type_;
  std::exception_ptr cause_;
};

// A node costing less than this (moving average) runs inline instead of through a queue.
inline constexpr std::int64_t kInlineThresholdNs = 20'000;

class Executor {
 public:
  // `optimizer` says which graph optimizer passes rewrite each signature when it is compiled
  // (the default: none, the graph runs as written).
  explicit Executor(std::shared_ptr<const Graph> graph, OptimizerOptions optimizer = {});
  // Waits for the runs abandoned at their deadline to finish (they use this executor).
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs the request; returns the fetched tensors in request order. Throws RunFailure. Returns
  // when no node of this run is running or queued any more -- except at a deadline
  // (timeout_ms): then the nodes not started are cancelled, kernels stop between the pieces of
  // their parallel loops, and if a kernel still runs a little past the deadline (a sleeping
  // py_function) the run is abandoned: run() throws kDeadlineExceeded at once and the kernel
  // finishes in the background, its outputs dropped (close() and the destructor wait for it).
  // A run in the caller's thread (no inter-op pool, or nested in a kernel) checks its deadline
  // between nodes only. Thread-safe.
  std::vector<Tensor> run(const RunRequest& request);
  // run() of a signature compiled beforehand (compiled()): `feeds` are the fed tensors in the
  // order of that call's feed ids; request.feeds, fetches and targets are not read. For callers
  // that run one signature many times (Session.make_callable). A run the inter-op pool cannot
  // speed up (by its nodes' measured costs: a small and cheap graph, a chain of nodes, any graph
  // on a pool of one worker) runs in the calling thread, as a nested run does, when none of its
  // nodes is long and its feeds are small: the hand-over to a worker would cost more than it
  // saves. Thread-safe.
  std::vector<Tensor> run_compiled(const std::shared_ptr<const CompiledGraph>& compiled,
                                   std::vector<Tensor> feeds, const RunRequest& request);
  // Compiles (or finds) the signature without running it; constant folding computes on
  // `intra_pool` (null: serially). Thread-safe.
  std::shared_ptr<const CompiledGraph> compiled(const std::vector<TensorId>& feeds,
                                                const std::vector<TensorId>& fetches,
                                                const std::vector<int>& targets,
                                                ThreadPool* intra_pool = nullptr);
  // What the optimizer did to the signature compiled last (null before the first). Thread-safe.
  std::shared_ptr<const OptimizerReport> last_optimizer_report() const;
  const OptimizerOptions& optimizer_options() const noexcept { return optimizer_; }
  // Number of cached signatures. Thread-safe.
  std::size_t num_compiled() const;
  // Cancels the runs in flight (each fails with kCancelled within about one poll_interval, once
  // its running kernels return) and makes every later run fail with kCancelled at once, as
  // TensorFlow's Session.close does; then waits for the runs abandoned at their deadline.
  // Idempotent. Thread-safe.
  void close() noexcept;
  // Runs abandoned at their deadline whose kernels have not returned yet. Thread-safe.
  int num_abandoned_runs() const;

  // True while the calling thread is executing a node's kernel (of any executor). A run started
  // from such a thread (a py_function calling Session.run) runs in that thread: waiting for pool
  // workers from inside a worker could deadlock when every worker is busy waiting.
  static bool in_node() noexcept;

  // The state the session's stateful ops keep between runs (variables, random generators).
  SessionState& state() noexcept { return *state_; }

 private:
  struct Run;

  void abandon_run();
  void abandoned_run_finished();
  void wait_for_abandoned_runs() noexcept;

  std::shared_ptr<const Graph> graph_;
  const OptimizerOptions optimizer_;
  std::shared_ptr<SessionState> state_;
  std::atomic<bool> closed_{false};
  mutable std::mutex abandoned_mutex_;  // guards abandoned_ (the caller and a finishing worker)
  std::condition_variable abandoned_cv_;
  int abandoned_ = 0;
  mutable std::mutex cache_mutex_;  // guards cache_: concurrent runs look up and insert
  std::map<std::vector<int>, std::shared_ptr<const CompiledGraph>> cache_;
  std::shared_ptr<const OptimizerReport> last_report_;  // guarded by cache_mutex_
};

}  // namespace opweave
