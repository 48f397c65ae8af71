// Small facts about constants, shapes and dtypes that several passes ask (pass.h).
#include <cstring>

#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

template <typename T>
bool all_equal(const Tensor& t, double value) {
  const T* p = t.data<T>();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (static_cast<double>(p[i]) != value) return false;
  }
  return true;
}

}  // namespace

bool all_elements_equal(const Tensor& tensor, double value) {
  if (tensor.numel() == 0 || !tensor.defined()) return false;
  const Tensor t = tensor.contiguous();
  switch (t.dtype()) {
    case DType::kFloat32:
      return all_equal<float>(t, value);
    case DType::kFloat64:
      return all_equal<double>(t, value);
    case DType::kInt32:
      return all_equal<std::int32_t>(t, value);
    case DType::kInt64:
      return all_equal<std::int64_t>(t, value);
    case DType::kInt8:
      return all_equal<std::int8_t>(t, value);
    case DType::kInt16:
      return all_equal<std::int16_t>(t, value);
    case DType::kUInt8:
      return all_equal<std::uint8_t>(t, value);
    case DType::kFloat16: {
      const Half* p = t.data<Half>();
      for (std::int64_t i = 0; i < t.numel(); ++i) {
        if (static_cast<double>(p[i].to_float()) != value) return false;
      }
      return true;
    }
    case DType::kBool:
    case DType::kString:
      break;
  }
  return false;
}

std::optional<std::vector<std::int64_t>> int_values(const Tensor& tensor) {
  if (tensor.ndim() > 1 || !tensor.defined()) return std::nullopt;
  const Tensor t = tensor.contiguous();
  std::vector<std::int64_t> out(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DType::kInt32) {
      out[static_cast<std::size_t>(i)] = t.data<std::int32_t>()[i];
    } else if (t.dtype() == DType::kInt64) {
      out[static_cast<std::size_t>(i)] = t.data<std::int64_t>()[i];
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool broadcasts_into(const StaticShape& x, const Shape& c) {
  if (c.empty()) return true;  // a scalar broadcasts into anything
  if (!x.known_rank || c.size() > x.dims.size()) return false;
  const std::size_t offset = x.dims.size() - c.size();
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::int64_t xd = x.dims[offset + i];
    if (c[i] != 1 && c[i] != xd) return false;  // an unknown xd (-1) might be 1 and grow
  }
  return true;
}

StaticShape static_shape_of(const WorkGraph& graph, const TensorId& t) {
  if (graph.is_constant(t.node)) return StaticShape{true, graph.constant_value(t.node).shape()};
  const NodeDef& d = graph.def(t.node);
  if (d.output_shapes.empty()) return StaticShape{};
  return d.output_shapes[static_cast<std::size_t>(t.index)];
}

std::optional<DType> dtype_of(const WorkGraph& graph, const TensorId& t) {
  if (graph.is_constant(t.node)) return graph.constant_value(t.node).dtype();
  const NodeDef& d = graph.def(t.node);
  if (d.output_dtypes.empty()) return std::nullopt;
  return d.output_dtypes[static_cast<std::size_t>(t.index)];
}

}  // namespace opweave
