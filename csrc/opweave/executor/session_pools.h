// The pools Sessions run on: the process-global intra-op and inter-op pools (sized by the first
// Session unless something sized them earlier), and named process-global inter-op pools from
// ConfigProto.session_inter_op_thread_pool. Per-session pools are plain ThreadPools the Session
// owns. This file is the one place the executor's view of runtime.h lives.
//
//   GlobalPoolInfo info = configure_global_pools_if_unset(2, 2, "the first Session's ConfigProto");
//   ThreadPool* inter = global_session_inter_pool();
#pragma once

#include <memory>
#include <string>

#include "opweave/thread_pool.h"

namespace opweave {

struct GlobalPoolInfo {
  int intra_op_threads = 0;  // threads one op may use, the caller included (workers + 1)
  int inter_op_threads = 0;  // ops that may run at once (inter-op workers)
  std::string intra_source;  // why the intra size is what it is, e.g. "the first Session's ..."
  std::string inter_source;
};

// "0 = the system picks": the CPUs this process may run on. Negative values are returned as is.
int resolve_num_threads(int requested);

// Sizes each global pool that nothing has sized yet (requested 0 = the system picks), records
// `source` as its provenance, and returns the sizes in effect. Thread-safe.
GlobalPoolInfo configure_global_pools_if_unset(int intra_op_threads, int inter_op_threads,
                                               const std::string& source);
GlobalPoolInfo global_pool_info();

// The global pools (created on first use). Thread-safe; the pointers stay valid for the process.
ThreadPool* global_session_intra_pool();
ThreadPool* global_session_inter_pool();

// The process-global inter-op pool called `name`, created with num_threads (0 = the system picks)
// on first use. Throws OpError(kInvalidArgument) "Pool <name> configured previously with
// num_threads=<a>; cannot re-configure with num_threads=<b>" for another size. Thread-safe.
std::shared_ptr<ThreadPool> named_inter_pool(const std::string& name, int num_threads);

// A new pool for one session's inter-op work (num_threads 0 = the system picks). Dropping the
// last reference in a forked child leaks it instead of joining workers the child does not have.
std::shared_ptr<ThreadPool> make_session_inter_pool(int num_threads, const std::string& name);

}  // namespace opweave
