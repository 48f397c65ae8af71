// Thread controls that pool_bindings.cpp does not bind: the plain provenance strings of the
// global pools (runtime_info() decorates them after a fork) and the registry of named and
// per-session pools (pool_registry.h) that parallel_info() lists.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "opweave/pool_registry.h"
#include "opweave/runtime.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

void register_threads(py::module_& m) {
  m.def("intra_op_parallelism_source", &intra_op_parallelism_source);
  m.def("inter_op_parallelism_source", &inter_op_parallelism_source);
  m.def("describe_pools", [] {
    py::list out;
    for (const PoolDescription& d : describe_pools()) {
      py::dict entry;
      entry["kind"] = d.kind;
      entry["label"] = d.label;
      entry["workers"] = d.workers;
      entry["source"] = d.source;
      out.append(entry);
    }
    return out;
  });
}

}  // namespace opweave::bindings
