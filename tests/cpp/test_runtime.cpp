#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/pools/global_pools.h"
#include "testing.h"
#include "wait_until.h"

using namespace opweave;
using opweave::testing::wait_until;

// Tests run in order in one process: the global pools persist between them.

OPWEAVE_TEST(environment_sizes_pools_until_an_explicit_size_is_set) {
  setenv("OPWEAVE_NUM_INTRAOP_THREADS", "3", 1);
  setenv("OMP_NUM_THREADS", "5", 1);
  setenv("OPWEAVE_NUM_INTEROP_THREADS", "2", 1);
  OPWEAVE_CHECK_EQ(intra_op_parallelism(), 3);
  OPWEAVE_CHECK_EQ(intra_op_parallelism_source(), std::string("OPWEAVE_NUM_INTRAOP_THREADS=3"));
  OPWEAVE_CHECK_EQ(inter_op_parallelism(), 2);
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 2);  // the caller is the third thread
  OPWEAVE_CHECK_EQ(global_inter_pool()->num_workers(), 2);

  unsetenv("OPWEAVE_NUM_INTRAOP_THREADS");
  set_intra_op_parallelism(0);  // back to the rules: OMP_NUM_THREADS is next
  OPWEAVE_CHECK_EQ(intra_op_parallelism(), 5);
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 4);

  set_intra_op_parallelism(2, "test");
  OPWEAVE_CHECK_EQ(intra_op_parallelism(), 2);
  OPWEAVE_CHECK_EQ(intra_op_parallelism_source(), std::string("test"));
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 1);
  unsetenv("OMP_NUM_THREADS");
  unsetenv("OPWEAVE_NUM_INTEROP_THREADS");
}

OPWEAVE_TEST(a_later_session_config_is_reported_not_applied) {
  const ParallelismInEffect eff = configure_parallelism_if_unset(7, 7, "ConfigProto");
  OPWEAVE_CHECK(!eff.intra_applied);
  OPWEAVE_CHECK(!eff.inter_applied);
  OPWEAVE_CHECK_EQ(eff.intra, 2);
  OPWEAVE_CHECK_EQ(eff.intra_source, std::string("test"));
}

OPWEAVE_TEST(one_thread_per_op_means_no_intra_workers_and_serial_loops) {
  set_intra_op_parallelism(1, "test");
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 0);
  std::int64_t covered = 0;  // plain: a serial loop touches it from one thread only
  parallel_for(global_intra_pool(), 0, 1000, 1,
               [&](std::int64_t b, std::int64_t e) { covered += e - b; });
  OPWEAVE_CHECK_EQ(covered, 1000);
}

OPWEAVE_TEST(resizing_from_a_worker_of_that_pool_is_refused_and_changes_nothing) {
  set_inter_op_parallelism(2, "test");
  std::atomic<int> refused{0};
  std::atomic<bool> done{false};
  global_inter_pool()->schedule([&] {
    try {
      set_inter_op_parallelism(3, "from a worker");
    } catch (const OpError& e) {
      refused.store(e.code() == ErrorCode::kFailedPrecondition ? 1 : 2);
    }
    done.store(true);
  });
  OPWEAVE_CHECK(wait_until([&] { return done.load(); }));
  OPWEAVE_CHECK_EQ(refused.load(), 1);
  OPWEAVE_CHECK_EQ(inter_op_parallelism(), 2);
  OPWEAVE_CHECK_EQ(inter_op_parallelism_source(), std::string("test"));
}

OPWEAVE_TEST(a_saved_setting_is_restored_whole_size_source_and_provenance) {
  set_intra_op_parallelism(3, "saved call");
  const ParallelismSetting saved = intra_op_parallelism_setting();
  OPWEAVE_CHECK_EQ(saved.size, 3);
  OPWEAVE_CHECK_EQ(saved.source, std::string("saved call"));
  OPWEAVE_CHECK(saved.fixed);
  OPWEAVE_CHECK_EQ(saved.requested, 3);
  set_intra_op_parallelism(5, "inside the block");
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 4);
  restore_intra_op_parallelism(saved);
  const ParallelismSetting now = intra_op_parallelism_setting();
  OPWEAVE_CHECK_EQ(now.size, 3);
  OPWEAVE_CHECK_EQ(now.source, std::string("saved call"));
  OPWEAVE_CHECK(now.fixed);
  OPWEAVE_CHECK_EQ(now.requested, 3);
  OPWEAVE_CHECK_EQ(global_intra_pool()->num_workers(), 2);

  set_inter_op_parallelism(0);  // the system picks: not fixed, nothing requested
  const ParallelismSetting system = inter_op_parallelism_setting();
  OPWEAVE_CHECK(!system.fixed);
  OPWEAVE_CHECK_EQ(system.requested, 0);
  set_inter_op_parallelism(4, "block");
  restore_inter_op_parallelism(system);
  const ParallelismSetting back = inter_op_parallelism_setting();
  OPWEAVE_CHECK_EQ(back.size, system.size);
  OPWEAVE_CHECK_EQ(back.source, system.source);
  OPWEAVE_CHECK(!back.fixed);
  OPWEAVE_CHECK_EQ(back.requested, 0);
  OPWEAVE_CHECK_EQ(global_inter_pool()->num_workers(), system.size);

  ParallelismSetting bad = saved;
  bad.size = 0;
  OPWEAVE_CHECK_THROWS(restore_intra_op_parallelism(bad));
  set_intra_op_parallelism(0);
}

