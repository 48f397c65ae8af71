// Kernels of 2-D pooling and its gradients (NHWC; NCHW through a transpose on each side), all
// streaming over rows of the output (or, for the gradients, of the input) on the intra-op pool:
//
// - MaxPool: the maximum over the window's cells inside the image, NaN skipped (TensorFlow's CPU
//   result: a running maximum from the lowest value that only a greater cell replaces).
// - MaxPoolGrad: each output's gradient added to the cell TensorFlow's CPU kernel picks: the
//   window's first cell (row-major), replaced only by a greater one (so the first of equal
//   maxima, and a NaN only when it comes first); pieces are (image, block of channels), each
//   adding in output order, so overlapping windows sum in a fixed order.
// - AvgPool: the mean over the window's cells inside the image (padding is not counted).
// - AvgPoolGrad: each input cell gathers grad / count from the outputs whose windows hold it.
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/pool_loops.h"
#include "opweave/kernels/vector_math.h"
#include "opweave/kernels/window_util.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

using kernel_detail::WindowAttrs;

struct PoolDims {
  std::int64_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  std::int64_t k_h = 1, k_w = 1, stride_h = 1, stride_w = 1;
  std::int64_t out_h = 0, out_w = 0, pad_top = 0, pad_left = 0;

  // The window of output (oh, ow) clipped to the image: rows [h0, h1), cols [w0, w1).
  void window(std::int64_t oh, std::int64_t ow, std::int64_t* h0, std::int64_t* h1,
              std::int64_t* w0, std::int64_t* w1) const {
    const std::int64_t hs = oh * stride_h - pad_top, ws = ow * stride_w - pad_left;
    *h0 = std::max<std::int64_t>(hs, 0), *h1 = std::min(hs + k_h, in_h);
    *w0 = std::max<std::int64_t>(ws, 0), *w1 = std::min(ws + k_w, in_w);
  }
};

PoolDims pool_dims(const NodeDef& node, const WindowAttrs& a, const Shape& in) {
  PoolDims d;
  d.batch = in[0], d.in_h = in[1], d.in_w = in[2], d.channels = in[3];
  d.k_h = a.ksize_h, d.k_w = a.ksize_w, d.stride_h = a.stride_h, d.stride_w = a.stride_w;
  const auto wh =
      kernel_detail::window(node, d.in_h, d.k_h, d.stride_h, 1, a.padding, a.pad_top, a.pad_bottom);
  const auto ww =
      kernel_detail::window(node, d.in_w, d.k_w, d.stride_w, 1, a.padding, a.pad_left, a.pad_right);
  d.out_h = wh.out, d.pad_top = wh.before, d.out_w = ww.out, d.pad_left = ww.before;
  return d;
}

template <typename T>
pool_loops::Table<T> select_pool_table() {
#if defined(OPWEAVE_X86_64)
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx512_files()) {
    if constexpr (std::is_same_v<T, float>) return pool_loops::table_avx512_f32();
    if constexpr (std::is_same_v<T, double>) return pool_loops::table_avx512_f64();
  }
  if (isa.can_run_avx2_files()) {
    if constexpr (std::is_same_v<T, float>) return pool_loops::table_avx2_f32();
    if constexpr (std::is_same_v<T, double>) return pool_loops::table_avx2_f64();
  }
#endif
  if constexpr (std::is_same_v<T, float>) {
    return pool_loops::table_baseline_f32();
  } else {
    return pool_loops::table_baseline_f64();
  }
}

// Chosen at load time, not on first use: see fork_guard.h.
const pool_loops::Table<float> g_pool_f32 = select_pool_table<float>();
const pool_loops::Table<double> g_pool_f64 = select_pool_table<double>();

template <typename T>
const pool_loops::Table<T>& pool_table() {
  if constexpr (std::is_same_v<T, float>) {
    return g_pool_f32;
  } else {
    return g_pool_f64;
  }
}

