#include "opweave/fork_guard.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace opweave {
namespace {

// Constant-initialised (no dynamic initialiser), so usable from any other load-time initialiser,
// whatever the order in which the files are initialised.
std::atomic<std::mutex*> g_mutexes[kMaxForkHeldMutexes] = {};
std::atomic<int> g_reserved{0};  // slots handed out; a slot may still be null while being filled
std::atomic<const ForkHandler*> g_handlers[kMaxForkHandlers] = {};
std::atomic<int> g_handlers_reserved{0};  // as g_reserved
std::atomic<std::uint64_t> g_fork_generation{0};

// What this thread locked in prepare(): a mutex registered by another thread between prepare()
// and the fork was not locked and must not be unlocked. thread_local: the child's only thread is
// the forking one, and two threads forking at once each release their own.
thread_local std::mutex* t_locked[kMaxForkHeldMutexes];
thread_local int t_locked_count = 0;
// The handlers whose prepare step this thread ran, for the same reason.
thread_local const ForkHandler* t_prepared[kMaxForkHandlers];
thread_local int t_prepared_count = 0;

// Reserves a slot of a fixed table, aborting when it is full.
int reserve(std::atomic<int>& reserved, int capacity, const char* what) noexcept {
  // relaxed: the slot index only needs to be unique; the entry is published by a release store.
  const int slot = reserved.fetch_add(1, std::memory_order_relaxed);
  if (slot >= capacity) {
    std::fprintf(stderr, "opweave: too many %s\n", what);
    std::abort();
  }
  return slot;
}

void prepare() {
  // acquire (both loads): pairs with the release stores in at_fork / hold_across_fork, so a
  // registered handler or mutex is seen whole.
  const int handlers = g_handlers_reserved.load(std::memory_order_acquire);
  t_prepared_count = 0;
  for (int i = handlers < kMaxForkHandlers ? handlers : kMaxForkHandlers; i-- > 0;) {
    if (const ForkHandler* h = g_handlers[i].load(std::memory_order_acquire)) {
      if (h->prepare != nullptr) h->prepare();
      t_prepared[t_prepared_count++] = h;
    }
  }
  const int n = g_reserved.load(std::memory_order_acquire);
  t_locked_count = 0;
  for (int i = 0; i < n && i < kMaxForkHeldMutexes; ++i) {
    if (std::mutex* m = g_mutexes[i].load(std::memory_order_acquire)) {
      m->lock();
      t_locked[t_locked_count++] = m;
    }
  }
}

void release_mutexes() {
  while (t_locked_count > 0) t_locked[--t_locked_count]->unlock();
}

// t_prepared holds the handlers last registered first: walk it backwards for registration order.
template <typename Step>
void run_prepared(Step step) {
  for (int i = t_prepared_count; i-- > 0;) {
    if (void (*fn)() = t_prepared[i]->*step) fn();
  }
  t_prepared_count = 0;
}

void parent() {
  release_mutexes();
  run_prepared(&ForkHandler::parent);
}

void child() {
  release_mutexes();
  // relaxed: the child is single-threaded while the handlers run.
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  run_prepared(&ForkHandler::child);
}

// Installed at load time: pthread_atfork itself must not be raced with a fork.
[[maybe_unused]] const int g_installed = pthread_atfork(prepare, parent, child);

}  // namespace

void hold_across_fork(std::mutex* m) noexcept {
  const int slot = reserve(g_reserved, kMaxForkHeldMutexes, "fork-held mutexes");
  g_mutexes[slot].store(m, std::memory_order_release);  // release: prepare() acquires it
}

void at_fork(const ForkHandler* handler) noexcept {
  const int slot = reserve(g_handlers_reserved, kMaxForkHandlers, "fork handlers");
  g_handlers[slot].store(handler, std::memory_order_release);  // release: prepare() acquires it
}

std::uint64_t fork_generation() noexcept {
  // relaxed: it changes only in a child's fork handler, before any other thread exists there.
  return g_fork_generation.load(std::memory_order_relaxed);
}

}  // namespace opweave
