#include "opweave/tensor.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "opweave/buffer_cache.h"
#include "opweave/sanitizers.h"

namespace opweave {

std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kInt16:
    case DType::kFloat16:
      return 2;
    case DType::kString:
      return sizeof(std::string);
  }
  return 0;
}

const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kUInt8:
      return "uint8";
    case DType::kFloat16:
      return "float16";
    case DType::kString:
      return "string";
  }
  return "unknown";
}

bool dtype_is_floating(DType dtype) noexcept {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16;
}

bool dtype_is_integer(DType dtype) noexcept {
  return dtype == DType::kInt32 || dtype == DType::kInt64 || dtype == DType::kInt8 ||
         dtype == DType::kInt16 || dtype == DType::kUInt8;
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out << ", ";
    out << shape[i];
  }
  out << ']';
  return out.str();
}

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw_invalid_argument("negative dimension in shape " + shape_to_string(shape));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) {
      throw OpError(ErrorCode::kResourceExhausted,
                    "shape " + shape_to_string(shape) + " has too many elements");
    }
    n *= d;
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

namespace {

// Buffers of at most kSmallBufferBytes share one allocation with their reference count
// (std::make_shared): one trip to the allocator instead of two, and no aligned_alloc, which for
// tiny sizes is several times slower than malloc (it carves an aligned piece out of a bigger
// chunk and frees the rest). They get malloc's 16-byte alignment, enough for every dtype: a cache
// line's alignment cannot matter for data smaller than one.
constexpr std::size_t kSmallBufferBytes = 64;

struct SmallBuffer {
  SmallBuffer() {}  // leaves the bytes uninitialised, as aligned_alloc does
  alignas(16) unsigned char bytes[kSmallBufferBytes];
};

}  // namespace

Tensor Tensor::empty(DType dtype, const Shape& shape) { return empty(dtype, Shape(shape)); }

Tensor Tensor::empty(DType dtype, Shape&& shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  const std::size_t item = dtype_size(dtype);
  if (static_cast<std::uint64_t>(t.numel_) > std::numeric_limits<std::size_t>::max() / item / 2) {
    throw OpError(ErrorCode::kResourceExhausted,
                  "cannot allocate a tensor of shape " + shape_to_string(t.shape_));
  }
  if (dtype == DType::kString) {
    // Objects, not bytes: constructed here and destroyed with the last owner.
    auto* strings = new std::string[static_cast<std::size_t>(t.numel_)];  // bad_alloc on failure
    t.data_ = strings;
    t.owner_ =
        std::shared_ptr<void>(strings, [](void* p) { delete[] static_cast<std::string*>(p); });
    return t;
  }
  std::size_t bytes = static_cast<std::size_t>(t.numel_) * item;
  if (bytes <= kSmallBufferBytes) {
    std::shared_ptr<SmallBuffer> block = std::make_shared<SmallBuffer>();  // bad_alloc on failure
    t.data_ = block->bytes;
    t.owner_ = std::move(block);
    return t;
  }
  void* p = allocate_buffer(bytes);
  if (p == nullptr) {
    throw OpError(ErrorCode::kResourceExhausted,
                  "OOM when allocating tensor with shape " + shape_to_string(t.shape_) +
                      " and type " + dtype_name(dtype) + " (" + std::to_string(bytes) + " bytes)");
  }
  t.data_ = p;
  // The deleter carries the size: release_buffer files the block under its size class. If making
  // the control block throws, shared_ptr calls the deleter itself, so nothing leaks.
  t.owner_ = std::shared_ptr<void>(p, [bytes](void* q) { release_buffer(q, bytes); });
  return t;
}

Tensor Tensor::zeros(DType dtype, const Shape& shape) {
  Tensor t = empty(dtype, shape);
  if (dtype != DType::kString) std::memset(t.data_, 0, t.nbytes());  // strings start empty
  return t;
}

