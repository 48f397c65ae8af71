// AVX2 build of the argmax / argmin loops (-mavx2 -mfma -mf16c; comparisons and selects only).
// Used only when cpu_info() reports AVX2.
#define OPWEAVE_ARGMINMAX_LOOPS_IMPL
#include "opweave/kernels/argminmax_loops.h"

OPWEAVE_ARGMINMAX_INSTANTIATE(run_fns_avx2)
