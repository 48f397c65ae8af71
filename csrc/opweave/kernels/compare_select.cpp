// Comparisons (bool results), select (condition ? x : y) and broadcast_to: element-wise loops
// over broadcast operands, split over the pool in contiguous pieces of the output, so every
// element is computed the same way whoever runs it.
#include <string>
#include <type_traits>

#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"

namespace opweave {
namespace {

using kernel_detail::broadcast_strides;
using kernel_detail::for_elements;
using kernel_detail::kElementwiseParallelThreshold;
using kernel_detail::StridedLoop;

template <typename T>
bool compare_one(CompareOp op, const T& a, const T& b) {
  switch (op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kNotEqual:
      return a != b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kLessEqual:
      return a <= b;
    case CompareOp::kGreater:
      return a > b;
    case CompareOp::kGreaterEqual:
      return a >= b;
  }
  return false;
}

template <typename T, CompareOp Op>
void compare_typed(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool* pool) {
  const StridedLoop<2> loop(out.shape(),
                            {broadcast_strides(a, out.shape()), broadcast_strides(b, out.shape())});
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  bool* po = out.data<bool>();
  auto body = [&](std::int64_t begin, std::int64_t end) {
    loop.run(begin, end,
             [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
               const T* x = pa + off[0];
               const T* y = pb + off[1];
               for (std::int64_t i = 0; i < n; ++i)
                 po[o + i] = compare_one<T>(Op, x[i * st[0]], y[i * st[1]]);
             });
  };
  for_elements(pool, loop.numel, kElementwiseParallelThreshold, body, 1.0);
}

template <typename Fn>
void with_compare_op(CompareOp op, Fn&& fn) {
  switch (op) {
    case CompareOp::kEqual:
      return fn(std::integral_constant<CompareOp, CompareOp::kEqual>{});
    case CompareOp::kNotEqual:
      return fn(std::integral_constant<CompareOp, CompareOp::kNotEqual>{});
    case CompareOp::kLess:
      return fn(std::integral_constant<CompareOp, CompareOp::kLess>{});
    case CompareOp::kLessEqual:
      return fn(std::integral_constant<CompareOp, CompareOp::kLessEqual>{});
    case CompareOp::kGreater:
      return fn(std::integral_constant<CompareOp, CompareOp::kGreater>{});
    case CompareOp::kGreaterEqual:
      return fn(std::integral_constant<CompareOp, CompareOp::kGreaterEqual>{});
  }
}

Shape broadcast3(const Shape& a, const Shape& b, const Shape& c) {
  return broadcast_shapes(broadcast_shapes(a, b), c);
}

}  // namespace

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, ThreadPool* pool) {
  if (a.dtype() != b.dtype()) {
    throw_invalid_argument(std::string("comparison: both inputs must have the same dtype, got ") +
                           dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  }
  Tensor out = Tensor::empty(DType::kBool, broadcast_shapes(a.shape(), b.shape()));
  if (out.numel() == 0) return out;
  if (a.dtype() == DType::kString) {
    if (op != CompareOp::kEqual && op != CompareOp::kNotEqual) {
      throw_invalid_argument("strings can only be compared for (in)equality");
    }
    with_compare_op(
        op, [&](auto k) { compare_typed<std::string, decltype(k)::value>(a, b, out, pool); });
    return out;
  }
  if (a.dtype() == DType::kFloat16) {
    const Tensor fa = cast(a, DType::kFloat32, pool), fb = cast(b, DType::kFloat32, pool);
    with_compare_op(op,
                    [&](auto k) { compare_typed<float, decltype(k)::value>(fa, fb, out, pool); });
    return out;
  }
  kernel_detail::dispatch_all(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_compare_op(op, [&](auto k) { compare_typed<T, decltype(k)::value>(a, b, out, pool); });
  });
  return out;
}

Tensor select(const Tensor& condition, const Tensor& x, const Tensor& y, ThreadPool* pool) {
  if (condition.dtype() != DType::kBool) {
    throw_invalid_argument(std::string("select: condition must be bool, got ") +
                           dtype_name(condition.dtype()));
  }
  if (x.dtype() != y.dtype()) {
    throw_invalid_argument(std::string("select: x and y must have the same dtype, got ") +
                           dtype_name(x.dtype()) + " and " + dtype_name(y.dtype()));
  }
  const Shape shape = broadcast3(condition.shape(), x.shape(), y.shape());
  Tensor out = Tensor::empty(x.dtype(), shape);
  if (out.numel() == 0) return out;
  const StridedLoop<3> loop(shape, {broadcast_strides(condition, shape),
                                    broadcast_strides(x, shape), broadcast_strides(y, shape)});
  const bool* pc = condition.data<bool>();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    auto body = [&](std::int64_t begin, std::int64_t end) {
      loop.run(
          begin, end,
          [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i) {
              po[o + i] = pc[off[0] + i * st[0]] ? px[off[1] + i * st[1]] : py[off[2] + i * st[2]];
            }
          });
    };
    for_elements(pool, loop.numel, kElementwiseParallelThreshold, body, 1.0);
  };
  if (x.dtype() == DType::kString) {
    run(kernel_detail::TypeTag<std::string>{});
  } else {
    kernel_detail::dispatch_by_size(x.dtype(), run);
  }
  return out;
}

Tensor broadcast_to(const Tensor& x, const Shape& shape, ThreadPool* pool) {
  const Shape result = broadcast_shapes(x.shape(), shape);
  if (result != shape) {
    throw_invalid_argument("broadcast_to: cannot broadcast a tensor of shape " +
                           shape_to_string(x.shape()) + " to shape " + shape_to_string(shape));
  }
  Tensor out = Tensor::empty(x.dtype(), shape);
  if (out.numel() == 0) return out;
  const StridedLoop<1> loop(shape, {broadcast_strides(x, shape)});
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    auto body = [&](std::int64_t begin, std::int64_t end) {
      loop.run(
          begin, end,
          [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i) po[o + i] = px[off[0] + i * st[0]];
          });
    };
    for_elements(pool, loop.numel, kElementwiseParallelThreshold, body, 1.0);
  };
  if (x.dtype() == DType::kString) {
    run(kernel_detail::TypeTag<std::string>{});
  } else {
    kernel_detail::dispatch_by_size(x.dtype(), run);
  }
  return out;
}

}  // namespace opweave
