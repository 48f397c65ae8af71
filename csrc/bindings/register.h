// One register_*() per subsystem; module.cpp only wires them together.
#pragma once

#include <pybind11/pybind11.h>

namespace opweave::bindings {

void register_errors(pybind11::module_& m);
void register_pool(pybind11::module_& m);
void register_kernels(pybind11::module_& m);
void register_graph(pybind11::module_& m);
void register_session(pybind11::module_& m);
void register_interpreter_exit(pybind11::module_& m);
void register_memory(pybind11::module_& m);
void register_checksum(pybind11::module_& m);
void register_optimizer(pybind11::module_& m);

}  // namespace opweave::bindings
