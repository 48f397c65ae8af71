// Kernels that wrap the arithmetic in kernels/kernels.h. Their cost depends on the sizes, so the
// executor measures them (CostHint::kMeasure) except matmul, which is always worth spreading.
#include "opweave/executor/kernel_registry.h"

namespace opweave {

void register_math_kernels() {}

}  // namespace opweave
