#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "opweave/spin.h"
#include "opweave/work_stealing_deque.h"
#include "testing.h"
#include "wait_until.h"

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

// Starts `count` thief threads running thief(k) and returns once every one of them is running,
// so that the owner's first pushes already meet thieves (without this barrier the owner often
// finished small rounds before any thief had started).
template <typename Thief>
std::vector<std::thread> start_thieves(int count, Thief thief) {
  std::atomic<int> ready{0};
  std::vector<std::thread> thieves;
  for (int k = 0; k < count; ++k) {
    thieves.emplace_back([&ready, thief, k] {
      ready.fetch_add(1);  // seq_cst: a plain barrier
      thief(k);
    });
  }
  while (ready.load() < count) std::this_thread::yield();
  return thieves;
}

// Who took which of the items 1..n: each must be taken exactly once, by the owner or a thief.
struct TakeLedger {
  explicit TakeLedger(int n) : n(n), taken(static_cast<std::size_t>(n)) {}

  void take(std::uintptr_t item) {
    taken[item - 1].fetch_add(1, std::memory_order_relaxed);  // counts; join orders them
    total.fetch_add(1, std::memory_order_relaxed);
  }
  // A thief's whole life: steal until every item has been taken by someone.
  void steal_until_all_taken(Deque& dq) {
    while (total.load(std::memory_order_relaxed) < n) {
      if (std::uintptr_t item = dq.steal()) {
        take(item);
        stolen.fetch_add(1, std::memory_order_relaxed);  // a count
      }
    }
  }
  // After the threads are joined.
  int taken_twice() const {
    return count_if([](int c) { return c > 1; });
  }
  int never_taken() const {
    return count_if([](int c) { return c == 0; });
  }

  const int n;
  std::vector<std::atomic<int>> taken;
  std::atomic<int> total{0};
  std::atomic<long> stolen{0};

 private:
  template <typename Pred>
  int count_if(Pred pred) const {
    int k = 0;
    for (const auto& c : taken) k += pred(c.load()) ? 1 : 0;
    return k;
  }
};

// One owner pushes n items (popping some itself, and popping when full) while several thieves
// steal; every item must be taken exactly once, by someone, and the thieves must have stolen.
OPWEAVE_TEST(owner_against_several_thieves_takes_every_item_exactly_once) {
  const int sizes[] = {1, 2, 3, 7, 100, 1023, 1024, 1025, 10000, 100000};
  const int num_thieves = 3;
  long stolen_over_all_sizes = 0;
  for (const int n : sizes) {
    Deque dq(256);
    TakeLedger ledger(n);
    std::vector<std::thread> thieves =
        start_thieves(num_thieves, [&](int) { ledger.steal_until_all_taken(dq); });
    for (int i = 1; i <= n; ++i) {
      while (!dq.push(static_cast<std::uintptr_t>(i))) {
        if (std::uintptr_t item = dq.pop()) ledger.take(item);
      }
      if (i % 2 == 0) {
        if (std::uintptr_t item = dq.pop()) ledger.take(item);  // races the thieves for the bottom
      }
    }
    // Give the thieves a moment (at most 10 ms) if none has stolen yet: on a small, busy machine
    // the owner can run through a whole size before a thief gets a CPU.
    for (int k = 0; k < 200 && ledger.stolen.load() == 0 && dq.size_estimate() > 0; ++k) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    while (std::uintptr_t item = dq.pop()) ledger.take(item);
    for (auto& t : thieves) t.join();
    OPWEAVE_CHECK_EQ(ledger.taken_twice() + ledger.never_taken(), 0);
    OPWEAVE_CHECK_EQ(ledger.total.load(), n);
    stolen_over_all_sizes += ledger.stolen.load();
  }
  OPWEAVE_CHECK(stolen_over_all_sizes > 0);  // else this tested the owner alone
}

OPWEAVE_TEST(take_oldest_moves_the_oldest_items_in_order) {
  Deque dq(8);
  for (std::uintptr_t i = 1; i <= 8; ++i) OPWEAVE_CHECK(dq.push(i));
  std::uintptr_t out[8] = {};
  OPWEAVE_CHECK_EQ(dq.take_oldest(out, 3), 3u);
  OPWEAVE_CHECK_EQ(out[0], 1u);
  OPWEAVE_CHECK_EQ(out[2], 3u);
  OPWEAVE_CHECK_EQ(dq.steal(), 4u);  // the thieves' end moved past the batch
  OPWEAVE_CHECK_EQ(dq.pop(), 8u);    // the owner's end did not move
  OPWEAVE_CHECK_EQ(dq.take_oldest(out, 8), 3u);
  OPWEAVE_CHECK_EQ(out[0], 5u);
  OPWEAVE_CHECK_EQ(dq.take_oldest(out, 8), 0u);
  OPWEAVE_CHECK(dq.push(9));  // slots freed by the batch are reused
  OPWEAVE_CHECK_EQ(dq.pop(), 9u);
}

