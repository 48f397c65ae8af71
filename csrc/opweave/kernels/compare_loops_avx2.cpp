// AVX2 build of the comparison loops (-mavx2 -mfma -mf16c; comparisons only). Used only when
// cpu_info() reports AVX2.
#define OPWEAVE_COMPARE_LOOPS_IMPL
#include "opweave/kernels/compare_loops.h"

OPWEAVE_COMPARE_INSTANTIATE(flat_fns_avx2)
