// AVX2 build of the transcendental unary loops (compiled with -mavx2 -mfma -ffp-contract=off: the
// same operations and roundings as the baseline build, 8 float or 4 double lanes). Used only when
// cpu_info() reports AVX2 and FMA.
#define OPWEAVE_UNARY_MATH_IMPL
#include "opweave/kernels/unary_math_loops.h"

OPWEAVE_UNARY_MATH_INSTANTIATE(avx2)
