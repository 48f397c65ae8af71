#include "attr_conversion.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <sstream>

#include "numpy_tensor.h"

namespace py = pybind11;

namespace opweave::bindings {

AttrValue attr_from_python(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<DType>(v)) return v.cast<DType>();
  if (py::isinstance<py::int_>(v)) return v.cast<std::int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v)) return v.cast<std::string>();
  if (py::isinstance<py::array>(v)) return tensor_copy_from_numpy(v.cast<py::array>());
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = v.cast<py::sequence>();
    if (seq.size() > 0) {
      py::handle first = seq[0];
      if (py::isinstance<DType>(first)) return v.cast<std::vector<DType>>();
      if (py::isinstance<py::float_>(first)) return v.cast<std::vector<double>>();
      if (py::isinstance<py::str>(first) || py::isinstance<py::bytes>(first)) {
        return v.cast<std::vector<std::string>>();
      }
    }
    return v.cast<std::vector<std::int64_t>>();
  }
  throw py::type_error("unsupported attribute value: " + py::repr(v).cast<std::string>());
}

std::string attr_cache_key(const AttrValue& value) {
  std::ostringstream out;
  std::visit(
      [&out](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, double> ||
                      std::is_same_v<V, bool> || std::is_same_v<V, std::string>) {
          out << v;
        } else if constexpr (std::is_same_v<V, DType>) {
          out << dtype_name(v);
        } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>> ||
                             std::is_same_v<V, std::vector<double>> ||
                             std::is_same_v<V, std::vector<std::string>>) {
          for (const auto& e : v) out << e << ',';
        } else if constexpr (std::is_same_v<V, std::vector<DType>>) {
          for (DType e : v) out << dtype_name(e) << ',';
        } else {
          // Tensors and functions: by identity (eager calls never pass them; distinct objects
          // must not share a cached kernel).
          out << "@" << static_cast<const void*>(&v);
        }
      },
      value);
  return out.str();
}

}  // namespace opweave::bindings
