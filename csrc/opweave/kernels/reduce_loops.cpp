// Baseline x86-64 (or any CPU) build of the reduction loops; see reduce_loops.h.
#define OPWEAVE_REDUCE_LOOPS_IMPL
#include "opweave/kernels/reduce_loops.h"

OPWEAVE_REDUCE_INSTANTIATE(loops_baseline)
