#include "opweave/task_recycler.h"

#include <atomic>
#include <mutex>
#include <new>
#include <vector>

#include "opweave/fork_guard.h"

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
  // batches.size(), readable without the lock: a thread that finds the depot empty (every task
  // still alive, e.g. a burst of schedule()) must not pay a lock per allocation to learn it.
  std::atomic<std::size_t> size{0};
};
// Never destroyed, see above. Created at load time, and its mutex held across fork(), so a child
// finds it unlocked and whole (fork_guard.h).
Depot* const g_depot = [] {
  auto* d = new Depot;
  hold_across_fork(&d->mutex);
  return d;
}();
Depot& depot() { return *g_depot; }

std::atomic<int> g_fail_next{0};

thread_local bool t_cache_gone = false;  // trivially destructible: readable after ~Cache

// Two magazines, so neither path walks a list: `loaded` (0..kTaskBatch blocks, allocations pop
// it, frees push it) and `spare` (exactly kTaskBatch blocks, or empty). A full `loaded` becomes the
// spare (the old spare goes to the depot); an empty one takes the spare or a depot batch.
struct Cache {
  Block* loaded = nullptr;
  int count = 0;  // blocks in loaded
  Block* spare = nullptr;
  ~Cache() {
    t_cache_gone = true;
    free_list(loaded);
    free_list(spare);
  }
  static void free_list(Block* b) noexcept {
    while (b != nullptr) {
      Block* next = b->next;
      ::operator delete(b);
      b = next;
    }
  }
  static void to_depot(Block* batch) noexcept {
    Depot& d = depot();
    {
      std::lock_guard<std::mutex> lock(d.mutex);  // guards batches
      if (d.batches.size() < static_cast<std::size_t>(kMaxDepotBatches)) {
        try {
          d.batches.push_back(batch);
          d.size.store(d.batches.size(), std::memory_order_relaxed);  // a hint, see Depot::size
          return;
        } catch (...) {
          // no room for the pointer: free the batch below
        }
      }
    }
    free_list(batch);
  }
  void put(Block* b) noexcept {
    if (count == kTaskBatch) {
      if (spare != nullptr) to_depot(spare);
      spare = loaded;
      loaded = nullptr;
      count = 0;
    }
    b->next = loaded;
    loaded = b;
    ++count;
  }
  Block* take() noexcept {
    if (loaded == nullptr) {
      if (spare != nullptr) {
        loaded = spare;
        spare = nullptr;
      } else {
        Depot& d = depot();
        // relaxed: a hint; a stale zero only means one fresh allocation, the lock decides.
        if (d.size.load(std::memory_order_relaxed) == 0) return nullptr;
        std::lock_guard<std::mutex> lock(d.mutex);  // guards batches
        if (d.batches.empty()) return nullptr;
        loaded = d.batches.back();
        d.batches.pop_back();
        d.size.store(d.batches.size(), std::memory_order_relaxed);  // a hint, see Depot::size
      }
      count = kTaskBatch;
    }
    Block* b = loaded;
    loaded = b->next;
    --count;
    return b;
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
  if (Block* b = t_cache.take()) return b;
  return ::operator new(kTaskBlockSize);
}

void free_task_block(void* block, std::size_t size) noexcept {
  if (block == nullptr) return;
  if (!kRecycle || size > kTaskBlockSize || t_cache_gone) {
    ::operator delete(block);
    return;
  }
  t_cache.put(static_cast<Block*>(block));
}

void fail_task_allocations_for_testing(int n) noexcept {
  g_fail_next.store(n < 0 ? 0 : n, std::memory_order_relaxed);  // a test hook, see maybe_fail
}

}  // namespace opweave
