#include "opweave/thread_pool.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "opweave/cpu_migration.h"
#include "opweave/cpu_pressure.h"
#include "opweave/errors.h"
#include "opweave/event_count.h"
#include "opweave/fork_guard.h"
#include "opweave/pinning.h"
#include "opweave/spin.h"
#include "opweave/task_recycler.h"
#include "opweave/work_stealing_deque.h"

namespace opweave {
namespace {

constexpr std::size_t kDequeCapacity = 1024;
constexpr int kMaxInjectionQueues = 4;

class FunctionTask final : public Task {
 public:
  explicit FunctionTask(std::function<void()> fn) : fn_(std::move(fn)) {}
  void run() override { fn_(); }
  // Recycled blocks: one schedule() used to cost a malloc here and a free on another thread.
  static void* operator new(std::size_t size) { return allocate_task_block(size); }
  static void operator delete(void* p, std::size_t size) noexcept { free_task_block(p, size); }

 private:
  std::function<void()> fn_;
};

// Statistics. A worker's own counters have one writer (the worker), which counts with a load and
// a store instead of a locked RMW (one per task otherwise); counters several threads write
// (helping callers, retired workers) use fetch_add. Never reset: reset_stats() records a baseline
// that stats() subtracts, so no store can race with a single writer's read-modify-write.
struct alignas(64) Counters {
  explicit Counters(bool shared_writers = false) : shared(shared_writers) {}
  // relaxed everywhere: statistics only, nothing is ordered by them.
  std::atomic<std::uint64_t> tasks_run{0}, steals{0}, parks{0}, wakeups{0}, injected{0}, moves{0};
  const bool shared;  // several threads write these counters
  void add(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
    if (shared) {
      c.fetch_add(n, std::memory_order_relaxed);  // statistics only
    } else {
      c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);  // one writer
    }
  }
};

struct InjectionQueue {
  alignas(64) std::mutex mutex;
  std::deque<Task*> tasks;  // guarded by mutex
  // tasks.size(), readable without the lock (searchers skip empty queues) and changed only under
  // it (a load and a store). Searchers load it seq_cst: see event_count.h and pop_injected.
  std::atomic<std::int64_t> size{0};
  // Tasks injected from outside the pool into this queue (a statistic, changed under the lock).
  std::atomic<std::uint64_t> injected{0};
  void add_size(std::int64_t n) noexcept {
    // relaxed: written only under the mutex; the seq_cst load of a searcher and the notify()
    // fence that follows every insertion order it (event_count.h).
    size.store(size.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

// Which injection queue an outside thread uses: a number per thread, handed out in turn.
std::atomic<std::size_t> g_next_producer{0};
std::size_t producer_slot() noexcept {
  // relaxed: only spreads threads over the queues.
  thread_local const std::size_t slot = g_next_producer.fetch_add(1, std::memory_order_relaxed);
  return slot;
}

struct WorkerContext {
  const ThreadPool::Impl* pool = nullptr;
  int index = -1;
};
thread_local WorkerContext t_worker;
// The Uses this thread holds, innermost first (linked through Use::prev_, on its own stack).
thread_local ThreadPool::Use* t_use_top = nullptr;

void run_and_delete(Task* task) noexcept {
  try {
    task->run();
  } catch (...) {
    // Fire-and-forget tasks have no one to report to; parallel_for catches its own.
  }
  delete task;
}

}  // namespace

struct ThreadPool::Impl {
  struct Worker {
    explicit Worker() : deque(kDequeCapacity) {}
    WorkStealingDeque<Task*> deque;
    Counters counters;
    std::thread thread;
    std::atomic<long> tid{0};
    std::uint64_t rng = 0;  // victim selection; touched only by the worker
  };

  PoolOptions options;
  std::uint64_t fork_generation = opweave::fork_generation();  // see ~ThreadPool
  std::uint64_t pin_seq = 0;  // start order among pinned pools (pinning.h); under lifecycle
                              // or construction
  std::vector<std::unique_ptr<Worker>> workers;  // fixed between start() and join_all()
  std::vector<InjectionQueue> injection{static_cast<std::size_t>(kMaxInjectionQueues)};
  int num_injection = 1;
  std::atomic<int> live_workers{0};
  std::atomic<bool> stopping{false};
  EventCount event_count;
  Counters outside_counters{/*shared_writers=*/true};  // helping threads that are not workers
  Counters retired_counters{/*shared_writers=*/true};  // workers retired by resize(); under
                                                       // workers_mutex
  PoolStats stats_baseline;    // what reset_stats() saw; under workers_mutex
  std::mutex lifecycle_mutex;  // serializes shutdown() and resize()
  // Guards replacing `workers` (start) against the readers that are not uses: stats(),
  // reset_stats(), worker_thread_ids(). Hot paths never take it (see the use gate).
  mutable std::mutex workers_mutex;

  // The use gate (ThreadPool::Use, resize()). Bits 0..61: uses in flight; kClosed: a resize is
  // waiting for them to leave or is rebuilding the workers. One word, so "enter" and "close" are
  // RMWs of the same atomic and totally ordered: an enter either precedes the close (and is
  // counted, so the resizer waits for it) or follows it (and sees kClosed, so it backs out).
  static constexpr std::uint64_t kClosed = std::uint64_t{1} << 62;
  alignas(64) std::atomic<std::uint64_t> gate{0};
  // Live KeepAwake objects (thread_pool.h). Its own line: spinning workers read it in a loop.
  alignas(64) std::atomic<int> keep_awake{0};
  std::mutex gate_mutex;  // only for sleeping: resizer waiting for uses, uses waiting to enter
  std::condition_variable gate_cv;

  bool is_own_worker() const noexcept { return t_worker.pool == this; }

  // Sums of every counter since the pool was made (stats() subtracts the baseline). Called with
  // workers_mutex held.
  PoolStats totals() const;

  bool held_by_this_thread() const noexcept {
    for (const ThreadPool::Use* u = t_use_top; u != nullptr; u = u->prev_) {
      if (u->impl_ == this && u->mode_ != ThreadPool::Use::kNotEntered) return true;
    }
    return false;
  }

  // Counts a use in; false when the gate is closed and may_wait is false.
  bool enter_gate(bool may_wait) {
    for (;;) {
      // acquire: pairs with open_gate()'s release, so a use that enters after a resize sees the
      // rebuilt workers, deques and injection queues.
      const std::uint64_t prev = gate.fetch_add(1, std::memory_order_acquire);
      if ((prev & kClosed) == 0) return true;
      leave_gate();  // closed: back out without touching the pool
      if (!may_wait) return false;
      std::unique_lock<std::mutex> lock(gate_mutex);  // open_gate() notifies under it
      // relaxed: only decides when to retry; the retry's fetch_add acquires.
      gate_cv.wait(lock, [&] { return (gate.load(std::memory_order_relaxed) & kClosed) == 0; });
    }
  }

  void leave_gate() noexcept {
    // release: everything this use did with the pool happens before the resizer's acquire load
    // that sees the count reach zero (the later RMWs continue the release sequence).
    const std::uint64_t prev = gate.fetch_sub(1, std::memory_order_release);
    if (prev == (kClosed | 1)) {                     // the last use left while a resizer waits
      std::lock_guard<std::mutex> lock(gate_mutex);  // the resizer tests its predicate under it
      gate_cv.notify_all();
    }
  }

  // Called with lifecycle_mutex held. Returns once no use is in flight.
  void close_gate_and_drain() {
    // relaxed: atomicity alone orders it against every enter (same atomic); the wait below
    // acquires what the leaving uses did.
    gate.fetch_or(kClosed, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(gate_mutex);  // leave_gate() notifies under it
    gate_cv.wait(lock, [&] { return (gate.load(std::memory_order_acquire) & ~kClosed) == 0; });
  }

  void open_gate() noexcept {
    // release: publishes the rebuilt pool to the uses that enter next (their fetch_add acquires).
    gate.fetch_and(~kClosed, std::memory_order_release);
    std::lock_guard<std::mutex> lock(gate_mutex);  // waiting uses test their predicate under it
    gate_cv.notify_all();
  }

  void check_not_waiting_for_self(const char* what) const {
    if (is_own_worker() || held_by_this_thread()) {
      throw OpError(ErrorCode::kFailedPrecondition,
                    "ThreadPool '" + options.name + "': " + what +
                        " from inside its own work (a worker, or a thread in a parallel_for / "
                        "task of this pool) would wait for itself");
    }
  }

  void start(int n) {
    if (n < 0)
      throw_invalid_argument("ThreadPool: num_workers must be >= 0, got " + std::to_string(n));
    options.num_workers = n;
    num_injection = std::max(1, std::min(kMaxInjectionQueues, n));
    event_count.reset();
    stopping.store(false, std::memory_order_relaxed);  // no worker runs yet
    std::vector<std::unique_ptr<Worker>> fresh;
    for (int i = 0; i < n; ++i) {
      fresh.push_back(std::make_unique<Worker>());
      fresh.back()->rng = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(i + 1);
    }
    {
      std::lock_guard<std::mutex> lock(workers_mutex);  // stats() may be reading the old ones
      for (auto& w : workers) {
        for (auto [from, to] : {std::pair{&w->counters.tasks_run, &retired_counters.tasks_run},
                                {&w->counters.steals, &retired_counters.steals},
                                {&w->counters.parks, &retired_counters.parks},
                                {&w->counters.wakeups, &retired_counters.wakeups},
                                {&w->counters.injected, &retired_counters.injected},
                                {&w->counters.moves, &retired_counters.moves}}) {
          // relaxed: statistics only; the workers were joined.
          retired_counters.add(*to, from->load(std::memory_order_relaxed));
        }
      }
      workers.swap(fresh);
    }
    for (int i = 0; i < n; ++i) {
      workers[static_cast<std::size_t>(i)]->thread = std::thread([this, i] { worker_main(i); });
    }
    // Wait until every worker registered its tid (worker_thread_ids() is then complete).
    std::vector<long> tids;
    for (auto& w : workers) {
      long tid = 0;
      // acquire: pairs with the worker's release store of its tid.
      while ((tid = w->tid.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
      tids.push_back(tid);
    }
    if (options.affinity != Affinity::kNone) {
      pin_seq = pin_workers(this, options.pin_group, pin_seq, options.affinity, std::move(tids));
    }
    live_workers.store(n, std::memory_order_release);  // readers only need the count
  }

  // Returns false when the pool is stopping and the task may be rejected. Throws std::bad_alloc
  // (growing an injection queue); nothing was queued then.
  bool push(Task* task) {
    if (t_worker.pool == this) {
      Worker& self = *workers[static_cast<std::size_t>(t_worker.index)];
      if (!self.deque.push(task)) {
        spill(self);  // may throw; then nothing changed
        if (!self.deque.push(task)) return inject(task, /*from_outside=*/false, true);
      }
      event_count.notify();  // after the push: see event_count.h
      return true;
    }
    return inject(task, /*from_outside=*/true, /*allow_stopping=*/task->must_run());
  }

  // The calling worker's deque is full: moves its older half to an injection queue under one
  // lock, so that a worker scheduling a long stream of tasks pays one lock per half deque, not
  // one per task. Throws std::bad_alloc (growing the queue); the deque is then unchanged in
  // content (the batch is pushed back).
  void spill(Worker& self) {
    static constexpr std::size_t kSpill = kDequeCapacity / 2;
    Task* batch[kSpill];
    const std::size_t n = self.deque.take_oldest(batch, kSpill);
    if (n == 0) return;  // thieves emptied it meanwhile
    InjectionQueue& queue = worker_queue();
    try {
      std::lock_guard<std::mutex> lock(queue.mutex);  // guards queue.tasks
      // Insertion of pointers at the end of a std::deque has no effect when it throws.
      queue.tasks.insert(queue.tasks.end(), batch, batch + n);
      queue.add_size(static_cast<std::int64_t>(n));
    } catch (...) {
      // Only this worker pushes to its deque, and it just took n out: they all fit back.
      for (std::size_t i = 0; i < n; ++i) (void)self.deque.push(batch[i]);
      throw;
    }
    event_count.notify();  // after the insertion: see event_count.h
  }

  // The injection queue an outside thread pushes to (and takes its own tasks back from): outside
  // threads spread over the queues by thread.
  InjectionQueue& outside_queue() noexcept {
    return injection[producer_slot() % static_cast<std::size_t>(num_injection)];
  }
  // The injection queue the calling worker overflows into.
  InjectionQueue& worker_queue() noexcept {
    return injection[static_cast<std::size_t>(t_worker.index % num_injection)];
  }

  bool inject(Task* task, bool from_outside, bool allow_stopping) {
    InjectionQueue& queue = from_outside ? outside_queue() : worker_queue();
    {
      // The queue lock also orders this check against shutdown(), which sets `stopping`
      // while holding every queue lock: no task can slip in after shutdown drained them.
      std::lock_guard<std::mutex> lock(queue.mutex);
      if (!allow_stopping && stopping.load(std::memory_order_relaxed)) return false;
      queue.tasks.push_back(task);  // may throw std::bad_alloc: nothing queued
      queue.add_size(1);
      if (from_outside) {
        // relaxed: a statistic, written only under the lock.
        queue.injected.store(queue.injected.load(std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);
      }
    }
    event_count.notify();  // after the insertion: see event_count.h
    return true;
  }

  // The newest task of `group` in the injection queue this outside thread pushes to, taken out
  // of the queue; nullptr when there is none.
  Task* take_own_injected(const void* group) {
    if (is_own_worker()) return nullptr;
    InjectionQueue& queue = outside_queue();
    // relaxed: a hint; an empty-looking queue only means we help elsewhere instead.
    if (queue.size.load(std::memory_order_relaxed) <= 0) return nullptr;
    std::lock_guard<std::mutex> lock(queue.mutex);  // guards queue.tasks
    // From the back: our pieces are the newest; other threads' older tasks sit in front.
    for (auto it = queue.tasks.end(); it != queue.tasks.begin();) {
      --it;
      if ((*it)->group() == group) {
        Task* task = *it;
        queue.tasks.erase(it);
        queue.add_size(-1);
        return task;
      }
    }
    return nullptr;
  }

  // A worker (self >= 0) also moves a batch (its fair share, at most kInjectBatch) into its own
  // deque, so a stream of outside tasks costs one lock round-trip per batch, not per task.
  Task* pop_injected(int self) {
    static constexpr std::size_t kInjectBatch = 256;  // a quarter deque: one lock per 256 tasks
    const int start = self >= 0 ? self : 0;
    for (int k = 0; k < num_injection; ++k) {
      InjectionQueue& queue = injection[static_cast<std::size_t>((start + k) % num_injection)];
      // seq_cst: part of an idle worker's last look before it sleeps, which must follow its
      // EventCount RMW in the single total order (event_count.h). A plain load on x86/ARMv8.
      if (queue.size.load(std::memory_order_seq_cst) <= 0) continue;
      std::size_t moved = 0;
      Task* first = nullptr;
      {
        std::lock_guard<std::mutex> lock(queue.mutex);  // guards queue.tasks
        if (queue.tasks.empty()) continue;
        first = queue.tasks.front();
        queue.tasks.pop_front();
        if (self >= 0) {
          const std::size_t share =
              std::min(kInjectBatch, queue.tasks.size() / static_cast<std::size_t>(workers.size()));
          WorkStealingDeque<Task*>& own = workers[static_cast<std::size_t>(self)]->deque;
          while (moved < share && own.push(queue.tasks.front())) {
            queue.tasks.pop_front();
            ++moved;
          }
        }
        queue.add_size(-static_cast<std::int64_t>(1 + moved));
      }
      if (moved > 0) event_count.notify();  // others may steal the batch
      return first;
    }
    return nullptr;
  }

  Task* steal_any(int self, std::uint64_t& rng) {
    const int n = static_cast<int>(workers.size());
    if (n == 0) return nullptr;
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const int start = static_cast<int>(rng % static_cast<std::uint64_t>(n));
    for (int k = 0; k < n; ++k) {
      const int v = (start + k) % n;
      if (v == self) continue;
      WorkStealingDeque<Task*>& dq = workers[static_cast<std::size_t>(v)]->deque;
      // A failed steal on a non-empty deque lost a race to another thief (who made progress):
      // try the same victim again rather than miss work that is still there.
      while (dq.size_estimate() > 0) {
        if (Task* t = dq.steal()) return t;
      }
    }
    return nullptr;
  }

  Task* find_work(int self, std::uint64_t& rng, Counters& counters) {
    if (self >= 0) {
      if (Task* t = workers[static_cast<std::size_t>(self)]->deque.pop()) return t;
    }
    if (Task* t = pop_injected(self)) return t;
    if (Task* t = steal_any(self, rng)) {
      counters.add(counters.steals);
      return t;
    }
    return nullptr;
  }

  void worker_main(int index) {
    t_worker = WorkerContext{this, index};
    Worker& self = *workers[static_cast<std::size_t>(index)];
    {
      std::string name = options.name + " " + std::to_string(index);
      if (name.size() > 15) name = name.substr(name.size() - 15);  // kernel limit: 16 with NUL
      pthread_setname_np(pthread_self(), name.c_str());
    }
    // release: start() reads the tid with acquire.
    self.tid.store(static_cast<long>(syscall(SYS_gettid)), std::memory_order_release);
    Counters& c = self.counters;
    const std::int64_t base_spin_us = std::max<std::int64_t>(0, options.spin_time_us);
    auto spin = std::chrono::microseconds(base_spin_us);  // next_spin_us() adapts it (spin.h)
    bool searching = false;
    for (;;) {
      Task* task = find_work(index, self.rng, c);
      std::chrono::steady_clock::time_point idle_since;  // when this worker ran out of work
      if (task == nullptr) {
        if (!searching) {
          event_count.begin_search();
          searching = true;
        }
        // Spin: at least one look after begin_search (whose RMW makes new tasks visible).
        idle_since = std::chrono::steady_clock::now();
        auto deadline = idle_since + spin;
        int rounds = 0;
        bool kept_awake = false;
        do {
          task = find_work(index, self.rng, c);
          if (task != nullptr) break;
          if (++rounds % 16 == 0) {
            std::this_thread::yield();  // the machine may be oversubscribed
          } else {
            cpu_relax();
          }
          // While a KeepAwake lives, spin on; after the last one, the usual spin from then.
          // relaxed: a hint; a stale value spins a little longer or parks a little early.
          kept_awake = spin.count() > 0 && keep_awake.load(std::memory_order_relaxed) > 0;
          if (kept_awake) deadline = std::chrono::steady_clock::now() + spin;
          // relaxed: only shortens the spin; the park protocol re-reads it properly.
          // Every CPU runs a kernel (cpu_pressure.h): spinning would take one from them, and a
          // loop does not split onto us meanwhile. Park.
        } while ((kept_awake || std::chrono::steady_clock::now() < deadline) &&
                 !stopping.load(std::memory_order_relaxed) && !cpus_busy());
      }
      if (task == nullptr) {
        event_count.prepare_wait();
        task = find_work(index, self.rng, c);
        // relaxed: `stopping` is set before shutdown() calls event_count.stop(), whose mutex
        // handshake with commit_wait makes it visible by the time we would sleep.
        if (task != nullptr || stopping.load(std::memory_order_relaxed)) {
          event_count.cancel_wait();
        } else {
          if (event_count.commit_wait(&c.parks)) {
            c.add(c.wakeups);
            const auto idle = std::chrono::steady_clock::now() - idle_since;
            spin = std::chrono::microseconds(next_spin_us(
                base_spin_us, std::chrono::duration_cast<std::chrono::microseconds>(idle).count()));
            // Woken where the waker runs: step aside (cpu_migration.h). Pinned workers stay.
            if (options.affinity == Affinity::kNone && move_off_cpu(event_count.waker_cpu())) {
              c.add(c.moves);
            }
          }
          continue;  // searching again (woken, or stopping)
        }
      }
      if (task == nullptr) {                                  // stopping and nothing left anywhere
        if (stopping.load(std::memory_order_acquire)) break;  // pairs with shutdown's store
        continue;
      }
      if (searching) {
        event_count.end_search();
        searching = false;
      }
      run_and_delete(task);
      c.add(c.tasks_run);
    }
    event_count.end_search();
  }

  // Steals/pops everything queued right now; run_pending decides run vs drop.
  std::size_t drain(bool run_pending) {
    std::size_t dropped = 0;
    std::uint64_t rng = 0x2545F4914F6CDD1Dull;
    for (;;) {
      Task* t = pop_injected(-1);
      if (t == nullptr) t = steal_any(-1, rng);
      if (t == nullptr) return dropped;
      if (run_pending || t->must_run()) {
        run_and_delete(t);
        outside_counters.add(outside_counters.tasks_run);
      } else {
        delete t;
        ++dropped;
      }
    }
  }

  // resize() and set_spin_time_us(): closes the use gate, waits for the uses in flight, runs
  // what is queued, joins the workers, lets `configure` change the options while no worker runs,
  // starts the new workers and reopens the gate.
  template <typename Configure>
  void rebuild(const char* what, Configure configure) {
    check_not_waiting_for_self(what);
    std::lock_guard<std::mutex> lifecycle(lifecycle_mutex);  // one shutdown/rebuild at a time
    close_gate_and_drain();
    struct Reopen {
      Impl* impl;
      ~Reopen() { impl->open_gate(); }  // also when start() throws
    } reopen{this};
    shutdown_locked(true);
    configure(options);
    start(options.num_workers);
  }

  std::size_t shutdown(bool run_pending) {
    if (is_own_worker()) {
      throw OpError(ErrorCode::kFailedPrecondition,
                    "ThreadPool '" + options.name +
                        "': shutdown from its own worker would wait "
                        "for itself");
    }
    std::lock_guard<std::mutex> lifecycle(lifecycle_mutex);  // one shutdown/resize at a time
    return shutdown_locked(run_pending);
  }

  std::size_t shutdown_locked(bool run_pending) {
    unpin_workers(this);  // before the join: see pinning.h
    {
      // Every queue lock held: no injection can be in flight while `stopping` flips.
      std::vector<std::unique_lock<std::mutex>> locks;
      for (auto& q : injection) locks.emplace_back(q.mutex);
      stopping.store(true, std::memory_order_release);  // workers read it with acquire to exit
    }
    std::size_t dropped = run_pending ? 0 : drain(false);
    event_count.stop();
    for (auto& w : workers) {
      if (w->thread.joinable()) w->thread.join();
    }
    live_workers.store(0, std::memory_order_release);  // a count only
    // Workers exit only when they find nothing, but an outside producer may have injected a
    // must_run task after their last look: run (or drop) what is left on this thread.
    dropped += drain(run_pending);
    return dropped;
  }
};

ThreadPool::ThreadPool(PoolOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->start(impl_->options.num_workers);
}

ThreadPool::~ThreadPool() {
  if (impl_->fork_generation != fork_generation()) {
    // Destroyed in a forked child: the workers exist only in the parent, and joining
    // them would wait forever. Leak the state (its threads, queues and any locks they held).
    (void)impl_.release();
    return;
  }
  try {
    impl_->shutdown(true);
  } catch (...) {
    // Destroyed from its own worker: nothing sane to do but leak the threads' work.
  }
}

void ThreadPool::schedule(std::function<void()> task) {
  schedule_task(std::make_unique<FunctionTask>(std::move(task)));
}

void ThreadPool::schedule_task(std::unique_ptr<Task> task) {
  // The task stays owned by `task` until a queue holds it: a push that throws (std::bad_alloc
  // growing an injection queue) or refuses frees it.
  if (impl_->is_own_worker()) {  // the workers cannot change while one of them runs
    impl_->push(task.get());     // a worker's push is never refused
    task.release();
    return;
  }
  // Fast path: an open gate counts us in with one RMW. push() runs no user code, so this use need
  // not be on the thread's Use stack (nothing below can call resize()).
  // acquire: as in enter_gate().
  if ((impl_->gate.fetch_add(1, std::memory_order_acquire) & Impl::kClosed) == 0) {
    struct Leave {
      Impl* impl;
      ~Leave() { impl->leave_gate(); }  // also when push() throws
    } leave{impl_.get()};
    if (!impl_->push(task.get())) {
      throw OpError(ErrorCode::kCancelled,
                    "thread pool '" + impl_->options.name + "' is shut down");
    }
    task.release();
    return;
  }
  impl_->leave_gate();  // closed: back out, then decide like any Use
  Use use(*this);
  if (!use.entered()) {
    // Resizing, and this thread is inside other pool work, where waiting could deadlock: run it
    // here (a fire-and-forget task may run on any thread).
    run_and_delete(task.release());
    impl_->outside_counters.add(impl_->outside_counters.tasks_run);
    return;
  }
  if (!impl_->push(task.get())) {
    throw OpError(ErrorCode::kCancelled, "thread pool '" + impl_->options.name + "' is shut down");
  }
  task.release();
}

ThreadPool::Use::Use(ThreadPool& pool) : impl_(pool.impl_.get()), prev_(t_use_top) {
  if (prev_ == nullptr && t_worker.pool == nullptr) {
    // Not nested in any pool work (the common case): count in, waiting if a resize runs.
    mode_ = impl_->enter_gate(/*may_wait=*/true) ? kCounted : kNotEntered;
  } else if (impl_->is_own_worker() || impl_->held_by_this_thread()) {
    mode_ = kFree;  // the pool cannot be rebuilt under us: a resize would wait for this thread
  } else {
    // Nested in other pool work: never wait for a resize, since this thread could be what the
    // resize (or the drain it does) waits for.
    mode_ = impl_->enter_gate(/*may_wait=*/false) ? kCounted : kNotEntered;
  }
  if (mode_ != kNotEntered) t_use_top = this;
}

ThreadPool::Use::~Use() {
  if (mode_ == kNotEntered) return;
  t_use_top = prev_;
  if (mode_ == kCounted) impl_->leave_gate();
}

bool ThreadPool::try_run_one() {
  Use use(*this);
  if (!use.entered()) return false;
  const int self = impl_->is_own_worker() ? t_worker.index : -1;
  thread_local std::uint64_t rng = 0x9E3779B97F4A7C15ull;
  Counters& c = self >= 0 ? impl_->workers[static_cast<std::size_t>(self)]->counters
                          : impl_->outside_counters;
  Task* task = impl_->find_work(self, rng, c);
  if (task == nullptr) return false;
  run_and_delete(task);
  c.add(c.tasks_run);
  return true;
}

bool ThreadPool::try_run_own(const void* group) {
  Use use(*this);
  if (!use.entered()) return false;
  Task* task = impl_->take_own_injected(group);
  if (task == nullptr) return false;
  run_and_delete(task);
  impl_->outside_counters.add(impl_->outside_counters.tasks_run);
  return true;
}

int ThreadPool::num_workers() const noexcept {
  return impl_->live_workers.load(std::memory_order_acquire);  // a count; pairs with start()
}

void ThreadPool::resize(int num_workers) {
  if (num_workers < 0) {
    throw_invalid_argument("ThreadPool::resize: num_workers must be >= 0, got " +
                           std::to_string(num_workers));
  }
  impl_->rebuild("resize", [num_workers](PoolOptions& o) { o.num_workers = num_workers; });
}

// Workers read options.spin_time_us when they start, so a new spin time means new
// workers: the same rebuild between uses as resize().
void ThreadPool::set_spin_time_us(std::int64_t us) {
  if (us < 0) {
    throw_invalid_argument("ThreadPool::set_spin_time_us: expected >= 0, got " +
                           std::to_string(us));
  }
  impl_->rebuild("set_spin_time_us", [us](PoolOptions& o) { o.spin_time_us = us; });
}

std::size_t ThreadPool::shutdown(bool run_pending) { return impl_->shutdown(run_pending); }

bool ThreadPool::in_own_work() const noexcept {
  return impl_->is_own_worker() || impl_->held_by_this_thread();
}

int ThreadPool::current_worker_index() const noexcept {
  return impl_->is_own_worker() ? t_worker.index : -1;
}

std::vector<long> ThreadPool::worker_thread_ids() const {
  std::vector<long> ids;
  std::lock_guard<std::mutex> lock(impl_->workers_mutex);  // start() may be replacing them
  if (num_workers() == 0) return ids;
  for (const auto& w : impl_->workers) {
    ids.push_back(w->tid.load(std::memory_order_acquire));  // pairs with the worker's store
  }
  return ids;
}

std::vector<int> ThreadPool::worker_cpus() const { return pinned_cpus(impl_.get()); }

PoolStats ThreadPool::Impl::totals() const {
  PoolStats s;
  auto add = [&s](const Counters& c) {
    // relaxed: statistics only.
    s.tasks_run += c.tasks_run.load(std::memory_order_relaxed);
    s.steals += c.steals.load(std::memory_order_relaxed);
    s.parks += c.parks.load(std::memory_order_relaxed);
    s.wakeups += c.wakeups.load(std::memory_order_relaxed);
    s.injected += c.injected.load(std::memory_order_relaxed);
    s.moves += c.moves.load(std::memory_order_relaxed);
  };
  for (const auto& w : workers) add(w->counters);
  add(outside_counters);
  add(retired_counters);
  for (const InjectionQueue& q : injection) {
    s.injected += q.injected.load(std::memory_order_relaxed);  // relaxed: a statistic
  }
  return s;
}

PoolStats ThreadPool::stats() const {
  std::lock_guard<std::mutex> lock(impl_->workers_mutex);  // start() may be replacing them
  const PoolStats now = impl_->totals();
  const PoolStats& base = impl_->stats_baseline;
  // Each total only grows (and reads under one mutex are coherent), so this never wraps; the
  // clamp only guards the subtraction.
  auto since = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  return PoolStats{since(now.tasks_run, base.tasks_run), since(now.steals, base.steals),
                   since(now.parks, base.parks),         since(now.wakeups, base.wakeups),
                   since(now.injected, base.injected),   since(now.moves, base.moves)};
}

void ThreadPool::reset_stats() {
  std::lock_guard<std::mutex> lock(impl_->workers_mutex);  // start() may be replacing them
  impl_->stats_baseline = impl_->totals();
}

const PoolOptions& ThreadPool::options() const noexcept { return impl_->options; }

int ThreadPool::idle_workers() const noexcept { return impl_->event_count.idle_workers(); }

bool ThreadPool::kept_awake() const noexcept {
  return impl_->keep_awake.load(std::memory_order_relaxed) > 0;  // a hint, see KeepAwake
}

ThreadPool::KeepAwake::KeepAwake(ThreadPool* pool) noexcept
    : impl_(pool != nullptr ? pool->impl_.get() : nullptr) {
  // relaxed: the count only changes how long idle threads spin; no data is published through it.
  if (impl_ != nullptr) impl_->keep_awake.fetch_add(1, std::memory_order_relaxed);
}

ThreadPool::KeepAwake::~KeepAwake() {
  // relaxed: as above.
  if (impl_ != nullptr) impl_->keep_awake.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace opweave
