// Dimension permutation, materialised as a new contiguous tensor.
#include <cstring>

#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

namespace opweave {

Tensor transpose(const Tensor& x, const std::vector<int>& perm_in, ThreadPool* pool) {
  const int nd = x.ndim();
  std::vector<int> perm = perm_in;
  if (perm.empty()) {
    for (int i = nd - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != nd) {
    throw_invalid_argument("transpose: perm has " + std::to_string(perm.size()) +
                           " entries for a tensor of shape " + shape_to_string(x.shape()));
  }
  std::vector<bool> seen(static_cast<std::size_t>(nd), false);
  Shape shape(static_cast<std::size_t>(nd)), strides(static_cast<std::size_t>(nd));
  for (int i = 0; i < nd; ++i) {
    const int p = kernel_detail::normalize_axis("transpose", perm[static_cast<std::size_t>(i)], nd);
    if (seen[static_cast<std::size_t>(p)]) {
      throw_invalid_argument("transpose: perm repeats axis " + std::to_string(p) +
                             " (tensor shape " + shape_to_string(x.shape()) + ")");
    }
    seen[static_cast<std::size_t>(p)] = true;
    shape[static_cast<std::size_t>(i)] = x.shape()[static_cast<std::size_t>(p)];
    strides[static_cast<std::size_t>(i)] = x.strides()[static_cast<std::size_t>(p)];
  }
  Tensor out = Tensor::empty(x.dtype(), shape);
  if (out.numel() == 0) return out;
  const kernel_detail::StridedLoop<1> loop(shape, {strides});
  const std::size_t item = dtype_size(x.dtype());
  const char* px = static_cast<const char*>(x.raw_data());
  char* po = static_cast<char*>(out.raw_data());
  auto body = [&](std::int64_t begin, std::int64_t end) {
    loop.run(begin, end,
             [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
               if (st[0] == 1 && x.dtype() != DType::kString) {
                 std::memcpy(po + o * static_cast<std::int64_t>(item),
                             px + off[0] * static_cast<std::int64_t>(item),
                             static_cast<std::size_t>(n) * item);
                 return;
               }
               if (x.dtype() == DType::kString) {
                 const auto* src = reinterpret_cast<const std::string*>(px) + off[0];
                 auto* dst = reinterpret_cast<std::string*>(po) + o;
                 for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i * st[0]];
                 return;
               }
               kernel_detail::dispatch_by_size(x.dtype(), [&](auto tag) {
                 using T = typename decltype(tag)::type;
                 const T* src = reinterpret_cast<const T*>(px) + off[0];
                 T* dst = reinterpret_cast<T*>(po) + o;
                 for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i * st[0]];
               });
             });
  };
  if (loop.numel < kernel_detail::kElementwiseParallelThreshold) {
    body(0, loop.numel);
  } else {
    parallel_for(pool, 0, loop.numel, kernel_detail::kElementwiseParallelThreshold / 2, body, 1.0);
  }
  return out;
}

}  // namespace opweave
