// Task memory recycling: the pool's own Task objects (schedule()'s function wrapper, parallel_for
// chunks) come from fixed-size blocks that are recycled instead of going through the general
// allocator for every schedule().
//
//   struct MyTask final : Task {
//     static void* operator new(std::size_t size) { return allocate_task_block(size); }
//     static void operator delete(void* p, std::size_t size) { free_task_block(p, size); }
//   };
//
// Each thread keeps two magazines of up to kTaskBatch blocks (no atomics, no lock, no list walk).
// Tasks are usually created on one thread (a producer) and freed on another (the worker that ran
// them), so a thread with two full magazines hands one to a global depot (one mutex acquisition
// per batch), and a thread with none left takes a whole batch from there: the lock is taken once
// per kTaskBatch tasks, not per task. When the depot is empty too (a burst: every task created so
// far is still queued), a fresh slab of kSlabBlocks blocks comes from the allocator at once and
// fills the magazine, so a burst of N tasks costs N / (kSlabBlocks - 1) allocations, not N. The
// depot keeps at most kMaxDepotBatches batches; beyond that, blocks are released to their slab,
// and a slab goes back to the allocator when all its blocks were released. Under
// AddressSanitizer the blocks are plain new/delete, so use-after-free of a task is still caught.
#pragma once

#include <cstddef>

namespace opweave {

// Usable bytes of a block (each block is 64 bytes: 16 name its slab); larger objects use operator
// new.
inline constexpr std::size_t kTaskBlockSize = 48;
inline constexpr int kTaskBatch = 64;
inline constexpr int kMaxDepotBatches = 256;
inline constexpr int kSlabBlocks = 64;  // per allocation; the first holds the slab's header

// A block of at least `size` bytes (alignof(std::max_align_t)). Throws std::bad_alloc, also when
// a test asked for failures (fail_task_allocations_for_testing). Thread-safe.
void* allocate_task_block(std::size_t size);
// Gives back a block from allocate_task_block with the same size. Thread-safe, noexcept.
void free_task_block(void* block, std::size_t size) noexcept;

// Test hook: the next `n` calls to allocate_task_block (on any thread) throw std::bad_alloc.
// n = 0 cancels. Thread-safe.
void fail_task_allocations_for_testing(int n) noexcept;

}  // namespace opweave
