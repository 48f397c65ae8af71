// move_off_cpu (cpu_migration.h) and next_spin_us (spin.h): a thread steps off a CPU and keeps
// its affinity mask; the adaptive spin grows only while work comes back quickly.
#include <sched.h>

#include <cstdio>
#include <thread>

#include "opweave/cpu_migration.h"
#include "opweave/spin.h"
#include "testing.h"

using namespace opweave;

namespace {

cpu_set_t own_mask() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  OPWEAVE_CHECK_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  return mask;
}

// Runs body on a new thread (so that the test's own mask is never touched).
template <typename Body>
void on_thread(Body body) {
  std::thread t(body);
  t.join();
}

}  // namespace

OPWEAVE_TEST(current_cpu_is_one_of_the_threads_allowed_cpus) {
  const cpu_set_t mask = own_mask();
  const int cpu = current_cpu();
  OPWEAVE_CHECK(cpu >= 0 && cpu < CPU_SETSIZE);
  OPWEAVE_CHECK(CPU_ISSET(cpu, &mask));
}

OPWEAVE_TEST(a_thread_moves_off_its_cpu_and_keeps_its_mask) {
  const cpu_set_t mask = own_mask();
  if (CPU_COUNT(&mask) < 2) {
    std::fprintf(stderr, "one CPU in the affinity mask: nowhere to move, nothing to check\n");
    return;
  }
  int moved = 0;
  on_thread([&] {
    for (int round = 0; round < 20; ++round) {
      const int from = current_cpu();
      OPWEAVE_CHECK(move_off_cpu(from));
      // The kernel migrates the thread before sched_setaffinity returns; the load balancer
      // could pull it back right after the mask is restored, hence a count, not every round.
      if (current_cpu() != from) ++moved;
      cpu_set_t after = own_mask();
      OPWEAVE_CHECK(CPU_EQUAL(&after, &mask));
    }
  });
  std::fprintf(stderr, "on another CPU right after move_off_cpu: %d of 20\n", moved);
  OPWEAVE_CHECK(moved >= 15);
}

OPWEAVE_TEST(a_thread_not_on_the_cpu_or_with_one_allowed_cpu_stays) {
  const cpu_set_t mask = own_mask();
  on_thread([&] {
    const int here = current_cpu();
    int elsewhere = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (c != here && CPU_ISSET(c, &mask)) elsewhere = c;
    }
    if (elsewhere >= 0) OPWEAVE_CHECK(!move_off_cpu(elsewhere) || current_cpu() != elsewhere);
    OPWEAVE_CHECK(!move_off_cpu(-1));
    OPWEAVE_CHECK(!move_off_cpu(CPU_SETSIZE));
    // Pinned to one CPU: the thread stays, and so does its mask.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(here, &one);
    OPWEAVE_CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    OPWEAVE_CHECK(!move_off_cpu(current_cpu()));
    OPWEAVE_CHECK_EQ(current_cpu(), here);
    cpu_set_t after = own_mask();
    OPWEAVE_CHECK(CPU_EQUAL(&after, &one));
  });
}

OPWEAVE_TEST(the_spin_covers_twice_a_short_idle_time_and_falls_back_after_a_long_one) {
  // Never spin stays never.
  OPWEAVE_CHECK_EQ(next_spin_us(0, 10), 0);
  OPWEAVE_CHECK_EQ(next_spin_us(-5, 10), 0);
  // Short idle times: twice the idle time, at least the configured spin.
  OPWEAVE_CHECK_EQ(next_spin_us(50, 10), 50);
  OPWEAVE_CHECK_EQ(next_spin_us(50, 100), 200);
  OPWEAVE_CHECK_EQ(next_spin_us(50, kMaxAdaptiveSpinUs / 2), kMaxAdaptiveSpinUs);
  // Longer ones (the worker would have burned the CPU for nothing): the configured spin.
  OPWEAVE_CHECK_EQ(next_spin_us(50, kMaxAdaptiveSpinUs / 2 + 1), 50);
  OPWEAVE_CHECK_EQ(next_spin_us(50, 150'000), 50);
  OPWEAVE_CHECK_EQ(next_spin_us(50, -1), 50);  // a clock that went backwards: no guess
  // A configured spin above the adaptive ceiling is the ceiling: never shortened.
  OPWEAVE_CHECK_EQ(next_spin_us(5000, 100), 5000);
  OPWEAVE_CHECK_EQ(next_spin_us(5000, 2400), 5000);
  OPWEAVE_CHECK_EQ(next_spin_us(5000, 10'000), 5000);
}

OPWEAVE_TEST_MAIN()
