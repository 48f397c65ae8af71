// AVX-512 build of the floating-point math loops (compiled with -mavx512f -mavx512dq -mavx512vl
// -mavx512bw -mavx2 -mfma -ffp-contract=off: the same operations and roundings as the baseline
// build, 16 float or 8 double lanes, mask registers for the selects). Used only when cpu_info()
// reports those extensions.
#define OPWEAVE_UNARY_MATH_IMPL
#include "opweave/kernels/unary_math_loops.h"

OPWEAVE_UNARY_MATH_INSTANTIATE(avx512)
