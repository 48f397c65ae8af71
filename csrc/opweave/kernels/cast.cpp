// dtype conversion with NumPy astype semantics.
#include <cmath>
#include <limits>
#include <type_traits>

#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

using kernel_detail::dispatch_with_half;
using kernel_detail::kElementwiseParallelThreshold;
using kernel_detail::StridedLoop;

template <typename To, typename From>
To convert(From v);

template <typename To, typename From>
To convert_number(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);  // NaN != 0, so NaN -> true as in NumPy
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // Truncate toward zero. Out-of-range values and NaN are undefined in C++; give what x86's
    // cvtt* instructions (and so NumPy on x86) give: the most negative integer.
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = -lo;  // 2^31 or 2^63, exactly representable
    const double d = static_cast<double>(v);
    if (!(d >= lo && d < hi)) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// float16 goes through float: every half is exactly a float, and a float rounds to the nearest
// half.
template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<From, Half> && std::is_same_v<To, Half>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert_number<To>(v.to_float());
  } else if constexpr (std::is_same_v<To, Half>) {
    if constexpr (std::is_same_v<From, bool>) {
      return Half::from_float(v ? 1.0f : 0.0f);
    } else {
      return Half::from_float(static_cast<float>(v));
    }
  } else {
    return convert_number<To>(v);
  }
}

}  // namespace

Tensor cast(const Tensor& x, DType to, ThreadPool* pool) {
  if (x.dtype() == DType::kString || to == DType::kString) {
    if (x.dtype() == to) return x;
    throw_invalid_argument(std::string("Cast from ") + dtype_name(x.dtype()) + " to " +
                           dtype_name(to) + " is not supported");
  }
  Tensor out = Tensor::empty(to, x.shape());
  if (out.numel() == 0) return out;
  const StridedLoop<1> loop(out.shape(), {x.strides()});
  dispatch_with_half(x.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_with_half(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* px = x.data<From>();
      To* po = out.data<To>();
      auto body = [&](std::int64_t begin, std::int64_t end) {
        loop.run(
            begin, end,
            [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
              const From* src = px + off[0];
              for (std::int64_t i = 0; i < n; ++i) po[o + i] = convert<To>(src[i * st[0]]);
            });
      };
      if (loop.numel < kElementwiseParallelThreshold) {
        body(0, loop.numel);
      } else {
        parallel_for(pool, 0, loop.numel, kElementwiseParallelThreshold / 2, body, 1.0);
      }
    });
  });
  return out;
}

}  // namespace opweave
