// AVX-512 build of the argmax / argmin loops (-mavx512f ...; comparisons and selects only, 64-byte
// vectors with mask registers). Used only when cpu_info() reports those extensions.
#define OPWEAVE_ARGMINMAX_LOOPS_IMPL
#include "opweave/kernels/argminmax_loops.h"

OPWEAVE_ARGMINMAX_INSTANTIATE(run_fns_avx512)
