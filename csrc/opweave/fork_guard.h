// Fork handling: the one place the core calls pthread_atfork. Every subsystem whose state a
// forked child must not inherit as is registers here, at load time, and docs/architecture.md
// lists what each one resets.
//
// fork() copies memory but only the forking thread: a mutex another thread held stays locked in
// the child forever, and pools, queues and counters describe threads the child does not have.
// Two tools:
//
// - hold_across_fork(m): a leaf mutex is locked by the forking thread just before fork() and
//   unlocked on both sides just after, so no other thread can be inside it at the fork and the
//   data it guards is consistent in the child.
//
//     Registry* r = new Registry;
//     hold_across_fork(&r->mutex);  // r must live for the rest of the process
//
//   Only for leaf locks (nothing else is locked while one is held, and no code holding one waits
//   for another thread): the prepare step takes them one after another, so a lock order between
//   two of them, or a wait under one, could deadlock the fork.
//
// - at_fork(&handler): steps for state that needs more than a leaf mutex (the global pools' locks,
//   which are held while a resize waits for the pool's work; lists of pools whose threads exist
//   only in the parent).
//
//     constexpr ForkHandler kReset{nullptr, nullptr, [] { g_list = new List; }};
//     [[maybe_unused]] const bool g_registered = (at_fork(&kReset), true);
//
// The order is fixed here, not by the link order of the files that register:
//   before fork():       every handler's prepare, last registered first; then the leaf mutexes.
//   after, in the parent: the leaf mutexes are released; then every parent step, first first.
//   after, in the child:  the leaf mutexes are released; fork_generation() grows by one; then
//                         every child step, first registered first.
// A handler's locks are thus taken before the leaf mutexes: code holding a handler's lock may
// take a leaf lock (a resize pins its new workers), never the other way round.
//
// The same hazard applies to lazy one-time initialisation (function-local statics, call_once):
// a child forked while another thread runs an initialiser waits on its guard forever. Code that
// pool threads may run first does its one-time work at load time instead.
#pragma once

#include <cstdint>
#include <mutex>

namespace opweave {

inline constexpr int kMaxForkHeldMutexes = 32;
inline constexpr int kMaxForkHandlers = 16;

// Registers `m` (which must never be destroyed). Thread-safe. Aborts past kMaxForkHeldMutexes,
// a fixed bound because the fork handlers may not allocate.
void hold_across_fork(std::mutex* m) noexcept;

// One subsystem's fork steps (see the order above); a null step is skipped. The steps run on the
// forking thread; in the child it is the only thread.
struct ForkHandler {
  void (*prepare)() = nullptr;
  void (*parent)() = nullptr;
  void (*child)() = nullptr;
};

// Registers `handler` (which must live for the rest of the process; a constexpr object at
// namespace scope does). Thread-safe. Aborts past kMaxForkHandlers.
void at_fork(const ForkHandler* handler) noexcept;

// How many fork()s separate this process from the one that loaded the library: 0 there, one
// more in each child. An object that records it when made can tell, when destroyed, that it was
// made by a parent process whose threads do not exist here (~ThreadPool). Thread-safe.
std::uint64_t fork_generation() noexcept;

}  // namespace opweave
