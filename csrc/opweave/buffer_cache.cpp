#include "opweave/buffer_cache.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "opweave/fork_guard.h"
#include "opweave/sanitizers.h"

namespace opweave {
namespace {

constexpr int kClassesPerDoubling = 8;
constexpr int kMinLog2 = 16;  // log2(kMinCachedBytes)
static_assert(kMinCachedBytes == std::size_t{1} << kMinLog2);
constexpr int kClasses = (64 - kMinLog2) * kClassesPerDoubling;

// floor(log2(n)) for n > 0 (C++17 has no std::bit_width).
int floor_log2(std::size_t n) { return 63 - __builtin_clzll(static_cast<unsigned long long>(n)); }

int class_index(std::size_t size_class) {
  const int log2 = floor_log2(size_class);
  const int step = static_cast<int>(size_class >> (log2 - 3));  // 8..15 by construction
  return (log2 - kMinLog2) * kClassesPerDoubling + (step - kClassesPerDoubling);
}

std::size_t cap_from_environment(std::string* source) {
  if constexpr (kAddressSanitizer) {
    *source = "off under AddressSanitizer";
    return 0;
  }
  const char* text = std::getenv("OPWEAVE_BUFFER_CACHE_MB");
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    const long long mb = std::strtoll(text, &end, 10);
    if (*end == '\0' && mb >= 0 && mb <= (std::int64_t{1} << 40)) {
      *source = std::string("OPWEAVE_BUFFER_CACHE_MB=") + text;
      return static_cast<std::size_t>(mb) << 20;
    }
    *source = std::string("default; OPWEAVE_BUFFER_CACHE_MB='") + text +
              "' ignored (not a non-negative integer)";
    return kDefaultCapBytes;
  }
  *source = "default";
  return kDefaultCapBytes;
}

struct Cache {
  std::mutex mutex;
  std::size_t cap = 0;  // set once at load time, before any other thread exists
  std::string cap_source;
  // Everything below is guarded by mutex.
  std::vector<void*> free_blocks[kClasses];  // LIFO: the block freed last is the warmest
  std::size_t held = 0;
  std::size_t hits = 0;
  std::size_t misses = 0;
};

// Never destroyed: tensors held by Python objects may be freed during interpreter shutdown, after
// static destructors ran. Created at load time and its (leaf) mutex held across fork(), so a
// child finds it unlocked and consistent (fork_guard.h).
Cache* const g_cache = [] {
  auto* c = new Cache;
  c->cap = cap_from_environment(&c->cap_source);
  hold_across_fork(&c->mutex);
  return c;
}();

// Blocks of at least this size are placed on 2 MiB boundaries and offered transparent huge pages,
// as NumPy does for its arrays from 4 MiB: a kernel streaming through 16 MiB of 4 KiB pages misses
// the TLB on every page, which cost a copy or an element-wise op ~15% next to NumPy writing into
// huge pages (with the kernel's THP setting "madvise", the usual default, nothing else gets them).
constexpr std::size_t kHugeThreshold = std::size_t{4} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

void* system_allocate(std::size_t bytes) noexcept {
  if (bytes >= kHugeThreshold) {
    // aligned_alloc requires a multiple of the alignment.
    const std::size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Advice only: a failure (an old kernel, THP off) leaves ordinary pages, nothing else.
    if (p != nullptr) madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
  }
  // aligned_alloc requires a multiple of the alignment; size classes of cached blocks are.
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
}

}  // namespace

std::size_t buffer_size_class(std::size_t bytes) noexcept {
  if (bytes <= kMinCachedBytes) return kMinCachedBytes;
  const int log2 = floor_log2(bytes);
  const std::size_t step = std::size_t{1} << (log2 - 3);
  return (bytes + step - 1) / step * step;  // cannot overflow: the caller caps bytes far below
}

void* allocate_buffer(std::size_t bytes) noexcept {
  Cache& c = *g_cache;
  if (c.cap == 0 || bytes < kMinCachedBytes || bytes > c.cap) return system_allocate(bytes);
  const std::size_t size_class = buffer_size_class(bytes);
  {
    // The lock is held for a vector pop: nothing here waits, so it stays a leaf lock.
    std::lock_guard<std::mutex> lock(c.mutex);
    std::vector<void*>& list = c.free_blocks[class_index(size_class)];
    if (!list.empty()) {
      void* block = list.back();
      list.pop_back();
      c.held -= size_class;
      ++c.hits;
      return block;
    }
    ++c.misses;
  }
  if (void* block = system_allocate(size_class)) return block;
  // Out of memory: what the cache holds may be what the allocator is missing.
  empty_buffer_cache();
  return system_allocate(size_class);
}

void release_buffer(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  Cache& c = *g_cache;
  if (c.cap == 0 || bytes < kMinCachedBytes || bytes > c.cap) {
    std::free(block);
    return;
  }
  const std::size_t size_class = buffer_size_class(bytes);
  {
    // Leaf lock, see allocate_buffer. push_back may allocate (the list's storage), never wait.
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.held + size_class <= c.cap) {
      try {
        c.free_blocks[class_index(size_class)].push_back(block);
        c.held += size_class;
        return;
      } catch (...) {  // no memory for the list: free the block instead
      }
    }
  }
  std::free(block);
}

BufferCacheInfo buffer_cache_info() {
  Cache& c = *g_cache;
  std::lock_guard<std::mutex> lock(c.mutex);  // a consistent snapshot of the counters
  return {c.held, c.cap, c.cap_source, c.hits, c.misses};
}

std::size_t empty_buffer_cache() noexcept {
  Cache& c = *g_cache;
  std::vector<void*> blocks;
  std::size_t freed = 0;
  {
    // Leaf lock; the blocks are freed after it is released, so other threads wait for the
    // list walk only, not for free().
    std::lock_guard<std::mutex> lock(c.mutex);
    for (std::vector<void*>& list : c.free_blocks) {
      for (void* block : list) {
        try {
          blocks.push_back(block);
        } catch (...) {  // no memory for the snapshot: free under the lock instead
          std::free(block);
        }
      }
      list.clear();
    }
    freed = c.held;
    c.held = 0;
  }
  for (void* block : blocks) std::free(block);
  return freed;
}

}  // namespace opweave
