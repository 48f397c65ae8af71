// Leaf mutexes a forked child must find unlocked.
//
// fork() copies a mutex in whatever state it was in: if another thread of the parent held it, the
// child (which has only the forking thread) waits on it forever. A mutex passed to
// hold_across_fork() is locked by the forking thread just before fork() and unlocked on both sides
// just after (pthread_atfork), so no other thread can be inside it at the fork and the data it
// guards is consistent in the child.
//
//   Registry* r = new Registry;
//   hold_across_fork(&r->mutex);  // r must live for the rest of the process
//
// Only for leaf locks (nothing else is locked while one is held, and no code holding one waits for
// another thread): the prepare handler takes them one after another, so a lock order between two
// of them, or a wait under one, could deadlock the fork.
//
// The same hazard applies to lazy one-time initialisation (function-local statics, call_once):
// a child forked while another thread runs an initialiser waits on its guard forever. Code that
// pool threads may run first does its one-time work at load time instead.
#pragma once

#include <mutex>

namespace opweave {

inline constexpr int kMaxForkHeldMutexes = 32;

// Registers `m` (which must never be destroyed). Thread-safe. Aborts past kMaxForkHeldMutexes,
// a fixed bound because the fork handlers may not allocate.
void hold_across_fork(std::mutex* m) noexcept;

}  // namespace opweave
