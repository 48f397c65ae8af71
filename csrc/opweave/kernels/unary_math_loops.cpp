// Baseline x86-64 (or any CPU) build of the transcendental unary loops; see unary_math_loops.h.
#define OPWEAVE_UNARY_MATH_IMPL
#include "opweave/kernels/unary_math_loops.h"

OPWEAVE_UNARY_MATH_INSTANTIATE(baseline)
