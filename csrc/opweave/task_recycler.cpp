#include "opweave/task_recycler.h"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#include "opweave/fork_guard.h"
#include "opweave/sanitizers.h"

namespace opweave {
namespace {

constexpr bool kRecycle = !kAddressSanitizer;  // so ASan still sees a use after free of a task

// A block is 64 bytes: this 16-byte prefix, then kTaskBlockSize bytes for the object (16-aligned,
// as the slab and every block start are). `next` links free blocks; the object never touches the
// prefix, so `slab` stays valid from the slab's creation until the block is released.
struct Slab;
struct Block {
  Slab* slab;
  Block* next;
};
constexpr std::size_t kBlockBytes = 64;
static_assert(sizeof(Block) + kTaskBlockSize == kBlockBytes, "prefix + payload = one block");
static_assert(alignof(std::max_align_t) <= sizeof(Block), "the payload keeps max alignment");

// kSlabBlocks blocks from one allocation; the first block's room holds this header: how many of
// the slab's blocks have not been released (are in use or cached). The last release frees it.
struct Slab {
  std::atomic<int> held{kSlabBlocks - 1};
};
static_assert(sizeof(Slab) <= kBlockBytes, "the header fits in the first block");

void* payload(Block* b) noexcept { return reinterpret_cast<char*>(b) + sizeof(Block); }
Block* block_of(void* p) noexcept {
  return reinterpret_cast<Block*>(static_cast<char*>(p) - sizeof(Block));
}

// A fresh slab; returns its kSlabBlocks - 1 blocks as a list. Throws std::bad_alloc.
Block* new_slab() {
  char* mem = static_cast<char*>(::operator new(kSlabBlocks * kBlockBytes));
  Slab* slab = new (mem) Slab;
  Block* list = nullptr;
  for (int i = kSlabBlocks - 1; i >= 1; --i) {
    list = new (mem + static_cast<std::size_t>(i) * kBlockBytes) Block{slab, list};
  }
  return list;
}

// `n` blocks of `slab` leave the recycler for good.
void release(Slab* slab, int n) noexcept {
  // acq_rel: every thread that used one of the slab's blocks releases its writes; the last one
  // acquires them all before freeing the memory.
  if (slab->held.fetch_sub(n, std::memory_order_acq_rel) == n) {
    slab->~Slab();
    ::operator delete(static_cast<void*>(slab));
  }
}

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
  // Releases every block of the list; one RMW per run of blocks from the same slab (a batch
  // freed in the order it was created is mostly such runs).
  static void free_list(Block* b) noexcept {
    while (b != nullptr) {
      Slab* slab = b->slab;
      int n = 0;
      while (b != nullptr && b->slab == slab) {
        ++n;
        b = b->next;  // read before release(): the slab may be freed there
      }
      release(slab, n);
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
  bool from_depot() noexcept {
    Depot& d = depot();
    // relaxed: a hint; a stale zero only means one fresh slab, the lock decides.
    if (d.size.load(std::memory_order_relaxed) == 0) return false;
    std::lock_guard<std::mutex> lock(d.mutex);  // guards batches
    if (d.batches.empty()) return false;
    loaded = d.batches.back();
    d.batches.pop_back();
    d.size.store(d.batches.size(), std::memory_order_relaxed);  // a hint, see Depot::size
    count = kTaskBatch;
    return true;
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
  // Throws std::bad_alloc (only when a fresh slab is needed).
  Block* take() {
    if (loaded == nullptr) {
      if (spare != nullptr) {
        loaded = spare;
        spare = nullptr;
        count = kTaskBatch;
      } else if (!from_depot()) {
        loaded = new_slab();
        count = kSlabBlocks - 1;
      }
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
  if (t_cache_gone) {
    // This thread's cache is destroyed (a task created during thread exit): a slab for one block.
    Block* list = new_slab();
    Block* b = list;
    Cache::free_list(list->next);
    return payload(b);
  }
  return payload(t_cache.take());
}

void free_task_block(void* block, std::size_t size) noexcept {
  if (block == nullptr) return;
  if (!kRecycle || size > kTaskBlockSize) {
    ::operator delete(block);
    return;
  }
  Block* b = block_of(block);
  if (t_cache_gone) {
    release(b->slab, 1);
    return;
  }
  t_cache.put(b);
}

void fail_task_allocations_for_testing(int n) noexcept {
  g_fail_next.store(n < 0 ? 0 : n, std::memory_order_relaxed);  // a test hook, see maybe_fail
}

}  // namespace opweave
