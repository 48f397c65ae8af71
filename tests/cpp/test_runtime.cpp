#include <atomic>
#include <cstdlib>
#include <string>

#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/runtime.h"
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

OPWEAVE_TEST_MAIN()
