// AVX512 build of the pooling row loops (see pool_loops.h): the same compares and selects as the
// baseline build, wider. Used only when cpu_info() reports the ISA.
#if defined(OPWEAVE_X86_64)
#define OPWEAVE_POOL_LOOPS_IMPL
#include "opweave/kernels/pool_loops.h"

OPWEAVE_POOL_LOOPS_INSTANTIATE(avx512)
#endif
