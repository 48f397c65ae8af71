// Worker pinning (OPWEAVE_AFFINITY): which CPU each worker of each pinned pool runs on. Below the
// pool: ThreadPool registers its workers here once they run and drops them before it joins them;
// this file owns the process-wide list of pinned workers and re-pins them as pools come and go.
//
//   PoolOptions o{3, "intra-op"};
//   o.affinity = Affinity::kCompact;  // ThreadPool calls pin_workers / unpin_workers itself
//   std::vector<int> cpus = pinned_cpus(pool_key);  // {2, 3, 0}, or {} when not pinned
//
// The workers of all pinned pools form one sequence of slots -- the global inter-op pool's
// workers first, then the global intra-op pool's, then the other pools' (per-session, named) in
// the order they were started (PinGroup) -- so that two pools do not share a CPU while the mask
// has free ones. kCompact: slot s on the (s mod n)-th CPU of the process's affinity mask (n
// CPUs): consecutive workers on neighbouring CPUs, wrapping around. kScatter: the T slots spread
// evenly over the mask (slot s on CPU floor(s * n / T) when T <= n, else as compact). Both follow
// the CPU numbering of the mask, not a topology map. Pools are re-pinned whenever a pinned pool
// starts, is resized or shuts down. kNone: the OS decides.
//
// Fork: a forked child has none of the parent's workers (its pools are leaked, never shut down),
// so the child forgets them (fork_guard.h): they neither take CPU slots nor get ids re-pinned.
#pragma once

#include <cstdint>
#include <vector>

namespace opweave {

enum class Affinity { kNone, kCompact, kScatter };

// Where a pinned pool's workers go in the sequence of slots (see above).
enum class PinGroup { kGlobalInterOp = 0, kGlobalIntraOp = 1, kOther = 2 };

// "none", "compact", "scatter".
const char* affinity_name(Affinity affinity) noexcept;

// Registers the running workers (kernel thread ids) of the pool `key` and re-pins every pinned
// pool. `seq` is the pool's start order from an earlier call (a resize keeps its place), 0 for a
// new pool; returns the start order to pass next time. The threads must stay alive until
// unpin_workers(key): the kernel could give an exited thread's id to another thread.
// Thread-safe.
std::uint64_t pin_workers(const void* key, PinGroup group, std::uint64_t seq, Affinity mode,
                          std::vector<long> tids);

// Drops the workers of `key` (call before joining them) and re-pins the others into the freed
// slots. No effect for a pool that is not registered. Thread-safe.
void unpin_workers(const void* key);

// The CPU of each worker of `key`, in worker order (-1: not pinned yet); empty when the pool is
// not registered. Thread-safe.
std::vector<int> pinned_cpus(const void* key);

}  // namespace opweave
