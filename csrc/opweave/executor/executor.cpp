#include "opweave/executor/executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <new>

namespace opweave {

namespace {

// How many kernels the calling thread is inside (nested runs from py_functions make it > 1).
thread_local int t_node_depth = 0;

using Clock = std::chrono::steady_clock;

constexpr const char* kClosedMessage = "Run was cancelled: the session was closed";

std::string tensor_id_key(const TensorId& t) {
  return std::to_string(t.node) + ":" + std::to_string(t.index) + ",";
}

// Forwards the parallel_for chunks of one traced node's kernel to the run's observer.
struct NodeChunks final : ChunkObserver {
  NodeChunks(ExecutionObserver* o, int n) : observer(o), node(n) {}
  void on_chunk(const ChunkRecord& chunk) noexcept override { observer->on_chunk(node, chunk); }
  ExecutionObserver* observer;
  int node;
};

// Tells a traced run's observer which thread is which: the caller, the inter-op workers (when
// the run uses the pool) and the intra-op workers, numbered from 1 because the thread that calls
// parallel_for is the first of the op's threads.
void name_threads(const RunRequest& req, bool run_inline) {
  ExecutionObserver& o = *req.observer;
  o.on_thread(current_thread_id(), "caller");
  if (!run_inline) {
    const std::vector<long> ids = req.inter_pool->worker_thread_ids();
    for (std::size_t i = 0; i < ids.size(); ++i)
      o.on_thread(ids[i], "inter-op " + std::to_string(i));
  }
  if (req.intra_pool != nullptr) {
    const std::vector<long> ids = req.intra_pool->worker_thread_ids();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      o.on_thread(ids[i], "intra-op " + std::to_string(i + 1));
    }
  }
}

}  // namespace

// The state of one run. It lives on the caller's stack; the caller returns only after
// `outstanding` reached zero, so every task that captured `this` has finished touching it.
struct Executor::Run {
  Run(const CompiledGraph& graph, const RunRequest& request, bool run_inline,
      const std::atomic<bool>& executor_closed)
      : g(graph),
        req(request),
        inline_mode(run_inline),
        closed(executor_closed),
        pending(new std::atomic<int>[static_cast<std::size_t>(graph.num_nodes())]),
        readers(new std::atomic<int>[static_cast<std::size_t>(graph.num_slots())]),
        slots(static_cast<std::size_t>(graph.num_slots())) {
    for (int s = 0; s < g.num_slots(); ++s) {
      // Relaxed: published to workers by the pool's queue synchronisation, like `pending`.
      readers[static_cast<std::size_t>(s)].store(g.slot_readers()[static_cast<std::size_t>(s)],
                                                 std::memory_order_relaxed);
    }
    for (int i = 0; i < g.num_nodes(); ++i) {
      // Relaxed: the counters are published to workers by the pool's queue synchronisation.
      pending[static_cast<std::size_t>(i)].store(g.node(i).initial_pending,
                                                 std::memory_order_relaxed);
    }
    start = Clock::now();
    next_poll = start + req.poll_interval;
    has_deadline = req.timeout_ms > 0;
    deadline = start + std::chrono::milliseconds(req.timeout_ms);
  }

  const CompiledGraph& g;
  const RunRequest& req;
  const bool inline_mode;
  const std::atomic<bool>& closed;  // the executor's close() flag
  std::unique_ptr<std::atomic<int>[]> pending;
  std::unique_ptr<std::atomic<int>[]> readers;  // input edges still to read each slot
  std::vector<Tensor> slots;  // each written once by its producer before any reader is ready
  // Nodes ready or running but not finished. Reaching zero ends the run.
  std::atomic<int> outstanding{0};
  // Set on the first failure/cancellation; later nodes skip their kernels. Relaxed reads are
  // enough: a stale `false` only runs one more node of a run that is failing anyway.
  std::atomic<bool> cancelled{false};

  std::mutex mutex;  // guards done and the failure fields (written by any thread, read at the end)
  std::condition_variable cv;
  bool done = false;
  bool failed = false;
  ErrorCode code = ErrorCode::kUnknown;
  std::string message, node_name, op_type;
  std::exception_ptr cause;

  Clock::time_point start, next_poll, deadline;
  bool has_deadline = false;

