// The inter-op pools a session's ConfigProto asks for beside the global ones (global_pools.h):
// a pool of its own (use_per_session_threads, or an unnamed session_inter_op_thread_pool entry),
// and the process-global pools named by ThreadPoolOptionProto.global_name, shared by every
// session that names them. Both are listed by parallel_info() while alive (pool_registry.h).
//
//   std::shared_ptr<ThreadPool> own = make_session_inter_pool(4, "session inter-op");
//   std::shared_ptr<ThreadPool> shared = named_inter_pool("io", 2);  // same pool for "io" after
//
// Both read the spin time and OPWEAVE_AFFINITY in effect when they are created; pinned, their
// workers take the CPUs after the global pools' (pinning.h).
#pragma once

#include <memory>
#include <string>

#include "opweave/thread_pool.h"

namespace opweave {

// The process-global inter-op pool called `name`, created with num_threads (0 = the system picks:
// the CPUs this process may use) on first use. Throws OpError(kInvalidArgument) "Pool <name>
// configured previously with num_threads=<a>; cannot re-configure with num_threads=<b>" for
// another size. Thread-safe.
//
// Fork: a forked child starts with no named pools (fork_guard.h): the parent's have no threads
// there (and the map's mutex may be held by a parent thread). They are leaked, never joined; a
// Session re-creates the ones it uses, with the same sizes, on its next run.
std::shared_ptr<ThreadPool> named_inter_pool(const std::string& name, int num_threads);

// A new pool for one session's inter-op work (num_threads 0 = the system picks). `name` is
// "session inter-op" for use_per_session_threads, "session inter-op <i>" for the i-th entry of
// session_inter_op_thread_pool; parallel_info() shows the ConfigProto field that asked for it.
// Dropping the last reference in a forked child leaks it instead of joining workers the child
// does not have (~ThreadPool). Thread-safe.
std::shared_ptr<ThreadPool> make_session_inter_pool(int num_threads, const std::string& name);

}  // namespace opweave
