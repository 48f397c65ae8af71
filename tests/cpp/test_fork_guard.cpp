// A mutex registered with hold_across_fork() is never inherited locked, however busy the other
// threads of the parent are with it; and pools plus kernels work in a child forked mid-use.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
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