// The pool's overflow path: the owner fills a small deque and, whenever it is full, takes its
// older half at once (one CAS of top) while thieves steal from the same end; it pops in between
// too. Every item must be taken exactly once, by a thief, a pop or a batch.
OPWEAVE_TEST(take_oldest_against_thieves_takes_every_item_exactly_once) {
  const int num_thieves = 3;
  long stolen_total = 0, batched_total = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const int n = 50000;
    Deque dq(16);
    TakeLedger ledger(n);
    auto take = [&ledger](std::uintptr_t item) { ledger.take(item); };
    std::vector<std::thread> thieves =
        start_thieves(num_thieves, [&](int) { ledger.steal_until_all_taken(dq); });
    std::mt19937 rng(7 + static_cast<std::uint32_t>(trial));
    std::uintptr_t batch[16];
    for (int i = 1; i <= n; ++i) {
      while (!dq.push(static_cast<std::uintptr_t>(i))) {
        const std::size_t got = dq.take_oldest(batch, 1 + rng() % 8);
        for (std::size_t k = 0; k < got; ++k) take(batch[k]);
        batched_total += static_cast<long>(got);
      }
      if (i == 8) {
        // On a loaded machine the thieves may not get a CPU before the owner is done: wait for
        // a first steal, so every trial has thieves racing the owner.
        OPWEAVE_CHECK(
            testing::wait_until([&] { return ledger.stolen.load(std::memory_order_relaxed) > 0; }));
      }
      if (rng() % 8 == 0) {
        if (std::uintptr_t item = dq.pop()) take(item);
      }
      if (rng() % 16 == 0) {  // small batches while thieves race for the same items
        const std::size_t got = dq.take_oldest(batch, 1 + rng() % 3);
        for (std::size_t k = 0; k < got; ++k) take(batch[k]);
        batched_total += static_cast<long>(got);
      }
    }
    while (std::uintptr_t item = dq.pop()) take(item);
    for (auto& t : thieves) t.join();
    OPWEAVE_CHECK_EQ(ledger.taken_twice() + ledger.never_taken(), 0);
    OPWEAVE_CHECK_EQ(ledger.total.load(), n);
    stolen_total += ledger.stolen.load();
  }
  OPWEAVE_CHECK(batched_total > 0);
  OPWEAVE_CHECK(stolen_total > 0);  // else this tested the owner alone
}

// What one race_for_the_last_items() trial saw.
struct RaceResult {
  int items = 0;        // pushed
  int taken_twice = 0;  // items handed out more than once
  int never_taken = 0;
  long stolen = 0;  // items the thieves took
  long popped = 0;  // items the owner took
};

// Many short rounds that keep the deque nearly empty: the owner pushes a few items, popping after
// most pushes, then pops until empty, so it keeps racing the thieves for the last item (pop's
// CAS on top) while the thieves race each other for the oldest one (steal's CAS). Short random
// pauses let the thieves reach the items and make the owner's pops land at varying points of a
// concurrent steal.
RaceResult race_for_the_last_items(int num_thieves, int rounds, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> burst(static_cast<std::size_t>(rounds));
  RaceResult result;
  for (int& b : burst) result.items += b = 1 + static_cast<int>(rng() % 6);
  const int n = result.items;
  Deque dq(8);
  TakeLedger ledger(n);
  auto take = [&ledger](std::uintptr_t item) { ledger.take(item); };
  std::vector<std::thread> thieves =
      start_thieves(num_thieves, [&](int) { ledger.steal_until_all_taken(dq); });
  auto pause = [](std::uint32_t spins) {
    for (; spins > 0; --spins) cpu_relax();
  };
  auto owner_pop = [&] {
    const std::uintptr_t item = dq.pop();
    if (item != 0) {
      take(item);
      ++result.popped;
    }
    return item != 0;
  };
  std::uintptr_t next = 1;
  for (const int b : burst) {
    for (int i = 0; i < b; ++i) {
      while (!dq.push(next)) owner_pop();
      ++next;
      if (rng() % 4 != 0) {
        pause(rng() % 32);
        owner_pop();
      }
    }
    pause(rng() % 64);
    while (owner_pop()) {
    }
  }
  for (auto& t : thieves) t.join();
  result.taken_twice = ledger.taken_twice();
  result.never_taken = ledger.never_taken();
  result.stolen = ledger.stolen.load();
  return result;
}

// A pop or a steal that took an item without winning its CAS hands the same item out twice.
// Several trials: each starts its threads afresh (a new chance for the scheduler to run the owner
// and a thief at the same time on a small machine).
OPWEAVE_TEST(owner_and_thieves_racing_for_the_last_items_take_each_exactly_once) {
  long stolen = 0, popped = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const RaceResult r = race_for_the_last_items(/*num_thieves=*/3, /*rounds=*/20000, 2013 + trial);
    OPWEAVE_CHECK_EQ(r.taken_twice, 0);
    OPWEAVE_CHECK_EQ(r.never_taken, 0);
    OPWEAVE_CHECK_EQ(r.stolen + r.popped, static_cast<long>(r.items));
    stolen += r.stolen;
    popped += r.popped;
  }
  OPWEAVE_CHECK(stolen > 0);  // the thieves took part
  OPWEAVE_CHECK(popped > 0);  // and so did the owner
}

OPWEAVE_TEST_MAIN()
