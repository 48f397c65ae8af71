// A ThreadPool created before fork() and destroyed in the child must not wait for
// workers that exist only in the parent; pools created in the child work normally.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "opweave/thread_pool.h"
#include "testing.h"

using namespace opweave;

OPWEAVE_TEST(pool_from_the_parent_is_destroyed_in_the_child_without_joining) {
  auto pool = std::make_unique<ThreadPool>(PoolOptions{2, "fork-parent"});
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);     // a hang becomes SIGALRM, a failure of this test
    pool.reset();  // leaks the parent's workers instead of joining them
    ThreadPool fresh(PoolOptions{1, "fork-child"});
    std::atomic<bool> ran{false};
    fresh.schedule([&ran] { ran.store(true, std::memory_order_release); });
    while (!ran.load(std::memory_order_acquire)) std::this_thread::yield();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  OPWEAVE_CHECK(WIFEXITED(status));
  OPWEAVE_CHECK_EQ(WEXITSTATUS(status), 0);
}

OPWEAVE_TEST_MAIN()
