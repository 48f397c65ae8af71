// Thread controls that pool_bindings.cpp does not bind: the plain provenance strings of the
// global pools (runtime_info() decorates them after a fork), the spin time set at run time, and
// the registry of named and per-session pools (pool_registry.h) that parallel_info() lists.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "interpreter_exit.h"
#include "opweave/errors.h"
#include "opweave/pool_registry.h"
#include "opweave/runtime.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

bool is_intra(const std::string& pool) {
  if (pool == "intra") return true;
  if (pool == "inter") return false;
  throw_invalid_argument("pool must be 'intra' or 'inter', got '" + pool + "'");
}

}  // namespace

void register_threads(py::module_& m) {
  m.def("intra_op_parallelism_source", &intra_op_parallelism_source);
  m.def("inter_op_parallelism_source", &inter_op_parallelism_source);
  // (size, source, fixed, requested): one pool's whole setting, read in one step.
  m.def(
      "parallelism_setting",
      [](const std::string& pool) {
        const ParallelismSetting s =
            is_intra(pool) ? intra_op_parallelism_setting() : inter_op_parallelism_setting();
        return py::make_tuple(s.size, s.source, s.fixed, s.requested);
      },
      py::arg("pool"));
  m.def(
      "restore_parallelism",
      [](const std::string& pool, int size, std::string source, bool fixed, int requested) {
        const bool intra = is_intra(pool);
        const ParallelismSetting saved{size, std::move(source), fixed, requested};
        // Resizing waits for the pool's work, which may be py_functions that need the GIL: it is
        // released, and no Python object is touched meanwhile (everything was copied above).
        CountedGilRelease release;
        if (intra) {
          restore_intra_op_parallelism(saved);
        } else {
          restore_inter_op_parallelism(saved);
        }
      },
      py::arg("pool"), py::arg("size"), py::arg("source"), py::arg("fixed"), py::arg("requested"));
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
      entry["spin_time_us"] = d.spin_time_us;
      entry["cpus"] = d.cpus;
      out.append(entry);
    }
    return out;
  });
}

}  // namespace opweave::bindings
