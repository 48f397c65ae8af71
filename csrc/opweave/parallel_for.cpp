#include "opweave/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "opweave/cancellation.h"
#include "opweave/cpu_pressure.h"
#include "opweave/spin.h"
#include "opweave/task_recycler.h"
#include "opweave/trace.h"

namespace opweave {
namespace {

// How long a waiting caller sleeps before it looks for work to help with again. Only matters when
// every piece of its loop is already running elsewhere and those threads split further.
constexpr auto kHelpRecheck = std::chrono::microseconds(200);

// Reports [begin, end) as one chunk run by the calling thread when it goes out of scope (also
// when the body throws). Costs nothing without an observer.
class ChunkReport {
 public:
  ChunkReport(ChunkObserver* observer, std::int64_t begin) noexcept
      : observer_(observer), begin_(begin), started_(observer ? now_nanos() : 0) {}
  ~ChunkReport() {
    if (observer_ != nullptr) {
      observer_->on_chunk({begin_, end, started_, now_nanos(), current_thread_id()});
    }
  }
  ChunkReport(const ChunkReport&) = delete;
  ChunkReport& operator=(const ChunkReport&) = delete;

  std::int64_t end = 0;  // set by the runner once it knows where its piece ended

 private:
  ChunkObserver* observer_;
  std::int64_t begin_;
  std::int64_t started_;
};

// Lives on the caller's stack; every chunk task finishes with it before the caller returns.
struct Loop {
  Loop(ThreadPool* p, std::int64_t g, FunctionRef<void(std::int64_t, std::int64_t)> f,
       ChunkObserver* o, const std::atomic<bool>* c)
      : pool(p), grain(g), fn(f), observer(o), cancel(c) {}

  ThreadPool* pool;
  std::int64_t grain;
  FunctionRef<void(std::int64_t, std::int64_t)> fn;
  ChunkObserver* observer;  // the caller's (trace.h); chunk runners on other threads report to it
  const std::atomic<bool>* cancel;  // the caller's (cancellation.h): set = skip unstarted pieces
  std::atomic<std::int64_t> pending{1};  // the caller's share + chunk tasks not yet finished
  std::atomic<int> unclaimed{0};         // chunk tasks pushed but not yet started
  std::atomic<int> caller_waiting{0};    // 1 while the caller has nothing left but to wait
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;         // guarded by mutex: the last finisher is out of this struct
  std::exception_ptr error;  // guarded by mutex: the first exception fn threw

  void call(std::int64_t b, std::int64_t e) noexcept {
    // relaxed: skipping is an optimization; the error itself travels under the mutex.
    if (failed.load(std::memory_order_relaxed) || cancellation_requested(cancel)) return;
    try {
      fn(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);  // guards error
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);  // a hint for call(); see above
    }
  }

  void finish() {
    // acq_rel: each finisher releases its writes; the last one acquires them all (release
    // sequence) before publishing `done` under the mutex to the caller.
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex);  // the caller reads done under it
      done = true;
      cv.notify_all();  // inside the lock: the caller cannot destroy cv before we return
    }
  }

  void run_range(std::int64_t b, std::int64_t e) noexcept;
  bool split_off(std::int64_t b, std::int64_t e) noexcept;
};

class ChunkTask final : public Task {
 public:
  ChunkTask(Loop* loop, std::int64_t b, std::int64_t e) : loop_(loop), b_(b), e_(e) {}
  void run() override {
    // relaxed: only a splitting heuristic reads it.
    loop_->unclaimed.fetch_sub(1, std::memory_order_relaxed);
    loop_->run_range(b_, e_);
    loop_->finish();
  }
  bool must_run() const noexcept override { return true; }
  const void* group() const noexcept override { return loop_; }
  // Recycled blocks: a chunk is created on one thread and usually freed on another.
  static void* operator new(std::size_t size) { return allocate_task_block(size); }
  static void operator delete(void* p, std::size_t size) noexcept { free_task_block(p, size); }

 private:
  Loop* loop_;
  std::int64_t b_, e_;
};

// Pushes [b, e) as a chunk task. False when that failed (std::bad_alloc creating or queueing the
// task, a pool that refused it): nothing was queued and the caller keeps the range.
bool Loop::split_off(std::int64_t b, std::int64_t e) noexcept {
  // relaxed: this thread holds a pending count itself, so pending cannot reach zero here;
  // the task's publication through the pool orders everything else.
  pending.fetch_add(1, std::memory_order_relaxed);
  unclaimed.fetch_add(1, std::memory_order_relaxed);  // heuristic only
  try {
    pool->schedule_task(std::make_unique<ChunkTask>(this, b, e));
    return true;
  } catch (...) {
    // relaxed: undoes the increments above; nobody saw the task, and we still hold a count.
    pending.fetch_sub(1, std::memory_order_relaxed);
    unclaimed.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
}

void Loop::run_range(std::int64_t b, std::int64_t e) noexcept {
  // What this thread runs without a break is [b, final e): splits only cut off the tail.
  ChunkReport report(observer, b);
  bool may_split = true;  // false after a failed split: run the rest here
  // (e - b) / 2 >= grain, not e - b >= 2 * grain: twice a huge grain overflows.
  while ((e - b) / 2 >= grain) {
    // relaxed: both are hints; a stale value makes one split early or late, never wrong.
    // No split while every CPU already runs a kernel (cpu_pressure.h): the piece would only
    // share a CPU with another kernel's thread.
    const int hungry = pool->idle_workers() + caller_waiting.load(std::memory_order_relaxed);
    if (may_split && hungry > unclaimed.load(std::memory_order_relaxed) &&
        !failed.load(std::memory_order_relaxed) && !cpus_busy()) {
      // The grain boundary nearest the middle (stays on the lattice). Rounding the half down
      // instead gave lopsided splits when a range holds few grains: 22 GEMM row panels at grain
      // 6 split 6 | 16, and the 16 could not be split again (10 < 2 grains), so two threads ran
      // a 256 x 256 matmul no faster than one. Always b + grain <= mid <= e - grain here.
      const std::int64_t mid = b + ((e - b) / 2 + grain / 2) / grain * grain;
      if (!split_off(mid, e)) {
        may_split = false;
        continue;
      }
      // relaxed: if we miss the caller's flag it re-checks within kHelpRecheck anyway.
      if (caller_waiting.load(std::memory_order_relaxed) != 0) {
        std::lock_guard<std::mutex> lock(mutex);  // the caller tests its predicate under it
        cv.notify_all();
      }
      e = mid;
      continue;
    }
    call(b, b + grain);
    b += grain;
  }
  call(b, e);
  report.end = e;
}

// A loop run by the caller alone: one chunk.
void run_inline(std::int64_t begin, std::int64_t end,
                FunctionRef<void(std::int64_t, std::int64_t)> fn, ChunkObserver* observer) {
  ChunkReport report(observer, begin);
  report.end = end;
  fn(begin, end);
}

}  // namespace

