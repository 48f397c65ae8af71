// WorkStealingDeque: a bounded Chase–Lev deque, one per pool worker. The owner pushes and pops at
// the bottom (LIFO, cache-warm); any other thread steals from the top (FIFO, oldest = largest
// work). Lock-free; no allocation after construction.
//
//   WorkStealingDeque<Task*> dq(1024);
//   if (!dq.push(t)) inject_elsewhere(t);  // owner only; false when full
//   Task* mine = dq.pop();                  // owner only; nullptr when empty
//   Task* theirs = dq.steal();              // any thread; nullptr when empty or lost a race
//   std::size_t n = dq.take_oldest(out, k);  // owner only: up to k oldest items at once
//
// Protocol (Lê, Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak Memory
// Models", PPoPP 2013), with the buffer fixed in size instead of grown:
//
//   top_    index of the oldest item; only ever incremented, by a CAS (thieves, and the owner
//           when it races for the last item).
//   bottom_ one past the newest item; written only by the owner.
//   slots_  atomics, so a thief that reads a slot the owner is overwriting (after the deque
//           wrapped around) reads a stale value instead of racing; its CAS on top_ then fails
//           because top_ has moved past that index, and the stale value is discarded.
//
//   push:  the slot store is relaxed; the release store of bottom_ publishes it (and everything
//          the owner wrote into the task before) to a thief whose acquire load of bottom_ reads
//          the new value. A full deque (bottom - top == capacity) returns false.
//   pop:   the owner first claims the bottom slot by decrementing bottom_, then reads top_. The
//          paper puts a seq_cst fence between that store and load; we make both operations
//          seq_cst instead (TSan does not model standalone fences). Together with the thief's
//          seq_cst load of top_, load of bottom_ and CAS of top_ this is a Dekker pattern: in
//          the single total order of seq_cst operations either the thief sees the decremented
//          bottom_ (and backs off) or the owner sees the thief's top_ (and races for the last
//          item with a CAS). Only one of them can win the CAS for the last item.
//   steal: load top_, then bottom_ (both seq_cst, see pop); if non-empty read the slot and CAS
//          top_ from t to t+1. The CAS is seq_cst on success (it takes part in the Dekker order
//          above) and relaxed on failure (nothing read is used). The slot read is relaxed: the
//          acquire half of the seq_cst bottom_ load already synchronizes with the owner's
//          release store in push.
//   take_oldest: the owner steals a batch from its own top: it reads the slots [t, t + n) (its
//          own writes) and claims them with one CAS of top_ from t to t + n. A thief racing for
//          index t either wins its CAS first (the owner's CAS fails and it retries with the new
//          top) or fails its own, as with any other thief. The owner never pops concurrently
//          with itself, so the last-item race of pop does not arise.
//
// T must be trivially copyable (a pointer in practice). Thread-safety as above: push/pop from the
// owning thread only, steal/size_estimate from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

namespace opweave {

template <typename T>
class WorkStealingDeque {
  static_assert(std::is_trivially_copyable_v<T>, "store pointers or small PODs");

 public:
  // capacity is rounded up to a power of two (at least 2).
  explicit WorkStealingDeque(std::size_t capacity) {
    std::size_t cap = 2;
    while (cap < capacity) cap *= 2;
    mask_ = static_cast<std::int64_t>(cap - 1);
    slots_ = std::make_unique<std::atomic<T>[]>(cap);
  }
  WorkStealingDeque(const WorkStealingDeque&) = delete;
  WorkStealingDeque& operator=(const WorkStealingDeque&) = delete;

  std::size_t capacity() const noexcept { return static_cast<std::size_t>(mask_ + 1); }

  // Owner only. Returns false (and leaves the deque unchanged) when full.
  bool push(T item) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);  // only the owner writes it
    // acquire: pairs with the thieves' CAS so a freed slot is not reused before it was read.
    const std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t > mask_) return false;
    slots_[b & mask_].store(item, std::memory_order_relaxed);  // published by the release below
    // release: a thief that reads b + 1 also sees the slot and the task's contents.
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  // Owner only. Returns T{} when empty (or when a thief took the last item).
  T pop() noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;  // only the owner writes
    // seq_cst store + seq_cst load of top_: the paper's store; fence(seq_cst); load (see above).
    bottom_.store(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {                                        // was empty: undo the claim
      bottom_.store(b + 1, std::memory_order_relaxed);  // no thief can act on the transient value
      return T{};
    }
    T item = slots_[b & mask_].load(std::memory_order_relaxed);  // the owner wrote it
    if (t == b) {
      // Last item: race the thieves for it through top_. seq_cst on success for the Dekker order;
      // relaxed on failure because a thief won and nothing else is read.
      const bool won = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed);
      bottom_.store(b + 1, std::memory_order_relaxed);  // empty either way; owner-only value
      return won ? item : T{};
    }
    return item;
  }

  // Any thread. Returns T{} when empty or when it lost a race (callers just try elsewhere).
  T steal() noexcept {
    // seq_cst loads: the thief's half of the Dekker order with pop (the paper's acquire load of
    // top, fence(seq_cst), acquire load of bottom). Acquire on bottom_ pairs with push's release.
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return T{};
    // relaxed: visibility comes from the acquire on bottom_; if the slot was overwritten since,
    // top_ has moved and the CAS below fails.
    T item = slots_[t & mask_].load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return T{};
    }
    return item;
  }

  // Owner only. Moves up to `max` of the oldest items into out[0..n) and returns n (0 when
  // empty). For an owner whose deque is full: it hands a batch to a shared queue at once.
  std::size_t take_oldest(T* out, std::size_t max) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);  // only the owner writes it
    // seq_cst: top_ is only ever changed by seq_cst CASes (the Dekker order of pop/steal).
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    for (;;) {
      const std::int64_t n = std::min<std::int64_t>(b - t, static_cast<std::int64_t>(max));
      if (n <= 0) return 0;
      for (std::int64_t i = 0; i < n; ++i) {
        out[i] = slots_[(t + i) & mask_].load(std::memory_order_relaxed);  // the owner wrote them
      }
      // seq_cst on success, as every top_ CAS (see above); on failure t is reloaded (a thief
      // took the oldest item) and nothing read is used.
      if (top_.compare_exchange_strong(t, t + n, std::memory_order_seq_cst,
                                       std::memory_order_seq_cst)) {
        return static_cast<std::size_t>(n);
      }
    }
  }

  // Any thread; a hint only (may be stale by the time it returns). seq_cst loads (plain loads on
  // x86 and ARMv8) so that an idle worker's last look before it sleeps is ordered after its
  // seq_cst EventCount RMW (event_count.h, "the fast path of notify").
  std::int64_t size_estimate() const noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    const std::int64_t t = top_.load(std::memory_order_seq_cst);
    return b > t ? b - t : 0;
  }

 private:
  // top_ and bottom_ on separate cache lines: thieves hammer top_, the owner bottom_.
  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  alignas(64) std::int64_t mask_ = 0;
  std::unique_ptr<std::atomic<T>[]> slots_;
};

}  // namespace opweave
