// Comparisons (bool results), select (condition ? x : y), where (the coordinates of the true
// elements) and broadcast_to: element-wise loops over broadcast operands, split over the pool in
// contiguous pieces of the output, so every element is computed the same way whoever runs it.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/kernels/compare_loops.h"
#include "opweave/kernels/elementwise_fns.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

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

// The flat loops (compare_loops.h) of this CPU's widest build.
template <typename T>
const compare_detail::FlatFns<T> g_flat_fns =
#if defined(OPWEAVE_X86_64)
    isa_flags().can_run_avx512_files() ? compare_detail::flat_fns_avx512<T>()
    : isa_flags().can_run_avx2_files() ? compare_detail::flat_fns_avx2<T>()
                                       :
#endif
                                       compare_detail::flat_fns_baseline<T>();

static_assert(static_cast<int>(CompareOp::kEqual) == compare_detail::kEq &&
              static_cast<int>(CompareOp::kNotEqual) == compare_detail::kNe &&
              static_cast<int>(CompareOp::kLess) == compare_detail::kLt &&
              static_cast<int>(CompareOp::kLessEqual) == compare_detail::kLe &&
              static_cast<int>(CompareOp::kGreater) == compare_detail::kGt &&
              static_cast<int>(CompareOp::kGreaterEqual) == compare_detail::kGe);

template <typename T, CompareOp Op>
void compare_typed(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool* pool) {
  const std::int64_t n = out.numel();
  const auto flat = [n](const Tensor& t) -> std::int64_t {
    if (t.numel() == n && t.is_contiguous()) return 1;
    return t.numel() == 1 ? 0 : -1;
  };
  const std::int64_t fa = flat(a), fb = flat(b);
  if constexpr (!std::is_same_v<T, std::string>) {
    if (fa >= 0 && fb >= 0 && (fa == 1 || fb == 1)) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      bool* po = out.data<bool>();
      const compare_detail::FlatFn<T> fn = g_flat_fns<T>.fn[static_cast<int>(Op)];
      for_elements(
          pool, n, kElementwiseParallelThreshold,
          [&](std::int64_t begin, std::int64_t end) {
            fn(pa + begin * fa, fa, pb + begin * fb, fb, po + begin, end - begin);
          },
          1.0);
      return;
    }
  }
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

Tensor select_rows(const Tensor& condition, const Tensor& x, const Tensor& y, ThreadPool* pool) {
  if (x.shape() != y.shape()) {
    throw_invalid_argument("'then' and 'else' must have the same shape, but received: " +
                           shape_to_string(x.shape()) + " vs. " + shape_to_string(y.shape()));
  }
  if (condition.ndim() == 0 || condition.shape() == x.shape()) return select(condition, x, y, pool);
  if (condition.ndim() != 1 || x.ndim() < 1 || condition.dim(0) != x.dim(0)) {
    throw_invalid_argument(
        "'condition' must be a scalar, a vector of the first dimension of "
        "'then', or have the shape of 'then': got condition " +
        shape_to_string(condition.shape()) + " and then " + shape_to_string(x.shape()));
  }
  // A vector picks whole rows: view it as [n, 1, ..., 1] and broadcast.
  Shape shape(static_cast<std::size_t>(x.ndim()), 1);
  Shape strides(static_cast<std::size_t>(x.ndim()), 0);
  shape[0] = condition.dim(0);
  strides[0] = condition.strides()[0];
  const Tensor rows =
      Tensor::wrap(DType::kBool, shape, strides, condition.raw_data(), condition.owner());
  return select(rows, x, y, pool);
}

namespace {

// Elements of x per unit of where's two passes (count, then write): fixed, so the pieces and
// their order never depend on the pool.
constexpr std::int64_t kWhereBlock = 32 * 1024;

template <typename T>
bool is_true(const T& v) {
  return v != T(0);  // NaN is true, -0.0 false, as in TensorFlow
}

}  // namespace

