#include "numpy_tensor.h"

#include <cstring>

namespace py = pybind11;

namespace opweave::bindings {

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return py::dtype::of<float>();
    case DType::kFloat64:
      return py::dtype::of<double>();
    case DType::kInt32:
      return py::dtype::of<std::int32_t>();
    case DType::kInt64:
      return py::dtype::of<std::int64_t>();
    case DType::kBool:
      return py::dtype::of<bool>();
    case DType::kInt8:
      return py::dtype::of<std::int8_t>();
    case DType::kInt16:
      return py::dtype::of<std::int16_t>();
    case DType::kUInt8:
      return py::dtype::of<std::uint8_t>();
    case DType::kFloat16:
      return py::dtype("float16");
    case DType::kString:
      return py::dtype("O");  // as TensorFlow: an object array of bytes
  }
  throw py::type_error("unknown dtype");
}

DType dtype_from_numpy(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 8) return DType::kFloat64;
  if (kind == 'f' && size == 2) return DType::kFloat16;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'i' && size == 8) return DType::kInt64;
  if (kind == 'i' && size == 2) return DType::kInt16;
  if (kind == 'i' && size == 1) return DType::kInt8;
  if (kind == 'u' && size == 1) return DType::kUInt8;
  if (kind == 'b' && size == 1) return DType::kBool;
  if (kind == 'S' || kind == 'U' || kind == 'O') return DType::kString;
  throw py::type_error("unsupported NumPy dtype " + py::str(dtype).cast<std::string>());
}

namespace {

// A string tensor from an array of bytes ('S'), str ('U', encoded as UTF-8, as TensorFlow does)
// or objects that are bytes or str. Always a copy: elements are std::string objects.
Tensor strings_from_numpy(const py::array& array) {
  Shape shape(array.shape(), array.shape() + array.ndim());
  Tensor t = Tensor::empty(DType::kString, shape);
  // ravel() visits the elements in C order whatever the strides; item(i) gives Python objects.
  py::object flat = py::reinterpret_borrow<py::object>(array).attr("ravel")();
  py::list items = flat.attr("tolist")();
  std::string* out = t.data<std::string>();
  std::size_t i = 0;
  for (const py::handle& item : items) {
    if (py::isinstance<py::bytes>(item)) {
      out[i++] = item.cast<std::string>();
    } else if (py::isinstance<py::str>(item)) {
      out[i++] = item.attr("encode")("utf-8").cast<std::string>();
    } else {
      throw py::type_error("a string tensor needs bytes or str elements, got " +
                           py::str(py::type::of(item)).cast<std::string>());
    }
  }
  return t;
}

// An object array of bytes, as TensorFlow returns string tensors.
py::array strings_to_numpy(const Tensor& tensor) {
  Tensor c = tensor.contiguous();
  std::vector<py::ssize_t> shape(c.shape().begin(), c.shape().end());
  py::array out(py::dtype("O"), shape);
  auto** cells = static_cast<PyObject**>(out.mutable_data());
  const std::string* src = c.data<std::string>();
  for (std::int64_t i = 0; i < c.numel(); ++i) {
    PyObject* b = PyBytes_FromStringAndSize(src[i].data(), static_cast<py::ssize_t>(src[i].size()));
    if (b == nullptr) throw py::error_already_set();
    Py_XDECREF(cells[i]);  // the new array holds None references
    cells[i] = b;
  }
  return out;
}

}  // namespace

std::shared_ptr<py::object> gil_safe_ref(py::object object) {
  return std::shared_ptr<py::object>(new py::object(std::move(object)), [](py::object* p) {
    // The last reference may die on a pool thread that does not hold the GIL; decref needs it.
    // During interpreter shutdown Python objects can no longer be touched: leak instead.
    if (!Py_IsInitialized()) {
      p->release();
      delete p;
      return;
    }
    py::gil_scoped_acquire gil;
    delete p;
  });
}

Tensor tensor_copy_from_numpy(const py::array& array) {
  const DType dtype = dtype_from_numpy(array.dtype());
  if (dtype == DType::kString) return strings_from_numpy(array);
  Shape shape(array.shape(), array.shape() + array.ndim());
  // One copy, straight into the tensor: making the array contiguous first would materialise a
  // second full copy of a strided or broadcast view (a zero-stride view of 16 GiB took 32).
  // Tensor::empty throws ResourceExhausted when the result cannot be allocated at all.
  Tensor t = Tensor::empty(dtype, shape);
  if (t.nbytes() == 0) return t;
  if ((array.flags() & py::detail::npy_api::constants::NPY_ARRAY_C_CONTIGUOUS_) != 0) {
    std::memcpy(t.raw_data(), array.data(), t.nbytes());
    return t;
  }
  py::array destination = numpy_from_tensor(t, /*writeable=*/true, /*copy=*/false);
  py::module_::import("numpy").attr("copyto")(destination, array, py::arg("casting") = "no");
  return t;
}

Tensor tensor_from_numpy(const py::array& array) {
  const DType dtype = dtype_from_numpy(array.dtype());
  if (dtype == DType::kString) return strings_from_numpy(array);
  const auto item = static_cast<py::ssize_t>(dtype_size(dtype));
  // '=' native, '|' not applicable (1-byte types), '<' little-endian (native on our targets).
  const char order = array.dtype().byteorder();
  const bool native = order == '=' || order == '|' || order == '<';
  bool viewable =
      native && (array.flags() & py::detail::npy_api::constants::NPY_ARRAY_ALIGNED_) != 0;
  Shape shape(array.shape(), array.shape() + array.ndim());
  Shape strides(static_cast<std::size_t>(array.ndim()));
  for (py::ssize_t i = 0; i < array.ndim() && viewable; ++i) {
    const py::ssize_t s = array.strides(i);
    if (s % item != 0) viewable = false;
    strides[static_cast<std::size_t>(i)] = s / item;
  }
  if (!viewable) return tensor_copy_from_numpy(array);
  std::shared_ptr<py::object> owner = gil_safe_ref(array);
  return Tensor::wrap(dtype, shape, strides, const_cast<void*>(array.data()),
                      std::static_pointer_cast<void>(owner));
}

py::array numpy_from_tensor(const Tensor& tensor, bool writeable, bool copy) {
  if (tensor.dtype() == DType::kString) return strings_to_numpy(tensor);
  const py::dtype dt = numpy_dtype(tensor.dtype());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (copy) {
    Tensor c = tensor.contiguous();
    py::array out(dt, shape);
    if (c.nbytes()) std::memcpy(out.mutable_data(), c.raw_data(), c.nbytes());
    return out;
  }
  std::vector<py::ssize_t> strides;
  const auto item = static_cast<py::ssize_t>(dtype_size(tensor.dtype()));
  for (std::int64_t s : tensor.strides()) strides.push_back(static_cast<py::ssize_t>(s) * item);
  // The capsule owns a Tensor handle, which keeps the buffer alive as long as the array lives.
  auto* keep = new Tensor(tensor);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  py::array out(dt, shape, strides, tensor.raw_data(), base);
  if (!writeable) out.attr("flags").attr("writeable") = false;
  return out;
}

}  // namespace opweave::bindings
