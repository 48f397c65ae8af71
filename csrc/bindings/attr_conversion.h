// Op attributes from Python values, shared by graph construction and eager kernel calls. The
// Python layer has checked each value's kind and range (opweave.ops); this only converts.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "opweave/graph/graph.h"

namespace opweave::bindings {

// bool, DType, int, float, str, bytes, a NumPy array (copied into a Tensor: the graph must not
// alias memory the user may change later), or a list/tuple of ints, floats, strs or DTypes. A
// callable is not a plain attribute: graph_bindings.cpp wraps py_function bodies itself. Throws
// TypeError / OverflowError for anything else.
AttrValue attr_from_python(const pybind11::handle& value);

// A string that identifies the attribute's value exactly (kind and every bit), for caching kernels
// by their attributes; nullopt for values that have none (tensors, functions).
std::optional<std::string> attr_cache_key(const AttrValue& value);

}  // namespace opweave::bindings
