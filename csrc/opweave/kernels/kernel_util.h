// Helpers shared by the kernel files: dtype dispatch, axis normalisation, threading thresholds.
// Internal to csrc/opweave/kernels (not part of the kernels.h contract).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/tensor.h"
#include "opweave/thread_pool.h"

namespace opweave::kernel_detail {

template <typename T>
struct TypeTag {
  using type = T;
};

[[noreturn]] inline void unsupported_dtype(DType dtype) {
  throw OpError(ErrorCode::kInvalidArgument,
                std::string("no kernel for dtype ") + dtype_name(dtype) + " in this op");
}

// Calls fn(TypeTag<T>{}) with the C++ type of `dtype`, for the numeric types and bool (not
// float16, which is computed in float32 by the ops that take it, nor string).
template <typename Fn>
decltype(auto) dispatch_all(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    case DType::kInt32:
      return fn(TypeTag<std::int32_t>{});
    case DType::kInt64:
      return fn(TypeTag<std::int64_t>{});
    case DType::kBool:
      return fn(TypeTag<bool>{});
    case DType::kInt8:
      return fn(TypeTag<std::int8_t>{});
    case DType::kInt16:
      return fn(TypeTag<std::int16_t>{});
    case DType::kUInt8:
      return fn(TypeTag<std::uint8_t>{});
    case DType::kFloat16:
    case DType::kString:
      break;
  }
  unsupported_dtype(dtype);
}

// dispatch_all, plus Half for float16 (for casts and other ops that convert element by element).
template <typename Fn>
decltype(auto) dispatch_with_half(DType dtype, Fn&& fn) {
  if (dtype == DType::kFloat16) return fn(TypeTag<Half>{});
  return dispatch_all(dtype, std::forward<Fn>(fn));
}

// Calls fn(TypeTag<T>{}) for float32 and float64 only.
template <typename Fn>
decltype(auto) dispatch_float(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(TypeTag<float>{});
    case DType::kFloat64:
      return fn(TypeTag<double>{});
    default:
      break;
  }
  unsupported_dtype(dtype);
}

// Calls fn(TypeTag<T>{}) for the index types int32 and int64.
template <typename Fn>
decltype(auto) dispatch_index(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kInt32:
      return fn(TypeTag<std::int32_t>{});
    case DType::kInt64:
      return fn(TypeTag<std::int64_t>{});
    default:
      break;
  }
  unsupported_dtype(dtype);
}

// Calls fn(TypeTag<T>{}) with an unsigned integer type of the element size of `dtype`, for ops
// that only move elements (gather, concat, slice, ...): one instantiation per size instead of one
// per type. Strings are not plain bytes and are handled by those ops separately.
template <typename Fn>
decltype(auto) dispatch_by_size(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1:
      return fn(TypeTag<std::uint8_t>{});
    case 2:
      return fn(TypeTag<std::uint16_t>{});
    case 4:
      return fn(TypeTag<std::uint32_t>{});
    case 8:
      return fn(TypeTag<std::uint64_t>{});
    default:
      break;
  }
  unsupported_dtype(dtype);
}

// Threads that may work on one op: the pool's workers plus the calling thread.
inline int pool_threads(ThreadPool* pool) { return pool ? pool->num_workers() + 1 : 1; }

// Below this many elements an element-wise op runs on the caller only: forking costs a few
// microseconds, about what a thread needs to stream 32K elements.
constexpr std::int64_t kElementwiseParallelThreshold = 32 * 1024;

// Runs body(begin, end) over [0, n): here and in one call below `threshold` elements, else split
// over the pool in chunks of at least threshold / 2. The small case calls the body directly, not
// through parallel_for's function reference, so it inlines into the kernel: a one-element op then
// costs a loop, not a call.
template <typename Body>
void for_elements(ThreadPool* pool, std::int64_t n, std::int64_t threshold, const Body& body,
                  double cost_per_element) {
  if (n < threshold) {
    body(std::int64_t{0}, n);
  } else {
    parallel_for(pool, 0, n, threshold / 2, body, cost_per_element);
  }
}