template <typename T>
void max_pool(const T* x, T* y, const PoolDims& d, ThreadPool* pool) {
  const std::int64_t c_n = d.channels;
  parallel_for(
      pool, 0, d.batch * d.out_h, 1,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t n = r / d.out_h, oh = r % d.out_h;
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
            std::int64_t h0, h1, w0, w1;
            d.window(oh, 0, &h0, &h1, &w0, &w1);
            pool_loops::Row<T> pr;
            pr.x = x + n * d.in_h * d.in_w * c_n;
            pr.width = d.in_w, pr.channels = c_n, pr.h0 = h0, pr.h1 = h1;
            pr.out_w = d.out_w, pr.k_w = d.k_w, pr.stride_w = d.stride_w, pr.pad_left = d.pad_left;
            pr.y = y + r * d.out_w * c_n;
            pool_table<T>().max_pool_row(pr);
            continue;
          }
          for (std::int64_t ow = 0; ow < d.out_w; ++ow) {
            T* yp = y + (r * d.out_w + ow) * c_n;
            std::int64_t h0, h1, w0, w1;
            d.window(oh, ow, &h0, &h1, &w0, &w1);
            std::fill(yp, yp + c_n, std::numeric_limits<T>::lowest());
            for (std::int64_t h = h0; h < h1; ++h) {
              for (std::int64_t w = w0; w < w1; ++w) {
                const T* xp = x + ((n * d.in_h + h) * d.in_w + w) * c_n;
                for (std::int64_t c = 0; c < c_n; ++c) yp[c] = yp[c] < xp[c] ? xp[c] : yp[c];
              }
            }
          }
        }
      },
      static_cast<double>(d.out_w * d.k_h * d.k_w * c_n));
}

template <typename T>
void avg_pool(const T* x, T* y, const PoolDims& d, ThreadPool* pool) {
  const std::int64_t c_n = d.channels;
  parallel_for(
      pool, 0, d.batch * d.out_h, 1,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t n = r / d.out_h, oh = r % d.out_h;
          for (std::int64_t ow = 0; ow < d.out_w; ++ow) {
            T* yp = y + (r * d.out_w + ow) * c_n;
            std::int64_t h0, h1, w0, w1;
            d.window(oh, ow, &h0, &h1, &w0, &w1);
            std::fill(yp, yp + c_n, T(0));
            for (std::int64_t h = h0; h < h1; ++h) {
              for (std::int64_t w = w0; w < w1; ++w) {
                const T* xp = x + ((n * d.in_h + h) * d.in_w + w) * c_n;
                for (std::int64_t c = 0; c < c_n; ++c) yp[c] += xp[c];
              }
            }
            const T count = static_cast<T>(std::max<std::int64_t>(1, (h1 - h0) * (w1 - w0)));
            for (std::int64_t c = 0; c < c_n; ++c) yp[c] /= count;
          }
        }
      },
      static_cast<double>(d.out_w * d.k_h * d.k_w * c_n));
}

// Pieces of (image, block of channels) own disjoint parts of dx.
constexpr std::int64_t kChannelBlock = 64;

