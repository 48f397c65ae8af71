// Kernels that grow a tensor by repeating or surrounding it: Pad / PadV2 (a constant border),
// MirrorPad (a reflected border, REFLECT or SYMMETRIC), MirrorPadGrad (its gradient: the border's
// gradient folded back onto the elements it copied) and Tile. The output is written row by row
// (rows of its last dimension, long rows cut into pieces) on the intra-op pool: each piece of a
// row is a constant fill, a memcpy of the source row, or a short reflected run.
#include <algorithm>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/copy_util.h"

namespace opweave {
namespace {

using kernel_detail::copy_elements;
using kernel_detail::element_ptr;
using kernel_detail::fill_elements;

// The paddings input: a [rank, 2] int32/int64 matrix, read as (before, after) pairs.
std::vector<std::pair<std::int64_t, std::int64_t>> paddings_input(const KernelContext& ctx,
                                                                  std::size_t i, int rank) {
  const Tensor& p = ctx.inputs[i];
  if (p.dtype() != DType::kInt32 && p.dtype() != DType::kInt64) {
    throw_node_error(ctx.node,
                     std::string("paddings must be int32 or int64, got ") + dtype_name(p.dtype()));
  }
  if (p.ndim() != 2 || p.shape()[1] != 2 || p.shape()[0] != rank) {
    throw_node_error(ctx.node,
                     "The first dimension of paddings must be the rank of inputs" +
                         std::to_string(rank) + " " + shape_to_string(p.shape()) +
                         " (paddings must be a matrix with 2 columns, one row per dimension)");
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::int64_t r = 0; r < rank; ++r) {
    std::int64_t v[2];
    for (std::int64_t c = 0; c < 2; ++c) {
      const std::int64_t at = r * p.strides()[0] + c * p.strides()[1];
      v[c] = p.dtype() == DType::kInt32 ? p.data<std::int32_t>()[at] : p.data<std::int64_t>()[at];
    }
    if (v[0] < 0 || v[1] < 0) {
      throw_node_error(ctx.node, "Paddings must be non-negative: " + std::to_string(v[0]) + " " +
                                     std::to_string(v[1]));
    }
    out.emplace_back(v[0], v[1]);
  }
  return out;
}

// Where padded position p (in [0, before + n + after)) takes its element from, for a source of
// n elements: -1 for a constant, else the source index (reflected for the mirror modes).
enum class PadMode { kConstant, kReflect, kSymmetric };

std::int64_t source_index(std::int64_t p, std::int64_t before, std::int64_t n, PadMode mode) {
  std::int64_t i = p - before;
  if (i >= 0 && i < n) return i;
  if (mode == PadMode::kConstant) return -1;
  const std::int64_t shift = mode == PadMode::kReflect ? 0 : 1;
  if (i < 0) return -i - shift;
  return 2 * n - 2 + shift - i;
}

// out = x padded by `pads` (constant `value` or mirrored).
Tensor pad(const Tensor& x_in, const std::vector<std::pair<std::int64_t, std::int64_t>>& pads,
           PadMode mode, const void* value, ThreadPool* pool) {
  const Tensor x = x_in.contiguous();
  const std::size_t rank = pads.size();
  const DType dtype = x.dtype();
  const std::size_t item = dtype_size(dtype);
  Shape out_shape(rank);
  for (std::size_t d = 0; d < rank; ++d)
    out_shape[d] = x.shape()[d] + pads[d].first + pads[d].second;
  Tensor out = Tensor::empty(dtype, out_shape);
  if (out.numel() == 0) return out;
  if (rank == 0) {
    copy_elements(dtype, out.raw_data(), x.raw_data(), 1);
    return out;
  }
  const std::int64_t row = out_shape[rank - 1];
  const std::int64_t n = x.shape()[rank - 1];
  const std::int64_t before = pads[rank - 1].first;
  const std::int64_t rows = out.numel() / row;
  const void* from = x.raw_data();
  void* to = out.raw_data();
  const Shape& in_strides = x.strides();
  kernel_detail::for_row_pieces(
      pool, rows, row, item, [&](std::int64_t r, std::int64_t b, std::int64_t e) {
        // The source row of output row r, or -1 when r lies in a constant border.
        std::int64_t src = 0;
        std::int64_t rest = r;
        for (std::size_t d = rank - 1; d-- > 0;) {
          const std::int64_t p = rest % out_shape[d];
          rest /= out_shape[d];
          const std::int64_t i = source_index(p, pads[d].first, x.shape()[d], mode);
          if (i < 0) {
            src = -1;
            break;
          }
          src += i * in_strides[d];
        }
        char* dst = element_ptr(to, r * row, item);
        if (src < 0) {
          fill_elements(dtype, dst + b * static_cast<std::int64_t>(item), value, e - b);
          return;
        }
        const char* src_row = element_ptr(from, src, item);
        // [b, e) meets the left border, the copied middle and the right border.
        const std::int64_t mid_b = std::clamp(before, b, e);
        const std::int64_t mid_e = std::clamp(before + n, b, e);
        auto border = [&](std::int64_t p0, std::int64_t p1) {
          if (p0 >= p1) return;
          if (mode == PadMode::kConstant) {
            fill_elements(dtype, element_ptr(dst, p0, item), value, p1 - p0);
            return;
          }
          for (std::int64_t p = p0; p < p1; ++p) {
            copy_elements(dtype, element_ptr(dst, p, item),
                          element_ptr(src_row, source_index(p, before, n, mode), item), 1);
          }
        };
        border(b, mid_b);
        copy_elements(dtype, element_ptr(dst, mid_b, item),
                      element_ptr(src_row, mid_b - before, item), mid_e - mid_b);
        border(mid_e, e);
      });
  return out;
}

// A scalar 0 of `dtype` (the default constant of Pad), as bytes.
struct ZeroValue {
  std::string str;
  std::uint64_t bits = 0;
  const void* ptr(DType dtype) const {
    return dtype == DType::kString ? static_cast<const void*>(&str) : &bits;
  }
};

void check_mirror(const KernelContext& ctx, const Tensor& x,
                  const std::vector<std::pair<std::int64_t, std::int64_t>>& pads, PadMode mode) {
  const std::int64_t shift = mode == PadMode::kReflect ? 1 : 0;
  for (std::size_t d = 0; d < pads.size(); ++d) {
    const std::int64_t dim = x.shape()[d];
    if (pads[d].first > dim - shift || pads[d].second > dim - shift) {
      throw_node_error(ctx.node,
                       std::string(mode == PadMode::kReflect
                                       ? "paddings must be less than the dimension size: "
                                       : "paddings must be no greater than the dimension size: ") +
                           std::to_string(pads[d].first) + ", " + std::to_string(pads[d].second) +
                           (mode == PadMode::kReflect ? " not less than " : " greater than ") +
                           std::to_string(dim));
    }
  }
}

PadMode mirror_mode(const NodeDef& node) {
  const std::string mode = node.attr<std::string>("mode");
  if (mode == "REFLECT") return PadMode::kReflect;
  if (mode == "SYMMETRIC") return PadMode::kSymmetric;
  throw_node_error(node, "mode must be REFLECT or SYMMETRIC, got " + mode);
}

// MirrorPadGrad: the gradient of a padded tensor folded back, one padded dimension at a time:
// output element j of dimension d gets the gradient at its own position, then the gradients of
// the left border positions that copied it, then those of the right border, in that fixed order.
Tensor mirror_pad_grad(const Tensor& grad_in,
                       const std::vector<std::pair<std::int64_t, std::int64_t>>& pads, PadMode mode,
                       ThreadPool* pool) {
  Tensor cur = grad_in.contiguous();
  for (std::size_t d = 0; d < pads.size(); ++d) {
    // Named copies, not a structured binding: lambdas below capture them (C++20 for bindings).
    const std::int64_t before = pads[d].first;
    const std::int64_t after = pads[d].second;
    if (before == 0 && after == 0) continue;
    const Shape& s = cur.shape();
    const std::int64_t padded = s[d];
    const std::int64_t n = padded - before - after;
    if (n < 0) {
      throw_invalid_argument("MirrorPadGrad: paddings exceed the gradient's dimension " +
                             std::to_string(d) + " of size " + std::to_string(padded));
    }
    std::int64_t outer = 1;
    for (std::size_t i = 0; i < d; ++i) outer *= s[i];
    std::int64_t inner = 1;
    for (std::size_t i = d + 1; i < s.size(); ++i) inner *= s[i];
    Shape next_shape = s;
    next_shape[d] = n;
    Tensor next = Tensor::empty(cur.dtype(), next_shape);
    kernel_detail::dispatch_all(cur.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        kernel_detail::unsupported_dtype(DType::kBool);
      } else {
        const T* g = cur.data<T>();
        T* o = next.data<T>();
        kernel_detail::for_rows(pool, outer, padded * inner * static_cast<std::int64_t>(sizeof(T)),
                                [&](std::int64_t o0, std::int64_t o1) {
                                  for (std::int64_t k = o0; k < o1; ++k) {
                                    const T* gk = g + k * padded * inner;
                                    T* ok = o + k * n * inner;
                                    std::copy_n(gk + before * inner, n * inner, ok);
                                    for (std::int64_t p = 0; p < padded; ++p) {
                                      if (p >= before && p < before + n) continue;
                                      const std::int64_t j = source_index(p, before, n, mode);
                                      for (std::int64_t c = 0; c < inner; ++c) {
                                        ok[j * inner + c] =
                                            static_cast<T>(ok[j * inner + c] + gk[p * inner + c]);
                                      }
                                    }
                                  }
                                });
      }
    });
    cur = std::move(next);
  }
  return cur;
}

