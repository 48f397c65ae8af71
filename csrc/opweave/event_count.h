// EventCount: how idle pool workers go to sleep and get woken without losing wake-ups and
// without waking every thread at once. One 64-bit atomic word holds three counters:
//
//   searching  workers awake and looking for work (spinning, or just woken)
//   waiters    workers that announced they are about to sleep (prepare_wait) or sleep
//   signals    wake-ups granted to waiters but not yet consumed
//
// A worker that finds no work:                      A thread that makes work available:
//   begin_search()            searching+1             publish the task (deque / queue)
//   ... spin, looking for work ...                     notify()
//   prepare_wait()            searching-1, waiters+1     if searching == 0 and waiters > 0:
//   look for work once more                               waiters-1, signals+1, searching+1
//   found: cancel_wait() -> searching again               and wake one sleeper
//   none:  commit_wait()  -> sleeps until a signal    end_search() (a searcher found work):
//                            (then searching again)     searching-1; if that was the last
//                                                        searcher and someone waits, wake one
//
// Why no wake-up is lost: every transition of a worker above is a seq_cst read-modify-write of
// the same atomic, so they form one modification order that is also part of the single total
// order S of seq_cst operations, and a worker's looks for work after its RMW are seq_cst loads
// (the deque's bottom_/top_ loads, the injection queues' sizes), so they follow that RMW in S.
// notify() runs after the task was published (a store to a deque or a queue's size) and starts
// with a seq_cst fence F, then loads the state. Take any worker RMW P that comes after the value
// notify() read in the modification order (the load is "coherence-ordered before" P): F precedes
// P in S ([atomics.order]: fence sequenced before A, A coherence-ordered before the seq_cst B),
// so F precedes the worker's later looks in S, and a seq_cst load that follows in S a fence
// sequenced after a store observes that store or a later one: the worker finds the task. Hence:
// - if notify() read waiters == 0, every worker that is about to sleep has its prepare_wait
//   after that value, and its re-check finds the task: nothing to do (the fast path, a fence and
//   a load: no write to the shared line, no RMW, when nobody sleeps -- the common case while the
//   pool is busy);
// - if it read searching > 0, that searcher's next RMW (prepare_wait, or end_search) comes after
//   it: it re-checks and finds the task, or (end_search as the last searcher with waiters)
//   passes a wake-up on to a waiter, whose consume-the-signal CAS and looks again follow;
// - otherwise (waiters > 0, nobody searching) notify() wakes one with a CAS: a waiter whose
//   commit_wait sees the signal, or who is already inside cv_.wait (the mutex orders the two).
// Why not every thread wakes: notify() wakes nobody while someone is searching, and a woken
// worker counts as searching at once, so a burst of notify() calls wakes one worker, which wakes
// the next only when it found work (end_search), and so on.
//
// Every RMW of state_ is seq_cst (the same instructions as acq_rel RMWs on x86 and ARMv8);
// the fence is `lock or` on the stack (x86) or `dmb ish` (ARMv8), cheaper than an RMW of the
// shared line that every pushing thread would otherwise write.
//
// Thread-safe: every method may be called from any thread; the begin/prepare/cancel/commit/end
// sequence is per worker.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "opweave/cpu_migration.h"
#include "opweave/sanitizers.h"

namespace opweave {

class EventCount {
 public:
  // Announce that the calling worker starts looking for work (after it ran out of its own).
  void begin_search() noexcept {
    // seq_cst: one of the ordered transitions (see the header comment).
    state_.fetch_add(kSearchingOne, std::memory_order_seq_cst);
  }

  // The calling searcher found work. Returns true when it woke another worker (it was the last
  // searcher and someone sleeps: there may be more work).
  bool end_search() {
    // seq_cst: orders this transition with notify() (see the header comment).
    const std::uint64_t prev = state_.fetch_sub(kSearchingOne, std::memory_order_seq_cst);
    if (searching(prev) == 1 && waiters(prev) > 0) return notify();
    return false;
  }

  // Searching -> about to sleep. The caller must look for work once more, then call
  // cancel_wait() (found some) or commit_wait() (found none).
  void prepare_wait() noexcept {
    // seq_cst: if a notify() read the state before this, the re-check (seq_cst loads) finds its
    // task (see the header comment).
    state_.fetch_add(kWaiterOne - kSearchingOne, std::memory_order_seq_cst);
  }

