// Resizing a pool while other threads use it (ThreadPool::resize, ThreadPool::Use).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/thread_pool.h"
#include "testing.h"
#include "wait_until.h"

using namespace opweave;
using opweave::testing::wait_until;
using opweave::testing::Watchdog;

namespace {

PoolOptions opts(int workers, const char* name = "rs") {
  PoolOptions o;
  o.num_workers = workers;
  o.name = name;
  o.spin_time_us = 20;
  return o;
}

// Runs `body(thread_index, rng)` on `users` threads in a loop while the calling thread resizes
// `pool` to random sizes 1..8 `resizes` times.
template <typename Body>
void hammer_while_resizing(ThreadPool& pool, int users, int resizes, Body body) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < users; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(t));
      // relaxed: a stop flag; the join below orders everything else.
      while (!stop.load(std::memory_order_relaxed)) body(t, rng);
    });
  }
  std::mt19937 rng(99);
  for (int i = 0; i < resizes; ++i) {
    pool.resize(1 + static_cast<int>(rng() % 8));
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
  }
  stop.store(true, std::memory_order_relaxed);  // see above
  for (auto& th : threads) th.join();
}

}  // namespace

OPWEAVE_TEST(parallel_for_loops_cover_every_index_once_while_another_thread_resizes) {
  Watchdog dog("parallel_for while resizing");
  ThreadPool pool(opts(3));
  std::atomic<int> bad{0};
  std::atomic<long> loops{0};
  hammer_while_resizing(pool, 3, 150, [&](int, std::mt19937_64& rng) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 5000);
    const std::int64_t grain = 1 + static_cast<std::int64_t>(rng() % 64);
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    parallel_for(&pool, 0, n, grain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        hits[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);  // a count
      }
    });
    for (auto& h : hits) {
      if (h.load(std::memory_order_relaxed) != 1) bad.fetch_add(1, std::memory_order_relaxed);
    }
    loops.fetch_add(1, std::memory_order_relaxed);  // a count
  });
  OPWEAVE_CHECK_EQ(bad.load(), 0);
  OPWEAVE_CHECK(loops.load() > 0);
  OPWEAVE_CHECK(pool.num_workers() >= 1);
}

OPWEAVE_TEST(nested_parallel_for_on_workers_survives_concurrent_resizes) {
  Watchdog dog("nested parallel_for while resizing");
  ThreadPool pool(opts(2));
  std::atomic<int> bad{0};
  hammer_while_resizing(pool, 2, 80, [&](int, std::mt19937_64& rng) {
    const std::int64_t outer = 2 + static_cast<std::int64_t>(rng() % 16);
    std::atomic<std::int64_t> sum{0};
    parallel_for(&pool, 0, outer, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        parallel_for(&pool, 0, 200, 7, [&](std::int64_t ib, std::int64_t ie) {
          sum.fetch_add(ie - ib, std::memory_order_relaxed);  // a count
        });
      }
    });
    if (sum.load() != outer * 200) bad.fetch_add(1, std::memory_order_relaxed);
  });
  OPWEAVE_CHECK_EQ(bad.load(), 0);
}

OPWEAVE_TEST(tasks_scheduled_from_outside_while_resizing_each_run_once_and_none_is_refused) {
  Watchdog dog("schedule while resizing");
  ThreadPool pool(opts(2));
  std::atomic<long> scheduled{0}, ran{0};
  std::atomic<int> refused{0};
  hammer_while_resizing(pool, 2, 100, [&](int, std::mt19937_64&) {
    try {
      pool.schedule([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });  // a count
      scheduled.fetch_add(1, std::memory_order_relaxed);                       // a count
    } catch (const OpError&) {
      refused.fetch_add(1, std::memory_order_relaxed);
    }
  });
  OPWEAVE_CHECK(wait_until([&] { return ran.load() == scheduled.load(); }));
  OPWEAVE_CHECK_EQ(refused.load(), 0);
}

OPWEAVE_TEST(resize_from_inside_a_parallel_for_on_the_callers_thread_is_refused_not_a_deadlock) {
  Watchdog dog("resize from inside a use");
  ThreadPool pool(opts(2));
  std::atomic<int> refused{0}, other{0};
  parallel_for(&pool, 0, 64, 1, [&](std::int64_t, std::int64_t) {
    try {
      pool.resize(3);
      other.fetch_add(1);
    } catch (const OpError& e) {
      if (e.code() == ErrorCode::kFailedPrecondition) refused.fetch_add(1);
    }
  });
  OPWEAVE_CHECK(refused.load() >= 1);
  OPWEAVE_CHECK_EQ(other.load(), 0);
  pool.resize(3);  // outside any use: fine
  OPWEAVE_CHECK_EQ(pool.num_workers(), 3);
}