  void fail(ErrorCode c, const std::string& msg, const NodeDef* node, std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failed) {
        failed = true;
        code = c;
        message = msg;
        if (node) {
          node_name = node->name;
          op_type = node->op;
        }
        cause = std::move(e);
      }
    }
    cancelled.store(true, std::memory_order_relaxed);
  }

  bool is_cheap(int n) const {
    const CompiledNode& node = g.node(n);
    if (node.hint == CostHint::kCheap) return true;
    if (node.hint == CostHint::kExpensive) return false;
    return node.cost_ns.load(std::memory_order_relaxed) < kInlineThresholdNs;
  }

  // Caller-thread mode has no waiting thread, so it polls and checks the deadline between nodes.
  void poll_between_nodes() {
    const Clock::time_point now = Clock::now();
    if (has_deadline && now >= deadline) timed_out();
    if (now >= next_poll) {
      next_poll = now + req.poll_interval;
      poll();
    }
  }

  // The periodic checks of a run: the executor was closed, or the caller's poll says cancel.
  void poll() {
    // Relaxed: close() only needs to be seen eventually; the flag guards no other data.
    if (closed.load(std::memory_order_relaxed)) {
      fail(ErrorCode::kCancelled, kClosedMessage, nullptr, nullptr);
    } else if (req.poll && !req.poll()) {
      fail(ErrorCode::kCancelled, "Run was cancelled", nullptr, nullptr);
    }
  }

  void timed_out() {
    fail(ErrorCode::kDeadlineExceeded,
         "Timed out: the run took longer than " + std::to_string(req.timeout_ms) + " ms", nullptr,
         nullptr);
  }

  // Drops a slot's tensor once every reader has its own handle, so intermediates are freed as
  // the run goes instead of at its end.
  void release_inputs(const CompiledNode& node) {
    for (int s : node.input_slots) {
      // acq_rel: every other reader's copy of the slot happens-before the last decrement, so
      // the thread that clears it cannot race with a reader still copying.
      if (readers[static_cast<std::size_t>(s)].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        slots[static_cast<std::size_t>(s)] = Tensor();
      }
    }
  }

  void execute(int n) {
    const CompiledNode& node = g.node(n);
    if (cancelled.load(std::memory_order_relaxed)) {
      release_inputs(node);
      return;
    }
    std::vector<Tensor> inputs;
    inputs.reserve(node.input_slots.size());
    for (int s : node.input_slots) inputs.push_back(slots[static_cast<std::size_t>(s)]);
    release_inputs(node);
    std::vector<Tensor> outputs(static_cast<std::size_t>(node.num_outputs));
    if (req.observer) req.observer->on_start(n, *node.def, now_nanos());
    // Only measured nodes pay for the clock reads of the cost estimate.
    const bool measure = node.hint == CostHint::kMeasure;
    const Clock::time_point t0 = measure ? Clock::now() : Clock::time_point();
    ++t_node_depth;
    try {
      // A traced node's parallel_for chunks report to the observer; an untraced one (also in a
      // run nested in a traced py_function) reports nowhere.
      NodeChunks chunks(req.observer, n);
      ScopedChunkObserver chunk_scope(req.observer != nullptr ? &chunks : nullptr);
      KernelContext ctx{*node.def, inputs, outputs, req.intra_pool};
      node.kernel(ctx);
    } catch (const OpError& e) {
      fail(e.code(), e.what(), node.def.get(), std::current_exception());
    } catch (const std::bad_alloc&) {
      fail(ErrorCode::kResourceExhausted, "out of memory", node.def.get(),
           std::current_exception());
    } catch (const std::exception& e) {
      fail(ErrorCode::kUnknown, e.what(), node.def.get(), std::current_exception());
    } catch (...) {
      fail(ErrorCode::kUnknown, "unknown exception", node.def.get(), std::current_exception());
    }
    --t_node_depth;
    if (measure) {
      const std::int64_t took =
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
      const std::int64_t old = node.cost_ns.load(std::memory_order_relaxed);
      node.cost_ns.store(old + (took - old) / 8, std::memory_order_relaxed);  // EWMA, weight 1/8
    }
    if (req.observer) req.observer->on_end(n, *node.def, now_nanos(), inputs, outputs);
    for (int i = 0; i < node.num_outputs; ++i) {
      slots[static_cast<std::size_t>(node.output_slot + i)] =
          std::move(outputs[static_cast<std::size_t>(i)]);
    }
  }

  void schedule(int n) {
    try {
      req.inter_pool->schedule([this, n] { process({n}); });
    } catch (const OpError&) {
      process({n});  // the pool shut down under us: finish the node here rather than lose it
    }
  }

  // Runs `stack` and whatever becomes ready from it: cheap successors inline, one expensive
  // successor as a continuation when nothing cheap is left, the rest pushed to the pool.
  void process(std::vector<int> stack) {
    std::vector<int> to_schedule;
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (inline_mode) poll_between_nodes();
      execute(n);
      const CompiledNode& node = g.node(n);
      int newly_ready = 0;
      int continuation = -1;
      for (int i = node.succ_begin; i < node.succ_end; ++i) {
        const int s = g.successors()[static_cast<std::size_t>(i)];
        // acq_rel: the release half publishes this node's output slots to whichever thread sees
        // the count reach zero; the acquire half (when that is us) makes every predecessor's
        // outputs visible before the successor reads them (the RMWs form one release sequence).
        if (pending[static_cast<std::size_t>(s)].fetch_sub(1, std::memory_order_acq_rel) != 1) {
          continue;
        }
        ++newly_ready;
        if (req.observer) req.observer->on_ready(s, *g.node(s).def, now_nanos());
        if (inline_mode || is_cheap(s)) {
          stack.push_back(s);
        } else if (continuation < 0) {
          continuation = s;
        } else {
          to_schedule.push_back(s);
        }
      }
      if (continuation >= 0) {
        if (stack.empty()) {
          stack.push_back(continuation);
        } else {
          to_schedule.push_back(continuation);
        }
      }
      // Relaxed: this add is sequenced before our own decrement below, and a single atomic's
      // modification order respects that, so the count cannot reach zero while they are pending.
      outstanding.fetch_add(newly_ready, std::memory_order_relaxed);
      for (int s : to_schedule) schedule(s);
      to_schedule.clear();
      finish_one();  // after this the run may be gone: touch nothing of `this` unless stack holds
                     // work (then outstanding > 0 still)
    }
  }

  void finish_one() {
    // acq_rel: the thread that brings the count to zero must see every other node's writes
    // (acquire) before it lets the caller read the slots; every decrement releases its own.
    if (outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
      // Notify under the lock: once we unlock, the caller may return and destroy the cv.
      cv.notify_all();
    }
  }

  void run_all() {
    const std::vector<int>& roots = g.roots();
    if (roots.empty()) return;
    outstanding.store(static_cast<int>(roots.size()), std::memory_order_relaxed);
    if (req.observer) {
      for (int r : roots) req.observer->on_ready(r, *g.node(r).def, now_nanos());
    }
    if (inline_mode) {
      process(std::vector<int>(roots.rbegin(), roots.rend()));
      return;
    }
    // The caller only waits (it does not run ops): cheap roots share one task, expensive ones
    // get a task each.
    std::vector<int> cheap;
    for (int r : roots) {
      if (is_cheap(r)) {
        cheap.push_back(r);
      } else {
        schedule(r);
      }
    }
    if (!cheap.empty()) {
      try {
        req.inter_pool->schedule([this, cheap] { process(cheap); });
      } catch (const OpError&) {
        process(cheap);
      }
    }
    wait();
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!done) {
      Clock::time_point wake = Clock::now() + req.poll_interval;
      if (has_deadline && !failed) wake = std::min(wake, deadline);
      cv.wait_until(lock, wake, [this] { return done; });
      if (done) break;
      lock.unlock();  // poll() may take the GIL; fail() takes the mutex
      poll();
      if (has_deadline && Clock::now() >= deadline) timed_out();
      lock.lock();
    }
  }
};

