#include "opweave/executor/executor.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <new>
#include <thread>

#include "opweave/cancellation.h"
#include "opweave/cpu_pressure.h"
#include "opweave/spin.h"
#include "opweave/stack_guard.h"
#include "opweave/state/variable.h"

namespace opweave {

namespace {

// How many runs' node processing the calling thread is inside (a py_function calling
// Session.run makes it > 1).
thread_local int t_node_depth = 0;

using Clock = std::chrono::steady_clock;

// Cheap nodes (by their moving-average cost) are timed on one run in kCostSampleEvery: the two
// clock reads (~20 ns each) would otherwise cost more than a tiny op itself. Nodes that still look
// expensive are timed on every run (the clock is nothing next to kInlineThresholdNs), which is how
// a new node's estimate converges; a cheap node whose inputs grew is caught within that many runs.
constexpr std::uint32_t kCostSampleEvery = 16;  // a power of two
// Caller-thread mode checks the clock (deadline, poll) before every node that follows an
// expensive one, and at least once every this many cheap nodes.
constexpr int kCheapNodesPerClockCheck = 16;
// A caller whose run is expected to take at most this long (moving average) spins this long on
// the done flag before it sleeps: blocking on the condition variable costs a futex sleep and a
// wake-up, ~10 us or more, which would be most of a small graph's run. Longer runs never spin.
constexpr std::int64_t kCallerSpinNs = 50'000;

constexpr const char* kClosedMessage = "Run was cancelled: the session was closed";

// Marks the calling thread as executing nodes (Executor::in_node) while it processes a run's nodes.
// Between two kernels it only does bookkeeping, which never starts a run.
struct InNodeScope {
  InNodeScope() noexcept { ++t_node_depth; }
  ~InNodeScope() { --t_node_depth; }
  InNodeScope(const InNodeScope&) = delete;
  InNodeScope& operator=(const InNodeScope&) = delete;
};

// The nodes one thread has made ready and will run itself, last in first out. Lives on the
// thread's stack and allocates only beyond kInline entries (never for chains and narrow graphs).
class NodeStack {
 public:
  bool empty() const noexcept { return size_ == 0; }
  int size() const noexcept { return size_; }
  void push(int n) {
    if (size_ < kInline) {
      inline_[size_] = n;
    } else {
      overflow_.push_back(n);
    }
    ++size_;
  }
  int pop() noexcept {
    --size_;
    if (size_ < kInline) return inline_[size_];
    const int n = overflow_.back();
    overflow_.pop_back();
    return n;
  }
  // Removes the `count` oldest entries and returns them, oldest first.
  std::vector<int> take_oldest(int count) {
    std::vector<int> all;
    all.reserve(static_cast<std::size_t>(size_));
    all.insert(all.end(), inline_, inline_ + std::min(size_, kInline));
    all.insert(all.end(), overflow_.begin(), overflow_.end());
    std::vector<int> oldest(all.begin(), all.begin() + count);
    size_ = 0;
    overflow_.clear();
    for (std::size_t i = static_cast<std::size_t>(count); i < all.size(); ++i) push(all[i]);
    return oldest;
  }

