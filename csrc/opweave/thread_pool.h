// ThreadPool: the work-stealing pool that runs intra-op chunks and inter-op nodes.
//
//   ThreadPool pool(PoolOptions{3, "intra-op"});
//   pool.schedule([] { do_work(); });          // fire-and-forget
//   parallel_for(&pool, 0, n, 1024, body);     // see parallel_for.h
//
// Design (docs/architecture.md, "The pool"):
// - Each worker owns a bounded WorkStealingDeque (work_stealing_deque.h). A task scheduled by a
//   worker of this pool goes to the bottom of its own deque (LIFO for itself, stolen FIFO by
//   others); when the deque is full, its older half moves to an injection queue in one batch.
// - Threads outside the pool put tasks into one of a few mutex-protected injection queues
//   (picked by thread, so unrelated producers rarely share a lock).
// - An idle worker looks in its own deque, then the injection queues, then steals from a random
//   victim; it spins for options().spin_time_us (longer, up to kMaxAdaptiveSpinUs, while work
//   keeps coming back soon after it parks: next_spin_us in spin.h), then parks (EventCount
//   two-phase wait, event_count.h). A new task wakes one sleeper only when no worker is searching
//   already; the last searcher to find work wakes one more. A parked worker uses no CPU. While
//   nobody sleeps, publishing a task costs a fence and a load, no write to a shared line.
// - A worker woken on the CPU of the thread that woke it moves to another CPU (cpu_migration.h),
//   unless the pool pins its workers.
// - Tasks that throw: the exception is swallowed by the worker (schedule() is fire-and-forget;
//   parallel_for catches and forwards its own exceptions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "opweave/pinning.h"
#include "opweave/task_recycler.h"

namespace opweave {

struct PoolOptions {
  int num_workers = 1;             // worker threads owned by the pool (>= 0)
  std::string name = "pool";       // workers are named "<name> <index>" for debuggers and traces
  std::int64_t spin_time_us = 50;  // idle spin before a park (or longer: spin.h); 0 = never spin
  Affinity affinity = Affinity::kNone;    // worker pinning (pinning.h)
  PinGroup pin_group = PinGroup::kOther;  // only matters when affinity != kNone
};

struct PoolStats {
  std::uint64_t tasks_run = 0;  // tasks completed by workers and helping callers
  std::uint64_t steals = 0;     // tasks taken from another worker's deque
  std::uint64_t parks = 0;      // times a worker went to sleep
  std::uint64_t wakeups = 0;    // times a sleeping worker was woken
  std::uint64_t injected = 0;   // tasks submitted from threads outside the pool
  std::uint64_t moves = 0;      // woken workers that moved off their waker's CPU (cpu_migration.h)
};

// A unit of work the pool owns: run() once, then deleted by the pool. schedule() wraps a
// std::function in one; parallel_for uses its own subclass to avoid that allocation.
class Task {
 public:
  virtual ~Task() = default;
  virtual void run() = 0;
  // True when a thread waits for this task (a parallel_for chunk): shutdown(false) then runs it
  // instead of dropping it, and it is accepted even while the pool shuts down.
  virtual bool must_run() const noexcept { return false; }
  // The work this task is a piece of (a parallel_for loop), or nullptr: lets the thread that
  // split it off take it back first (ThreadPool::try_run_own).
  virtual const void* group() const noexcept { return nullptr; }
};

namespace detail {
// schedule(F)'s task: the callable lives in the task itself (a recycled block when it fits), so
// scheduling a lambda costs no std::function wrapper and no allocation of its own.
template <typename F>
class CallableTask final : public Task {
 public:
  template <typename G>
  explicit CallableTask(G&& fn) : fn_(std::forward<G>(fn)) {}
  void run() override { fn_(); }
  static void* operator new(std::size_t size) { return allocate_task_block(size); }
  static void operator delete(void* p, std::size_t size) noexcept { free_task_block(p, size); }

