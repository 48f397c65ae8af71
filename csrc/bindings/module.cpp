#include "register.h"

PYBIND11_MODULE(_opweave_core, m) {
  m.doc() = "opweave's C++ core (private; use the opweave package).";
  m.attr("__version__") = OPWEAVE_VERSION;
  opweave::bindings::register_errors(m);
  opweave::bindings::register_pool(m);
  opweave::bindings::register_kernels(m);
  opweave::bindings::register_graph(m);
  opweave::bindings::register_optimizer(m);
  opweave::bindings::register_session(m);
  opweave::bindings::register_interpreter_exit(m);
  opweave::bindings::register_memory(m);
  opweave::bindings::register_checksum(m);
}
