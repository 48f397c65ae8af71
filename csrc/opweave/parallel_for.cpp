// PLACEHOLDER: serial. The foundation issue replaces it with lazy splitting on the pool.
#include "opweave/parallel_for.h"

namespace opweave {

void parallel_for(ThreadPool* /*pool*/, std::int64_t begin, std::int64_t end, std::int64_t grain,
                  FunctionRef<void(std::int64_t, std::int64_t)> fn, double /*cost_per_element*/) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  for (std::int64_t b = begin; b < end; b += grain) fn(b, b + grain < end ? b + grain : end);
}

}  // namespace opweave