// -- Tile ----------------------------------------------------------------------------------------

// Below this many bytes per source row, a tiled row is written by one typed loop instead of one
// memcpy per repetition.
constexpr std::int64_t kShortRowBytes = 64;

Tensor tile(const KernelContext& ctx) {
  const Tensor x = ctx.inputs[0].contiguous();
  const std::vector<std::int64_t> multiples = int_list_input(ctx, 1, "multiples");
  const std::size_t rank = x.shape().size();
  if (multiples.size() != rank) {
    throw_node_error(ctx.node, "Expected multiples argument to be a vector of length " +
                                   std::to_string(rank) + " but got length " +
                                   std::to_string(multiples.size()));
  }
  Shape out_shape(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    if (multiples[d] < 0) {
      throw_node_error(ctx.node, "Expected multiples[" + std::to_string(d) + "] >= 0, but got " +
                                     std::to_string(multiples[d]));
    }
    out_shape[d] = x.shape()[d] * multiples[d];
  }
  const DType dtype = x.dtype();
  Tensor out = Tensor::empty(dtype, out_shape);
  if (out.numel() == 0) return out;
  const std::size_t item = dtype_size(dtype);
  if (rank == 0) {
    copy_elements(dtype, out.raw_data(), x.raw_data(), 1);
    return out;
  }
  const std::int64_t row = out_shape[rank - 1];
  const std::int64_t n = x.shape()[rank - 1];
  const std::int64_t rows = out.numel() / row;
  const void* from = x.raw_data();
  void* to = out.raw_data();
  auto src_row = [&](std::int64_t r) {
    std::int64_t src = 0;
    std::int64_t stride = n;
    for (std::size_t d = rank - 1; d-- > 0;) {
      src += (r % out_shape[d]) % x.shape()[d] * stride;
      r /= out_shape[d];
      stride *= x.shape()[d];
    }
    return src;
  };
  const auto src_bytes = n * static_cast<std::int64_t>(item);
  if (src_bytes >= kShortRowBytes || dtype == DType::kString) {
    kernel_detail::for_row_pieces(
        ctx.intra_pool, rows, row, item, [&](std::int64_t r, std::int64_t b, std::int64_t e) {
          const char* s = element_ptr(from, src_row(r), item);
          char* dst = element_ptr(to, r * row, item);
          while (b < e) {
            const std::int64_t at = b % n;
            const std::int64_t take = std::min(e - b, n - at);
            copy_elements(dtype, element_ptr(dst, b, item), element_ptr(s, at, item), take);
            b += take;
          }
        });
  } else {
    kernel_detail::dispatch_by_size(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernel_detail::for_row_pieces(ctx.intra_pool, rows, row, item,
                                    [&](std::int64_t r, std::int64_t b, std::int64_t e) {
                                      const T* s = static_cast<const T*>(from) + src_row(r);
                                      T* dst = static_cast<T*>(to) + r * row;
                                      std::int64_t at = b % n;
                                      for (std::int64_t p = b; p < e; ++p) {
                                        dst[p] = s[at];
                                        if (++at == n) at = 0;
                                      }
                                    });
    });
  }
  return out;
}

}  // namespace

