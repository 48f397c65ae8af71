#include <memory>

#include "opweave/pools/pool_registry.h"
#include "testing.h"

using namespace opweave;

namespace {
int count_label(const std::string& label) {
  int n = 0;
  for (const PoolDescription& d : describe_pools()) n += d.label == label;
  return n;
}
}  // namespace

OPWEAVE_TEST(registered_pool_is_described_with_its_workers_and_source) {
  auto pool = std::make_shared<ThreadPool>(PoolOptions{2, "reg-a"});
  register_pool(pool, "named inter-op", "reg-a", "ThreadPoolOptionProto(num_threads=2)");
  bool found = false;
  for (const PoolDescription& d : describe_pools()) {
    if (d.label != "reg-a") continue;
    found = true;
    OPWEAVE_CHECK_EQ(d.kind, std::string("named inter-op"));
    OPWEAVE_CHECK_EQ(d.workers, 2);
    OPWEAVE_CHECK_EQ(d.source, std::string("ThreadPoolOptionProto(num_threads=2)"));
  }
  OPWEAVE_CHECK(found);
  pool->resize(3);
  for (const PoolDescription& d : describe_pools()) {
    if (d.label == "reg-a") OPWEAVE_CHECK_EQ(d.workers, 3);
  }
}

OPWEAVE_TEST(destroyed_pool_drops_out_of_the_list) {
  auto pool = std::make_shared<ThreadPool>(PoolOptions{1, "reg-b"});
  register_pool(pool, "per-session inter-op", "reg-b", "ConfigProto");
  OPWEAVE_CHECK_EQ(count_label("reg-b"), 1);
  pool.reset();
  OPWEAVE_CHECK_EQ(count_label("reg-b"), 0);
}

OPWEAVE_TEST(registering_a_pool_again_replaces_its_entry) {
  auto pool = std::make_shared<ThreadPool>(PoolOptions{1, "reg-c"});
  register_pool(pool, "named inter-op", "reg-c", "first");
  register_pool(pool, "named inter-op", "reg-c", "second");
  OPWEAVE_CHECK_EQ(count_label("reg-c"), 1);
  for (const PoolDescription& d : describe_pools()) {
    if (d.label == "reg-c") OPWEAVE_CHECK_EQ(d.source, std::string("second"));
  }
}

OPWEAVE_TEST_MAIN()
