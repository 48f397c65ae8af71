#include "opweave/task_recycler.h"

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

namespace opweave {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycle = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif
#else
constexpr bool kRecycle = true;
#endif

struct Block {
  Block* next;
};

// Batches of kTaskBatch blocks, linked through Block::next. Leaked on purpose: process-lifetime
// pools may free tasks during static destruction.
struct Depot {
  std::mutex mutex;
  std::vector<Block*> batches;  // guarded by mutex
};
Depot& depot() {
  static Depot* d = new Depot;  // never destroyed, see above
  return *d;
}

std::atomic<int> g_fail_next{0};

struct Cache;
thread_local bool t_cache_gone = false;  // trivially destructible: readable after ~Cache

struct Cache {
  Block* head = nullptr;
  int count = 0;
  ~Cache() {
    t_cache_gone = true;
    while (head != nullptr) {
      Block* b = head;
      head = b->next;
      ::operator delete(b);
    }
  }
  // Moves kTaskBatch blocks from the head of the list into the depot (or frees them when full).
  void spill() noexcept {
    Block* batch = head;
    Block* last = head;
    for (int i = 1; i < kTaskBatch; ++i) last = last->next;
    head = last->next;
    last->next = nullptr;
    count -= kTaskBatch;
    Depot& d = depot();
    {
      std::lock_guard<std::mutex> lock(d.mutex);  // guards batches
      if (d.batches.size() < static_cast<std::size_t>(kMaxDepotBatches)) {
        try {
          d.batches.push_back(batch);
          return;
        } catch (...) {
          // no room for the pointer: free the batch below
        }
      }
    }
    while (batch != nullptr) {
      Block* b = batch;
      batch = b->next;
      ::operator delete(b);
    }
  }
  bool refill() noexcept {
    Depot& d = depot();
    std::lock_guard<std::mutex> lock(d.mutex);  // guards batches
    if (d.batches.empty()) return false;
    head = d.batches.back();
    d.batches.pop_back();
    count = kTaskBatch;
    return true;
  }
};
thread_local Cache t_cache;

void maybe_fail() {
  // relaxed: a test hook; the test sets it before the work it observes starts.
  if (g_fail_next.load(std::memory_order_relaxed) <= 0) return;
  int left = g_fail_next.load(std::memory_order_relaxed);
  while (left > 0) {
    // relaxed: only the count matters, no data is published through it.
    if (g_fail_next.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      throw std::bad_alloc();
    }
  }
}

}  // namespace

void* allocate_task_block(std::size_t size) {
  maybe_fail();
  if (!kRecycle || size > kTaskBlockSize) return ::operator new(size);
  // Always a whole block: another thread may recycle it.
  if (t_cache_gone) return ::operator new(kTaskBlockSize);
  Cache& c = t_cache;
  if (c.head == nullptr && !c.refill()) return ::operator new(kTaskBlockSize);
  Block* b = c.head;
  c.head = b->next;
  --c.count;
  return b;
}

void free_task_block(void* block, std::size_t size) noexcept {
  if (block == nullptr) return;
  if (!kRecycle || size > kTaskBlockSize || t_cache_gone) {
    ::operator delete(block);
    return;
  }
  Cache& c = t_cache;
  Block* b = static_cast<Block*>(block);
  b->next = c.head;
  c.head = b;
  if (++c.count >= 2 * kTaskBatch) c.spill();
}

void fail_task_allocations_for_testing(int n) noexcept {
  g_fail_next.store(n < 0 ? 0 : n, std::memory_order_relaxed);  // a test hook, see maybe_fail
}

}  // namespace opweave
