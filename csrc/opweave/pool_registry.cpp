#include "opweave/pool_registry.h"

#include <mutex>
#include <utility>

namespace opweave {
namespace {

struct Entry {
  std::weak_ptr<ThreadPool> pool;
  PoolDescription description;
};

std::mutex g_mutex;            // guards g_entries
std::vector<Entry> g_entries;  // in registration order; expired entries are pruned on access

void prune_locked() {
  std::vector<Entry> live;
  for (Entry& e : g_entries) {
    if (!e.pool.expired()) live.push_back(std::move(e));
  }
  g_entries.swap(live);
}

}  // namespace

void register_pool(const std::shared_ptr<ThreadPool>& pool, std::string kind, std::string label,
                   std::string source) {
  std::lock_guard<std::mutex> lock(g_mutex);
  prune_locked();
  for (Entry& e : g_entries) {
    if (e.pool.lock() == pool) {
      e.description = {std::move(kind), std::move(label), 0, std::move(source)};
      return;
    }
  }
  g_entries.push_back({pool, {std::move(kind), std::move(label), 0, std::move(source)}});
}

std::vector<PoolDescription> describe_pools() {
  std::vector<PoolDescription> out;
  std::lock_guard<std::mutex> lock(g_mutex);
  prune_locked();
  for (const Entry& e : g_entries) {
    if (std::shared_ptr<ThreadPool> pool = e.pool.lock()) {
      PoolDescription d = e.description;
      d.workers = pool->num_workers();
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace opweave