Tensor where_indices(const Tensor& input, ThreadPool* pool) {
  if (input.ndim() == 0) {
    throw_invalid_argument("WhereOp : Unhandled input dimensions: 0");
  }
  const Tensor x = input.contiguous();
  const int rank = x.ndim();
  const std::int64_t n = x.numel();
  const std::int64_t blocks = (n + kWhereBlock - 1) / kWhereBlock;
  std::vector<std::int64_t> counts(static_cast<std::size_t>(blocks) + 1, 0);
  Tensor out;
  kernel_detail::dispatch_all(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    parallel_for(
        pool, 0, blocks, 1,
        [&](std::int64_t b0, std::int64_t b1) {
          for (std::int64_t b = b0; b < b1; ++b) {
            const std::int64_t lo = b * kWhereBlock;
            const std::int64_t hi = std::min(n, lo + kWhereBlock);
            std::int64_t c = 0;
            for (std::int64_t i = lo; i < hi; ++i) c += is_true(px[i]) ? 1 : 0;
            counts[static_cast<std::size_t>(b) + 1] = c;
          }
        },
        static_cast<double>(kWhereBlock));
    for (std::int64_t b = 0; b < blocks; ++b) {
      counts[static_cast<std::size_t>(b) + 1] += counts[static_cast<std::size_t>(b)];
    }
    out = Tensor::empty(DType::kInt64, {counts.back(), rank});
    std::int64_t* po = out.data<std::int64_t>();
    parallel_for(
        pool, 0, blocks, 1,
        [&](std::int64_t b0, std::int64_t b1) {
          std::vector<std::int64_t> index(static_cast<std::size_t>(rank));
          for (std::int64_t b = b0; b < b1; ++b) {
            const std::int64_t lo = b * kWhereBlock;
            const std::int64_t hi = std::min(n, lo + kWhereBlock);
            // The coordinates of element lo, then counted up element by element.
            std::int64_t rem = lo;
            for (int d = rank - 1; d >= 0; --d) {
              index[static_cast<std::size_t>(d)] = rem % x.dim(d);
              rem /= x.dim(d);
            }
            std::int64_t* row = po + counts[static_cast<std::size_t>(b)] * rank;
            for (std::int64_t i = lo; i < hi; ++i) {
              if (is_true(px[i])) {
                for (int d = 0; d < rank; ++d) row[d] = index[static_cast<std::size_t>(d)];
                row += rank;
              }
              for (int d = rank - 1; d >= 0; --d) {
                if (++index[static_cast<std::size_t>(d)] < x.dim(d)) break;
                index[static_cast<std::size_t>(d)] = 0;
              }
            }
          }
        },
        static_cast<double>(kWhereBlock));
  });
  return out;
}

namespace {

using elementwise_fns::clip_one;

}  // namespace

Tensor clip_by_value(const Tensor& t, const Tensor& lo, const Tensor& hi, ThreadPool* pool) {
  if (t.dtype() != lo.dtype() || t.dtype() != hi.dtype()) {
    throw_invalid_argument(std::string("clip_by_value: t, clip_value_min and clip_value_max must "
                                       "have one dtype, got ") +
                           dtype_name(t.dtype()) + ", " + dtype_name(lo.dtype()) + " and " +
                           dtype_name(hi.dtype()));
  }
  for (const Tensor* bound : {&lo, &hi}) {
    if (bound->ndim() != 0 && bound->shape() != t.shape()) {
      throw_invalid_argument(
          "clip_value_min and clip_value_max must be either scalars or have "
          "the same shape as the input t: got t " +
          shape_to_string(t.shape()) + ", clip_value_min " + shape_to_string(lo.shape()) +
          ", clip_value_max " + shape_to_string(hi.shape()));
    }
  }
  Tensor out = Tensor::empty(t.dtype(), t.shape());
  if (out.numel() == 0) return out;
  const Shape& shape = t.shape();
  const StridedLoop<3> loop(
      shape, {t.strides(), broadcast_strides(lo, shape), broadcast_strides(hi, shape)});
  kernel_detail::dispatch_all(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pt = t.data<T>();
      const T* pl = lo.data<T>();
      const T* ph = hi.data<T>();
      T* po = out.data<T>();
      auto body = [&](std::int64_t begin, std::int64_t end) {
        loop.run(
            begin, end,
            [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
              const T* x = pt + off[0];
              const T* a = pl + off[1];
              const T* b = ph + off[2];
              if (st[0] == 1 && st[1] == 0 && st[2] == 0) {  // scalar bounds
                const T av = *a, bv = *b;
                for (std::int64_t i = 0; i < n; ++i) po[o + i] = clip_one<T>(x[i], av, bv);
              } else {
                for (std::int64_t i = 0; i < n; ++i) {
                  po[o + i] = clip_one<T>(x[i * st[0]], a[i * st[1]], b[i * st[2]]);
                }
              }
            });
      };
      for_elements(pool, loop.numel, kElementwiseParallelThreshold, body, 1.0);
    } else {
      throw_invalid_argument("clip_by_value does not support dtype bool");
    }
  });
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
