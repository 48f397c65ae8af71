// Recycled memory for large tensor buffers.
//
// Why: glibc hands big freed blocks back to the kernel (blocks above its mmap threshold are
// unmapped, and free space above M_TRIM_THRESHOLD at the top of the heap is trimmed), so a graph
// that allocates the same intermediates on every run pays a page fault and a page clear per 4 KiB
// on every run: 1120 faults and ~25% of the time of one run of the built-in MLP towers. Freed
// buffers of at least kMinCachedBytes wait here instead, one LIFO list per size class, until a
// later allocation of the same class takes them; the total held is capped (OPWEAVE_BUFFER_CACHE_MB,
// default kDefaultCapBytes; 0 turns the cache off).
//
//   void* p = allocate_buffer(bytes);  // nullptr when the system is out of memory
//   ...
//   release_buffer(p, bytes);          // the same `bytes` as the allocation
//
// Under AddressSanitizer nothing is cached, so a use after free of a tensor is still caught.
// Blocks of 4 MiB and more start on 2 MiB boundaries and are offered transparent huge pages, as
// NumPy's arrays are (buffer_cache.cpp says why).
#pragma once

#include <cstddef>
#include <string>

namespace opweave {

inline constexpr std::size_t kMinCachedBytes = std::size_t{64} << 10;
inline constexpr std::size_t kDefaultCapBytes = std::size_t{256} << 20;

// A 64-byte-aligned block of at least `bytes` bytes, or nullptr when even after emptying the
// cache the allocator has none. Thread-safe.
void* allocate_buffer(std::size_t bytes) noexcept;
// Gives back a block from allocate_buffer(bytes). Thread-safe; may be called from any thread,
// also during static destruction (the cache is never destroyed).
void release_buffer(void* block, std::size_t bytes) noexcept;

struct BufferCacheInfo {
  std::size_t held_bytes = 0;  // freed blocks waiting for reuse
  std::size_t cap_bytes = 0;   // most it may hold; 0 = off
  std::string cap_source;      // "default", "OPWEAVE_BUFFER_CACHE_MB=64", ...
  std::size_t hits = 0;        // allocations served from the cache
  std::size_t misses = 0;      // cacheable allocations that went to the allocator
};
BufferCacheInfo buffer_cache_info();

// Frees every cached block; returns how many bytes that was. Thread-safe.
std::size_t empty_buffer_cache() noexcept;

// The size class a cacheable request of `bytes` is rounded up to (at most 1/8 larger), so blocks
// of nearly the same size are reused for each other. Exposed for tests.
std::size_t buffer_size_class(std::size_t bytes) noexcept;

}  // namespace opweave
