// The tensor buffer cache from Python (opweave/_memory.py wraps these).
#include <pybind11/pybind11.h>

#include "opweave/buffer_cache.h"
#include "opweave/kernels/packed_weights.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

void register_memory(py::module_& m) {
  m.def("buffer_cache_info", [] {
    const BufferCacheInfo info = buffer_cache_info();
    py::dict d;
    d["held_bytes"] = info.held_bytes;
    d["cap_bytes"] = info.cap_bytes;
    d["cap_source"] = info.cap_source;
    d["hits"] = info.hits;
    d["misses"] = info.misses;
    return d;
  });
  // Weights packed by fused MatMuls (kernels/packed_weights.h), for tests and diagnostics.
  m.def("packed_weight_stats", [] {
    const PackedWeightTotals t = packed_weight_totals();
    py::dict d;
    d["packs"] = t.packs;
    d["hits"] = t.hits;
    return d;
  });
  // No GIL needed for the cache's own lock, but freeing up to the cap can take a while: let
  // other Python threads run meanwhile.
  m.def("empty_buffer_cache", &empty_buffer_cache, py::call_guard<py::gil_scoped_release>());
}

}  // namespace opweave::bindings
