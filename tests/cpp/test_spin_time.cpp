// The spin time set at run time: explicit beats OPWEAVE_SPIN_TIME_US, existing global
// pools rebuild their workers, the first-Session rule applies only before the pools exist.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/pools/global_pools.h"
#include "testing.h"
#include "wait_until.h"

using namespace opweave;
using opweave::testing::wait_until;

OPWEAVE_TEST(configure_if_unset_applies_before_the_pools_exist_only) {
  unsetenv("OPWEAVE_SPIN_TIME_US");
  OPWEAVE_CHECK(configure_spin_time_if_unset(7, "ConfigProto.experimental.spin_time_us=7"));
  OPWEAVE_CHECK_EQ(global_intra_pool()->options().spin_time_us, 7);
  OPWEAVE_CHECK_EQ(runtime_info().spin_time_source,
                   std::string("ConfigProto.experimental.spin_time_us=7"));
  set_spin_time_us(-1, "");
  OPWEAVE_CHECK(!configure_spin_time_if_unset(9, "too late: the pools exist"));
  OPWEAVE_CHECK_EQ(runtime_info().spin_time_us, 50);
}

OPWEAVE_TEST(explicit_spin_time_rebuilds_existing_pools_and_shows_in_runtime_info) {
  setenv("OPWEAVE_SPIN_TIME_US", "123", 1);
  set_intra_op_parallelism(3, "test");
  ThreadPool* pool = global_intra_pool();
  set_spin_time_us(0, "test: never spin");
  OPWEAVE_CHECK_EQ(pool->options().spin_time_us, 0);
  OPWEAVE_CHECK_EQ(pool->num_workers(), 2);
  OPWEAVE_CHECK_EQ(global_inter_pool()->options().spin_time_us, 0);
  RuntimeInfo info = runtime_info();
  OPWEAVE_CHECK_EQ(info.spin_time_us, 0);
  OPWEAVE_CHECK_EQ(info.spin_time_source, std::string("test: never spin"));
  std::atomic<int> sum{0};
  parallel_for(pool, 0, 1000, 1, [&](std::int64_t b, std::int64_t e) {
    sum.fetch_add(static_cast<int>(e - b), std::memory_order_relaxed);
  });
  OPWEAVE_CHECK_EQ(sum.load(), 1000);
  set_spin_time_us(-1, "");  // back to the environment
  OPWEAVE_CHECK_EQ(pool->options().spin_time_us, 123);
  OPWEAVE_CHECK_EQ(runtime_info().spin_time_source, std::string("OPWEAVE_SPIN_TIME_US=123"));
}

OPWEAVE_TEST(spin_time_changes_while_other_threads_run_loops_wait_for_them_and_lose_no_index) {
  // A new spin time rebuilds the workers: between uses, like a resize (it used to stop the
  // workers under running loops, and hold the runtime lock while it joined them).
  set_intra_op_parallelism(3, "test");
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<long> loops{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 2; ++t) {
    users.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a stop flag
        std::vector<std::atomic<int>> hits(2000);
        parallel_for(global_intra_pool(), 0, 2000, 7, [&](std::int64_t b, std::int64_t e) {
          if (intra_op_parallelism() != 3) bad.fetch_add(1);  // reads the runtime's settings
          for (std::int64_t i = b; i < e; ++i) {
            hits[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);  // a count
          }
        });
        for (auto& h : hits) {
          if (h.load(std::memory_order_relaxed) != 1) bad.fetch_add(1);
        }
        loops.fetch_add(1, std::memory_order_relaxed);  // a count
      }
    });
  }
  std::atomic<bool> done{false};
  std::thread setter([&] {
    for (int i = 0; i < 40; ++i) set_spin_time_us(i % 2 == 0 ? 0 : 200, "test");
    done.store(true);
  });
  if (!wait_until([&] { return done.load(); })) {
    std::fprintf(stderr, "deadlock: set_spin_time_us while loops run\n");
    std::_Exit(1);
  }
  setter.join();
  stop.store(true, std::memory_order_relaxed);  // see above
  for (auto& u : users) u.join();
  OPWEAVE_CHECK_EQ(bad.load(), 0);
  OPWEAVE_CHECK(loops.load() > 0);
  OPWEAVE_CHECK_EQ(global_intra_pool()->options().spin_time_us, 200);
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 2);
  set_spin_time_us(-1, "");
}

OPWEAVE_TEST(a_spin_time_change_from_inside_a_global_pools_work_is_refused) {
  std::atomic<int> refused{0};
  std::atomic<bool> done{false};
  global_inter_pool()->schedule([&] {
    try {
      set_spin_time_us(0, "from a worker");
    } catch (const OpError& e) {
      refused.store(e.code() == ErrorCode::kFailedPrecondition ? 1 : 2);
    }
    done.store(true);
  });
  OPWEAVE_CHECK(wait_until([&] { return done.load(); }));
  OPWEAVE_CHECK_EQ(refused.load(), 1);
}

OPWEAVE_TEST_MAIN()