Executor::Executor(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)) {}

bool Executor::in_node() noexcept { return t_node_depth > 0; }

std::shared_ptr<const CompiledGraph> Executor::compiled(const std::vector<TensorId>& feeds,
                                                        const std::vector<TensorId>& fetches,
                                                        const std::vector<int>& targets) {
  std::string key = "f:";
  for (const TensorId& t : feeds) key += tensor_id_key(t);
  key += "|o:";
  for (const TensorId& t : fetches) key += tensor_id_key(t);
  key += "|t:";
  for (int t : targets) key += std::to_string(t) + ",";
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Compile outside the lock (it can be slow); a racing thread may compile the same signature,
  // and the first insert wins. Nodes added later never feed existing ones, so entries stay valid.
  auto compiled = CompiledGraph::compile(*graph_, feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.emplace(key, std::move(compiled)).first->second;
}

void Executor::close() noexcept {
  // Relaxed: see Run::poll(); nothing else is published with the flag.
  closed_.store(true, std::memory_order_relaxed);
}

std::size_t Executor::num_compiled() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.size();
}

std::vector<Tensor> Executor::run(const RunRequest& request) {
  // The signature uses feeds sorted by tensor id, so feed order does not multiply cache entries.
  std::vector<const std::pair<TensorId, Tensor>*> feeds;
  for (const auto& f : request.feeds) feeds.push_back(&f);
  std::sort(feeds.begin(), feeds.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<TensorId> feed_ids;
  for (const auto* f : feeds) feed_ids.push_back(f->first);
  std::shared_ptr<const CompiledGraph> g = compiled(feed_ids, request.fetches, request.targets);

  // Relaxed: a run racing with close() may start; its first poll cancels it.
  if (closed_.load(std::memory_order_relaxed)) {
    throw RunFailure(ErrorCode::kCancelled, kClosedMessage, "", "", nullptr);
  }
  const bool run_inline = request.inter_pool == nullptr || in_node();
  if (request.observer) name_threads(request, run_inline);
  Run run(*g, request, run_inline, closed_);
  for (std::size_t i = 0; i < feeds.size(); ++i) run.slots[i] = feeds[i]->second;
  run.run_all();

  if (run.failed) {
    throw RunFailure(run.code, run.message, run.node_name, run.op_type, run.cause);
  }
  std::vector<Tensor> out;
  out.reserve(g->fetch_slots().size());
  for (int s : g->fetch_slots()) out.push_back(run.slots[static_cast<std::size_t>(s)]);
  return out;
}

}  // namespace opweave