  // About to sleep -> searching, without sleeping. Consumes a signal if one is pending (we are
  // then the woken worker) so that no sleeper is woken for nothing.
  void cancel_wait() noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);  // the CAS below validates it
    std::uint64_t next;
    do {
      next = signals(s) > 0 ? s - kSignalOne : s - kWaiterOne + kSearchingOne;
      // seq_cst: this is one of the ordered transitions.
    } while (!state_.compare_exchange_weak(s, next, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
  }

  // About to sleep -> asleep until a signal (or stop()), then searching. Returns true when the
  // thread actually slept; *parks (if given) is incremented just before it first sleeps.
  bool commit_wait(std::atomic<std::uint64_t>* parks = nullptr) {
    std::unique_lock<std::mutex> lock(mutex_);  // pairs with the lock taken in wake_one()/stop()
    bool slept = false;
    for (;;) {
      std::uint64_t s = state_.load(std::memory_order_relaxed);  // validated by the CAS
      while (signals(s) > 0) {
        // seq_cst: consuming the signal is an ordered transition; the looks that follow it
        // find what was published before the notify() that granted it.
        if (state_.compare_exchange_weak(s, s - kSignalOne, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
          return slept;
        }
      }
      // relaxed: stop() sets the flag before taking mutex_, which we hold while reading it.
      if (stopped_.load(std::memory_order_relaxed)) {
        lock.unlock();
        cancel_wait();
        return slept;
      }
      if (!slept && parks != nullptr) parks->fetch_add(1, std::memory_order_relaxed);  // a stat
      slept = true;
      cv_.wait(lock);
    }
  }

  // Work was published. Wakes one sleeper only if nobody is searching. Returns true if it woke.
  bool notify() {
    // seq_cst fence, then a plain load: the fast path of the header comment. The fence orders
    // the caller's publishing store before every worker RMW that comes after the value read.
#if defined(OPWEAVE_TSAN)
    // ThreadSanitizer does not model fences (GCC warns): an RMW that changes nothing orders the
    // same way, as a write of the shared line (the protocol before the fast path existed).
    std::uint64_t s = state_.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::uint64_t s = state_.load(std::memory_order_relaxed);  // ordered by the fence above
#endif
    std::uint64_t next;
    do {
      if (searching(s) > 0 || waiters(s) == 0) return false;  // someone will look, see above
      next = s - kWaiterOne + kSignalOne + kSearchingOne;
      // seq_cst: granting a signal is an ordered transition; on failure s is reloaded and the
      // decision re-made on the newer value.
    } while (!state_.compare_exchange_weak(s, next, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
    // relaxed: the woken thread reads it after taking mutex_, which we take just below.
    waker_cpu_.store(current_cpu(), std::memory_order_relaxed);
    {
      // Taking the lock orders this wake-up after a waiter's check in commit_wait: it is either
      // before the check (sees the signal) or already inside cv_.wait (gets the notify).
      std::lock_guard<std::mutex> lock(mutex_);
    }
    cv_.notify_one();
    return true;
  }

  // The CPU the thread that last woke a sleeper ran on when it did (-1 before any wake-up): a
  // woken thread compares it with its own (cpu_migration.h). A hint; any thread may read it.
  int waker_cpu() const noexcept {
    return waker_cpu_.load(std::memory_order_relaxed);  // a hint, see notify()
  }

  // Wakes every sleeper for good (pool shutdown); commit_wait returns at once afterwards.
  void stop() {
    stopped_.store(true, std::memory_order_relaxed);  // read under mutex_, taken just below
    {
      std::lock_guard<std::mutex> lock(mutex_);  // same ordering argument as in notify()
    }
    cv_.notify_all();
  }

  // Back to the initial state (no searchers, waiters or signals; not stopped). Only while no
  // worker uses it (between pool shutdown and restart).
  void reset() noexcept {
    state_.store(0, std::memory_order_relaxed);        // no concurrent user by contract
    stopped_.store(false, std::memory_order_relaxed);  // no concurrent user by contract
  }

  // Hints for lazy splitting: workers that would take work now. May be stale.
  int idle_workers() const noexcept {
    // relaxed: a heuristic; a stale value only makes a split a little early or late.
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    return static_cast<int>(searching(s) + waiters(s));
  }

 private:
  static constexpr std::uint64_t kSearchingOne = 1;
  static constexpr std::uint64_t kWaiterOne = std::uint64_t{1} << 20;
  static constexpr std::uint64_t kSignalOne = std::uint64_t{1} << 40;
  static constexpr std::uint64_t kMask = (std::uint64_t{1} << 20) - 1;
  static std::uint64_t searching(std::uint64_t s) noexcept { return s & kMask; }
  static std::uint64_t waiters(std::uint64_t s) noexcept { return (s >> 20) & kMask; }
  static std::uint64_t signals(std::uint64_t s) noexcept { return (s >> 40) & kMask; }

  alignas(64) std::atomic<std::uint64_t> state_{0};
  std::atomic<bool> stopped_{false};
  std::atomic<int> waker_cpu_{-1};  // written on the wake-up path only, next to mutex_
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace opweave
