// AVX2 build of the optimizers' update loops (-mavx2 -mfma -ffp-contract=off: the baseline
// build's operations and roundings, 8 float or 4 double lanes per instruction). Used only when
// cpu_info() reports AVX2 and FMA.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_TRAINING_LOOPS_IMPL
#include "opweave/kernels/training_loops.h"

OPWEAVE_TRAINING_LOOPS_INSTANTIATE(table_avx2)
#endif
