// Checksums for opweave's checkpoint files (opweave/train/_checkpoint_format.py).
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string_view>

#include "opweave/crc32c.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

void register_checksum(py::module_& m) {
  m.def(
      "crc32c",
      [](const py::buffer& data, std::uint32_t crc) {
        // A contiguous buffer of bytes (the caller passes memoryviews cast to "B").
        const py::buffer_info info = data.request();
        if (info.ndim > 1 || (info.ndim == 1 && info.strides[0] != info.itemsize)) {
          throw py::value_error("crc32c needs a contiguous one-dimensional buffer");
        }
        const auto n = static_cast<std::size_t>(info.size * info.itemsize);
        // The buffer stays alive (and, held by `info`, exported) while the GIL is released;
        // nothing Python is touched until crc32c returns.
        py::gil_scoped_release release;
        return crc32c(crc, info.ptr, n);
      },
      py::arg("data"), py::arg("crc") = 0);
  m.def(
      "crc32c_portable",
      [](const py::bytes& data, std::uint32_t crc) {
        const std::string_view s = data;
        return crc32c_portable(crc, s.data(), s.size());
      },
      py::arg("data"), py::arg("crc") = 0);
  m.def("crc32c_uses_hardware", &crc32c_uses_hardware);
}

}  // namespace opweave::bindings
