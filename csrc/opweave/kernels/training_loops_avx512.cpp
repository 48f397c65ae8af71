// AVX-512 build of the optimizers' update loops (-mavx512f/dq/vl/bw -ffp-contract=off: the
// baseline build's operations and roundings, 16 float or 8 double lanes per instruction). Used
// only when cpu_info() reports every one of those extensions.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_TRAINING_LOOPS_IMPL
#include "opweave/kernels/training_loops.h"

OPWEAVE_TRAINING_LOOPS_INSTANTIATE(table_avx512)
#endif
