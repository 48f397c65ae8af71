// A mutex registered with hold_across_fork() is never inherited locked, however busy the other
// threads of the parent are with it; registered fork steps run in the documented order; and pools
// plus kernels work in a child forked mid-use.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "opweave/fork_guard.h"
#include "opweave/parallel_for.h"
#include "opweave/thread_pool.h"
#include "testing.h"

using namespace opweave;

namespace {

// Forks `forks` times while `busy` runs on two threads; each child runs `child` under an alarm
// (a hang becomes SIGALRM) and exits 0. Returns 1 at the first child that did not exit 0.
template <typename Busy, typename Child>
int fork_while_busy(int forks, Busy busy, Child child) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      // relaxed: only a stop flag, nothing is published through it.
      while (!stop.load(std::memory_order_relaxed)) busy();
    });
  }
  int failed = 0;
  for (int i = 0; i < forks; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(10);
      child();
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
      break;  // one is enough; each hang costs the alarm's seconds
    }
  }
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads) t.join();
  return failed;
}

}  // namespace

OPWEAVE_TEST(registered_mutex_is_never_inherited_locked) {
  static std::mutex m;  // registered mutexes live for the process
  hold_across_fork(&m);
  long counter = 0;  // guarded by m
  const int failed = fork_while_busy(
      200,
      [&] {
        std::lock_guard<std::mutex> lock(m);  // guards counter
        ++counter;
      },
      [&] {
        std::lock_guard<std::mutex> lock(m);  // would hang if a parent thread had held it
        ++counter;
      });
  OPWEAVE_CHECK_EQ(failed, 0);
}

namespace {

// What the steps of kOrderHandler saw at their last fork.
std::mutex g_leaf;                    // registered with hold_across_fork by the test below
bool g_leaf_free_in_prepare = false;  // the prepare step runs before the leaf mutexes are held
bool g_leaf_free_in_child = false;    // the child step runs after they are released
bool g_parent_ran = false;
std::uint64_t g_generation_in_child = 0;

constexpr ForkHandler kOrderHandler{[] {
                                      g_leaf_free_in_prepare = g_leaf.try_lock();
                                      if (g_leaf_free_in_prepare) g_leaf.unlock();
                                    },
                                    [] { g_parent_ran = true; },
                                    [] {
                                      g_leaf_free_in_child = g_leaf.try_lock();
                                      if (g_leaf_free_in_child) g_leaf.unlock();
                                      g_generation_in_child = fork_generation();
                                    }};

}  // namespace

OPWEAVE_TEST(fork_steps_run_around_the_leaf_mutexes_and_the_child_sees_a_new_generation) {
  hold_across_fork(&g_leaf);
  at_fork(&kOrderHandler);
  const std::uint64_t parent_generation = fork_generation();
  const pid_t pid = fork();
  if (pid == 0) {
    const bool ok = g_leaf_free_in_prepare && g_leaf_free_in_child &&
                    g_generation_in_child == parent_generation + 1 &&
                    fork_generation() == parent_generation + 1 && !g_parent_ran;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  OPWEAVE_CHECK(WIFEXITED(status));
  OPWEAVE_CHECK_EQ(WEXITSTATUS(status), 0);
  OPWEAVE_CHECK(g_leaf_free_in_prepare);
  OPWEAVE_CHECK(g_parent_ran);
  OPWEAVE_CHECK_EQ(fork_generation(), parent_generation);  // only children count forks
}

OPWEAVE_TEST(parallel_for_works_in_a_child_forked_while_tasks_are_recycled) {
  ThreadPool parent_pool(PoolOptions{1, "fork-busy"});
  auto sum_on = [](ThreadPool* pool) {
    std::atomic<long> sum{0};
    parallel_for(pool, 0, 4096, 16, [&](std::int64_t b, std::int64_t e) {
      // relaxed: the join at the end of parallel_for orders these before the read below.
      sum.fetch_add(e - b, std::memory_order_relaxed);
    });
    return sum.load(std::memory_order_relaxed);
  };
  const int failed = fork_while_busy(
      50, [&] { sum_on(&parent_pool); },
      [&] {
        ThreadPool pool(PoolOptions{1, "fork-child"});
        if (sum_on(&pool) != 4096) _exit(1);
      });
  OPWEAVE_CHECK_EQ(failed, 0);
}

OPWEAVE_TEST_MAIN()