 private:
  static constexpr int kInline = 16;
  int inline_[kInline];
  int size_ = 0;
  std::vector<int> overflow_;  // entries kInline and up
};

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

// The request as a run keeps it: everything but the feeds (already in the slots) and the fetch
// and target lists (already compiled), so a run abandoned at its deadline owns what it reads.
RunRequest run_copy(const RunRequest& r) {
  RunRequest c;
  c.inter_pool = r.inter_pool;
  c.intra_pool = r.intra_pool;
  c.timeout_ms = r.timeout_ms;
  c.observer = r.observer;
  c.poll = r.poll;
  c.poll_interval = r.poll_interval;
  c.keep_alive = r.keep_alive;
  return c;
}

// How long past its deadline the caller waits for a cancelled run's running kernels before it
// abandons the run and returns: well within the 100 ms a deadline promises, long enough that a
// run whose kernels do stop between pieces finishes normally.
constexpr std::chrono::milliseconds kAbandonGrace{40};

}  // namespace

// The state of one run, on the heap. Normally the caller returns only after `outstanding`
// reached zero, so every task that captured `this` has finished touching it, and then deletes it.
// A run past its deadline whose kernels do not return (a sleeping py_function) is abandoned
// instead: the caller marks it under `mutex` and returns, and the thread that brings
// `outstanding` to zero deletes it (the executor counts it until then and outlives it).
struct Executor::Run {
  Run(std::shared_ptr<const CompiledGraph> graph, const RunRequest& request, bool run_inline,
      Executor* executor)
      : g_owner(std::move(graph)),
        g(*g_owner),
        req(run_copy(request)),
        inline_mode(run_inline),
        owner(executor),
        closed(executor->closed_),
        state(executor->state_),
        run_sequence(g.next_run_sequence()),
        pending(new std::atomic<int>[static_cast<std::size_t>(g.num_nodes())]),
        readers(new std::atomic<int>[static_cast<std::size_t>(g.num_slots())]),
        slots(static_cast<std::size_t>(g.num_slots())) {
    const std::vector<int>& slot_readers = g.slot_readers();
    for (std::size_t s = 0; s < slot_readers.size(); ++s) {
      // Relaxed: published to workers by the pool's queue synchronisation, like `pending`.
      readers[s].store(slot_readers[s], std::memory_order_relaxed);
    }
    const std::vector<int>& initial = g.pending_template();
    for (std::size_t i = 0; i < initial.size(); ++i) {
      // Relaxed: the counters are published to workers by the pool's queue synchronisation.
      pending[i].store(initial[i], std::memory_order_relaxed);
    }
    start = Clock::now();
    next_poll = start + req.poll_interval;
    has_deadline = req.timeout_ms > 0;
    deadline = start + std::chrono::milliseconds(req.timeout_ms);
  }

  const std::shared_ptr<const CompiledGraph> g_owner;  // keeps `g` alive for an abandoned run
  const CompiledGraph& g;
  const RunRequest req;
  const bool inline_mode;
  Executor* const owner;
  const std::atomic<bool>& closed;            // the executor's close() flag
  const std::shared_ptr<SessionState> state;  // the session's state for stateful kernels
  const std::uint32_t run_sequence;           // picks which cheap nodes this run times
  std::unique_ptr<std::atomic<int>[]> pending;
  // Readers still to finish with each slot. Only slots with more than one reader use it.
  std::unique_ptr<std::atomic<int>[]> readers;
  std::vector<Tensor> slots;  // each written once by its producer before any reader is ready
  // Nodes ready or running but not finished. Reaching zero ends the run.
  std::atomic<int> outstanding{0};
  // Tasks of ready nodes handed to idle workers (share_ready) that no worker has started yet.
  // Relaxed everywhere: a hint for when to share, like parallel_for's.
  std::atomic<int> unclaimed{0};
  // Set on the first failure/cancellation; later nodes skip their kernels. Relaxed reads are
  // enough: a stale `false` only runs one more node of a run that is failing anyway.
  std::atomic<bool> cancelled{false};

  std::mutex mutex;  // guards done, abandoned and the failure fields
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // the caller returned at the deadline; the last finisher deletes
  // Mirrors `done` for a spinning caller. Only a hint: the caller still takes the mutex and reads
  // `done` before it returns, so relaxed accesses suffice.
  std::atomic<bool> done_hint{false};
  bool failed = false;
  ErrorCode code = ErrorCode::kUnknown;
  std::string message, node_name, op_type;
  std::exception_ptr cause;

  Clock::time_point start, next_poll, deadline;
  bool has_deadline = false;
  // Caller-thread mode only (one thread): nodes run since the clock was last checked.
  int nodes_since_clock = kCheapNodesPerClockCheck;

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

  // Drops a slot's tensor once every reader is done with it, so intermediates are freed as the
  // run goes instead of at its end. Called after the node's kernel returned (or was skipped).
  void release_inputs(const CompiledNode& node) {
    const std::vector<int>& slot_readers = g.slot_readers();
    for (int s : node.input_slots) {
      const auto i = static_cast<std::size_t>(s);
      // A slot with a single reader is this node's alone: no count to take. acq_rel otherwise:
      // every other reader's kernel (which read the slot in place) happens-before the last
      // decrement, so the thread that clears it cannot race with a reader still reading.
      if (slot_readers[i] == 1 || readers[i].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        slots[i] = Tensor();
      }
    }
  }