void parallel_for(ThreadPool* pool, std::int64_t begin, std::int64_t end, std::int64_t grain,
                  FunctionRef<void(std::int64_t, std::int64_t)> fn, double cost_per_element) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end > 0 && begin < end - std::numeric_limits<std::int64_t>::max()) {
    // Wider than INT64_MAX (end - begin would overflow): consecutive pieces of at most INT64_MAX
    // indices, cut on the grain lattice (parallel_for.h). No overflow: begin < 0 here, and
    // piece <= INT64_MAX; the rest is narrower, so this recurses a few times at most.
    const std::int64_t piece = std::numeric_limits<std::int64_t>::max() / grain * grain;
    parallel_for(pool, begin, begin + piece, grain, fn, cost_per_element);
    parallel_for(pool, begin + piece, end, grain, fn, cost_per_element);
    return;
  }
  ChunkObserver* const observer = current_chunk_observer();
  const std::int64_t n = end - begin;
  grain = std::min(grain, n);  // a larger grain means the same (one chunk) and could overflow
  if (cost_per_element > 0) {
    if (static_cast<double>(n) * cost_per_element < kInlineCycles) {
      run_inline(begin, end, fn, observer);
      return;
    }
    // Coarsen to whole multiples of the caller's grain, keeping the boundary lattice.
    const double multiple =
        std::ceil(kMinChunkCycles / cost_per_element / static_cast<double>(grain));
    // At most n (one chunk, inline below): `multiple` may be too large for grain * multiple.
    if (multiple > 1) {
      grain = multiple < static_cast<double>(n / grain)
                  ? grain * static_cast<std::int64_t>(multiple)
                  : n;
    }
  }
  if (pool == nullptr || n / 2 < grain) {  // n < 2 * grain, which could overflow
    run_inline(begin, end, fn, observer);
    return;
  }
  // Keeps a concurrent resize from rebuilding the pool under this loop (thread_pool.h). Not
  // entered: the pool is being resized and this thread is nested in other pool work, so it runs
  // the loop itself rather than wait.
  ThreadPool::Use use(*pool);
  if (!use.entered() || pool->num_workers() == 0) {
    run_inline(begin, end, fn, observer);
    return;
  }

  Loop loop(pool, grain, fn, observer, current_cancellation());
  loop.run_range(begin, end);
  loop.finish();
  // Help until every chunk has finished: run queued tasks, ours first (a worker of the pool pops
  // its own deque first; an outside thread takes its pieces back from the injection queue). With
  // nothing to run, sleep until the loop is done or a chunk runner split off a piece for us
  // (caller_waiting makes them split). Like an idle worker, spin for the pool's spin time before
  // sleeping: a short loop's last chunk usually finishes within microseconds, far sooner than a
  // futex wake-up.
  loop.caller_waiting.store(1, std::memory_order_relaxed);  // a splitting hint only
  // Inside a ThreadPool::KeepAwake (a multi-phase kernel) it spins until the loop is done.
  const auto spin = std::chrono::microseconds(pool->options().spin_time_us);
  const auto spin_until = std::chrono::steady_clock::now() + spin;
  for (int round = 1;; ++round) {
    // acquire: pairs with the finishers' release; done is then set (or about to be) by the last.
    if (loop.pending.load(std::memory_order_acquire) == 0) break;
    // Our own unclaimed pieces first: helping with another op's piece (which may be long) while
    // ours wait in the queue would hold this op up. relaxed: a hint, the take synchronizes.
    if (loop.unclaimed.load(std::memory_order_relaxed) > 0 && pool->try_run_own(&loop)) continue;
    if (pool->try_run_one()) continue;
    if (std::chrono::steady_clock::now() < spin_until || (spin.count() > 0 && pool->kept_awake())) {
      if (round % 16 == 0) {
        std::this_thread::yield();  // the machine may be oversubscribed
      } else {
        cpu_relax();
      }
      continue;
    }
    std::unique_lock<std::mutex> lock(loop.mutex);  // guards done; splitters notify under it
    if (loop.cv.wait_for(lock, kHelpRecheck,
                         [&] {
                           // relaxed: a hint to go and steal; the steal itself synchronizes.
                           return loop.done || loop.unclaimed.load(std::memory_order_relaxed) > 0;
                         }) &&
        loop.done) {
      break;
    }
  }
  std::unique_lock<std::mutex> lock(loop.mutex);  // guards done and error
  loop.cv.wait(lock, [&] { return loop.done; });
  if (loop.error) std::rethrow_exception(loop.error);
}

}  // namespace opweave
