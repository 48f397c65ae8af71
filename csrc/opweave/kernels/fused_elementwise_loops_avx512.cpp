// AVX-512 build of the fused element-wise block loops (compiled with -mavx512f -mavx512dq
// -mavx512vl -mavx512bw -mavx2 -mfma -ffp-contract=off: the same operations and roundings as the
// baseline build, 16 float or 8 double lanes). Used only when cpu_info() reports those extensions.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_FUSED_LOOPS_IMPL
#include "opweave/kernels/fused_elementwise_loops.h"

OPWEAVE_FUSED_LOOPS_INSTANTIATE(avx512)
#endif
