// AVX2 build of the reduction loops (compiled with -mavx2 -mfma -mf16c; sums contain no
// multiplies, so FMA contraction cannot change them). Used only when cpu_info() reports AVX2.
#define OPWEAVE_REDUCE_LOOPS_IMPL
#include "opweave/kernels/reduce_loops.h"

OPWEAVE_REDUCE_INSTANTIATE(loops_avx2)