  void execute(int n) {
    const CompiledNode& node = g.node(n);
    if (cancelled.load(std::memory_order_relaxed)) {
      release_inputs(node);
      return;
    }
    // Inputs are read in place (a slot is cleared only once its last reader's kernel returned);
    // outputs go straight to their slots, which no reader looks at before this node finishes.
    KernelContext ctx{
        *node.def,
        InputList(slots.data(), node.input_slots.data(), node.input_slots.size()),
        OutputList(slots.data() + node.output_slot, static_cast<std::size_t>(node.num_outputs)),
        req.intra_pool,
        node.sole_reader_inputs,
        state.get(),
        &cancelled};
    // Before the kernel: it may forward an input's buffer into an output (moving it).
    if (req.observer) req.observer->on_start(n, *node.def, now_nanos(), ctx.inputs);
    // A traced node's parallel_for chunks report to the observer; an untraced one (also in a run
    // nested in a traced py_function) reports nowhere.
    NodeChunks chunks(req.observer, n);
    const ScopedChunkObserver chunk_scope(req.observer != nullptr ? &chunks : nullptr);
    // The kernel's parallel loops stop between pieces once the run is cancelled.
    const ScopedCancellation cancel_scope(&cancelled);
    // Only measured nodes pay for the clock reads of the cost estimate, cheap ones on a sample of
    // runs (kCostSampleEvery). Expensive nodes are timed on every run: the clock is nothing next
    // to them, and the estimate tells whether a run of them may move to the caller's thread.
    const bool measure =
        node.hint == CostHint::kExpensive ||
        (node.hint == CostHint::kMeasure &&
         (node.cost_ns.load(std::memory_order_relaxed) >= kInlineThresholdNs ||
          ((static_cast<std::uint32_t>(n) + run_sequence) & (kCostSampleEvery - 1)) == 0));
    const Clock::time_point t0 = measure ? Clock::now() : Clock::time_point();
    try {
      const RunningKernel running;  // cpu_pressure.h: parallel_for splits only onto free CPUs
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
    if (measure) {
      const std::int64_t took =
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
      const std::int64_t old = node.cost_ns.load(std::memory_order_relaxed);
      node.cost_ns.store(old + (took - old) / 8, std::memory_order_relaxed);  // EWMA, weight 1/8
    }
    if (req.observer) req.observer->on_end(n, *node.def, now_nanos(), ctx.outputs);
    release_inputs(node);
  }

  void schedule(int n) {
    try {
      req.inter_pool->schedule([this, n] {
        NodeStack stack;
        stack.push(n);
        process(stack);
      });
    } catch (const OpError&) {
      NodeStack stack;  // the pool shut down under us: finish the node here rather than lose it
      stack.push(n);
      process(stack);
    }
  }

  // Lazy splitting, as parallel_for does it: while inter-op workers are idle (and not already
  // offered work by this run), a thread holding several ready nodes hands the older half of them
  // to the pool as one task. A chain never holds two, so it never pays for the check. Returns how
  // many nodes were added to `outstanding` and then stayed here (the task could not be queued).
  int share_ready(NodeStack& stack) {
    if (inline_mode) return 0;
    // Relaxed: both are hints; a stale value only shares a little early or late.
    if (req.inter_pool->idle_workers() <= unclaimed.load(std::memory_order_relaxed)) return 0;
    std::vector<int> oldest = stack.take_oldest(stack.size() / 2);
    const int count = static_cast<int>(oldest.size());
    // Counted before another thread can finish them; relaxed as in process().
    outstanding.fetch_add(count, std::memory_order_relaxed);
    unclaimed.fetch_add(1, std::memory_order_relaxed);  // a hint, see unclaimed
    try {
      req.inter_pool->schedule([this, oldest] {
        unclaimed.fetch_sub(1, std::memory_order_relaxed);  // a hint, see unclaimed
        NodeStack shared;
        for (int n : oldest) shared.push(n);
        process(shared);
      });
      return 0;
    } catch (...) {
      // Not queued (the pool shut down, or no memory for the task): run them here after all.
      unclaimed.fetch_sub(1, std::memory_order_relaxed);  // a hint, see unclaimed
      for (int n : oldest) stack.push(n);
      return count;
    }
  }

  // Runs `stack` and whatever becomes ready from it: cheap successors inline, the expensive
  // successor with the longest path ahead (CompiledNode::height) as a continuation when nothing
  // cheap is left, the rest pushed to the pool.
  //
  // `outstanding` counts lazily: it holds the nodes each thread was handed (its `published`
  // count) plus the nodes handed to the pool, not the exact number still to run. A thread keeps
  // the nodes it makes ready and runs itself to itself, and gives its count back only once its
  // stack is empty. While it holds work, its published count (>= 1) keeps the total above zero,
  // so the total reaches zero only when every thread is done and nothing is queued.
  void process(NodeStack& stack) {
    const InNodeScope in_node;
    int published = stack.size();
    const std::vector<int>& successors = g.successors();
    const std::vector<int>& initial_pending = g.pending_template();
    std::vector<int> to_schedule;
    while (!stack.empty()) {
      const int n = stack.pop();
      if (inline_mode && nodes_since_clock >= kCheapNodesPerClockCheck) {
        nodes_since_clock = 0;
        poll_between_nodes();
      }
      execute(n);
      if (inline_mode)
        nodes_since_clock = is_cheap(n) ? nodes_since_clock + 1 : kCheapNodesPerClockCheck;
      const CompiledNode& node = g.node(n);
      int continuation = -1;
      for (int i = node.succ_begin; i < node.succ_end; ++i) {
        const int s = successors[static_cast<std::size_t>(i)];
        // A successor whose only predecessor is this node is ready now, without touching its
        // counter. Otherwise acq_rel: the release half publishes this node's output slots to
        // whichever thread sees the count reach zero; the acquire half (when that is us) makes
        // every predecessor's outputs visible before the successor reads them (the RMWs form one
        // release sequence).
        if (initial_pending[static_cast<std::size_t>(s)] != 1 &&
            pending[static_cast<std::size_t>(s)].fetch_sub(1, std::memory_order_acq_rel) != 1) {
          continue;
        }
        if (req.observer) req.observer->on_ready(s, *g.node(s).def, now_nanos());
        if (inline_mode || is_cheap(s)) {
          stack.push(s);
        } else if (continuation < 0) {
          continuation = s;
        } else if (g.node(s).height > g.node(continuation).height) {
          // This thread goes on along the longer path (a critical path, e.g. a layer's input
          // gradient beside its filter gradient): a pushed node may wait for a busy worker.
          to_schedule.push_back(continuation);
          continuation = s;
        } else {
          to_schedule.push_back(s);
        }
      }
      if (continuation >= 0) {
        if (stack.empty()) {
          stack.push(continuation);
        } else {
          to_schedule.push_back(continuation);
        }
      }
      if (!to_schedule.empty()) {
        // Relaxed add: it is sequenced before the pushes below (the only way other threads get
        // to decrement for these nodes), and a single atomic's modification order respects
        // that, so the count cannot reach zero while they are pending.
        outstanding.fetch_add(static_cast<int>(to_schedule.size()), std::memory_order_relaxed);
        for (int s : to_schedule) schedule(s);
        to_schedule.clear();
      }
      if (stack.size() >= 2) published += share_ready(stack);
    }
    finish(published);  // the run may be gone after this: touch nothing of `this`
  }

  // Gives back a thread's published count once it has no node of this run left.
  void finish(int published) {
    // acq_rel: the thread that brings the count to zero must see every other node's writes
    // (acquire) before it lets the caller read the slots; every decrement releases the writes of
    // the thread making it (the RMWs form one release sequence).
    if (outstanding.fetch_sub(published, std::memory_order_acq_rel) == published) {
      bool orphan = false;
      {
        std::lock_guard<std::mutex> lock(mutex);
        done = true;
        done_hint.store(true, std::memory_order_relaxed);  // relaxed: a hint, see done_hint
        // Notify under the lock: once we unlock, the caller may return and destroy the cv.
        cv.notify_all();
        orphan = abandoned;  // read under the lock the caller set it under: one owner deletes
      }
      if (orphan) {
        Executor* const executor = owner;
        delete this;
        executor->abandoned_run_finished();
      }
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
      NodeStack stack;
      for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.push(*it);
      process(stack);
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
      auto run_cheap = [this, cheap] {
        NodeStack stack;
        for (int r : cheap) stack.push(r);
        process(stack);
      };
      try {
        req.inter_pool->schedule(run_cheap);
      } catch (const OpError&) {
        run_cheap();
      }
    }
  }

  // Spins on done_hint while the run is expected to be short (kCallerSpinNs). Each round yields
  // the CPU: when there are more runnable threads than cores, the worker running this run's nodes
  // may be waiting for exactly this one.
  void spin_if_short() {
    if (g.expected_run_ns() > kCallerSpinNs) return;
    const Clock::time_point until = start + std::chrono::nanoseconds(kCallerSpinNs);
    while (!done_hint.load(std::memory_order_relaxed)) {  // relaxed: a hint, see done_hint
      for (int i = 0; i < 16; ++i) cpu_relax();
      if (done_hint.load(std::memory_order_relaxed)) return;  // relaxed: as above
      std::this_thread::yield();
      if (Clock::now() >= until) return;
    }
  }

  // True when the run finished (the caller owns it); false when the caller abandoned it at its
  // deadline (the last finisher owns it).
  bool wait() {
    spin_if_short();
    if (!wait_until_done()) return false;
    g.record_run_ns(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    return true;
  }

  bool wait_until_done() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!done) {
      Clock::time_point wake = Clock::now() + req.poll_interval;
      if (has_deadline) wake = std::min(wake, failed ? deadline + kAbandonGrace : deadline);
      cv.wait_until(lock, wake, [this] { return done; });
      if (done) break;
      if (has_deadline && Clock::now() >= deadline + kAbandonGrace) {
        // Past the deadline, and a kernel still runs that does not stop between pieces:
        // return now and let the run finish in the background, its outputs dropped.
        abandoned = true;
        owner->abandon_run();
        return false;
      }
      lock.unlock();  // poll() may take the GIL; fail() takes the mutex
      poll();
      if (has_deadline && Clock::now() >= deadline) timed_out();
      lock.lock();
    }
    return true;
  }
};

Executor::Executor(std::shared_ptr<const Graph> graph, OptimizerOptions optimizer)
    : graph_(std::move(graph)),
      optimizer_(std::move(optimizer)),
      state_(std::make_shared<SessionState>()) {}

bool Executor::in_node() noexcept { return t_node_depth > 0; }

std::shared_ptr<const CompiledGraph> Executor::compiled(const std::vector<TensorId>& feeds,
                                                        const std::vector<TensorId>& fetches,
                                                        const std::vector<int>& targets,
                                                        ThreadPool* intra_pool) {
  // The signature as numbers: counts first, so no two signatures share a key.
  std::vector<int> key;
  key.reserve(2 + 2 * (feeds.size() + fetches.size()) + targets.size());
  key.push_back(static_cast<int>(feeds.size()));
  for (const TensorId& t : feeds) key.insert(key.end(), {t.node, t.index});
  key.push_back(static_cast<int>(fetches.size()));
  for (const TensorId& t : fetches) key.insert(key.end(), {t.node, t.index});
  key.insert(key.end(), targets.begin(), targets.end());
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Compile outside the lock (it can be slow); a racing thread may compile the same signature,
  // and the first insert wins. Nodes added later never feed existing ones, so entries stay valid.
  std::shared_ptr<const CompiledGraph> compiled;
  if (optimizer_.enabled()) {
    OptimizedSignature s =
        optimize_signature(*graph_, feeds, fetches, targets, optimizer_, intra_pool);
    compiled = CompiledGraph::compile(std::move(s.graph), s.feeds, s.fetches, s.targets,
                                      std::move(s.report));
  } else {
    auto report = std::make_shared<OptimizerReport>();
    report->skipped = "no optimizer pass is switched on";
    compiled = CompiledGraph::compile(graph_, feeds, fetches, targets, report);
    // Still ours alone (the compiled graph only points to it): filled in before anyone reads it.
    report->nodes_before = report->nodes_after = compiled->num_nodes();
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  last_report_ = compiled->optimizer_report();
  return cache_.emplace(std::move(key), std::move(compiled)).first->second;
}

Executor::~Executor() { wait_for_abandoned_runs(); }

void Executor::close() noexcept {
  // Relaxed: see Run::poll(); nothing else is published with the flag.
  closed_.store(true, std::memory_order_relaxed);
  wait_for_abandoned_runs();
}

void Executor::abandon_run() {
  std::lock_guard<std::mutex> lock(abandoned_mutex_);
  ++abandoned_;
}

void Executor::abandoned_run_finished() {
  std::lock_guard<std::mutex> lock(abandoned_mutex_);
  // Notify under the lock: the waiter may destroy the executor as soon as it sees zero.
  if (--abandoned_ == 0) abandoned_cv_.notify_all();
}

void Executor::wait_for_abandoned_runs() noexcept {
  std::unique_lock<std::mutex> lock(abandoned_mutex_);
  abandoned_cv_.wait(lock, [this] { return abandoned_ == 0; });
}

int Executor::num_abandoned_runs() const {
  std::lock_guard<std::mutex> lock(abandoned_mutex_);
  return abandoned_;
}

std::shared_ptr<const OptimizerReport> Executor::last_optimizer_report() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return last_report_;
}

std::size_t Executor::num_compiled() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.size();
}

