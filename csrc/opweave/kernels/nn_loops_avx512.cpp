// AVX-512 build of the nn row loops (compiled with -mavx512f/dq/vl/bw -ffp-contract=off: the same
// operations and roundings as the baseline build, 16 float or 8 double lanes per instruction, so
// one register holds a row's accumulator lanes). Used only when cpu_info() reports every one of
// those extensions.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_NN_LOOPS_IMPL
#include "opweave/kernels/nn_loops.h"

OPWEAVE_NN_LOOPS_INSTANTIATE(avx512)
#endif
