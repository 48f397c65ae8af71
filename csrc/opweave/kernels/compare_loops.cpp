// Baseline x86-64 (or any CPU) build of the comparison loops; see compare_loops.h.
#define OPWEAVE_COMPARE_LOOPS_IMPL
#include "opweave/kernels/compare_loops.h"

OPWEAVE_COMPARE_INSTANTIATE(flat_fns_baseline)