// "op: axis 3 is out of range for a tensor of rank 2" etc.; returns a non-negative axis.
inline int normalize_axis(const char* op, int axis, int rank) {
  if (axis < -rank || axis >= rank) {
    throw_invalid_argument(std::string(op) + ": axis " + std::to_string(axis) +
                           " is out of range for a tensor of rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Shape and element strides of an operand broadcast to `out_shape` (stride 0 where broadcast).
inline Shape broadcast_strides(const Tensor& t, const Shape& out_shape) {
  const std::size_t nd = out_shape.size();
  const std::size_t td = t.shape().size();
  Shape strides(nd, 0);
  for (std::size_t i = 0; i < td; ++i) {
    const std::size_t o = nd - td + i;
    strides[o] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  return strides;
}

// Element-wise loops over a contiguous output of `shape` and N strided inputs. Adjacent
// dimensions that are laid out contiguously for every operand are merged first, so a contiguous
// or simply broadcast problem becomes one or two long inner loops.
template <int N>
struct StridedLoop {
  Shape shape;                 // merged shape (rank >= 1)
  std::vector<Shape> strides;  // N inputs' element strides for `shape`
  std::int64_t numel = 0;

  StridedLoop(const Shape& out_shape, const std::vector<Shape>& in_strides) {
    numel = shape_numel(out_shape);
    strides.assign(N, Shape{});
    for (std::size_t d = 0; d < out_shape.size(); ++d) {
      if (out_shape[d] == 1) continue;  // size-1 dims never move any pointer
      bool merge = !shape.empty();
      if (merge) {
        for (int k = 0; k < N; ++k) {
          if (strides[k].back() != in_strides[k][d] * out_shape[d]) merge = false;
        }
      }
      if (merge) {
        shape.back() *= out_shape[d];
        for (int k = 0; k < N; ++k) strides[k].back() = in_strides[k][d];
      } else {
        shape.push_back(out_shape[d]);
        for (int k = 0; k < N; ++k) strides[k].push_back(in_strides[k][d]);
      }
    }
    if (shape.empty()) {
      shape.push_back(1);
      for (int k = 0; k < N; ++k) strides[k].push_back(0);
    }
  }

  // Calls fn(out_index, offsets[N], inner_strides[N], count) for runs of the innermost dimension
  // covering the flat output range [begin, end).
  template <typename Fn>
  void run(std::int64_t begin, std::int64_t end, Fn&& fn) const {
    const int nd = static_cast<int>(shape.size());
    const std::int64_t inner = shape.back();
    std::vector<std::int64_t> index(static_cast<std::size_t>(nd), 0);
    std::int64_t rem = begin;
    for (int d = nd - 1; d >= 0; --d) {
      index[static_cast<std::size_t>(d)] = rem % shape[static_cast<std::size_t>(d)];
      rem /= shape[static_cast<std::size_t>(d)];
    }
    std::int64_t offsets[N > 0 ? N : 1];
    std::int64_t inner_strides[N > 0 ? N : 1];
    for (int k = 0; k < N; ++k) {
      offsets[k] = 0;
      for (int d = 0; d < nd; ++d) {
        offsets[k] += index[static_cast<std::size_t>(d)] * strides[k][static_cast<std::size_t>(d)];
      }
      inner_strides[k] = strides[k].back();
    }
    std::int64_t pos = begin;
    while (pos < end) {
      const std::int64_t j = index.back();
      const std::int64_t count = std::min(inner - j, end - pos);
      fn(pos, static_cast<const std::int64_t*>(offsets),
         static_cast<const std::int64_t*>(inner_strides), count);
      pos += count;
      if (pos >= end) break;
      // Advance to the start of the next row.
      for (int k = 0; k < N; ++k) offsets[k] += (count)*inner_strides[k];
      index.back() = j + count;
      for (int d = nd - 1;
           d > 0 && index[static_cast<std::size_t>(d)] == shape[static_cast<std::size_t>(d)]; --d) {
        index[static_cast<std::size_t>(d)] = 0;
        for (int k = 0; k < N; ++k) {
          offsets[k] +=
              strides[k][static_cast<std::size_t>(d - 1)] -
              shape[static_cast<std::size_t>(d)] * strides[k][static_cast<std::size_t>(d)];
        }
        ++index[static_cast<std::size_t>(d - 1)];
      }
    }
  }
};

}  // namespace opweave::kernel_detail
