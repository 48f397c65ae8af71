// Translates opweave::OpError into opweave._opweave_core.OpError(code, message); the Python layer
// (opweave.errors) re-raises it as the matching TensorFlow-style class.
#include <pybind11/pybind11.h>

#include "opweave/errors.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

void register_errors(py::module_& m) {
  // The type lives as long as the module; a leaked strong reference keeps it valid for the
  // translator, which may run until interpreter shutdown.
  static PyObject* core_error =
      PyErr_NewException("opweave._opweave_core.CoreError", PyExc_RuntimeError, nullptr);
  m.attr("CoreError") = py::handle(core_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const OpError& e) {
      // args = (code, message): opweave.errors maps the code to a class.
      py::object err = py::handle(core_error)(static_cast<int>(e.code()), std::string(e.what()));
      PyErr_SetObject(core_error, err.ptr());
    }
  });
}

}  // namespace opweave::bindings
