// Baseline x86-64 (or any CPU) build of the fused element-wise block loops; see
// fused_elementwise_loops.h.
#define OPWEAVE_FUSED_LOOPS_IMPL
#include "opweave/kernels/fused_elementwise_loops.h"

OPWEAVE_FUSED_LOOPS_INSTANTIATE(baseline)