// The argmax per channel is a select, not a branch (random data would mispredict half of them):
// `best < v` picks v and its cell, so ties and NaN keep the earlier cell, as TensorFlow's loop.
// The cell index is kept in the value type C (T when T represents every pixel index exactly), so
// both selects have one width and the loop vectorises.
template <typename T, typename C>
void max_pool_grad_with(const T* x, const T* dy, T* dx, const PoolDims& d, ThreadPool* pool) {
  const std::int64_t c_n = d.channels;
  const std::int64_t blocks = (c_n + kChannelBlock - 1) / kChannelBlock;
  const std::int64_t pixels = d.in_h * d.in_w;
  parallel_for(
      pool, 0, d.batch * blocks, 1,
      [&](std::int64_t p0, std::int64_t p1) {
        T best[kChannelBlock];
        C cell[kChannelBlock];  // pixel index in the image (h * in_w + w)
        for (std::int64_t p = p0; p < p1; ++p) {
          const std::int64_t n = p / blocks, c0 = p % blocks * kChannelBlock;
          const std::int64_t cb = std::min(c_n, c0 + kChannelBlock) - c0;
          const T* xn = x + n * pixels * c_n + c0;
          T* dxn = dx + n * pixels * c_n + c0;
          for (std::int64_t q = 0; q < pixels; ++q)
            std::fill(dxn + q * c_n, dxn + q * c_n + cb, T(0));
          for (std::int64_t oh = 0; oh < d.out_h; ++oh) {
            for (std::int64_t ow = 0; ow < d.out_w; ++ow) {
              std::int64_t h0, h1, w0, w1;
              d.window(oh, ow, &h0, &h1, &w0, &w1);
              if (h0 >= h1 || w0 >= w1) continue;
              const T* xf = xn + (h0 * d.in_w + w0) * c_n;
              const auto first = static_cast<C>(h0 * d.in_w + w0);
              for (std::int64_t c = 0; c < cb; ++c) best[c] = xf[c], cell[c] = first;
              for (std::int64_t h = h0; h < h1; ++h) {
                for (std::int64_t w = h == h0 ? w0 + 1 : w0; w < w1; ++w) {
                  const T* xp = xn + (h * d.in_w + w) * c_n;
                  const auto at = static_cast<C>(h * d.in_w + w);
                  for (std::int64_t c = 0; c < cb; ++c) {
                    // Arithmetic, not a second select (GCC would not if-convert two): exact,
                    // since cell indices are integers the type represents.
                    const C greater = static_cast<C>(best[c] < xp[c]);
                    best[c] = best[c] < xp[c] ? xp[c] : best[c];
                    cell[c] += (at - cell[c]) * greater;
                  }
                }
              }
              const T* g = dy + ((n * d.out_h + oh) * d.out_w + ow) * c_n + c0;
              for (std::int64_t c = 0; c < cb; ++c) {
                dxn[static_cast<std::int64_t>(cell[c]) * c_n + c] += g[c];
              }
            }
          }
        }
      },
      static_cast<double>(d.out_h * d.out_w * d.k_h * d.k_w * kChannelBlock));
}

// Windows that do not overlap (stride >= window, the usual 2x2 / 2 pooling): every input cell is in
// at most one window, so each window writes its cells directly (pool_loops.h), with no zero-filled
// dx to scatter into. Cells of no window (a stride wider than the window, VALID leftovers) are
// zeroed first.
template <typename T>
void max_pool_grad_disjoint(const T* x, const T* dy, T* dx, const PoolDims& d, ThreadPool* pool,
                            bool relu_grad) {
  const std::int64_t c_n = d.channels, row = d.in_w * c_n;
  // Windows of stride == size tile [-pad, (out - 1) * stride - pad + size) without gaps.
  const bool covers_h =
      d.stride_h == d.k_h && (d.out_h - 1) * d.stride_h - d.pad_top + d.k_h >= d.in_h;
  const bool covers_w =
      d.stride_w == d.k_w && (d.out_w - 1) * d.stride_w - d.pad_left + d.k_w >= d.in_w;
  if (!covers_h || !covers_w) {
    parallel_for(
        pool, 0, d.batch * d.in_h, 16,
        [&](std::int64_t r0, std::int64_t r1) { std::fill(dx + r0 * row, dx + r1 * row, T(0)); },
        static_cast<double>(row) / 8.0);
  }
  const pool_loops::Table<T>& table = pool_table<T>();
  parallel_for(
      pool, 0, d.batch * d.out_h, 1,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t n = r / d.out_h, oh = r % d.out_h;
          std::int64_t h0, h1, w0, w1;
          d.window(oh, 0, &h0, &h1, &w0, &w1);
          pool_loops::Row<T> pr;
          pr.x = x + n * d.in_h * row;
          pr.width = d.in_w, pr.channels = c_n, pr.h0 = h0, pr.h1 = h1;
          pr.out_w = d.out_w, pr.k_w = d.k_w, pr.stride_w = d.stride_w, pr.pad_left = d.pad_left;
          pr.dy = dy + r * d.out_w * c_n;
          pr.dx = dx + n * d.in_h * row;
          pr.relu_grad = relu_grad;
          table.max_grad_disjoint_row(pr);
        }
      },
      static_cast<double>(d.out_w * d.k_h * d.k_w * c_n * 2));
}

