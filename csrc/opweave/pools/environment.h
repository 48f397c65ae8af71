// What the environment says about the pools, read when a global pool is sized or any pool is
// created: each reader returns the value and a source string for humans (parallel_info() shows
// it), which also says when a variable was set but ignored.
//
//   std::string source;
//   int n = environment_pool_size(/*intra=*/true, &source);  // 4, "OMP_NUM_THREADS=4"
//
// Invalid values are ignored, never an error: a bad OMP_NUM_THREADS meant for another library
// must not stop opweave from importing.
#pragma once

#include <cstdint>
#include <string>

#include "opweave/pinning.h"

namespace opweave {

// Rules 2-4 of the size precedence (global_pools.h): OPWEAVE_NUM_INTRAOP_THREADS or
// OPWEAVE_NUM_INTEROP_THREADS (a positive integer), then OMP_NUM_THREADS (intra only; the first
// entry of a list such as "4,2"), then the CPUs this process may use (cpu_info.h).
int environment_pool_size(bool intra, std::string* source);

// OPWEAVE_SPIN_TIME_US: microseconds an idle worker spins before it parks (>= 0); default 50.
std::int64_t environment_spin_time_us(std::string* source);

// OPWEAVE_AFFINITY=none|compact|scatter (pinning.h); default none.
Affinity environment_affinity(std::string* source);

}  // namespace opweave
