#include "opweave/pools/session_pools.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/fork_guard.h"
#include "opweave/pools/global_pools.h"
#include "opweave/pools/pool_registry.h"

namespace opweave {
namespace {

struct NamedPools {
  std::mutex mutex;  // guards pools: sessions are created from many threads
  std::map<std::string, std::shared_ptr<ThreadPool>> pools;
};

// Leaked: pools may be used during static teardown. Created at load time, not on first use, so a
// fork() cannot catch its initialisation half done (see fork_guard.h).
NamedPools* g_named_pools = new NamedPools;

// A forked child starts with no named pools (session_pools.h). The old map is leaked with them.
constexpr ForkHandler kForgetNamedPools{nullptr, nullptr, [] { g_named_pools = new NamedPools; }};
[[maybe_unused]] const bool g_fork_registered = (at_fork(&kForgetNamedPools), true);

// "0 = the system picks": the CPUs this process may run on; at least one worker.
int workers_for(int num_threads) {
  return std::max(1, num_threads == 0 ? cpu_info().available_cpus : num_threads);
}

PoolOptions inter_options(int workers, const std::string& name) {
  PoolOptions o;
  o.num_workers = workers;
  o.name = name;
  const RuntimeInfo info = runtime_info();
  o.spin_time_us = info.spin_time_us;  // the spin time in effect, as the global pools'
  // OPWEAVE_AFFINITY pins these too, on the CPUs after the global pools' (pinning.h).
  o.affinity = info.affinity;
  o.pin_group = PinGroup::kOther;
  return o;
}

}  // namespace

std::shared_ptr<ThreadPool> named_inter_pool(const std::string& name, int num_threads) {
  const int n = workers_for(num_threads);
  NamedPools& s = *g_named_pools;
  std::lock_guard<std::mutex> lock(s.mutex);  // guards s.pools
  auto it = s.pools.find(name);
  if (it != s.pools.end()) {
    if (it->second->num_workers() != n) {
      throw_invalid_argument("Pool " + name + " configured previously with num_threads=" +
                             std::to_string(it->second->num_workers()) +
                             "; cannot re-configure with num_threads=" + std::to_string(n));
    }
    return it->second;
  }
  auto pool = std::make_shared<ThreadPool>(inter_options(n, "inter-op " + name));
  s.pools.emplace(name, pool);
  // parallel_info() lists the pool with the rule that sized it.
  register_pool(pool, "named inter-op pool", name,
                "ThreadPoolOptionProto(num_threads=" + std::to_string(num_threads) +
                    ", global_name='" + name + "')");
  return pool;
}

std::shared_ptr<ThreadPool> make_session_inter_pool(int num_threads, const std::string& name) {
  auto pool = std::make_shared<ThreadPool>(inter_options(workers_for(num_threads), name));
  // parallel_info() lists the pool while its session holds it (its kind fits the 21-character
  // key column).
  const std::string n = std::to_string(num_threads);
  register_pool(
      pool, "session inter-op pool", name,
      name == "session inter-op"
          ? "ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=" + n + ")"
          : "ConfigProto.session_inter_op_thread_pool (num_threads=" + n + ")");
  return pool;
}

}  // namespace opweave
