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
// Why no wake-up is lost: every transition above is a read-modify-write of the same atomic, so
// they form one modification order, and acq_rel RMWs synchronize along it. If notify()'s RMW
// precedes a worker's prepare_wait() RMW, the worker's re-check happens after the task was
// published and finds it. If it follows, notify() sees the waiter (wakes it) or sees a searcher,
// whose own later RMW (prepare_wait or end_search) again follows notify() and so re-checks or
// passes the wake-up on. Why not every thread wakes: notify() wakes nobody while someone is
// searching, and a woken worker counts as searching at once, so a burst of notify() calls wakes
// one worker, which wakes the next only when it found work (end_search), and so on.
//
// Thread-safe: every method may be called from any thread; the begin/prepare/cancel/commit/end
// sequence is per worker.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace opweave {

class EventCount {
 public:
  // Announce that the calling worker starts looking for work (after it ran out of its own).
  void begin_search() noexcept {
    // acq_rel: the synchronizing RMW that makes later work checks see tasks notify() published.
    state_.fetch_add(kSearchingOne, std::memory_order_acq_rel);
  }

  // The calling searcher found work. Returns true when it woke another worker (it was the last
  // searcher and someone sleeps: there may be more work).
  bool end_search() {
    // acq_rel: orders this transition with notify() (see the header comment).
    const std::uint64_t prev = state_.fetch_sub(kSearchingOne, std::memory_order_acq_rel);
    if (searching(prev) == 1 && waiters(prev) > 0) return notify();
    return false;
  }

  // Searching -> about to sleep. The caller must look for work once more, then call
  // cancel_wait() (found some) or commit_wait() (found none).
  void prepare_wait() noexcept {
    // acq_rel: if a notify() came first, its published task is visible to the re-check.
    state_.fetch_add(kWaiterOne - kSearchingOne, std::memory_order_acq_rel);
  }

  // About to sleep -> searching, without sleeping. Consumes a signal if one is pending (we are
  // then the woken worker) so that no sleeper is woken for nothing.
  void cancel_wait() noexcept {
    std::uint64_t s = state_.load(std::memory_order_relaxed);  // the CAS below validates it
    std::uint64_t next;
    do {
      next = signals(s) > 0 ? s - kSignalOne : s - kWaiterOne + kSearchingOne;
      // acq_rel: this is one of the ordered transitions.
    } while (!state_.compare_exchange_weak(s, next, std::memory_order_acq_rel,
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
        // acq_rel: consuming the signal synchronizes with the notify() that granted it.
        if (state_.compare_exchange_weak(s, s - kSignalOne, std::memory_order_acq_rel,
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
    std::uint64_t s = state_.load(std::memory_order_relaxed);  // validated by the CAS
    std::uint64_t next;
    do {
      const bool wake = searching(s) == 0 && waiters(s) > 0;
      next = wake ? s - kWaiterOne + kSignalOne + kSearchingOne : s;
      // acq_rel even when unchanged: the RMW is what orders us against prepare_wait/end_search.
    } while (!state_.compare_exchange_weak(s, next, std::memory_order_acq_rel,
                                           std::memory_order_relaxed));
    if (next == s) return false;
    {
      // Taking the lock orders this wake-up after a waiter's check in commit_wait: it is either
      // before the check (sees the signal) or already inside cv_.wait (gets the notify).
      std::lock_guard<std::mutex> lock(mutex_);
    }
    cv_.notify_one();
    return true;
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
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace opweave