// relu_grad: ReluGrad(dx, x) fused after it (_FusedMaxPoolGrad), dx = x > 0 ? dx : 0, in the
// disjoint windows' own loop, else as a pass over dx.
template <typename T>
void max_pool_grad(const T* x, const T* dy, T* dx, const PoolDims& d, ThreadPool* pool,
                   bool relu_grad) {
  constexpr std::int64_t exact = std::int64_t{1} << std::numeric_limits<T>::digits;
  if (d.stride_h >= d.k_h && d.stride_w >= d.k_w && d.k_h * d.k_w <= exact) {
    max_pool_grad_disjoint(x, dy, dx, d, pool, relu_grad);
    return;
  }
  if (d.in_h * d.in_w <= exact) {
    max_pool_grad_with<T, T>(x, dy, dx, d, pool);
  } else {
    max_pool_grad_with<T, std::int64_t>(x, dy, dx, d, pool);
  }
  if (!relu_grad) return;
  const std::int64_t size = d.batch * d.in_h * d.in_w * d.channels;
  parallel_for(
      pool, 0, size, 4096,
      [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
          dx[i] = vector_math::select<T>(x[i] > T(0), dx[i], T(0));  // ReluGrad's expression
        }
      },
      1.0);
}

template <typename T>
void avg_pool_grad(const T* dy, T* dx, const PoolDims& d, ThreadPool* pool) {
  const std::int64_t c_n = d.channels;
  // Outputs whose window (clipped or not) holds input row h: oh*stride - pad <= h < that + k.
  auto first_out = [](std::int64_t v, std::int64_t k, std::int64_t stride) {
    const std::int64_t lo = v - k + 1;
    return lo <= 0 ? std::int64_t{0} : (lo + stride - 1) / stride;
  };
  parallel_for(
      pool, 0, d.batch * d.in_h, 1,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t n = r / d.in_h, h = r % d.in_h;
          const std::int64_t oh0 = first_out(h + d.pad_top, d.k_h, d.stride_h);
          const std::int64_t oh1 = std::min(d.out_h, (h + d.pad_top) / d.stride_h + 1);
          for (std::int64_t w = 0; w < d.in_w; ++w) {
            T* xp = dx + (r * d.in_w + w) * c_n;
            std::fill(xp, xp + c_n, T(0));
            const std::int64_t ow0 = first_out(w + d.pad_left, d.k_w, d.stride_w);
            const std::int64_t ow1 = std::min(d.out_w, (w + d.pad_left) / d.stride_w + 1);
            for (std::int64_t oh = oh0; oh < oh1; ++oh) {
              for (std::int64_t ow = ow0; ow < ow1; ++ow) {
                std::int64_t h0, h1, w0, w1;
                d.window(oh, ow, &h0, &h1, &w0, &w1);
                const T count = static_cast<T>((h1 - h0) * (w1 - w0));
                const T* g = dy + ((n * d.out_h + oh) * d.out_w + ow) * c_n;
                for (std::int64_t c = 0; c < c_n; ++c) xp[c] += g[c] / count;
              }
            }
          }
        }
      },
      static_cast<double>(d.in_w * d.k_h * d.k_w * c_n));
}

void check_shape(const NodeDef& node, const Tensor& t, const Shape& want, const char* what) {
  if (t.shape() != want) {
    throw_node_error(node, std::string(what) + " has shape " + shape_to_string(t.shape()) +
                               " (NHWC) but the pooling's output has shape " +
                               shape_to_string(want));
  }
}

// kFusedMaxGrad: _FusedMaxPoolGrad(orig_input, orig_output, grad) with fused_ops ["ReluGrad"]
// (optimizer/remapping.cpp makes it from ReluGrad(MaxPoolGrad(x, y, dy), x)).
enum class PoolKind { kMax, kAvg, kMaxGrad, kAvgGrad, kFusedMaxGrad };

