// The spin time set at run time (issue 7): explicit beats OPWEAVE_SPIN_TIME_US, existing global
// pools rebuild their workers, the first-Session rule applies only before the pools exist.
#include <atomic>
#include <cstdlib>

#include "opweave/parallel_for.h"
#include "opweave/runtime.h"
#include "testing.h"

using namespace opweave;

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

OPWEAVE_TEST_MAIN()