void register_pad_tile_kernels() {
  register_kernel("Pad", {[](const NodeDef&) -> Kernel {
                            return [](KernelContext& ctx) {
                              const Tensor& x = ctx.inputs[0];
                              const ZeroValue zero;
                              ctx.outputs[0] =
                                  pad(x, paddings_input(ctx, 1, x.ndim()), PadMode::kConstant,
                                      zero.ptr(x.dtype()), ctx.intra_pool);
                            };
                          },
                          CostHint::kMeasure});
  register_kernel("PadV2",
                  {[](const NodeDef&) -> Kernel {
                     return [](KernelContext& ctx) {
                       const Tensor& x = ctx.inputs[0];
                       const Tensor value = ctx.inputs[2].contiguous();
                       if (value.ndim() != 0) {
                         throw_node_error(ctx.node, "constant_values must be a scalar. Got: " +
                                                        shape_to_string(value.shape()));
                       }
                       ctx.outputs[0] = pad(x, paddings_input(ctx, 1, x.ndim()), PadMode::kConstant,
                                            value.raw_data(), ctx.intra_pool);
                     };
                   },
                   CostHint::kMeasure});
  register_kernel("MirrorPad", {[](const NodeDef& node) -> Kernel {
                                  const PadMode mode = mirror_mode(node);
                                  return [mode](KernelContext& ctx) {
                                    const Tensor& x = ctx.inputs[0];
                                    const auto pads = paddings_input(ctx, 1, x.ndim());
                                    check_mirror(ctx, x, pads, mode);
                                    ctx.outputs[0] = pad(x, pads, mode, nullptr, ctx.intra_pool);
                                  };
                                },
                                CostHint::kMeasure});
  register_kernel("MirrorPadGrad",
                  {[](const NodeDef& node) -> Kernel {
                     const PadMode mode = mirror_mode(node);
                     return [mode](KernelContext& ctx) {
                       const Tensor& g = ctx.inputs[0];
                       ctx.outputs[0] = mirror_pad_grad(g, paddings_input(ctx, 1, g.ndim()), mode,
                                                        ctx.intra_pool);
                     };
                   },
                   CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true});
  register_kernel("Tile", {[](const NodeDef&) -> Kernel {
                             return [](KernelContext& ctx) { ctx.outputs[0] = tile(ctx); };
                           },
                           CostHint::kMeasure});
}

}  // namespace opweave
