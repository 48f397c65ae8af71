#include "opweave/fork_guard.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace opweave {
namespace {

// Constant-initialised (no dynamic initialiser), so usable from any other load-time initialiser.
std::atomic<std::mutex*> g_mutexes[kMaxForkHeldMutexes] = {};
std::atomic<int> g_reserved{0};  // slots handed out; a slot may still be null while being filled

// What this thread locked in prepare(): a mutex registered by another thread between prepare()
// and the fork was not locked and must not be unlocked. thread_local: the child's only thread is
// the forking one, and two threads forking at once each release their own.
thread_local std::mutex* t_locked[kMaxForkHeldMutexes];
thread_local int t_locked_count = 0;

void prepare() {
  // acquire: pairs with the release store in hold_across_fork, so a registered mutex is seen whole.
  const int n = g_reserved.load(std::memory_order_acquire);
  t_locked_count = 0;
  for (int i = 0; i < n && i < kMaxForkHeldMutexes; ++i) {
    if (std::mutex* m = g_mutexes[i].load(std::memory_order_acquire)) {
      m->lock();
      t_locked[t_locked_count++] = m;
    }
  }
}

void release() {
  while (t_locked_count > 0) t_locked[--t_locked_count]->unlock();
}

// Installed at load time: pthread_atfork itself must not be raced with a fork.
[[maybe_unused]] const int g_installed = pthread_atfork(prepare, release, release);

}  // namespace

void hold_across_fork(std::mutex* m) noexcept {
  // relaxed: the slot index only needs to be unique; the pointer is published by the store below.
  const int slot = g_reserved.fetch_add(1, std::memory_order_relaxed);
  if (slot >= kMaxForkHeldMutexes) {
    std::fputs("opweave: too many fork-held mutexes\n", stderr);
    std::abort();
  }
  g_mutexes[slot].store(m, std::memory_order_release);
}

}  // namespace opweave
