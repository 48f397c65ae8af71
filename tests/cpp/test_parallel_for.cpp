#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "opweave/cancellation.h"
#include "opweave/cpu_pressure.h"
#include "opweave/parallel_for.h"
#include "opweave/task_recycler.h"
#include "testing.h"
#include "wait_until.h"

using namespace opweave;
using opweave::testing::wait_until;
using opweave::testing::Watchdog;

namespace {

// A pool for "N threads" in the honest sense: the caller plus N - 1 workers.
ThreadPool make_pool(int threads, std::int64_t spin_us = 50) {
  PoolOptions o;
  o.num_workers = threads - 1;
  o.name = "pf";
  o.spin_time_us = spin_us;
  return ThreadPool(o);
}

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

using Chunks = std::vector<std::pair<std::int64_t, std::int64_t>>;

// The chunks parallel_for hands to fn, sorted by start. Aborts (failing the test binary at once)
// after far more calls than any correct split makes: an overflowing loop would never end.
Chunks chunks_of(ThreadPool* pool, std::int64_t begin, std::int64_t end, std::int64_t grain,
                 double cost_per_element = 0.0) {
  std::mutex mutex;
  Chunks chunks;
  parallel_for(
      pool, begin, end, grain,
      [&](std::int64_t b, std::int64_t e) {
        std::lock_guard<std::mutex> lock(mutex);  // guards chunks
        chunks.emplace_back(b, e);
        if (chunks.size() > 10000) {
          std::fprintf(
              stderr, "parallel_for(%lld, %lld, grain %lld): runaway, last chunk [%lld, %lld)\n",
              static_cast<long long>(begin), static_cast<long long>(end),
              static_cast<long long>(grain), static_cast<long long>(b), static_cast<long long>(e));
          std::abort();
        }
      },
      cost_per_element);
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

// Distance from a to b (a <= b) as unsigned: b - a itself overflows for wide ranges.
std::uint64_t width(std::int64_t a, std::int64_t b) {
  return static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
}

// The chunks cover [begin, end) exactly once, each is non-empty, no wider than INT64_MAX (so fn
// may compute e - b), and starts on the grain lattice begin + k * grain.
bool tiles_on_the_lattice(const Chunks& chunks, std::int64_t begin, std::int64_t end,
                          std::int64_t grain) {
  if (chunks.empty() || chunks.front().first != begin || chunks.back().second != end) return false;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    const auto [b, e] = chunks[i];
    if (b >= e || width(b, e) > static_cast<std::uint64_t>(kMax)) return false;
    if (width(begin, b) % static_cast<std::uint64_t>(grain) != 0) return false;
    if (i > 0 && chunks[i - 1].second != b) return false;
  }
  return true;
}

}  // namespace

OPWEAVE_TEST(a_grain_below_one_counts_as_one_and_a_grain_above_the_range_makes_one_chunk) {
  ThreadPool pool = make_pool(4);
  for (std::int64_t grain : {std::int64_t{0}, std::int64_t{-5}, kMin}) {
    const Chunks chunks = chunks_of(&pool, 0, 10, grain);
    OPWEAVE_CHECK(tiles_on_the_lattice(chunks, 0, 10, 1));
  }
  // 2 * grain overflows for the last three.
  for (std::int64_t grain :
       {std::int64_t{10}, std::int64_t{1} << 40, kMax / 2 + 1, kMax - 1, kMax}) {
    const Chunks chunks = chunks_of(&pool, 0, 10, grain);
    OPWEAVE_CHECK(chunks == (Chunks{{0, 10}}));
    OPWEAVE_CHECK(chunks_of(&pool, 0, 10, grain, /*cost_per_element=*/1e6) == (Chunks{{0, 10}}));
  }
}