 private:
  F fn_;
};

// Callables schedule(F) takes directly: invocable as void(), not a std::function (that has its
// own overload), and not over-aligned (task blocks have the alignment of std::max_align_t).
template <typename F, typename D = std::decay_t<F>>
inline constexpr bool kDirectCallable =
    std::is_invocable_v<D&> && !std::is_same_v<D, std::function<void()>> &&
    alignof(D) <= alignof(std::max_align_t);
}  // namespace detail

class ThreadPool {
 public:
  // Starts options.num_workers threads and returns once each has registered its thread id.
  explicit ThreadPool(PoolOptions options);
  // Runs every queued task, then joins the workers. In a forked child, a pool the parent made is
  // leaked instead: its workers do not exist there (fork_generation(), fork_guard.h).
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Fire-and-forget. Thread-safe. Throws OpError(kCancelled) after shutdown() (from a thread
  // outside the pool; the pool's own workers may still schedule while it drains). On a pool with
  // zero workers the task runs only when some thread calls try_run_one() or shutdown(). While a
  // resize() runs, a call from outside waits for it, except on a thread already inside pool work
  // (see Use), which runs the task itself. std::bad_alloc creating or queueing the task
  // propagates; nothing was queued then.
  void schedule(std::function<void()> task);
  // Same, for a lambda or other callable, stored in the task without a std::function around it.
  // Same thread-safety, errors and guarantees.
  //
  //   pool.schedule([&counter] { counter.fetch_add(1); });
  template <typename F, typename = std::enable_if_t<detail::kDirectCallable<F>>>
  void schedule(F&& task) {
    schedule_task(std::make_unique<detail::CallableTask<std::decay_t<F>>>(std::forward<F>(task)));
  }
  // Same, for a Task the pool takes ownership of. Thread-safe.
  void schedule_task(std::unique_ptr<Task> task);
  // Runs one queued task on the calling thread if there is one (waiting threads help instead of
  // blocking). Thread-safe. Returns false when nothing was found.
  bool try_run_one();
  // Runs one task of `group` (Task::group()) that the calling thread, from outside the pool,
  // queued and nobody has taken yet; false when there is none (also on a worker of the pool,
  // whose own deque already hands back its newest pieces first). A parallel_for caller tries
  // this before try_run_one, so it finishes its own loop before it helps with another op's.
  bool try_run_own(const void* group);
  // Thread-safe; the number of worker threads (the caller of parallel_for adds one more).
  // 0 after shutdown().
  int num_workers() const noexcept;
  // Thread-safe, also while other threads use the pool: closes the use gate (see Use), waits
  // until the uses in flight have left, runs every queued task, rebuilds the workers and reopens
  // the gate; uses that arrive meanwhile wait for it (or run inline, see Use). Throws
  // OpError(kFailedPrecondition) when called from one of its own workers or from a thread that
  // holds a Use of this pool (both would wait for themselves). Reopens a shut-down pool.
  void resize(int num_workers);
  // Rebuilds the workers, exactly as resize() does (same gate, same waits, same
  // kFailedPrecondition from inside the pool's own work), so that they spin for `us`
  // microseconds before parking (options().spin_time_us; 0 = never spin). Same thread-safety.
  void set_spin_time_us(std::int64_t us);
  // Runs (run_pending) or drops every queued task, then joins. Idempotent. Returns how many
  // tasks were dropped (tasks a thread waits for, see Task::must_run, are run, not dropped).
  // Thread-safe; throws OpError(kFailedPrecondition) from one of its own workers.
  std::size_t shutdown(bool run_pending = true);
  // True on one of this pool's workers and on a thread that holds a Use of it (inside a
  // parallel_for or task of this pool further up its stack): there resize() and shutdown() would
  // wait for the calling thread itself. Thread-safe.
  bool in_own_work() const noexcept;
  // Index of the calling thread among this pool's workers, or -1. Thread-safe.
  int current_worker_index() const noexcept;
  // Kernel thread ids (gettid) of the workers, for traces. Thread-safe between resizes.
  std::vector<long> worker_thread_ids() const;
  // The CPU each worker is pinned to (pinning.h), in worker order; empty when the pool does not
  // pin. Thread-safe.
  std::vector<int> worker_cpus() const;
  // Sums of per-worker counters (relaxed reads: exact once the pool is quiet). Thread-safe.
  PoolStats stats() const;
  // Zeroes every counter. Thread-safe (increments racing with it may survive).
  void reset_stats();
  // The options the pool runs with (num_workers follows resize()). Thread-safe between resizes.
  const PoolOptions& options() const noexcept;
  // Workers searching for work or asleep right now: a hint for lazy splitting. Thread-safe.
  int idle_workers() const noexcept;
  // True while some KeepAwake of this pool is alive (a hint). Thread-safe.
  bool kept_awake() const noexcept;

  struct Impl;

  // While alive, idle workers of the pool keep spinning instead of parking, and a parallel_for
  // caller waiting for its chunks spins instead of sleeping (as they do during
  // options().spin_time_us after any task; with spin_time_us = 0 it changes nothing). For a
  // kernel that runs several parallel_for phases back to back: a thread that finished its share
  // of one phase early is still awake when the next one starts, instead of parking and being
  // woken (~20-50 us on a 2-vCPU VM, while the phase runs without it). Bounded by the kernel:
  // after the last KeepAwake ends, workers park after the usual spin. Null pool: no effect.
  // RAII, any thread, nests (a count). Not movable.
  //
  //   ThreadPool::KeepAwake awake(pool);
  //   for (...) { parallel_for(pool, ...); parallel_for(pool, ...); }
  class KeepAwake {
   public:
    explicit KeepAwake(ThreadPool* pool) noexcept;
    ~KeepAwake();
    KeepAwake(const KeepAwake&) = delete;
    KeepAwake& operator=(const KeepAwake&) = delete;

   private:
    Impl* impl_;
  };

  // A use of the pool from a thread outside it (RAII). While any Use is alive, resize() waits;
  // while a resize runs, a new Use waits for it to finish, except on a thread that is already
  // inside pool work (it holds a Use of any pool or is a worker of any pool): there waiting could
  // close a cycle of waits, so entered() is false and the caller must not touch the pool (run
  // the work inline instead). A pool's own workers and a thread that already holds a Use of this
  // pool enter at no cost. parallel_for, schedule() from outside and try_run_one() take one
  // themselves; hold one around a sequence of calls to pay once. Not movable; one thread.
  //
  //   ThreadPool::Use use(pool);
  //   if (use.entered()) { pool.schedule(a); pool.schedule(b); } else { a(); b(); }
  class Use {
   public:
    explicit Use(ThreadPool& pool);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    bool entered() const noexcept { return mode_ != kNotEntered; }

   private:
    friend class ThreadPool;
    friend struct ThreadPool::Impl;
    enum Mode { kNotEntered, kFree, kCounted };
    Impl* impl_;
    Use* prev_;  // the thread's previous Use (a stack on the thread's own frames)
    Mode mode_ = kNotEntered;
  };

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace opweave
