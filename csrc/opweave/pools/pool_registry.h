// PoolRegistry: the list of every live thread pool that parallel_info() shows, beside the two
// global pools of global_pools.h: named inter-op pools (ThreadPoolOptionProto.global_name) and
// per-session pools. Whoever creates such a pool registers it with the rule that chose its size;
// the registry holds only a weak reference, so a pool that is destroyed drops out of the list.
//
//   auto pool = std::make_shared<ThreadPool>(PoolOptions{3, "session-inter"});
//   register_pool(pool, "session inter-op pool", "session 0x7f..",
//                 "ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=3)");
//   for (const PoolDescription& d : describe_pools()) print(d.kind, d.label, d.threads);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "opweave/thread_pool.h"

namespace opweave {

struct PoolDescription {
  std::string kind;               // "named inter-op pool", "session inter-op pool", ...
  std::string label;              // the pool's name (global_name for named pools)
  int workers = 0;                // the pool's worker threads right now
  std::string source;             // which rule chose the size, for humans
  std::int64_t spin_time_us = 0;  // how long its idle workers spin before they park
  std::vector<int> cpus;  // the CPU of each worker when pinned (OPWEAVE_AFFINITY), else empty
};

// Registers a live pool. Thread-safe. Registering the same pool again replaces its entry.
void register_pool(const std::shared_ptr<ThreadPool>& pool, std::string kind, std::string label,
                   std::string source);

// Every registered pool still alive, in registration order. Thread-safe.
std::vector<PoolDescription> describe_pools();

}  // namespace opweave