OPWEAVE_TEST(ranges_up_to_the_whole_int64_line_are_tiled_on_the_grain_lattice_without_overflow) {
  ThreadPool pool = make_pool(4);
  struct Case {
    std::int64_t begin, end, grain;
    double cost;
  };
  const std::int64_t two62 = std::int64_t{1} << 62;
  for (const Case& c :
       {Case{0, kMax, two62, 0.0},  // n / 2 < grain: one chunk
        Case{0, kMax, kMax / 4, 0.0}, Case{0, kMax, std::int64_t{1} << 58, 1.0},
        Case{-two62, two62, std::int64_t{1} << 60, 0.0}, Case{kMax - 10, kMax, 3, 0.0},
        Case{kMin, kMin + 10, kMax, 0.0},
        // Wider than INT64_MAX: end - begin itself overflows.
        Case{kMin, kMax, kMax, 0.0}, Case{kMin, kMax, two62, 0.0},
        Case{kMin, kMax, 3 * (std::int64_t{1} << 60), 1.0}, Case{-2, kMax, kMax, 0.0}}) {
    const Chunks chunks = chunks_of(&pool, c.begin, c.end, c.grain, c.cost);
    const bool ok = tiles_on_the_lattice(chunks, c.begin, c.end, c.grain);
    if (!ok) {
      std::fprintf(stderr, "  [%lld, %lld) grain %lld: %zu chunks\n",
                   static_cast<long long>(c.begin), static_cast<long long>(c.end),
                   static_cast<long long>(c.grain), chunks.size());
    }
    OPWEAVE_CHECK(ok);
  }
  // One chunk when the range is shorter than two grains, as for small ranges.
  OPWEAVE_CHECK(chunks_of(&pool, 0, kMax, two62) == (Chunks{{0, kMax}}));
}

OPWEAVE_TEST(parallel_reduce_blocks_ranges_up_to_the_whole_int64_line_without_overflow) {
  ThreadPool pool = make_pool(3);
  struct Case {
    std::int64_t begin, end, block;
    std::uint64_t blocks;
  };
  const std::int64_t two62 = std::int64_t{1} << 62;
  for (const Case& c :
       {Case{kMin, kMax, two62, 4},                     // the size overflows int64
        Case{kMax - 10, kMax, kMax, 1},                 // lo + block overflows
        Case{kMin, kMax, kMax, 3}, Case{0, 10, 0, 10},  // a block size below one counts as one
        Case{0, 10, -3, 10}}) {
    struct Partial {
      std::uint64_t covered = 0, blocks = 0, off_lattice = 0;
    };
    const Partial got = parallel_reduce(
        &pool, c.begin, c.end, c.block, Partial{},
        [&](std::int64_t lo, std::int64_t hi) {
          const std::uint64_t step = static_cast<std::uint64_t>(std::max<std::int64_t>(1, c.block));
          Partial p;
          p.covered = lo < hi ? width(lo, hi) : 0;
          p.blocks = 1;
          p.off_lattice = width(c.begin, lo) % step != 0 || lo >= hi || hi > c.end;
          return p;
        },
        [](const Partial& a, const Partial& b) {
          return Partial{a.covered + b.covered, a.blocks + b.blocks, a.off_lattice + b.off_lattice};
        });
    OPWEAVE_CHECK_EQ(got.covered, width(c.begin, c.end));
    OPWEAVE_CHECK_EQ(got.blocks, c.blocks);
    OPWEAVE_CHECK_EQ(got.off_lattice, 0u);
  }
}

OPWEAVE_TEST(
    every_index_is_covered_once_by_grain_aligned_chunks_for_random_ranges_and_1_to_8_threads) {
  std::mt19937_64 rng(42);
  for (int threads = 1; threads <= 8; ++threads) {
    ThreadPool pool = make_pool(threads);
    for (int round = 0; round < 40; ++round) {
      const std::int64_t begin = static_cast<std::int64_t>(rng() % 2000) - 1000;
      const std::int64_t n = static_cast<std::int64_t>(rng() % 20000);
      const std::int64_t grain = 1 + static_cast<std::int64_t>(rng() % (round % 2 ? 7 : 700));
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> out_of_range{0}, short_chunks{0}, off_lattice{0};
      parallel_for(&pool, begin, begin + n, grain, [&](std::int64_t b, std::int64_t e) {
        if (b < begin || e > begin + n || b >= e) out_of_range.fetch_add(1);
        if (e - b < std::min(grain, n)) short_chunks.fetch_add(1);
        if ((b - begin) % grain != 0) off_lattice.fetch_add(1);
        for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i - begin)]++;
      });
      int wrong = 0;
      for (auto& h : hits) wrong += h.load() != 1;
      OPWEAVE_CHECK_EQ(wrong, 0);
      OPWEAVE_CHECK_EQ(out_of_range.load(), 0);
      OPWEAVE_CHECK_EQ(short_chunks.load(), 0);  // grain is the smallest chunk
      OPWEAVE_CHECK_EQ(off_lattice.load(), 0);   // chunks start at begin + k * grain
    }
  }
}

