// parallel_for's chunk tracing (trace.h): a traced loop reports pieces that cover its range
// exactly once, from the threads that ran them; an untraced loop reports nothing.
#include <algorithm>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "opweave/parallel_for.h"
#include "opweave/trace.h"
#include "testing.h"

using namespace opweave;

namespace {

struct Recorder final : ChunkObserver {
  void on_chunk(const ChunkRecord& c) noexcept override {
    std::lock_guard<std::mutex> lock(mutex);  // chunks report from every pool thread at once
    chunks.push_back(c);
  }
  std::mutex mutex;
  std::vector<ChunkRecord> chunks;
};

// True when the chunks tile [begin, end) exactly: no gap, no overlap, no empty piece.
bool tiles(std::vector<ChunkRecord> chunks, std::int64_t begin, std::int64_t end) {
  std::sort(chunks.begin(), chunks.end(),
            [](const ChunkRecord& a, const ChunkRecord& b) { return a.begin < b.begin; });
  std::int64_t at = begin;
  for (const ChunkRecord& c : chunks) {
    if (c.begin != at || c.end <= c.begin) return false;
    at = c.end;
  }
  return at == end;
}

}  // namespace

OPWEAVE_TEST(traced_chunks_tile_the_range_for_random_ranges_grains_and_pool_sizes) {
  std::mt19937_64 rng(7);
  for (int workers = 0; workers <= 3; ++workers) {
    ThreadPool pool(PoolOptions{workers, "trace", 50, Affinity::kNone});
    const std::vector<long> workers_ids = pool.worker_thread_ids();
    std::set<long> allowed(workers_ids.begin(), workers_ids.end());
    allowed.insert(current_thread_id());
    for (int round = 0; round < 50; ++round) {
      const std::int64_t begin = static_cast<std::int64_t>(rng() % 100) - 50;
      const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 50000);
      const std::int64_t grain = 1 + static_cast<std::int64_t>(rng() % 300);
      Recorder rec;
      {
        ScopedChunkObserver scope(&rec);
        parallel_for(&pool, begin, begin + n, grain, [](std::int64_t b, std::int64_t e) {
          volatile double x = 0;
          for (std::int64_t i = b; i < e; ++i) x = x + static_cast<double>(i);
        });
      }
      OPWEAVE_CHECK(tiles(rec.chunks, begin, begin + n));
      for (const ChunkRecord& c : rec.chunks) {
        OPWEAVE_CHECK(allowed.count(c.thread_id) == 1);
        OPWEAVE_CHECK(c.start_nanos > 0 && c.start_nanos <= c.end_nanos);
      }
    }
  }
}

OPWEAVE_TEST(a_loop_split_over_the_pool_reports_chunks_from_a_worker) {
  ThreadPool pool(PoolOptions{1, "trace", 1000, Affinity::kNone});
  const long worker = pool.worker_thread_ids().at(0);
  bool seen = false;
  // Lazy splitting hands a piece to the worker only when it is idle at the right moment, so
  // try a few loops of ~1 ms each.
  for (int attempt = 0; attempt < 200 && !seen; ++attempt) {
    Recorder rec;
    {
      ScopedChunkObserver scope(&rec);
      parallel_for(&pool, 0, 1 << 16, 256, [](std::int64_t b, std::int64_t e) {
        volatile double x = 0;
        for (std::int64_t i = b; i < e; ++i) x = x + static_cast<double>(i) * 0.5;
      });
    }
    OPWEAVE_CHECK(tiles(rec.chunks, 0, 1 << 16));
    for (const ChunkRecord& c : rec.chunks) seen = seen || c.thread_id == worker;
  }
  OPWEAVE_CHECK(seen);
}

OPWEAVE_TEST(untraced_loops_and_loops_after_the_scope_report_nothing) {
  ThreadPool pool(PoolOptions{2, "trace", 50, Affinity::kNone});
  Recorder rec;
  auto body = [](std::int64_t, std::int64_t) {};
  parallel_for(&pool, 0, 100000, 10, body);
  OPWEAVE_CHECK(current_chunk_observer() == nullptr);
  {
    ScopedChunkObserver scope(&rec);
    OPWEAVE_CHECK(current_chunk_observer() == &rec);
  }
  OPWEAVE_CHECK(current_chunk_observer() == nullptr);
  parallel_for(&pool, 0, 100000, 10, body);
  OPWEAVE_CHECK(rec.chunks.empty());
}

OPWEAVE_TEST(nested_scopes_restore_the_outer_observer) {
  Recorder outer, inner;
  ScopedChunkObserver a(&outer);
  {
    ScopedChunkObserver b(&inner);
    parallel_for(nullptr, 0, 10, 1, [](std::int64_t, std::int64_t) {});
    ScopedChunkObserver off(nullptr);
    parallel_for(nullptr, 0, 10, 1, [](std::int64_t, std::int64_t) {});
  }
  parallel_for(nullptr, 0, 5, 1, [](std::int64_t, std::int64_t) {});
  OPWEAVE_CHECK_EQ(inner.chunks.size(), std::size_t{1});
  OPWEAVE_CHECK_EQ(outer.chunks.size(), std::size_t{1});
  OPWEAVE_CHECK_EQ(outer.chunks.at(0).end, std::int64_t{5});
}

OPWEAVE_TEST(a_loop_run_inline_is_one_chunk_on_the_caller) {
  ThreadPool pool(PoolOptions{2, "trace", 50, Affinity::kNone});
  Recorder rec;
  ScopedChunkObserver scope(&rec);
  // Below the inline threshold by its cost hint: the caller runs it alone.
  parallel_for(&pool, 3, 40, 1, [](std::int64_t, std::int64_t) {}, 1.0);
  OPWEAVE_CHECK_EQ(rec.chunks.size(), std::size_t{1});
  OPWEAVE_CHECK_EQ(rec.chunks.at(0).begin, std::int64_t{3});
  OPWEAVE_CHECK_EQ(rec.chunks.at(0).end, std::int64_t{40});
  OPWEAVE_CHECK_EQ(rec.chunks.at(0).thread_id, current_thread_id());
}

OPWEAVE_TEST(a_throwing_traced_loop_still_reports_and_rethrows) {
  ThreadPool pool(PoolOptions{2, "trace", 50, Affinity::kNone});
  for (std::int64_t n : {std::int64_t{5}, std::int64_t{100000}}) {
    Recorder rec;
    bool threw = false;
    try {
      ScopedChunkObserver scope(&rec);
      parallel_for(&pool, 0, n, 1, [](std::int64_t b, std::int64_t) {
        if (b == 0) throw std::runtime_error("first chunk fails");
      });
    } catch (const std::runtime_error&) {
      threw = true;
    }
    OPWEAVE_CHECK(threw);
    OPWEAVE_CHECK(!rec.chunks.empty());
  }
}

OPWEAVE_TEST_MAIN()
