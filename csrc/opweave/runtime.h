// Transitional: the global pools live in pools/global_pools.h. This header only keeps
// csrc/bindings/kernel_bindings.cpp building while the op layer is rewritten on another branch;
// delete it once that file includes "opweave/pools/global_pools.h". Nothing else includes it.
#pragma once

#include "opweave/pools/global_pools.h"
