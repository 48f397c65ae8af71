#include "register.h"

namespace opweave::bindings {

void register_pool(pybind11::module_& /*m*/) {}

}  // namespace opweave::bindings
