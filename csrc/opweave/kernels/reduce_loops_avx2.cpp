// AVX2 build of the reduction loops (compiled with -mavx2 -mfma -mf16c -ffp-contract=off: no
// multiply-add is fused, so products and sums round as in the baseline build). Used only when
// cpu_info() reports AVX2.
#define OPWEAVE_REDUCE_LOOPS_IMPL
#include "opweave/kernels/reduce_loops.h"

OPWEAVE_REDUCE_INSTANTIATE(loops_avx2)
