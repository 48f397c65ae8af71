// AVX2 build of the nn row loops (compiled with -mavx2 -mfma -ffp-contract=off: the same
// operations and roundings as the baseline build, 8 float or 4 double lanes per instruction).
// Used only when cpu_info() reports AVX2 and FMA.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_NN_LOOPS_IMPL
#include "opweave/kernels/nn_loops.h"

OPWEAVE_NN_LOOPS_INSTANTIATE(avx2)
#endif
