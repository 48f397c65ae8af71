// parallel_for / parallel_reduce on a ThreadPool.
//
// PLACEHOLDER (serial) until the foundation issue lands; the signatures are the contract.
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
// caller plus at most pool->num_workers() workers. grain: smallest chunk. cost_per_element: CPU
// cycles one index costs (0 = unknown: only grain decides); loops too small to pay for a fork run
// inline. pool may be null (serial). The first exception thrown by fn is rethrown here after every
// started chunk has finished. Safe to call from inside a pool worker (nested calls help, never
// deadlock).
void parallel_for(ThreadPool* pool, std::int64_t begin, std::int64_t end, std::int64_t grain,
                  FunctionRef<void(std::int64_t, std::int64_t)> fn, double cost_per_element = 0.0);

// Deterministic reduction: [begin, end) is cut into blocks of block_size (the last may be
// shorter) that depend only on the range; map(b, e) reduces one block; partials are combined in a
// fixed pairwise tree. The result is bit-identical for any pool size.
template <typename T, typename Map, typename Combine>
T parallel_reduce(ThreadPool* pool, std::int64_t begin, std::int64_t end, std::int64_t block_size,
                  T identity, Map&& map, Combine&& combine, double cost_per_element = 0.0) {
  if (end <= begin) return identity;
  if (block_size < 1) block_size = 1;
  const std::int64_t nblocks = (end - begin + block_size - 1) / block_size;
  std::vector<T> partial(static_cast<std::size_t>(nblocks), identity);
  parallel_for(
      pool, 0, nblocks, 1,
      [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          const std::int64_t lo = begin + b * block_size;
          const std::int64_t hi = lo + block_size < end ? lo + block_size : end;
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
