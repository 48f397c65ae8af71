// Thread controls that pool_bindings.cpp does not bind: the plain provenance strings of the
// global pools (runtime_info() decorates them after a fork), the spin time set at run time, and
// the registry of named and per-session pools (pool_registry.h) that parallel_info() lists.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "interpreter_exit.h"
#include "opweave/pool_registry.h"
#include "opweave/runtime.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

void register_threads(py::module_& m) {
  m.def("intra_op_parallelism_source", &intra_op_parallelism_source);
  m.def("inter_op_parallelism_source", &inter_op_parallelism_source);
  // Rebuilding workers joins threads; the GIL is released so that a worker finishing a
  // py_function can take it. No Python object is touched meanwhile (source was copied).
  m.def("set_spin_time_us", &set_spin_time_us, py::arg("us"), py::arg("source"),
        py::call_guard<CountedGilRelease>());
  m.def("configure_spin_time_if_unset", &configure_spin_time_if_unset, py::arg("us"),
        py::arg("source"));
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
