// ThreadPool: the work-stealing pool that runs intra-op chunks and inter-op nodes.
//
// PLACEHOLDER API CONTRACT (the foundation issue replaces the implementation, keeping the API).
//
//   ThreadPool pool(PoolOptions{.num_workers = 3, .name = "intra-op"});
//   pool.schedule([] { do_work(); });          // fire-and-forget
//   parallel_for(&pool, 0, n, 1024, body);     // see parallel_for.h
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace opweave {

enum class Affinity { kNone, kCompact, kScatter };

struct PoolOptions {
  int num_workers = 1;              // worker threads owned by the pool (>= 0)
  std::string name = "pool";        // workers are named "<name> <index>" for debuggers and traces
  std::int64_t spin_time_us = 50;   // how long an idle worker spins before it parks; 0 = never spin
  Affinity affinity = Affinity::kNone;
};

struct PoolStats {
  std::uint64_t tasks_run = 0;   // tasks completed by workers and helping callers
  std::uint64_t steals = 0;      // tasks taken from another worker's deque
  std::uint64_t parks = 0;       // times a worker went to sleep
  std::uint64_t wakeups = 0;     // times a sleeping worker was woken
  std::uint64_t injected = 0;    // tasks submitted from threads outside the pool
};

class ThreadPool {
 public:
  explicit ThreadPool(PoolOptions options);
  ~ThreadPool();  // runs every queued task, then joins the workers
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Fire-and-forget. Thread-safe. Throws OpError(kCancelled) after shutdown().
  void schedule(std::function<void()> task);
  // Runs one queued task on the calling thread if there is one (waiting threads help instead of
  // blocking). Thread-safe. Returns false when nothing was found.
  bool try_run_one();
  // Thread-safe; the number of worker threads (the caller of parallel_for adds one more).
  int num_workers() const noexcept;
  // Between uses: waits until every queued task has run, then rebuilds the workers.
  void resize(int num_workers);
  // Runs (run_pending) or drops every queued task, then joins. Idempotent. Returns how many
  // tasks were dropped.
  std::size_t shutdown(bool run_pending = true);
  // Index of the calling thread among this pool's workers, or -1.
  int current_worker_index() const noexcept;
  // Kernel thread ids (gettid) of the workers, for traces.
  std::vector<long> worker_thread_ids() const;
  PoolStats stats() const;
  void reset_stats();
  const PoolOptions& options() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace opweave
