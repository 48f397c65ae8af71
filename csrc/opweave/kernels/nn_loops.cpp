// Baseline x86-64 (or any CPU) build of the nn row loops; see nn_loops.h.
#define OPWEAVE_NN_LOOPS_IMPL
#include "opweave/kernels/nn_loops.h"

OPWEAVE_NN_LOOPS_INSTANTIATE(baseline)