KernelDef pool_kernel(PoolKind kind) {
  return {[kind](const NodeDef& node) -> Kernel {
            const WindowAttrs a = kernel_detail::read_window_attrs(node, /*pooling=*/true);
            const bool relu_grad = kind == PoolKind::kFusedMaxGrad;
            if (relu_grad) {
              const auto ops = node.has_attr("fused_ops")
                                   ? node.attr<std::vector<std::string>>("fused_ops")
                                   : std::vector<std::string>{};
              if (ops != std::vector<std::string>{"ReluGrad"}) {
                throw_node_error(node, "_FusedMaxPoolGrad fuses exactly [\"ReluGrad\"], got " +
                                           std::to_string(ops.size()) + " fused op(s)");
              }
            }
            // The fused kernel is MaxPoolGrad's with the ReluGrad step on.
            const PoolKind run = relu_grad ? PoolKind::kMaxGrad : kind;
            return [a, kind = run, relu_grad](KernelContext& ctx) {
              const NodeDef& node = ctx.node;
              ThreadPool* pool = ctx.intra_pool;
              Tensor x, dy;
              Shape in_shape;
              if (kind == PoolKind::kAvgGrad) {
                std::vector<std::int64_t> s = int_list_input(ctx, 0, "orig_input_shape");
                if (s.size() != 4 || *std::min_element(s.begin(), s.end()) < 0) {
                  throw_node_error(node, "orig_input_shape must be 4 sizes >= 0, got " +
                                             kernel_detail::join_ints(s));
                }
                in_shape = kernel_detail::nhwc_shape(s, a.nchw);
              } else {
                kernel_detail::check_rank4(node, ctx.inputs[0], "input");
                x = kernel_detail::to_nhwc(ctx.inputs[0], a.nchw, pool);
                in_shape = x.shape();
              }
              const PoolDims d = pool_dims(node, a, in_shape);
              const Shape out_shape{d.batch, d.out_h, d.out_w, d.channels};
              const std::size_t g = kind == PoolKind::kMaxGrad ? 2 : 1;
              if (kind == PoolKind::kMaxGrad || kind == PoolKind::kAvgGrad) {
                kernel_detail::check_rank4(node, ctx.inputs[g], "grad");
                dy = kernel_detail::to_nhwc(ctx.inputs[g], a.nchw, pool);
                check_shape(node, dy, out_shape, "grad");
                if (kind == PoolKind::kMaxGrad) {
                  kernel_detail::check_rank4(node, ctx.inputs[1], "orig_output");
                  if (x.dtype() != dy.dtype() || ctx.inputs[1].dtype() != dy.dtype()) {
                    throw_node_error(node, "orig_input, orig_output and grad must have one dtype");
                  }
                }
              }
              const bool grad = kind == PoolKind::kMaxGrad || kind == PoolKind::kAvgGrad;
              const DType dtype = grad ? dy.dtype() : x.dtype();
              Tensor out = Tensor::empty(dtype, grad ? in_shape : out_shape);
              if (out.numel() > 0) {
                if (kind == PoolKind::kMax) {
                  kernel_detail::dispatch_all(dtype, [&](auto tag) {
                    using T = typename decltype(tag)::type;
                    if constexpr (std::is_same_v<T, bool>) {
                      kernel_detail::unsupported_dtype(dtype);
                    } else {
                      max_pool(x.data<T>(), out.data<T>(), d, pool);
                    }
                  });
                } else {
                  kernel_detail::dispatch_float(dtype, [&](auto tag) {
                    using T = typename decltype(tag)::type;
                    if (kind == PoolKind::kAvg) {
                      avg_pool(x.data<T>(), out.data<T>(), d, pool);
                    } else if (kind == PoolKind::kMaxGrad) {
                      max_pool_grad(x.data<T>(), dy.data<T>(), out.data<T>(), d, pool, relu_grad);
                    } else {
                      avg_pool_grad(dy.data<T>(), out.data<T>(), d, pool);
                    }
                  });
                }
              }
              ctx.outputs[0] = kernel_detail::from_nhwc(out, a.nchw, pool);
            };
          },
          CostHint::kMeasure, /*stateful=*/false, /*float16_via_float32=*/true};
}

}  // namespace

void register_pool_kernels() {
  register_kernel("MaxPool", pool_kernel(PoolKind::kMax));
  register_kernel("AvgPool", pool_kernel(PoolKind::kAvg));
  register_kernel("MaxPoolGrad", pool_kernel(PoolKind::kMaxGrad));
  register_kernel("AvgPoolGrad", pool_kernel(PoolKind::kAvgGrad));
  register_kernel("_FusedMaxPoolGrad", pool_kernel(PoolKind::kFusedMaxGrad));
}

}  // namespace opweave
