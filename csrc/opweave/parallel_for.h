// parallel_for / parallel_reduce on a ThreadPool.
//
// parallel_for splits lazily: the calling thread starts on the whole range and cuts off half of
// what it has left (pushed to the pool) only while some worker is idle and no earlier split is
// still waiting for it; otherwise it keeps working grain by grain. Every chunk task splits the
// same way, so the number of pieces follows the number of hungry workers, not the range size.
// The caller then helps (runs queued pool tasks) until every piece has finished, so a
// parallel_for inside a pool task, or one waiting on workers that themselves wait, never
// deadlocks. Thread-safe: any number of threads may run parallel_for on one pool at once.
//
//   parallel_for(pool, 0, n, /*grain=*/4096, [&](int64_t b, int64_t e) {
//     for (int64_t i = b; i < e; ++i) y[i] = 2 * x[i];
//   }, /*cost_per_element=*/1.0);
#pragma once

#include <cstdint>
#include <vector>

#include "opweave/function_ref.h"
#include "opweave/thread_pool.h"

namespace opweave {

// Runs fn(chunk_begin, chunk_end) over disjoint chunks covering [begin, end) exactly once, on the
// caller plus at most pool->num_workers() workers. grain: smallest chunk (values below 1 mean 1;
// a grain of half the range or more makes one chunk); every chunk boundary is begin + a multiple
// of grain (so blocked kernels get whole blocks), except end itself. Any int64 range works: one
// wider than INT64_MAX (begin < 0 < end) runs as consecutive parallel_for calls over pieces of at
// most INT64_MAX indices cut on the grain lattice, so e - b never overflows in fn (a piece's last
// chunk may then be shorter than grain).
// cost_per_element: CPU cycles one index costs (0 = unknown: only grain decides); a loop whose
// total cost is below kInlineCycles runs inline on the caller, and chunks are made at least
// kMinChunkCycles long. pool may be null (serial). The first exception thrown by fn is rethrown
// here after every started chunk has finished; once one was thrown, chunks not yet started are
// skipped. Safe to call from inside a pool worker (nested calls help, never deadlock). When the
// calling thread's cancellation flag (cancellation.h) is set, chunks not yet started are skipped
// too: the work of a cancelled run stops between pieces.
inline constexpr double kInlineCycles = 20000.0;  // ~ the cost of waking a parked worker, x3
inline constexpr double kMinChunkCycles = 10000.0;

void parallel_for(ThreadPool* pool, std::int64_t begin, std::int64_t end, std::int64_t grain,
                  FunctionRef<void(std::int64_t, std::int64_t)> fn, double cost_per_element = 0.0);

// Deterministic reduction: [begin, end) is cut into blocks of block_size (the last may be
// shorter; a block_size below 1 means 1) that depend only on the range; map(b, e) reduces one
// block; partials are combined in a fixed pairwise tree. The result is bit-identical for any pool
// size. Any int64 range works, as long as one partial per block fits in memory (else
// std::length_error or std::bad_alloc, before any map call).
template <typename T, typename Map, typename Combine>
T parallel_reduce(ThreadPool* pool, std::int64_t begin, std::int64_t end, std::int64_t block_size,
                  T identity, Map&& map, Combine&& combine, double cost_per_element = 0.0) {
  if (end <= begin) return identity;
  if (block_size < 1) block_size = 1;
  // Sizes and offsets in uint64: end - begin overflows int64 for ranges wider than INT64_MAX.
  const std::uint64_t size = static_cast<std::uint64_t>(end) - static_cast<std::uint64_t>(begin);
  const std::uint64_t block = static_cast<std::uint64_t>(block_size);
  // Throws std::length_error beyond max_size(), which also keeps nblocks within int64.
  std::vector<T> partial(static_cast<std::size_t>(size / block + (size % block != 0)), identity);
  const auto nblocks = static_cast<std::int64_t>(partial.size());
  parallel_for(
      pool, 0, nblocks, 1,
      [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          // begin + b * block_size computed modulo 2^64 (b * block_size alone may exceed
          // INT64_MAX); the sum lies in [begin, end), and GCC and Clang convert back modulo 2^64
          // (implementation-defined in C++17, the rule itself since C++20).
          const auto lo = static_cast<std::int64_t>(static_cast<std::uint64_t>(begin) +
                                                    static_cast<std::uint64_t>(b) * block);
          // end - lo > block_size, in uint64: lo + block_size is then < end and cannot overflow.
          const std::int64_t hi =
              static_cast<std::uint64_t>(end) - static_cast<std::uint64_t>(lo) > block
                  ? lo + block_size
                  : end;
          partial[static_cast<std::size_t>(b)] = map(lo, hi);
        }
      },
      cost_per_element * static_cast<double>(block_size));
  // Fixed pairwise tree over block indices: the shape depends only on nblocks.
  for (std::size_t width = 1; width < partial.size(); width *= 2) {
    for (std::size_t i = 0; i + width < partial.size(); i += 2 * width) {
      partial[i] = combine(partial[i], partial[i + width]);
    }
  }
  return partial[0];
}

}  // namespace opweave
