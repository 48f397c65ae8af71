// Baseline x86-64 (or any CPU) build of the argmax / argmin loops; see argminmax_loops.h.
#define OPWEAVE_ARGMINMAX_LOOPS_IMPL
#include "opweave/kernels/argminmax_loops.h"

OPWEAVE_ARGMINMAX_INSTANTIATE(run_fns_baseline)
