#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "opweave/work_stealing_deque.h"
#include "testing.h"

using namespace opweave;

namespace {
// Items are index + 1 so that 0 (T{}) keeps meaning "nothing".
using Deque = WorkStealingDeque<std::uintptr_t>;
}  // namespace

OPWEAVE_TEST(capacity_rounds_up_to_a_power_of_two) {
  OPWEAVE_CHECK_EQ(Deque(1).capacity(), 2u);
  OPWEAVE_CHECK_EQ(Deque(1000).capacity(), 1024u);
  OPWEAVE_CHECK_EQ(Deque(1024).capacity(), 1024u);
}

OPWEAVE_TEST(owner_pops_newest_first_and_thieves_steal_oldest_first) {
  Deque dq(8);
  for (std::uintptr_t i = 1; i <= 4; ++i) OPWEAVE_CHECK(dq.push(i));
  OPWEAVE_CHECK_EQ(dq.pop(), 4u);
  OPWEAVE_CHECK_EQ(dq.steal(), 1u);
  OPWEAVE_CHECK_EQ(dq.steal(), 2u);
  OPWEAVE_CHECK_EQ(dq.pop(), 3u);
  OPWEAVE_CHECK_EQ(dq.pop(), 0u);
  OPWEAVE_CHECK_EQ(dq.steal(), 0u);
}

OPWEAVE_TEST(push_on_a_full_deque_fails_and_keeps_every_item) {
  Deque dq(4);
  for (std::uintptr_t i = 1; i <= 4; ++i) OPWEAVE_CHECK(dq.push(i));
  OPWEAVE_CHECK(!dq.push(5));
  OPWEAVE_CHECK_EQ(dq.size_estimate(), 4);
  OPWEAVE_CHECK_EQ(dq.steal(), 1u);
  OPWEAVE_CHECK(dq.push(5));  // the freed slot is reused (wrap-around)
  for (std::uintptr_t i = 5; i >= 2; --i) OPWEAVE_CHECK_EQ(dq.pop(), i);
}

// One owner pushes n items (popping some itself, and popping when full) while several thieves
// steal; every item must be taken exactly once, by someone.
OPWEAVE_TEST(owner_against_several_thieves_takes_every_item_exactly_once) {
  const int sizes[] = {1, 2, 3, 7, 100, 1023, 1024, 1025, 10000, 100000};
  const int num_thieves = 3;
  for (const int n : sizes) {
    Deque dq(256);
    std::vector<std::atomic<int>> taken(static_cast<std::size_t>(n));
    std::atomic<int> total{0};
    std::atomic<bool> start{false};
    auto take = [&](std::uintptr_t item) {
      taken[item - 1].fetch_add(1, std::memory_order_relaxed);
      total.fetch_add(1, std::memory_order_relaxed);
    };
    std::vector<std::thread> thieves;
    std::vector<int> stolen(num_thieves, 0);
    for (int k = 0; k < num_thieves; ++k) {
      thieves.emplace_back([&, k] {
        while (!start.load()) std::this_thread::yield();
        while (total.load(std::memory_order_relaxed) < n) {
          if (std::uintptr_t item = dq.steal()) {
            take(item);
            ++stolen[static_cast<std::size_t>(k)];
          }
        }
      });
    }
    start.store(true);
    for (int i = 1; i <= n; ++i) {
      while (!dq.push(static_cast<std::uintptr_t>(i))) {
        if (std::uintptr_t item = dq.pop()) take(item);
      }
      if (i % 3 == 0) {
        if (std::uintptr_t item = dq.pop()) take(item);  // races the thieves for the bottom
      }
    }
    while (std::uintptr_t item = dq.pop()) take(item);
    for (auto& t : thieves) t.join();
    int wrong = 0;
    for (auto& c : taken) wrong += c.load() != 1;
    OPWEAVE_CHECK_EQ(wrong, 0);
    OPWEAVE_CHECK_EQ(total.load(), n);
  }
}

OPWEAVE_TEST_MAIN()