OPWEAVE_TEST(a_cancelled_loop_skips_the_pieces_not_yet_started) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool = make_pool(threads);
    std::atomic<bool> cancelled{false};
    std::atomic<int> pieces{0};
    {
      const ScopedCancellation scope(&cancelled);
      // The first piece to run cancels: only the pieces already started by then (at most one
      // per thread) run, however many the range holds.
      parallel_for(&pool, 0, 10000, 1, [&](std::int64_t, std::int64_t) {
        pieces.fetch_add(1, std::memory_order_relaxed);
        cancelled.store(true, std::memory_order_relaxed);
      });
    }
    OPWEAVE_CHECK(pieces.load() <= threads);
    // Without a flag installed (the scope ended) the same loop covers the whole range.
    std::atomic<std::int64_t> covered{0};
    parallel_for(&pool, 0, 10000, 1,
                 [&](std::int64_t b, std::int64_t e) { covered.fetch_add(e - b); });
    OPWEAVE_CHECK_EQ(covered.load(), 10000);
  }
}

OPWEAVE_TEST(empty_and_reversed_ranges_call_nothing) {
  ThreadPool pool = make_pool(4);
  int calls = 0;
  parallel_for(&pool, 5, 5, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  parallel_for(&pool, 5, 2, 1, [&](std::int64_t, std::int64_t) { ++calls; });
  OPWEAVE_CHECK_EQ(calls, 0);
}

OPWEAVE_TEST(chunks_run_on_several_threads_at_once_but_never_more_than_n) {
  for (int threads : {2, 4}) {
    ThreadPool pool = make_pool(threads);
    std::mutex mutex;
    std::set<std::thread::id> seen;
    std::atomic<int> running{0}, max_running{0};
    std::atomic<bool> gave_up{false};
    // Each index waits until two threads have been seen: a serial loop would never finish.
    parallel_for(&pool, 0, 64, 1, [&](std::int64_t, std::int64_t) {
      const int now = running.fetch_add(1) + 1;
      int prev = max_running.load();
      while (now > prev && !max_running.compare_exchange_weak(prev, now)) {
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        seen.insert(std::this_thread::get_id());
      }
      if (!wait_until([&] {
            std::lock_guard<std::mutex> lock(mutex);
            return seen.size() >= 2;
          })) {
        gave_up.store(true);
      }
      running.fetch_sub(1);
    });
    OPWEAVE_CHECK(!gave_up.load());
    OPWEAVE_CHECK(seen.size() >= 2);
    OPWEAVE_CHECK(static_cast<int>(seen.size()) <= threads);
    OPWEAVE_CHECK(max_running.load() <= threads);
  }
}

// cpu_pressure.h: a loop started while every CPU runs a kernel stays on its calling thread, even
// with idle workers; once a CPU is free it splits again.
OPWEAVE_TEST(a_loop_does_not_split_while_every_cpu_runs_a_kernel) {
  const int budget = cpu_budget();
  set_cpu_budget(2);
  ThreadPool pool = make_pool(4);
  const auto caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  auto loop = [&] {
    parallel_for(&pool, 0, 200, 1, [&](std::int64_t, std::int64_t) {
      if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
  };
  {
    const RunningKernel first, second;
    loop();
    OPWEAVE_CHECK_EQ(elsewhere.load(), 0);
  }
  {
    const RunningKernel only;  // one CPU of two is free
    loop();
    OPWEAVE_CHECK(elsewhere.load() > 0);
  }
  set_cpu_budget(budget);
}

OPWEAVE_TEST(the_calling_thread_runs_a_share) {
  ThreadPool pool = make_pool(4);
  std::atomic<int> on_caller{0};
  const auto caller = std::this_thread::get_id();
  parallel_for(&pool, 0, 1000, 1, [&](std::int64_t b, std::int64_t e) {
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(static_cast<int>(e - b));
  });
  OPWEAVE_CHECK(on_caller.load() > 0);
}

// 22 indices at grain 6 with one idle worker: the caller hands off [12, 22), not [6, 22) (the
// old round-down split, which left the caller a quarter of the work and the worker a range it
// could not split again). The caller's first chunk waits for the worker to start, so the caller
// cannot take the handed-off piece back itself.
OPWEAVE_TEST(a_split_hands_off_the_grain_aligned_half_nearest_the_middle) {
  ThreadPool pool = make_pool(2);
  const auto caller = std::this_thread::get_id();
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, std::int64_t>> on_worker;  // guarded by mutex
  std::atomic<bool> worker_started{false};
  parallel_for(&pool, 0, 22, 6, [&](std::int64_t b, std::int64_t e) {
    if (std::this_thread::get_id() != caller) {
      worker_started.store(true);
      std::lock_guard<std::mutex> lock(mutex);  // guards on_worker
      on_worker.emplace_back(b, e);
    } else if (b == 0) {
      OPWEAVE_CHECK(wait_until([&] { return worker_started.load(); }));
    }
  });
  std::lock_guard<std::mutex> lock(mutex);  // guards on_worker
  OPWEAVE_CHECK_EQ(on_worker.size(), 1u);
  OPWEAVE_CHECK(on_worker[0] == std::make_pair(std::int64_t{12}, std::int64_t{22}));
}

OPWEAVE_TEST(nested_parallel_for_covers_everything_for_1_to_8_threads) {
  for (int threads = 1; threads <= 8; ++threads) {
    ThreadPool pool = make_pool(threads);
    const int outer = 16, inner = 3000;
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(outer * inner));
    parallel_for(&pool, 0, outer, 1, [&](std::int64_t ob, std::int64_t oe) {
      for (std::int64_t o = ob; o < oe; ++o) {
        parallel_for(&pool, 0, inner, 7, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(o * inner + i)]++;
        });
      }
    });
    int wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    OPWEAVE_CHECK_EQ(wrong, 0);
  }
}

