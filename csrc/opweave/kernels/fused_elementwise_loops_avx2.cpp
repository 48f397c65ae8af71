// AVX2 build of the fused element-wise block loops (compiled with -mavx2 -mfma -ffp-contract=off:
// the same operations and roundings as the baseline build, 8 float or 4 double lanes). Used only
// when cpu_info() reports AVX2 and FMA.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_FUSED_LOOPS_IMPL
#include "opweave/kernels/fused_elementwise_loops.h"

OPWEAVE_FUSED_LOOPS_INSTANTIATE(avx2)
#endif
