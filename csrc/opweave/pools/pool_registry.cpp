#include "opweave/pools/pool_registry.h"

#include <mutex>
#include <utility>

#include "opweave/fork_guard.h"

namespace opweave {
namespace {

struct Entry {
  std::weak_ptr<ThreadPool> pool;
  PoolDescription description;
};

struct Registry {
  std::mutex mutex;            // guards entries
  std::vector<Entry> entries;  // in registration order; expired entries are pruned on access
};

// Leaked: pools may register during static teardown. Created at load time, not on first use, so
// a fork() cannot catch its initialisation half done (see fork_guard.h).
Registry* g_registry = new Registry;

// A forked child starts with an empty list: the parent's pools have no threads there (they are
// leaked, see ~ThreadPool), and the mutex may be held by a parent thread. The old list is leaked.
constexpr ForkHandler kForgetParentPools{nullptr, nullptr, [] { g_registry = new Registry; }};
[[maybe_unused]] const bool g_fork_registered = (at_fork(&kForgetParentPools), true);

Registry& registry() { return *g_registry; }

void prune_locked(Registry& r) {
  std::vector<Entry> live;
  for (Entry& e : r.entries) {
    if (!e.pool.expired()) live.push_back(std::move(e));
  }
  r.entries.swap(live);
}

}  // namespace

void register_pool(const std::shared_ptr<ThreadPool>& pool, std::string kind, std::string label,
                   std::string source) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  prune_locked(r);
  for (Entry& e : r.entries) {
    if (e.pool.lock() == pool) {
      e.description = {std::move(kind), std::move(label), 0, std::move(source), 0, {}};
      return;
    }
  }
  r.entries.push_back({pool, {std::move(kind), std::move(label), 0, std::move(source), 0, {}}});
}

std::vector<PoolDescription> describe_pools() {
  std::vector<PoolDescription> out;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  prune_locked(r);
  for (const Entry& e : r.entries) {
    if (std::shared_ptr<ThreadPool> pool = e.pool.lock()) {
      PoolDescription d = e.description;
      d.workers = pool->num_workers();
      d.spin_time_us = pool->options().spin_time_us;
      d.cpus = pool->worker_cpus();
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace opweave
