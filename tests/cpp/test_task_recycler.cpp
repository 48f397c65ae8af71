#include <atomic>
#include <cstring>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include "opweave/task_recycler.h"
#include "testing.h"

using namespace opweave;

OPWEAVE_TEST(blocks_freed_on_another_thread_come_back_distinct_and_writable) {
  // A producer allocates, a consumer frees (the pool's usual pattern), many batches' worth.
  const int n = 20000;
  std::vector<void*> blocks(static_cast<std::size_t>(n));
  for (int round = 0; round < 3; ++round) {
    for (auto& b : blocks) {
      b = allocate_task_block(kTaskBlockSize);
      std::memset(b, 0xAB, kTaskBlockSize);
    }
    std::set<void*> distinct(blocks.begin(), blocks.end());
    OPWEAVE_CHECK_EQ(distinct.size(), blocks.size());
    std::thread consumer([&] {
      for (void* b : blocks) free_task_block(b, kTaskBlockSize);
    });
    consumer.join();
  }
}

OPWEAVE_TEST(objects_larger_than_a_block_use_the_allocator) {
  void* big = allocate_task_block(kTaskBlockSize * 4);
  std::memset(big, 0, kTaskBlockSize * 4);
  free_task_block(big, kTaskBlockSize * 4);
}

OPWEAVE_TEST(the_failure_hook_fails_exactly_the_next_n_allocations) {
  fail_task_allocations_for_testing(2);
  int failed = 0;
  std::vector<void*> got;
  for (int i = 0; i < 5; ++i) {
    try {
      got.push_back(allocate_task_block(16));
    } catch (const std::bad_alloc&) {
      ++failed;
    }
  }
  OPWEAVE_CHECK_EQ(failed, 2);
  for (void* b : got) free_task_block(b, 16);
}

OPWEAVE_TEST_MAIN()