// Every worker of an "inter-op" pool blocks in a parallel_for on a small "intra-op" pool, and
// every intra worker is itself inside a nested loop: waiting threads must help, not block.
OPWEAVE_TEST(parallel_for_from_every_worker_of_another_pool_does_not_deadlock) {
  for (int intra_threads : {1, 2, 3}) {
    ThreadPool intra = make_pool(intra_threads);
    PoolOptions o;
    o.num_workers = 4;
    o.name = "inter";
    ThreadPool inter(o);
    std::atomic<int> done{0};
    std::atomic<long> sum{0};
    for (int t = 0; t < 8; ++t) {
      inter.schedule([&] {
        parallel_for(&intra, 0, 200, 1, [&](std::int64_t b, std::int64_t e) {
          parallel_for(&intra, 0, 50, 1, [&](std::int64_t ib, std::int64_t ie) {
            sum.fetch_add((e - b) * (ie - ib));
          });
        });
        done.fetch_add(1);
      });
    }
    OPWEAVE_CHECK(wait_until([&] { return done.load() == 8; }));
    OPWEAVE_CHECK_EQ(sum.load(), 8L * 200 * 50);
  }
}

OPWEAVE_TEST(the_first_exception_is_rethrown_after_every_chunk_finished) {
  for (int threads = 1; threads <= 8; threads *= 2) {
    ThreadPool pool = make_pool(threads);
    std::atomic<int> in_flight{0};
    bool caught = false;
    try {
      parallel_for(&pool, 0, 10000, 10, [&](std::int64_t b, std::int64_t e) {
        in_flight.fetch_add(1);
        std::this_thread::yield();
        if (b <= 5000 && 5000 < e) {
          in_flight.fetch_sub(1);
          throw std::runtime_error("index 5000");
        }
        if (b <= 7000 && 7000 < e) {
          in_flight.fetch_sub(1);
          throw std::logic_error("index 7000");
        }
        in_flight.fetch_sub(1);
      });
    } catch (const std::runtime_error& e) {
      caught = std::strcmp(e.what(), "index 5000") == 0;
    } catch (const std::logic_error& e) {
      caught = std::strcmp(e.what(), "index 7000") == 0;
    }
    OPWEAVE_CHECK(caught);
    OPWEAVE_CHECK_EQ(in_flight.load(), 0);  // nothing still runs once the caller sees the error
    // The pool stays usable.
    std::atomic<int> covered{0};
    parallel_for(&pool, 0, 100, 1, [&](std::int64_t b, std::int64_t e) {
      covered.fetch_add(static_cast<int>(e - b));
    });
    OPWEAVE_CHECK_EQ(covered.load(), 100);
  }
}

