// Conversions between NumPy arrays and opweave::Tensor, shared by the graph and session bindings.
// Every function here must be called with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>

#include "opweave/tensor.h"

namespace opweave::bindings {

// The NumPy dtype for a DType, and back (throws TypeError for anything else).
pybind11::dtype numpy_dtype(DType dtype);
DType dtype_from_numpy(const pybind11::dtype& dtype);

// A Tensor viewing the array's memory when its layout allows (native byte order, aligned,
// strides a multiple of the item size), else a contiguous copy. The Tensor keeps the array alive.
Tensor tensor_from_numpy(const pybind11::array& array);
// A Tensor that owns a copy of the array's data (for values that must not alias Python memory).
Tensor tensor_copy_from_numpy(const pybind11::array& array);
// An array viewing the tensor's memory and keeping it alive, or a copy when copy is true.
pybind11::array numpy_from_tensor(const Tensor& tensor, bool writeable, bool copy);

// A Python object reference that may be dropped from any thread: it takes the GIL to decref.
std::shared_ptr<pybind11::object> gil_safe_ref(pybind11::object object);

}  // namespace opweave::bindings