OPWEAVE_TEST(a_set_from_inside_the_pool_while_another_thread_resizes_it_is_refused_not_a_deadlock) {
  // The resizer waits for the pool's work; that work asking to resize the same pool must be told
  // at once, not queue behind the resizer (which waits for it).
  set_inter_op_parallelism(2, "test");
  std::atomic<bool> entered{false}, resizer_started{false}, task_done{false}, resized{false};
  std::atomic<int> refused{0};
  global_inter_pool()->schedule([&] {
    entered.store(true);
    while (!resizer_started.load()) std::this_thread::yield();
    // Let the resizer take the pool's resize lock and start waiting for this task (not a timing
    // assertion: with less time the task may just win the race, and the check still holds).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    try {
      set_inter_op_parallelism(1, "from the pool's own work");
    } catch (const OpError& e) {
      refused.store(e.code() == ErrorCode::kFailedPrecondition ? 1 : 2);
    }
    task_done.store(true);
  });
  OPWEAVE_CHECK(wait_until([&] { return entered.load(); }));
  std::thread resizer([&] {
    resizer_started.store(true);
    set_inter_op_parallelism(3, "resizer");
    resized.store(true);
  });
  if (!wait_until([&] { return task_done.load() && resized.load(); })) {
    std::fprintf(stderr, "deadlock: a set from the pool's work waits for the resizer\n");
    std::_Exit(1);  // the threads cannot be joined
  }
  resizer.join();
  OPWEAVE_CHECK_EQ(refused.load(), 1);
  OPWEAVE_CHECK_EQ(inter_op_parallelism(), 3);
  OPWEAVE_CHECK_EQ(inter_op_parallelism_source(), std::string("resizer"));
  OPWEAVE_CHECK_EQ(global_inter_pool()->num_workers(), 3);
}

OPWEAVE_TEST(negative_or_huge_sizes_are_invalid_argument) {
  for (int n : {-1, kMaxThreads + 1}) {
    bool invalid = false;
    try {
      set_intra_op_parallelism(n);
    } catch (const OpError& e) {
      invalid = e.code() == ErrorCode::kInvalidArgument;
    }
    OPWEAVE_CHECK(invalid);
  }
}

OPWEAVE_TEST(set_sizes_from_any_thread_while_ops_and_inter_tasks_are_in_flight) {
  // Users of both global pools run while another thread resizes both; a loop body that reads the
  // size meanwhile must not deadlock with the resize (which waits for that loop to finish).
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<long> scheduled{0}, ran{0};
  std::vector<std::thread> users;
  for (int t = 0; t < 2; ++t) {
    users.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a stop flag
        std::atomic<std::int64_t> sum{0};
        parallel_for(global_intra_pool(), 0, 1000, 10, [&](std::int64_t b, std::int64_t e) {
          if (intra_op_parallelism() < 1) bad.fetch_add(1);
          sum.fetch_add(e - b, std::memory_order_relaxed);  // a count
        });
        if (sum.load() != 1000) bad.fetch_add(1);
        global_inter_pool()->schedule([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
        scheduled.fetch_add(1, std::memory_order_relaxed);  // a count
      }
    });
  }
  std::mt19937 rng(3);
  for (int i = 0; i < 60; ++i) {
    set_intra_op_parallelism(1 + static_cast<int>(rng() % 8), "test");
    set_inter_op_parallelism(1 + static_cast<int>(rng() % 4), "test");
  }
  stop.store(true, std::memory_order_relaxed);  // see above
  for (auto& u : users) u.join();
  OPWEAVE_CHECK_EQ(bad.load(), 0);
  OPWEAVE_CHECK(wait_until([&] { return ran.load() == scheduled.load(); }));
  set_intra_op_parallelism(0);
  set_inter_op_parallelism(0);
}

OPWEAVE_TEST_MAIN()
