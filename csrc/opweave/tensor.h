// Tensor: a dtype, a shape, element strides and a reference-counted buffer. Kernels read strided
// inputs and usually write freshly allocated contiguous outputs. A Tensor is a cheap handle:
// copying it shares the buffer (like a NumPy view), so it can wrap memory owned by Python.
//
//   Tensor t = Tensor::empty(DType::kFloat32, {2, 3});
//   t.data<float>()[0] = 1.0f;
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "opweave/errors.h"
#include "opweave/half.h"

namespace opweave {

// The element types. Numbers are stored as their C++ types (bool as one byte, float16 as the IEEE
// binary16 bits in a Half); string elements are std::string objects (byte strings, as
// TensorFlow's tf.string), constructed and destroyed with the buffer.
enum class DType : std::uint8_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kBool = 4,
  kInt8 = 5,
  kInt16 = 6,
  kUInt8 = 7,
  kFloat16 = 8,
  kString = 9,
};
inline constexpr int kNumDTypes = 10;

using Shape = std::vector<std::int64_t>;

std::size_t dtype_size(DType dtype) noexcept;
// "float32", "float64", "int32", "int64", "bool", "int8", "int16", "uint8", "float16", "string"
const char* dtype_name(DType dtype) noexcept;
bool dtype_is_floating(DType dtype) noexcept;     // float16, float32, float64
bool dtype_is_integer(DType dtype) noexcept;      // int8, int16, int32, int64, uint8
std::string shape_to_string(const Shape& shape);  // "[2, 3]"
std::int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);  // row-major element strides

// Maps a C++ element type to its DType (float -> kFloat32, ...). bool is stored as one byte.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<std::int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<std::int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<std::int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeOf<std::int16_t> {
  static constexpr DType value = DType::kInt16;
};
template <>
struct DTypeOf<std::uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kString;
};

// Not thread-safe for concurrent mutation of the same handle; distinct handles (even sharing a
// buffer) may be read from many threads.
class Tensor {
 public:
  Tensor() = default;

  // A new contiguous, uninitialised buffer: 64-byte aligned, except buffers of at most 64 bytes,
  // which are 16-byte aligned and share one allocation with their reference count. Throws
  // OpError(kResourceExhausted) when the allocation fails or the size overflows. String tensors
  // are the exception: their elements are constructed (empty strings).
  static Tensor empty(DType dtype, const Shape& shape);
  static Tensor empty(DType dtype, Shape&& shape);
  static Tensor zeros(DType dtype, const Shape& shape);
  // A view of memory someone else owns; `owner` keeps it alive (may be null for borrowed memory
  // whose lifetime the caller guarantees). Strides are in elements and may be zero or negative.
  static Tensor wrap(DType dtype, const Shape& shape, const Shape& strides, void* data,
                     std::shared_ptr<void> owner);

  bool defined() const noexcept { return data_ != nullptr || numel() == 0; }
  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  const Shape& strides() const noexcept { return strides_; }
  int ndim() const noexcept { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int i) const { return shape_.at(static_cast<std::size_t>(i)); }
  std::int64_t numel() const noexcept { return numel_; }
  std::size_t nbytes() const noexcept {
    return static_cast<std::size_t>(numel_) * dtype_size(dtype_);
  }
  bool is_contiguous() const noexcept;

  void* raw_data() const noexcept { return data_; }
  template <typename T>
  T* data() const noexcept {
    return static_cast<T*>(data_);
  }
  const std::shared_ptr<void>& owner() const noexcept { return owner_; }
  // True when this handle is the only owner of its buffer (no other Tensor, view or wrapper
  // shares it, and the memory is not borrowed), so writes to it cannot be seen by anyone else.
  // Everything the other, former owners did with the buffer happens-before the return of true.
  bool sole_owner() const noexcept;

  // A contiguous copy (or this tensor itself when it is already contiguous).
  Tensor contiguous() const;
  // Same buffer, new shape; requires a contiguous tensor with the same number of elements.
  Tensor reshaped(const Shape& shape) const;

 private:
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  Shape strides_;
  std::int64_t numel_ = 0;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

}  // namespace opweave
