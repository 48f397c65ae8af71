#include "opweave/executor/session_pools.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/runtime.h"

namespace opweave {

namespace {

struct NamedPools {
  std::mutex mutex;  // guards pools: sessions are created from many threads
  std::map<std::string, std::shared_ptr<ThreadPool>> pools;
};

NamedPools& named_pools() {
  static NamedPools* s = new NamedPools;  // leaked: pools may be used during static teardown
  static std::once_flag once;
  std::call_once(once, [] {
    // After fork() the child has none of the parent's workers: forget the parent's named pools
    // (leaked on purpose; destroying them would join threads that do not exist) so the next use
    // creates live ones. prepare/parent hold the mutex so the child never inherits it locked.
    ::pthread_atfork([] { named_pools().mutex.lock(); }, [] { named_pools().mutex.unlock(); },
                     [] {
                       NamedPools& p = named_pools();
                       for (auto& entry : p.pools) new std::shared_ptr<ThreadPool>(entry.second);
                       p.pools.clear();
                       p.mutex.unlock();
                     });
  });
  return *s;
}

PoolOptions inter_options(int workers, const std::string& name) {
  PoolOptions o;
  o.num_workers = workers;
  o.name = name;
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
  return pool;
}

std::shared_ptr<ThreadPool> make_session_inter_pool(int num_threads, const std::string& name) {
  const pid_t owner = ::getpid();
  return std::shared_ptr<ThreadPool>(
      new ThreadPool(inter_options(std::max(1, resolve_num_threads(num_threads)), name)),
      [owner](ThreadPool* pool) {
        // In a forked child the workers do not exist and joining them would hang: leak.
        if (::getpid() == owner) delete pool;
      });
}

}  // namespace opweave
