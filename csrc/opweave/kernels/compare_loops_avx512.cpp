// AVX-512 build of the comparison loops (-mavx512f -mavx512bw ...; comparisons only): a compare
// gives a mask register that becomes 16 or 64 bools in one instruction, where the AVX2 build packs
// 32-bit lanes down to bytes in several (a float32 less on 16 MiB: 15% faster). Used only when
// cpu_info() reports those extensions.
#define OPWEAVE_COMPARE_LOOPS_IMPL
#include "opweave/kernels/compare_loops.h"

OPWEAVE_COMPARE_INSTANTIATE(flat_fns_avx512)
