#include "opweave/runtime.h"

#include "opweave/cpu_info.h"

namespace opweave {

ThreadPool* global_intra_pool() {
  // Function-local static: initialised once, thread-safe per C++11.
  static ThreadPool* pool = new ThreadPool(
      PoolOptions{cpu_info().available_cpus - 1, "intra-op", 50, Affinity::kNone});
  return pool;
}

}  // namespace opweave
