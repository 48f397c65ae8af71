#include "attr_conversion.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
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

namespace {

void put_length_prefixed(std::ostringstream& out, const std::string& s) {
  out << s.size() << ':' << s;
}

void put_double(std::ostringstream& out, double d) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);  // every bit: 0.2 and 0.2000001, 0 and -0 differ
  out << std::hex << bits << std::dec;
}

}  // namespace

std::optional<std::string> attr_cache_key(const AttrValue& value) {
  std::ostringstream out;
  out << value.index() << '#';  // the kind, so an int 1 and a bool true differ
  bool cacheable = true;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, bool>) {
          out << v;
        } else if constexpr (std::is_same_v<V, double>) {
          put_double(out, v);
        } else if constexpr (std::is_same_v<V, std::string>) {
          put_length_prefixed(out, v);
        } else if constexpr (std::is_same_v<V, DType>) {
          out << dtype_name(v);
        } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
          for (const auto& e : v) out << e << ',';
        } else if constexpr (std::is_same_v<V, std::vector<double>>) {
          for (const auto& e : v) {
            put_double(out, e);
            out << ',';
          }
        } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
          for (const auto& e : v) put_length_prefixed(out, e);
        } else if constexpr (std::is_same_v<V, std::vector<DType>>) {
          for (DType e : v) out << dtype_name(e) << ',';
        } else {
          // Tensors and functions have no value key (and an address may be reused by the next
          // call's value): kernels made with them are not cached.
          cacheable = false;
        }
      },
      value);
  if (!cacheable) return std::nullopt;
  return out.str();
}

}  // namespace opweave::bindings