OPWEAVE_TEST(a_cheap_loop_runs_inline_in_one_call_on_the_caller) {
  ThreadPool pool = make_pool(4);
  int calls = 0;
  std::int64_t first = -1, last = -1;
  std::thread::id who;
  parallel_for(
      &pool, 0, 1000, 1,
      [&](std::int64_t b, std::int64_t e) {
        ++calls;
        first = b;
        last = e;
        who = std::this_thread::get_id();
      },
      /*cost_per_element=*/2.0);
  OPWEAVE_CHECK_EQ(calls, 1);
  OPWEAVE_CHECK_EQ(first, 0);
  OPWEAVE_CHECK_EQ(last, 1000);
  OPWEAVE_CHECK(who == std::this_thread::get_id());
}

OPWEAVE_TEST(the_cost_hint_coarsens_chunks_to_whole_grains_of_min_chunk_cycles) {
  ThreadPool pool = make_pool(4);
  std::atomic<std::int64_t> smallest{1 << 30};
  std::atomic<int> off_lattice{0};
  const double cost = 100.0;  // cycles per index: chunks of >= 100 indices
  const std::int64_t grain = 7;
  parallel_for(
      &pool, 3, 100003, grain,
      [&](std::int64_t b, std::int64_t e) {
        if ((b - 3) % grain != 0) off_lattice.fetch_add(1);
        std::int64_t prev = smallest.load();
        while (e - b < prev && !smallest.compare_exchange_weak(prev, e - b)) {
        }
      },
      cost);
  OPWEAVE_CHECK(smallest.load() >= static_cast<std::int64_t>(kMinChunkCycles / cost));
  OPWEAVE_CHECK_EQ(off_lattice.load(), 0);
}

OPWEAVE_TEST(a_null_pool_or_no_workers_runs_serially_on_the_caller) {
  ThreadPool none = make_pool(1);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &none}) {
    std::set<std::thread::id> seen;
    std::int64_t covered = 0;
    parallel_for(pool, 0, 5000, 3, [&](std::int64_t b, std::int64_t e) {
      seen.insert(std::this_thread::get_id());
      covered += e - b;
    });
    OPWEAVE_CHECK_EQ(covered, 5000);
    OPWEAVE_CHECK(seen.size() == 1 && *seen.begin() == std::this_thread::get_id());
  }
}

OPWEAVE_TEST(parallel_reduce_is_bit_identical_for_1_to_8_threads) {
  std::mt19937_64 rng(7);
  std::vector<double> x(100003);
  // Mixed magnitudes: a different summation order would change the low bits.
  for (auto& v : x)
    v = std::ldexp(static_cast<double>(rng() % 1000000) - 500000.0,
                   static_cast<int>(rng() % 60) - 30);
  auto reduce = [&](ThreadPool* pool) {
    return parallel_reduce(
        pool, 0, static_cast<std::int64_t>(x.size()), 1000, 0.0,
        [&](std::int64_t b, std::int64_t e) {
          double s = 0;
          for (std::int64_t i = b; i < e; ++i) s += x[static_cast<std::size_t>(i)];
          return s;
        },
        [](double a, double b) { return a + b; });
  };
  const double serial = reduce(nullptr);
  for (int threads = 1; threads <= 8; ++threads) {
    ThreadPool pool = make_pool(threads);
    for (int round = 0; round < 5; ++round) {
      const double got = reduce(&pool);
      OPWEAVE_CHECK(std::memcmp(&got, &serial, sizeof(double)) == 0);
    }
  }
}

