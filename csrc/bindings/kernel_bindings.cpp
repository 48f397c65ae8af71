#include "register.h"

namespace opweave::bindings {

void register_kernels(pybind11::module_& /*m*/) {}

}  // namespace opweave::bindings
