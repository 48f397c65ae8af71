// The process-wide pools, created lazily on first use (PLACEHOLDER: the foundation issue adds
// sizing rules, provenance, resizing and fork handling).
#pragma once

#include "opweave/thread_pool.h"

namespace opweave {

// The global intra-op pool; kernels called directly from Python run on it. Thread-safe.
ThreadPool* global_intra_pool();

}  // namespace opweave
