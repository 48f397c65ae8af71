// Baseline x86-64 (or any CPU) build of the pooling row loops; see pool_loops.h.
#define OPWEAVE_POOL_LOOPS_IMPL
#include "opweave/kernels/pool_loops.h"

OPWEAVE_POOL_LOOPS_INSTANTIATE(baseline)