OPWEAVE_TEST(many_threads_can_share_one_pool_at_once) {
  ThreadPool pool = make_pool(3);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int r = 0; r < 20; ++r) {
        parallel_for(&pool, 0, 1000, 4,
                     [&](std::int64_t b, std::int64_t e) { total.fetch_add(e - b); });
      }
    });
  }
  for (auto& c : callers) c.join();
  OPWEAVE_CHECK_EQ(total.load(), 4L * 20 * 1000);
}

OPWEAVE_TEST(a_split_whose_task_cannot_be_allocated_runs_inline_and_covers_every_index_once) {
  for (int threads : {2, 4}) {
    ThreadPool pool = make_pool(threads);
    for (int fail : {1, 3, 1000}) {
      for (int round = 0; round < 20; ++round) {
        const std::int64_t n = 3000;
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        fail_task_allocations_for_testing(fail);
        // Nested too: the inner loops split on workers, where a failed split used to leave the
        // caller waiting forever.
        parallel_for(&pool, 0, n / 100, 1, [&](std::int64_t ob, std::int64_t oe) {
          for (std::int64_t o = ob; o < oe; ++o) {
            parallel_for(&pool, o * 100, (o + 1) * 100, 3, [&](std::int64_t b, std::int64_t e) {
              for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
            });
          }
        });
        fail_task_allocations_for_testing(0);
        int wrong = 0;
        for (auto& h : hits) wrong += h.load() != 1;
        OPWEAVE_CHECK_EQ(wrong, 0);
      }
    }
  }
}

OPWEAVE_TEST(schedule_whose_task_cannot_be_allocated_throws_bad_alloc_and_the_pool_keeps_working) {
  ThreadPool pool = make_pool(3);
  fail_task_allocations_for_testing(1);
  bool threw = false;
  try {
    pool.schedule([] {});
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  OPWEAVE_CHECK(threw);
  std::atomic<int> ran{0};
  for (int i = 0; i < 1000; ++i) pool.schedule([&ran] { ran.fetch_add(1); });
  OPWEAVE_CHECK(wait_until([&] { return ran.load() == 1000; }));
}

OPWEAVE_TEST(a_parallel_for_on_a_shut_down_pool_runs_on_the_caller) {
  ThreadPool pool = make_pool(3);
  pool.shutdown();
  std::atomic<std::int64_t> sum{0};
  parallel_for(&pool, 0, 10000, 10, [&](std::int64_t b, std::int64_t e) { sum.fetch_add(e - b); });
  OPWEAVE_CHECK_EQ(sum.load(), 10000);
}

OPWEAVE_TEST(shutdown_while_parallel_for_loops_run_still_runs_every_chunk_of_them) {
  // A running loop's chunks are tasks its caller waits for (Task::must_run): shutdown, even one
  // that drops pending work, runs them; loops that start after it run on their callers. A dropped
  // chunk would leave its caller waiting forever: the watchdog turns that into a failure.
  Watchdog dog("parallel_for loops racing a shutdown");
  for (int round = 0; round < 20; ++round) {
    ThreadPool pool = make_pool(4, /*spin_us=*/20);
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    std::atomic<long> loops{0};
    std::vector<std::thread> users;
    for (int u = 0; u < 2; ++u) {
      users.emplace_back([&] {
        while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a stop flag; join orders
          const std::int64_t n = 4000;
          std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
          parallel_for(&pool, 0, n, 3, [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
            std::this_thread::yield();  // keep chunks in flight while shutdown runs
          });
          for (auto& h : hits) bad.fetch_add(h.load() != 1);
          loops.fetch_add(1);
        }
      });
    }
    OPWEAVE_CHECK(wait_until([&] { return loops.load() >= 1; }));
    pool.shutdown(/*run_pending=*/round % 2 == 1);
    const long after = loops.load();
    OPWEAVE_CHECK(wait_until([&] { return loops.load() >= after + 2; }));  // still working
    stop.store(true, std::memory_order_relaxed);                           // see above
    for (auto& t : users) t.join();
    OPWEAVE_CHECK_EQ(bad.load(), 0);
    OPWEAVE_CHECK_EQ(pool.num_workers(), 0);
  }
}

OPWEAVE_TEST_MAIN()
