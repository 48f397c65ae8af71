#include "opweave/pinning.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "opweave/fork_guard.h"

namespace opweave {
namespace {

// Every pinned pool registers its workers' kernel thread ids here once they run, and unregisters
// before it joins them, so no id here belongs to an exited thread (the kernel could reuse it for
// another thread). Each change re-pins, in one pass over all registered pools, every worker whose
// CPU changed. The mutex is a leaf: nothing else is locked under it.
struct PinnedPool {
  const void* key;  // the pool's Impl
  PinGroup group;
  std::uint64_t seq;  // start order of the pool (kept across its resizes)
  Affinity mode;
  std::vector<long> tids;
  std::vector<int> cpus;  // where each worker is pinned now; -1: not (yet)
};

struct Placement {
  std::mutex mutex;
  std::vector<PinnedPool> pools;  // guarded by mutex
  std::uint64_t next_seq = 1;     // guarded by mutex
};

// Leaked (pools may shut down during static destruction). Created at load time and its mutex held
// across fork() (fork_guard.h).
Placement* const g_placement = [] {
  auto* p = new Placement;
  hold_across_fork(&p->mutex);
  return p;
}();

// A forked child has none of the parent's workers: forget them. No lock: the child is
// single-threaded while fork handlers run.
constexpr ForkHandler kForgetParentWorkers{nullptr, nullptr, [] { g_placement->pools.clear(); }};
[[maybe_unused]] const bool g_fork_registered = (at_fork(&kForgetParentWorkers), true);

// The process's CPUs: the mask of its main thread (a pool worker's own mask is one CPU).
std::vector<int> process_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(getpid(), sizeof(set), &set) != 0 &&
      sched_getaffinity(0, sizeof(set), &set) != 0) {
    return cpus;
  }
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Index into the n allowed CPUs of slot s out of `total` (pinning.h).
std::size_t cpu_index(Affinity mode, std::size_t s, std::size_t total, std::size_t n) {
  if (mode == Affinity::kScatter && total <= n) return s * n / total;
  return s % n;
}

// Called with the placement mutex held.
void repin_locked(Placement& p) {
  const std::vector<int> cpus = process_cpus();
  if (cpus.empty()) return;
  std::vector<PinnedPool*> order;
  std::size_t total = 0;
  for (PinnedPool& e : p.pools) {
    order.push_back(&e);
    total += e.tids.size();
  }
  std::sort(order.begin(), order.end(), [](const PinnedPool* a, const PinnedPool* b) {
    return std::pair{a->group, a->seq} < std::pair{b->group, b->seq};
  });
  std::size_t slot = 0;
  for (PinnedPool* e : order) {
    for (std::size_t i = 0; i < e->tids.size(); ++i, ++slot) {
      const int cpu = cpus[cpu_index(e->mode, slot, total, cpus.size())];
      if (e->cpus[i] == cpu) continue;
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      // By thread id: the thread is alive (see above), and no pthread handle is needed.
      if (sched_setaffinity(static_cast<pid_t>(e->tids[i]), sizeof(set), &set) == 0) {
        e->cpus[i] = cpu;
      }
    }
  }
}

}  // namespace

const char* affinity_name(Affinity affinity) noexcept {
  switch (affinity) {
    case Affinity::kCompact:
      return "compact";
    case Affinity::kScatter:
      return "scatter";
    case Affinity::kNone:
      break;
  }
  return "none";
}

std::uint64_t pin_workers(const void* key, PinGroup group, std::uint64_t seq, Affinity mode,
                          std::vector<long> tids) {
  Placement& p = *g_placement;
  std::lock_guard<std::mutex> lock(p.mutex);  // guards pools and next_seq
  if (seq == 0) seq = p.next_seq++;
  const std::size_t n = tids.size();
  p.pools.push_back(PinnedPool{key, group, seq, mode, std::move(tids), std::vector<int>(n, -1)});
  repin_locked(p);
  return seq;
}

void unpin_workers(const void* key) {
  Placement& p = *g_placement;
  std::lock_guard<std::mutex> lock(p.mutex);  // guards pools
  const auto it = std::find_if(p.pools.begin(), p.pools.end(),
                               [key](const PinnedPool& e) { return e.key == key; });
  if (it == p.pools.end()) return;
  p.pools.erase(it);
  repin_locked(p);
}

std::vector<int> pinned_cpus(const void* key) {
  Placement& p = *g_placement;
  std::lock_guard<std::mutex> lock(p.mutex);  // guards pools
  for (const PinnedPool& e : p.pools) {
    if (e.key == key) return e.cpus;
  }
  return {};
}

}  // namespace opweave
