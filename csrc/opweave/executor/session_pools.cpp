#include "opweave/executor/session_pools.h"

#include <map>
#include <mutex>

#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/runtime.h"

namespace opweave {

namespace {

struct GlobalState {
  std::mutex mutex;  // guards everything below: sessions are created from many threads
  bool intra_set = false;
  bool inter_set = false;
  GlobalPoolInfo info;
  ThreadPool* inter_pool = nullptr;
  std::map<std::string, std::shared_ptr<ThreadPool>> named;
};

GlobalState& state() {
  static GlobalState* s = new GlobalState;  // leaked: pools may be used during static teardown
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
  GlobalState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.intra_set) {
    const int n = std::max(1, resolve_num_threads(intra_op_threads));
    ThreadPool* intra = global_intra_pool();
    if (intra->num_workers() != n - 1) intra->resize(n - 1);
    s.info.intra_op_threads = n;
    s.info.intra_source = source;
    s.intra_set = true;
  }
  if (!s.inter_set && inter_op_threads >= 0) {
    const int m = std::max(1, resolve_num_threads(inter_op_threads));
    if (!s.inter_pool) s.inter_pool = new ThreadPool(inter_options(m, "inter-op"));
    if (s.inter_pool->num_workers() != m) s.inter_pool->resize(m);
    s.info.inter_op_threads = m;
    s.info.inter_source = source;
    s.inter_set = true;
  }
  return s.info;
}

GlobalPoolInfo global_pool_info() {
  GlobalState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.info;
}

ThreadPool* global_session_intra_pool() { return global_intra_pool(); }

ThreadPool* global_session_inter_pool() {
  configure_global_pools_if_unset(0, 0, "the system default (available CPUs)");
  GlobalState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.inter_pool;
}

std::shared_ptr<ThreadPool> named_inter_pool(const std::string& name, int num_threads) {
  const int n = std::max(1, resolve_num_threads(num_threads));
  GlobalState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.named.find(name);
  if (it != s.named.end()) {
    if (it->second->num_workers() != n) {
      throw_invalid_argument("Pool " + name + " configured previously with num_threads=" +
                             std::to_string(it->second->num_workers()) +
                             "; cannot re-configure with num_threads=" + std::to_string(n));
    }
    return it->second;
  }
  auto pool = std::make_shared<ThreadPool>(inter_options(n, "inter-op " + name));
  s.named.emplace(name, pool);
  return pool;
}

std::shared_ptr<ThreadPool> make_session_inter_pool(int num_threads, const std::string& name) {
  return std::make_shared<ThreadPool>(
      inter_options(std::max(1, resolve_num_threads(num_threads)), name));
}

}  // namespace opweave