Tensor Tensor::wrap(DType dtype, const Shape& shape, const Shape& strides, void* data,
                    std::shared_ptr<void> owner) {
  if (shape.size() != strides.size()) {
    throw_invalid_argument("Tensor::wrap: shape and strides have different ranks");
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = strides;
  t.numel_ = shape_numel(shape);
  t.data_ = data;
  t.owner_ = std::move(owner);
  return t;
}

bool Tensor::sole_owner() const noexcept {
  if (owner_ == nullptr || owner_.use_count() != 1) return false;
  // use_count() is a relaxed load. It read the value left by the last other owner's release
  // decrement (an acq_rel RMW), so an acquire fence makes all that owner did with the buffer
  // happen-before our writes to it.
#if defined(OPWEAVE_TSAN)
  // ThreadSanitizer does not model fences: take the same acquire from an acq_rel RMW on the count
  // (copying the handle), which it does see.
  const std::shared_ptr<void> acquire = owner_;
#else
  std::atomic_thread_fence(std::memory_order_acquire);
#endif
  return true;
}

bool Tensor::is_contiguous() const noexcept {
  if (numel_ == 0) return true;  // no element to be out of place
  std::int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

namespace {
// Copies a strided string tensor element by element (objects, not bytes).
void copy_strided_strings(const Tensor& src, std::string* dst) {
  const int nd = src.ndim();
  std::vector<std::int64_t> index(static_cast<std::size_t>(nd), 0);
  const std::string* base = src.data<std::string>();
  for (std::int64_t k = 0; k < src.numel(); ++k) {
    std::int64_t offset = 0;
    for (int d = 0; d < nd; ++d)
      offset += index[static_cast<std::size_t>(d)] * src.strides()[static_cast<std::size_t>(d)];
    dst[k] = base[offset];
    for (int d = nd - 1; d >= 0; --d) {
      auto& i = index[static_cast<std::size_t>(d)];
      if (++i < src.shape()[static_cast<std::size_t>(d)]) break;
      i = 0;
    }
  }
}

// Copies a strided tensor into contiguous memory, one innermost row at a time.
void copy_strided(const Tensor& src, char* dst) {
  const std::size_t item = dtype_size(src.dtype());
  const int nd = src.ndim();
  if (src.numel() == 0) return;
  if (src.dtype() == DType::kString) {
    copy_strided_strings(src, reinterpret_cast<std::string*>(dst));
    return;
  }
  if (nd == 0) {
    std::memcpy(dst, src.raw_data(), item);
    return;
  }
  std::vector<std::int64_t> index(static_cast<std::size_t>(nd), 0);
  const std::int64_t inner = src.shape().back();
  const std::int64_t inner_stride = src.strides().back();
  const std::int64_t rows = src.numel() / inner;
  const char* base = static_cast<const char*>(src.raw_data());
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t offset = 0;
    for (int d = 0; d < nd - 1; ++d)
      offset += index[static_cast<std::size_t>(d)] * src.strides()[static_cast<std::size_t>(d)];
    const char* row = base + offset * static_cast<std::int64_t>(item);
    if (inner_stride == 1) {
      std::memcpy(dst, row, static_cast<std::size_t>(inner) * item);
      dst += inner * static_cast<std::int64_t>(item);
    } else {
      for (std::int64_t j = 0; j < inner; ++j) {
        std::memcpy(dst, row + j * inner_stride * static_cast<std::int64_t>(item), item);
        dst += item;
      }
    }
    for (int d = nd - 2; d >= 0; --d) {
      auto& i = index[static_cast<std::size_t>(d)];
      if (++i < src.shape()[static_cast<std::size_t>(d)]) break;
      i = 0;
    }
  }
}
}  // namespace

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(dtype_, shape_);
  copy_strided(*this, static_cast<char*>(out.raw_data()));
  return out;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  if (shape_numel(shape) != numel_) {
    throw_invalid_argument("cannot reshape a tensor of shape " + shape_to_string(shape_) +
                           " into shape " + shape_to_string(shape));
  }
  Tensor src = contiguous();
  return wrap(dtype_, shape, contiguous_strides(shape), src.data_, src.owner_);
}

}  // namespace opweave