OPWEAVE_TEST(a_use_held_across_calls_delays_a_resize_until_it_is_released) {
  Watchdog dog("explicit use");
  ThreadPool pool(opts(2));
  std::atomic<bool> resized{false};
  std::thread resizer;
  {
    ThreadPool::Use use(pool);
    OPWEAVE_CHECK(use.entered());
    resizer = std::thread([&] {
      pool.resize(4);
      resized.store(true, std::memory_order_release);  // the check below acquires
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    OPWEAVE_CHECK(!resized.load(std::memory_order_acquire));
    OPWEAVE_CHECK_EQ(pool.num_workers(), 2);  // still the old workers while we hold the use
    std::atomic<int> ran{0};
    pool.schedule([&ran] { ran.fetch_add(1); });  // a nested use of the same pool: no wait
    OPWEAVE_CHECK(wait_until([&] { return ran.load() == 1; }));
  }
  resizer.join();
  OPWEAVE_CHECK(resized.load(std::memory_order_acquire));
  OPWEAVE_CHECK_EQ(pool.num_workers(), 4);
}

OPWEAVE_TEST(work_nested_in_another_pool_runs_inline_instead_of_waiting_for_a_resize) {
  Watchdog dog("cross-pool nesting");
  ThreadPool a(opts(2, "a"));
  ThreadPool b(opts(2, "b"));
  std::atomic<int> bad{0};
  // Users of `a` run parallel_for on `b` from inside their chunks while `b` is resized; the
  // resizer of `b` itself sits inside a use of `a` part of the time.
  std::atomic<bool> stop{false};
  std::thread user([&] {
    while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a stop flag
      std::atomic<std::int64_t> sum{0};
      parallel_for(&a, 0, 8, 1, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
          parallel_for(&b, 0, 100, 3, [&](std::int64_t x, std::int64_t y) {
            sum.fetch_add(y - x, std::memory_order_relaxed);  // a count
          });
        }
      });
      if (sum.load() != 800) bad.fetch_add(1);
    }
  });
  std::mt19937 rng(7);
  const std::thread::id main_thread = std::this_thread::get_id();
  for (int i = 0; i < 60; ++i) {
    if (i % 2 == 0) {
      b.resize(1 + static_cast<int>(rng() % 4));
    } else {
      parallel_for(&a, 0, 2, 1, [&](std::int64_t, std::int64_t) {
        // Only on this thread (the user thread may help run this chunk too).
        if (std::this_thread::get_id() == main_thread) b.resize(1 + static_cast<int>(rng() % 4));
      });
    }
  }
  stop.store(true, std::memory_order_relaxed);  // see above
  user.join();
  OPWEAVE_CHECK_EQ(bad.load(), 0);
}

OPWEAVE_TEST(parallel_for_loops_keep_working_while_another_thread_changes_the_spin_time) {
  // set_spin_time_us rebuilds the workers like resize(): it must wait for the loops in flight
  // instead of swapping the workers under them.
  Watchdog dog("parallel_for while changing the spin time");
  ThreadPool pool(opts(3));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<long> loops{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 2; ++t) {
    users.emplace_back([&, t] {
      std::mt19937_64 rng(55 + static_cast<std::uint64_t>(t));
      while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a stop flag; join orders
        const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 4000);
        std::atomic<std::int64_t> covered{0};
        parallel_for(&pool, 0, n, 1 + static_cast<std::int64_t>(rng() % 32),
                     [&](std::int64_t b, std::int64_t e) {
                       covered.fetch_add(e - b, std::memory_order_relaxed);  // a count
                     });
        if (covered.load() != n) bad.fetch_add(1, std::memory_order_relaxed);
        loops.fetch_add(1, std::memory_order_relaxed);  // a count
      }
    });
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    pool.set_spin_time_us(static_cast<std::int64_t>(i % 3) * 10);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
  }
  stop.store(true, std::memory_order_relaxed);  // see above
  for (auto& th : users) th.join();
  OPWEAVE_CHECK_EQ(bad.load(), 0);
  OPWEAVE_CHECK(loops.load() > 0);
  OPWEAVE_CHECK_EQ(pool.num_workers(), 3);
  OPWEAVE_CHECK_EQ(pool.options().spin_time_us, 299 % 3 * 10);
}

OPWEAVE_TEST(set_spin_time_from_inside_a_parallel_for_is_refused_not_a_deadlock) {
  Watchdog dog("set_spin_time_us from inside a use");
  ThreadPool pool(opts(2));
  std::atomic<int> refused{0}, other{0};
  parallel_for(&pool, 0, 64, 1, [&](std::int64_t, std::int64_t) {
    try {
      pool.set_spin_time_us(5);
      other.fetch_add(1);
    } catch (const OpError& e) {
      if (e.code() == ErrorCode::kFailedPrecondition) refused.fetch_add(1);
    }
  });
  OPWEAVE_CHECK(refused.load() >= 1);
  OPWEAVE_CHECK_EQ(other.load(), 0);
  pool.set_spin_time_us(5);  // outside any use: fine
  OPWEAVE_CHECK_EQ(pool.options().spin_time_us, 5);
}

OPWEAVE_TEST(stats_keep_counting_across_resizes) {
  ThreadPool pool(opts(2));
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) pool.schedule([&ran] { ran.fetch_add(1); });
  OPWEAVE_CHECK(wait_until([&] { return ran.load() == 100; }));
  pool.resize(3);
  OPWEAVE_CHECK(pool.stats().tasks_run >= 100);
  pool.reset_stats();
  OPWEAVE_CHECK_EQ(pool.stats().tasks_run, 0u);
}

OPWEAVE_TEST_MAIN()