namespace {

// A run started from inside a kernel (a py_function calling Session.run) runs on this thread's
// stack, one level deeper. Past what the stack holds the process would crash, whatever Python's
// recursion limit says, so the next level is refused while there is still room to unwind.
void refuse_nesting_past_the_stack() {
  const std::size_t left = stack_bytes_left();
  if (left > kNestedRunStackReserve) return;
  throw RunFailure(ErrorCode::kResourceExhausted,
                   "Session.run nested " + std::to_string(t_node_depth) +
                       " deep (py_functions running their graph) would overflow this thread's "
                       "stack: " +
                       std::to_string(left / 1024) + " KiB of " +
                       std::to_string(stack_bytes_total() / 1024) + " KiB left",
                   "", "", nullptr);
}

}  // namespace

std::vector<Tensor> Executor::run(const RunRequest& request) {
  // The signature uses feeds sorted by tensor id, so feed order does not multiply cache entries.
  std::vector<const std::pair<TensorId, Tensor>*> feeds;
  for (const auto& f : request.feeds) feeds.push_back(&f);
  std::sort(feeds.begin(), feeds.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<TensorId> feed_ids;
  for (const auto* f : feeds) feed_ids.push_back(f->first);
  std::shared_ptr<const CompiledGraph> g =
      compiled(feed_ids, request.fetches, request.targets, request.intra_pool);
  if (request.compiled_out != nullptr) *request.compiled_out = g;
  std::vector<Tensor> fed;
  fed.reserve(feeds.size());
  for (const auto* f : feeds) fed.push_back(f->second);
  return run_compiled(g, std::move(fed), request);
}

namespace {

// A run the inter-op pool cannot speed up costs less in the caller's thread, which saves the
// hand-over to a worker and back: a wake-up each way when the worker sleeps (~10 us or more on a
// busy machine), a caller that spins or sleeps meanwhile, and a worker that spins after the run.
// The pool cannot speed up a run when
// - the run is small and cheap: its nodes' measured costs sum under kInlineThresholdNs;
// - the pool has one worker: it would run the nodes one at a time, as the caller does;
// - the work off the run's critical path (the costliest chain of nodes) is under
//   kInlineThresholdNs: running it beside that chain saves less than the hand-over costs (a chain
//   of layers, a graph whose side branches are tiny).
// Costs are the nodes' moving averages, measured on past runs: the first run of a signature
// with nodes that are not cheap by nature goes to the pool (expected_run_ns() is recorded by runs
// on the pool), which measures every node. A run in the caller's thread checks its
// deadline and Ctrl-C only between nodes, so it must not hold a long kernel: every node must have
// measured under kCallerRunMaxNodeNs, none may block (KernelDef::may_block: a py_function), and
// no feed may be far larger than the ones the costs were measured with. As for a single cheap
// node, a misjudged run only loses some parallelism.
constexpr int kCallerRunMaxNodes = 64;  // a per-run scan of the estimates, O(nodes + edges)
constexpr std::int64_t kCallerRunMaxNodeNs = 2'000'000;
constexpr std::int64_t kCallerRunMaxFeedElements = std::int64_t{1} << 16;

bool runs_best_on_the_caller(const CompiledGraph& g, const std::vector<Tensor>& feeds,
                             int inter_workers) {
  const int n = g.num_nodes();
  if (n > kCallerRunMaxNodes) return false;
  const bool measured = g.expected_run_ns() > 0;  // a run on the pool measured every node
  for (const Tensor& t : feeds) {
    if (t.numel() > kCallerRunMaxFeedElements) return false;
  }
  // finish[i]: the earliest node i could finish if every node started once its predecessors
  // finished (nodes are in topological order: successors have larger indices).
  std::int64_t finish[kCallerRunMaxNodes];
  std::fill(finish, finish + n, std::int64_t{0});
  const bool serial = inter_workers <= 1;
  const std::vector<int>& successors = g.successors();
  std::int64_t total = 0, critical = 0;
  for (int i = 0; i < n; ++i) {
    const CompiledNode& node = g.node(i);
    if (node.may_block || (node.hint != CostHint::kCheap && !measured)) return false;
    // Relaxed: a heuristic over racy estimates (see CompiledNode::cost_ns).
    const std::int64_t cost =
        node.hint == CostHint::kCheap ? 0 : node.cost_ns.load(std::memory_order_relaxed);
    if (cost > kCallerRunMaxNodeNs) return false;
    total += cost;
    if (serial) continue;
    // finish[i] held the latest finish among i's predecessors; now its own.
    finish[i] += cost;
    critical = std::max(critical, finish[i]);
    for (int k = node.succ_begin; k < node.succ_end; ++k) {
      std::int64_t& f = finish[successors[static_cast<std::size_t>(k)]];
      f = std::max(f, finish[i]);
    }
  }
  return total < kInlineThresholdNs || serial || total - critical < kInlineThresholdNs;
}

}  // namespace

std::vector<Tensor> Executor::run_compiled(const std::shared_ptr<const CompiledGraph>& g,
                                           std::vector<Tensor> feeds, const RunRequest& request) {
  // Relaxed: a run racing with close() may start; its first poll cancels it.
  if (closed_.load(std::memory_order_relaxed)) {
    throw RunFailure(ErrorCode::kCancelled, kClosedMessage, "", "", nullptr);
  }
  const bool nested = in_node();
  const bool run_inline = request.inter_pool == nullptr || nested ||
                          runs_best_on_the_caller(*g, feeds, request.inter_pool->num_workers());
  if (nested) refuse_nesting_past_the_stack();
  if (request.observer) name_threads(request, run_inline);
  auto run = std::make_unique<Run>(g, request, run_inline, this);
  for (std::size_t i = 0; i < feeds.size(); ++i) run->slots[i] = std::move(feeds[i]);
  run->run_all();
  if (!run_inline && !g->roots().empty() && !run->wait()) {
    // Abandoned at its deadline: the run deletes itself when its last kernel returns.
    const std::string message = "Timed out: the run took longer than " +
                                std::to_string(request.timeout_ms) +
                                " ms (a running op did not stop; it finishes in the background "
                                "and its outputs are dropped)";
    run.release();
    throw RunFailure(ErrorCode::kDeadlineExceeded, message, "", "", nullptr);
  }
  if (run->failed) {
    throw RunFailure(run->code, run->message, run->node_name, run->op_type, run->cause);
  }
  std::vector<Tensor> out;
  out.reserve(g->fetch_slots().size());
  for (int s : g->fetch_slots()) {
    const Tensor& value = run->slots[static_cast<std::size_t>(s)];
    // A fetched ref (a VariableV2's output, an Assign's) gives the variable's value, as in
    // TensorFlow 1; read now, after every node of the run finished.
    if (const Variable* var = ref_variable(value)) {
      try {
        out.push_back(var->read(request.intra_pool));
      } catch (const OpError& e) {
        throw RunFailure(e.code(), e.what(), var->name(), "VariableV2", std::current_exception());
      }
    } else {
      out.push_back(value);
    }
  }
  return out;
}

}  // namespace opweave
