#include "opweave/executor/session_pools.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/fork_guard.h"
#include "opweave/pool_registry.h"
#include "opweave/runtime.h"

namespace opweave {

namespace {

struct NamedPools {
  std::mutex mutex;  // guards pools: sessions are created from many threads
  std::map<std::string, std::shared_ptr<ThreadPool>> pools;
};

// Leaked: pools may be used during static teardown. Created at load time, not on first use, so a
// fork() cannot catch its initialisation half done (see fork_guard.h).
NamedPools* g_named_pools = new NamedPools;

// A forked child starts with no named pools: the parent's have no threads here (and their mutex
// may be held by a parent thread). They are leaked, never joined; a Session re-creates the ones
// it uses, with the same sizes, on its next run.
constexpr ForkHandler kForgetNamedPools{nullptr, nullptr, [] { g_named_pools = new NamedPools; }};
[[maybe_unused]] const bool g_fork_registered = (at_fork(&kForgetNamedPools), true);

NamedPools& named_pools() { return *g_named_pools; }

PoolOptions inter_options(int workers, const std::string& name) {
  PoolOptions o;
  o.num_workers = workers;
  o.name = name;
  const RuntimeInfo info = runtime_info();
  o.spin_time_us = info.spin_time_us;  // issue 7: the spin time in effect
  // OPWEAVE_AFFINITY pins these too, on the CPUs after the global pools' (thread_pool.h).
  o.affinity = info.affinity;
  o.pin_group = PinGroup::kOther;
  return o;
}

}  // namespace

int resolve_num_threads(int requested) {
  return requested == 0 ? cpu_info().available_cpus : requested;
}

GlobalPoolInfo configure_global_pools_if_unset(int intra_op_threads, int inter_op_threads,
                                               const std::string& source) {
  // runtime.h owns the global pools and their precedence rules; n <= 0 leaves a pool to them.
  ParallelismInEffect e = configure_parallelism_if_unset(std::max(0, intra_op_threads),
                                                         std::max(0, inter_op_threads), source);
  GlobalPoolInfo info;
  info.intra_op_threads = e.intra;
  info.inter_op_threads = e.inter;
  info.intra_source = e.intra_source;
  info.inter_source = e.inter_source;
  return info;
}

GlobalPoolInfo global_pool_info() {
  GlobalPoolInfo info;
  info.intra_op_threads = intra_op_parallelism();
  info.inter_op_threads = inter_op_parallelism();
  info.intra_source = intra_op_parallelism_source();
  info.inter_source = inter_op_parallelism_source();
  return info;
}

ThreadPool* global_session_intra_pool() { return global_intra_pool(); }

ThreadPool* global_session_inter_pool() { return global_inter_pool(); }

std::shared_ptr<ThreadPool> named_inter_pool(const std::string& name, int num_threads) {
  const int n = std::max(1, resolve_num_threads(num_threads));
  NamedPools& s = named_pools();
  std::lock_guard<std::mutex> lock(s.mutex);
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
  // issue 7: parallel_info() lists the pool with the rule that sized it.
  register_pool(pool, "named inter-op pool", name,
                "ThreadPoolOptionProto(num_threads=" + std::to_string(num_threads) +
                    ", global_name='" + name + "')");
  return pool;
}

std::shared_ptr<ThreadPool> make_session_inter_pool(int num_threads, const std::string& name) {
  auto pool = std::make_shared<ThreadPool>(
      inter_options(std::max(1, resolve_num_threads(num_threads)), name));
  // issue 7: parallel_info() lists the pool while its session holds it (its kind fits the
  // 21-character key column). session.py names the pool "session inter-op" for
  // use_per_session_threads, "session inter-op <i>" otherwise.
  const std::string n = std::to_string(num_threads);
  register_pool(
      pool, "session inter-op pool", name,
      name == "session inter-op"
          ? "ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=" + n + ")"
          : "ConfigProto.session_inter_op_thread_pool (num_threads=" + n + ")");
  return pool;
}

}  // namespace opweave
