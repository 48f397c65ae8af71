#include "register.h"

namespace opweave::bindings {

void register_graph(pybind11::module_& /*m*/) {}

}  // namespace opweave::bindings
