// Kernels of the 2-D convolutions (NHWC; NCHW through a transpose on each side):
//
// - Conv2D: a GEMM of the image-patch matrix [batch * out pixels x kh * kw * in_c] with the
//   filter [kh * kw * in_c x out_c], the patches packed block by block straight into the GEMM's
//   buffers (conv_packing.h, gemm_sourced); a 1x1 convolution of stride 1 is a plain GEMM on the
//   NHWC data.
// - Conv2DBackpropInput (also conv2d_transpose): per output phase (h mod stride_h, w mod
//   stride_w), a GEMM of the output gradient's patches (only the taps that reach that phase)
//   with the filter's channel axes swapped; stride 1 is one phase written in place.
// - Conv2DBackpropFilter: filter [kh * kw * in_c x out_c] = patches^T x grad [M x out_c],
//   M = batch * out pixels the GEMM's K dimension (never split by threads); a small filter (a
//   first layer's) is summed over fixed slices of M, one GEMM each, the slices added in order.
// - DepthwiseConv2dNative and its two gradients: streaming loops over output / input rows (or,
//   for the filter gradient, over (tap, channel block) pieces that each sum every pixel in order).
//
// Threads split output rows or tiles, or slices of a sum fixed by the sizes alone, so results are
// the same bits for any thread count.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/conv_direct.h"
#include "opweave/kernels/conv_packing.h"
#include "opweave/kernels/fused_util.h"
#include "opweave/kernels/gemm.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/window_util.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

using gemm_detail::PatchGeometry;
using gemm_detail::PatchSource;
using gemm_detail::StridedSource;
using kernel_detail::dispatch_float;
using kernel_detail::Padding;
using kernel_detail::WindowAttrs;

// Sizes of one convolution, NHWC. For a depthwise convolution out_c = in_c * multiplier.
struct ConvDims {
  std::int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  std::int64_t k_h = 0, k_w = 0, multiplier = 1, out_c = 0;
  std::int64_t out_h = 0, out_w = 0, pad_top = 0, pad_left = 0;
  std::int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
};

// in: NHWC input shape; filter: [kh, kw, in_c, out_c] (depthwise: [kh, kw, in_c, multiplier]).
ConvDims conv_dims(const NodeDef& node, const WindowAttrs& a, const Shape& in, const Shape& filter,
                   bool depthwise) {
  if (filter.size() != 4) {
    throw_node_error(node, "filter must be 4-dimensional, got shape " + shape_to_string(filter));
  }
  ConvDims d;
  d.batch = in[0], d.in_h = in[1], d.in_w = in[2], d.in_c = in[3];
  d.k_h = filter[0], d.k_w = filter[1];
  if (filter[2] != d.in_c) {
    throw_node_error(node, "input depth must be evenly divisible by filter depth: input " +
                               shape_to_string(in) + " (NHWC) has depth " + std::to_string(d.in_c) +
                               ", filter " + shape_to_string(filter) + " has input depth " +
                               std::to_string(filter[2]) +
                               " (grouped convolutions are not supported)");
  }
  if (depthwise) {
    d.multiplier = filter[3];
    d.out_c = d.in_c * d.multiplier;
  } else {
    d.out_c = filter[3];
  }
  d.stride_h = a.stride_h, d.stride_w = a.stride_w;
  d.dil_h = a.dilation_h, d.dil_w = a.dilation_w;
  const auto wh = kernel_detail::window(node, d.in_h, d.k_h, d.stride_h, d.dil_h, a.padding,
                                        a.pad_top, a.pad_bottom);
  const auto ww = kernel_detail::window(node, d.in_w, d.k_w, d.stride_w, d.dil_w, a.padding,
                                        a.pad_left, a.pad_right);
  d.out_h = wh.out, d.pad_top = wh.before;
  d.out_w = ww.out, d.pad_left = ww.before;
  return d;
}

// The patches of the forward convolution: one row per output pixel.
PatchGeometry forward_patches(const ConvDims& d) {
  PatchGeometry g;
  g.batch = d.batch, g.height = d.in_h, g.width = d.in_w, g.channels = d.in_c;
  g.grid_h = d.out_h, g.grid_w = d.out_w;
  g.stride_h = d.stride_h, g.stride_w = d.stride_w;
  for (std::int64_t kh = 0; kh < d.k_h; ++kh) g.off_h.push_back(kh * d.dil_h - d.pad_top);
  for (std::int64_t kw = 0; kw < d.k_w; ++kw) g.off_w.push_back(kw * d.dil_w - d.pad_left);
  return g;
}

template <typename T>
void conv2d_forward(const T* x, const T* f, T* y, const ConvDims& d, ThreadPool* pool,
                    const gemm_detail::Epilogue<T>& ep = {}) {
  const std::int64_t m = d.batch * d.out_h * d.out_w, k = d.k_h * d.k_w * d.in_c;
  const StridedSource<T> filter({f, d.out_c, 1});
  if (d.k_h == 1 && d.k_w == 1 && d.stride_h == 1 && d.stride_w == 1 && d.out_h == d.in_h &&
      d.out_w == d.in_w && d.pad_top == 0 && d.pad_left == 0) {
    // The patch matrix is the NHWC input itself: a plain GEMM, its rows read in place.
    gemm_detail::gemm_sourced<T>(m, d.out_c, k, StridedSource<T>({x, d.in_c, 1}), filter, y,
                                 d.out_c, pool, 1, ep);
    return;
  }
  const PatchGeometry g = forward_patches(d);
  if (gemm_detail::conv_direct<T>(g, x, f, d.out_c, y, d.out_c, pool, ep)) return;
  gemm_detail::gemm_sourced<T>(m, d.out_c, k, PatchSource<T>(x, g), filter, y, d.out_c, pool,
                               d.in_c, ep);
}

std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t r = a % b;
  return r < 0 ? r + b : r;
}

// dx[n, h, w, ci] = sum over taps (kh, kw) with oh = (h + pad_top - kh * dil_h) / stride_h an
// integer in [0, out_h) (likewise w) of sum_co dy[n, oh, ow, co] * f[kh, kw, ci, co].
// Positions h = ph + stride_h * i of one phase ph see the same taps, at oh = i + offset(kh): a
// stride-1 patch matrix over dy, one GEMM per phase.
template <typename T>
void conv2d_backprop_input(const T* dy, const T* f, T* dx, const ConvDims& d, ThreadPool* pool) {
  const std::int64_t ci_n = d.in_c, co_n = d.out_c, taps = d.k_h * d.k_w;
  // The filter with its channel axes swapped: ft[kh][kw][co][ci].
  std::vector<T> ft(static_cast<std::size_t>(taps * co_n * ci_n));
  for (std::int64_t t = 0; t < taps; ++t) {
    for (std::int64_t ci = 0; ci < ci_n; ++ci) {
      for (std::int64_t co = 0; co < co_n; ++co) {
        ft[static_cast<std::size_t>((t * co_n + co) * ci_n + ci)] = f[(t * ci_n + ci) * co_n + co];
      }
    }
  }
  const bool one_phase = d.stride_h == 1 && d.stride_w == 1;
  std::vector<T> phase_out;
  for (std::int64_t ph = 0; ph < std::min(d.stride_h, d.in_h); ++ph) {
    for (std::int64_t pw = 0; pw < std::min(d.stride_w, d.in_w); ++pw) {
      PatchGeometry g;
      g.batch = d.batch, g.height = d.out_h, g.width = d.out_w, g.channels = co_n;
      g.grid_h = (d.in_h - ph + d.stride_h - 1) / d.stride_h;
      g.grid_w = (d.in_w - pw + d.stride_w - 1) / d.stride_w;
      // Taps from the last to the first, so that their offsets into dy grow: a row of the
      // filter's taps then reads neighbouring pixels of dy, which conv_direct sums as one run
      // (kw * channels steps) instead of one run per tap.
      std::vector<std::int64_t> khs, kws;
      for (std::int64_t kh = d.k_h - 1; kh >= 0; --kh) {
        const std::int64_t v = ph + d.pad_top - kh * d.dil_h;
        if (floor_mod(v, d.stride_h) == 0) khs.push_back(kh), g.off_h.push_back(v / d.stride_h);
      }
      for (std::int64_t kw = d.k_w - 1; kw >= 0; --kw) {
        const std::int64_t v = pw + d.pad_left - kw * d.dil_w;
        if (floor_mod(v, d.stride_w) == 0) kws.push_back(kw), g.off_w.push_back(v / d.stride_w);
      }
      // The rows of ft for this phase's taps, in (tap_h, tap_w, co) order.
      std::vector<T> b;
      b.reserve(khs.size() * kws.size() * static_cast<std::size_t>(co_n * ci_n));
      for (std::int64_t kh : khs) {
        for (std::int64_t kw : kws) {
          const T* rows = ft.data() + (kh * d.k_w + kw) * co_n * ci_n;
          b.insert(b.end(), rows, rows + co_n * ci_n);
        }
      }
      const std::int64_t m = g.rows(), k = g.cols();
      T* out = dx;
      if (!one_phase) {
        phase_out.resize(static_cast<std::size_t>(m * ci_n));
        out = phase_out.data();
      }
      if (!gemm_detail::conv_direct<T>(g, dy, b.data(), ci_n, out, ci_n, pool)) {
        gemm_detail::gemm_sourced<T>(m, ci_n, k, PatchSource<T>(dy, g),
                                     StridedSource<T>({b.data(), ci_n, 1}), out, ci_n, pool, co_n);
      }
      if (one_phase) continue;
      // Scatter the phase's rows to their places in dx.
      const std::int64_t gh = g.grid_h, gw = g.grid_w;
      parallel_for(
          pool, 0, d.batch * gh, 1,
          [&](std::int64_t r0, std::int64_t r1) {
            for (std::int64_t r = r0; r < r1; ++r) {
              const std::int64_t n = r / gh, i = r % gh;
              T* row = dx + ((n * d.in_h + ph + i * d.stride_h) * d.in_w + pw) * ci_n;
              const T* src = out + r * gw * ci_n;
              for (std::int64_t j = 0; j < gw; ++j) {
                std::memcpy(row + j * d.stride_w * ci_n, src + j * ci_n,
                            sizeof(T) * static_cast<std::size_t>(ci_n));
              }
            }
          },
          static_cast<double>(gw * ci_n));
    }
  }
}

// Rows [row0, ...) of another source (which must outlive it).
template <typename T>
class RowOffsetSource final : public gemm_detail::BlockSource<T> {
 public:
  RowOffsetSource(const gemm_detail::BlockSource<T>& of, std::int64_t row0)
      : of_(of), row0_(row0) {}
  void copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, T* dst,
            std::int64_t ld) const override {
    of_.copy(row0_ + i0, rows, j0, cols, dst, ld);
  }
  void copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                       T* dst, std::int64_t ld) const override {
    of_.copy_transposed(row0_ + i0, rows, j0, cols, dst, ld);
  }
  bool rows_are_contiguous() const override { return of_.rows_are_contiguous(); }
  void pack_panels(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, int mr,
                   T* dst) const override {
    of_.pack_panels(row0_ + i0, rows, j0, cols, mr, dst);
  }

 private:
  const gemm_detail::BlockSource<T>& of_;
  std::int64_t row0_;
};

// A weight gradient with at most this many rows (kh * kw * in_c: a first layer's few input
// channels) is one row block of the GEMM, one tile of C (with few output channels) that one
// thread would compute alone; it is then summed over slices of the pixels instead.
constexpr std::int64_t kSlicedMaxRows = 128;
constexpr std::int64_t kSlicedMaxCols = 256;
constexpr std::int64_t kSliceMinPixels = 2048;
constexpr std::int64_t kMaxSlices = 64;

// df [kh * kw * in_c x out_c] = patches^T [kh * kw * in_c x M] * dy [M x out_c]: the patch
// matrix read transposed (each A micro-panel is a run of channels per pixel), M = batch * out
// pixels the GEMM's K dimension, summed in one order. (dy^T * patches would make out_c the rows
// of C: 64 rows are 5 1/3 micro-panels of 12, a ninth of the FMAs wasted.) A small df is summed
// over slices of the pixels on the pool, each slice one GEMM into its own buffer, then the slices
// added in order: the slices depend only on the sizes, so the bits do not depend on the threads.
template <typename T>
void conv2d_backprop_filter(const T* x, const T* dy, T* df, const ConvDims& d, ThreadPool* pool) {
  const std::int64_t m = d.batch * d.out_h * d.out_w, k = d.k_h * d.k_w * d.in_c, co_n = d.out_c;
  const PatchGeometry g = forward_patches(d);
  if (gemm_detail::conv_direct_transposed<T>(g, x, dy, co_n, df, co_n, pool)) return;
  const PatchSource<T> patches(x, g);
  const std::int64_t slices = std::min(kMaxSlices, m / kSliceMinPixels);
  if (k > kSlicedMaxRows || co_n > kSlicedMaxCols || slices < 2) {
    gemm_detail::gemm_sourced<T>(k, co_n, m, gemm_detail::TransposedSource<T>(patches),
                                 StridedSource<T>({dy, co_n, 1}), df, co_n, pool, 1);
    return;
  }
  const std::int64_t size = k * co_n;
  std::vector<T> partial(static_cast<std::size_t>(slices * size));
  auto pixel = [&](std::int64_t s) { return s * m / slices; };
  parallel_for(
      pool, 0, slices, 1,
      [&](std::int64_t s0, std::int64_t s1) {
        for (std::int64_t s = s0; s < s1; ++s) {
          const RowOffsetSource<T> rows(patches, pixel(s));
          gemm_detail::gemm_sourced<T>(k, co_n, pixel(s + 1) - pixel(s),
                                       gemm_detail::TransposedSource<T>(rows),
                                       StridedSource<T>({dy + pixel(s) * co_n, co_n, 1}),
                                       partial.data() + s * size, co_n, nullptr, 1);
        }
      },
      static_cast<double>(2 * size * (m / slices)));
  std::copy(partial.begin(), partial.begin() + size, df);
  for (std::int64_t s = 1; s < slices; ++s) {
    const T* p = partial.data() + s * size;
    for (std::int64_t e = 0; e < size; ++e) df[e] += p[e];
  }
}

// -- depthwise -----------------------------------------------------------------------------------

// y[n, oh, ow, c * mult + m] = sum over in-range taps of x[n, h, w, c] * f[kh, kw, c, m], the taps
// in (kh, kw) order. For channel multiplier 1 the sums of kLanes channels stay in registers across
// the taps (a load of x and f per product instead of also a load and store of y).
template <typename T>
void depthwise_forward(const T* x, const T* f, T* y, const ConvDims& d, ThreadPool* pool) {
  const std::int64_t c_n = d.in_c, mult = d.multiplier, cm = d.out_c;
  constexpr std::int64_t kLanes = 64 / sizeof(T);
  parallel_for(
      pool, 0, d.batch * d.out_h, 1,
      [&](std::int64_t r0, std::int64_t r1) {
        std::vector<const T*> xs, fs;  // the in-range taps of one output pixel
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t n = r / d.out_h, oh = r % d.out_h;
          for (std::int64_t ow = 0; ow < d.out_w; ++ow) {
            T* yp = y + (r * d.out_w + ow) * cm;
            xs.clear(), fs.clear();
            for (std::int64_t kh = 0; kh < d.k_h; ++kh) {
              const std::int64_t h = oh * d.stride_h + kh * d.dil_h - d.pad_top;
              if (h < 0 || h >= d.in_h) continue;
              for (std::int64_t kw = 0; kw < d.k_w; ++kw) {
                const std::int64_t w = ow * d.stride_w + kw * d.dil_w - d.pad_left;
                if (w < 0 || w >= d.in_w) continue;
                xs.push_back(x + ((n * d.in_h + h) * d.in_w + w) * c_n);
                fs.push_back(f + (kh * d.k_w + kw) * cm);
              }
            }
            const std::size_t taps = xs.size();
            if (mult == 1) {
              std::int64_t c = 0;
              for (; c + kLanes <= c_n; c += kLanes) {
                T acc[kLanes] = {};
                for (std::size_t t = 0; t < taps; ++t) {
                  const T* xp = xs[t] + c;
                  const T* fp = fs[t] + c;
                  for (std::int64_t l = 0; l < kLanes; ++l) acc[l] += xp[l] * fp[l];
                }
                std::copy(acc, acc + kLanes, yp + c);
              }
              for (; c < c_n; ++c) {
                T acc = 0;
                for (std::size_t t = 0; t < taps; ++t) acc += xs[t][c] * fs[t][c];
                yp[c] = acc;
              }
            } else {
              std::fill(yp, yp + cm, T(0));
              for (std::size_t t = 0; t < taps; ++t) {
                for (std::int64_t c = 0; c < c_n; ++c) {
                  for (std::int64_t j = 0; j < mult; ++j) {
                    yp[c * mult + j] += xs[t][c] * fs[t][c * mult + j];
                  }
                }
              }
            }
          }
        }
      },
      static_cast<double>(d.out_w * d.k_h * d.k_w * cm));
}

// dx[n, h, w, c] = sum over taps reaching (h, w), then over m, of dy[.., c * mult + m] * f[..].
template <typename T>
void depthwise_backprop_input(const T* dy, const T* f, T* dx, const ConvDims& d, ThreadPool* pool) {
  const std::int64_t c_n = d.in_c, mult = d.multiplier, cm = d.out_c;
  parallel_for(
      pool, 0, d.batch * d.in_h, 1,
      [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t n = r / d.in_h, h = r % d.in_h;
          for (std::int64_t w = 0; w < d.in_w; ++w) {
            T* xp = dx + (r * d.in_w + w) * c_n;
            std::fill(xp, xp + c_n, T(0));
            for (std::int64_t kh = 0; kh < d.k_h; ++kh) {
              const std::int64_t vh = h + d.pad_top - kh * d.dil_h;
              if (vh < 0 || vh % d.stride_h != 0 || vh / d.stride_h >= d.out_h) continue;
              const std::int64_t oh = vh / d.stride_h;
              for (std::int64_t kw = 0; kw < d.k_w; ++kw) {
                const std::int64_t vw = w + d.pad_left - kw * d.dil_w;
                if (vw < 0 || vw % d.stride_w != 0 || vw / d.stride_w >= d.out_w) continue;
                const std::int64_t ow = vw / d.stride_w;
                const T* gp = dy + ((n * d.out_h + oh) * d.out_w + ow) * cm;
                const T* fp = f + (kh * d.k_w + kw) * cm;
                if (mult == 1) {
                  for (std::int64_t c = 0; c < c_n; ++c) xp[c] += gp[c] * fp[c];
                } else {
                  for (std::int64_t c = 0; c < c_n; ++c) {
                    for (std::int64_t j = 0; j < mult; ++j) {
                      xp[c] += gp[c * mult + j] * fp[c * mult + j];
                    }
                  }
                }
              }
            }
          }
        }
      },
      static_cast<double>(d.in_w * d.k_h * d.k_w * cm));
}

// df[kh, kw, c, m] = sum over (n, oh, ow) (in that order) of x[n, h, w, c] * dy[.., c * mult + m]:
// one piece per (tap, block of channels) sums every pixel, so no sum is split.
template <typename T>
void depthwise_backprop_filter(const T* x, const T* dy, T* df, const ConvDims& d,
                               ThreadPool* pool) {
  const std::int64_t c_n = d.in_c, mult = d.multiplier, cm = d.out_c;
  constexpr std::int64_t kChannelBlock = 64;
  const std::int64_t blocks = (c_n + kChannelBlock - 1) / kChannelBlock;
  const std::int64_t taps = d.k_h * d.k_w;
  parallel_for(
      pool, 0, taps * blocks, 1,
      [&](std::int64_t p0, std::int64_t p1) {
        std::vector<T> acc(static_cast<std::size_t>(kChannelBlock * mult));
        for (std::int64_t p = p0; p < p1; ++p) {
          const std::int64_t tap = p / blocks, kh = tap / d.k_w, kw = tap % d.k_w;
          const std::int64_t c0 = p % blocks * kChannelBlock;
          const std::int64_t c1 = std::min(c_n, c0 + kChannelBlock);
          std::fill(acc.begin(), acc.end(), T(0));
          for (std::int64_t n = 0; n < d.batch; ++n) {
            for (std::int64_t oh = 0; oh < d.out_h; ++oh) {
              const std::int64_t h = oh * d.stride_h + kh * d.dil_h - d.pad_top;
              if (h < 0 || h >= d.in_h) continue;
              for (std::int64_t ow = 0; ow < d.out_w; ++ow) {
                const std::int64_t w = ow * d.stride_w + kw * d.dil_w - d.pad_left;
                if (w < 0 || w >= d.in_w) continue;
                const T* xp = x + ((n * d.in_h + h) * d.in_w + w) * c_n;
                const T* gp = dy + ((n * d.out_h + oh) * d.out_w + ow) * cm;
                for (std::int64_t c = c0; c < c1; ++c) {
                  for (std::int64_t j = 0; j < mult; ++j) {
                    acc[static_cast<std::size_t>((c - c0) * mult + j)] += xp[c] * gp[c * mult + j];
                  }
                }
              }
            }
          }
          std::copy(acc.begin(), acc.begin() + (c1 - c0) * mult, df + tap * cm + c0 * mult);
        }
      },
      static_cast<double>(d.batch * d.out_h * d.out_w * kChannelBlock * mult));
}

// -- the op kernels ------------------------------------------------------------------------------

void check_same_dtype(const NodeDef& node, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    throw_node_error(node, std::string("input dtypes differ: ") + dtype_name(a.dtype()) + " and " +
                               dtype_name(b.dtype()));
  }
}

// input_sizes / filter_sizes: an int32 or int64 vector of 4 non-negative sizes.
std::vector<std::int64_t> sizes_input(const KernelContext& ctx, std::size_t i, const char* what) {
  std::vector<std::int64_t> v = int_list_input(ctx, i, what);
  if (v.size() != 4) {
    throw_node_error(
        ctx.node, std::string(what) + " must have 4 elements, got " + kernel_detail::join_ints(v));
  }
  for (std::int64_t x : v) {
    if (x < 0) {
      throw_node_error(ctx.node,
                       std::string(what) + " must be >= 0, got " + kernel_detail::join_ints(v));
    }
  }
  return v;
}

void check_out_backprop(const NodeDef& node, const Tensor& dy, const ConvDims& d) {
  const Shape want{d.batch, d.out_h, d.out_w, d.out_c};
  if (dy.shape() != want) {
    throw_node_error(node, "out_backprop has shape " + shape_to_string(dy.shape()) +
                               " (NHWC) but the convolution's output has shape " +
                               shape_to_string(want));
  }
}

enum class ConvKind { kForward, kBackpropInput, kBackpropFilter };

template <typename Fn>
KernelDef conv_kernel(ConvKind kind, bool depthwise, Fn compute) {
  return {[kind, depthwise, compute](const NodeDef& node) -> Kernel {
            const WindowAttrs a = kernel_detail::read_window_attrs(node, /*pooling=*/false);
            return [a, kind, depthwise, compute](KernelContext& ctx) {
              const NodeDef& node = ctx.node;
              ThreadPool* pool = ctx.intra_pool;
              Tensor x, f, dy;
              Shape in_shape, f_shape;
              if (kind == ConvKind::kForward) {
                kernel_detail::check_rank4(node, ctx.inputs[0], "input");
                kernel_detail::check_rank4(node, ctx.inputs[1], "filter");
                check_same_dtype(node, ctx.inputs[0], ctx.inputs[1]);
                x = kernel_detail::to_nhwc(ctx.inputs[0], a.nchw, pool);
                f = ctx.inputs[1].contiguous();
                in_shape = x.shape(), f_shape = f.shape();
              } else if (kind == ConvKind::kBackpropInput) {
                in_shape = kernel_detail::nhwc_shape(sizes_input(ctx, 0, "input_sizes"), a.nchw);
                kernel_detail::check_rank4(node, ctx.inputs[1], "filter");
                kernel_detail::check_rank4(node, ctx.inputs[2], "out_backprop");
                check_same_dtype(node, ctx.inputs[1], ctx.inputs[2]);
                f = ctx.inputs[1].contiguous();
                f_shape = f.shape();
                dy = kernel_detail::to_nhwc(ctx.inputs[2], a.nchw, pool);
              } else {
                kernel_detail::check_rank4(node, ctx.inputs[0], "input");
                const auto fs = sizes_input(ctx, 1, "filter_sizes");
                f_shape = Shape(fs.begin(), fs.end());
                kernel_detail::check_rank4(node, ctx.inputs[2], "out_backprop");
                check_same_dtype(node, ctx.inputs[0], ctx.inputs[2]);
                x = kernel_detail::to_nhwc(ctx.inputs[0], a.nchw, pool);
                in_shape = x.shape();
                dy = kernel_detail::to_nhwc(ctx.inputs[2], a.nchw, pool);
              }
              const ConvDims d = conv_dims(node, a, in_shape, f_shape, depthwise);
              if (kind != ConvKind::kForward) check_out_backprop(node, dy, d);
              const DType dtype = kind == ConvKind::kForward ? x.dtype() : dy.dtype();
              Tensor out;
              if (kind == ConvKind::kForward) {
                out = Tensor::empty(dtype, {d.batch, d.out_h, d.out_w, d.out_c});
              } else if (kind == ConvKind::kBackpropInput) {
                out = Tensor::empty(dtype, in_shape);
              } else {
                out = Tensor::empty(dtype, f_shape);
              }
              if (out.numel() > 0) {
                dispatch_float(dtype, [&](auto tag) {
                  using T = typename decltype(tag)::type;
                  compute(x.data<T>(), f.data<T>(), dy.data<T>(), out.data<T>(), d, pool);
                });
              }
              ctx.outputs[0] = kind == ConvKind::kBackpropFilter
                                   ? out
                                   : kernel_detail::from_nhwc(out, a.nchw, pool);
            };
          },
          CostHint::kExpensive, /*stateful=*/false, /*float16_via_float32=*/true};
}

// The compute functions, by kind: (x, f, dy, out, dims, pool); unused pointers are null.
struct Conv2DForward {
  template <typename T>
  void operator()(const T* x, const T* f, const T*, T* out, const ConvDims& d,
                  ThreadPool* pool) const {
    conv2d_forward(x, f, out, d, pool);
  }
};
struct Conv2DInputGrad {
  template <typename T>
  void operator()(const T*, const T* f, const T* dy, T* out, const ConvDims& d,
                  ThreadPool* pool) const {
    conv2d_backprop_input(dy, f, out, d, pool);
  }
};
struct Conv2DFilterGrad {
  template <typename T>
  void operator()(const T* x, const T*, const T* dy, T* out, const ConvDims& d,
                  ThreadPool* pool) const {
    conv2d_backprop_filter(x, dy, out, d, pool);
  }
};
struct DepthwiseForward {
  template <typename T>
  void operator()(const T* x, const T* f, const T*, T* out, const ConvDims& d,
                  ThreadPool* pool) const {
    depthwise_forward(x, f, out, d, pool);
  }
};
struct DepthwiseInputGrad {
  template <typename T>
  void operator()(const T*, const T* f, const T* dy, T* out, const ConvDims& d,
                  ThreadPool* pool) const {
    depthwise_backprop_input(dy, f, out, d, pool);
  }
};
struct DepthwiseFilterGrad {
  template <typename T>
  void operator()(const T* x, const T*, const T* dy, T* out, const ConvDims& d,
                  ThreadPool* pool) const {
    depthwise_backprop_filter(x, dy, out, d, pool);
  }
};

// _FusedConv2D(input, filter[, bias]) (optimizer/remapping.cpp makes it): Conv2D, NHWC, whose
// epilogue -- the bias of a BiasAdd or Add, then an activation (fused_ops, as _FusedMatMul's) --
// is applied to each tile of the output while it is in cache: the same sums, then each op's own
// formula, so the bits of the unfused nodes. Errors name the Conv2D as written (conv_name).
KernelDef fused_conv_kernel() {
  return {[](const NodeDef& node) -> Kernel {
            const WindowAttrs a = kernel_detail::read_window_attrs(node, /*pooling=*/false);
            if (a.nchw) throw_node_error(node, "_FusedConv2D computes NHWC only");
            const fused::Spec spec = fused::read_spec(node);
            const std::string conv =
                node.has_attr("conv_name") ? node.attr<std::string>("conv_name") : node.name;
            return [a, spec, conv](KernelContext& ctx) {
              try {
                const NodeDef& node = ctx.node;
                kernel_detail::check_rank4(node, ctx.inputs[0], "input");
                kernel_detail::check_rank4(node, ctx.inputs[1], "filter");
                check_same_dtype(node, ctx.inputs[0], ctx.inputs[1]);
                const Tensor x = ctx.inputs[0].contiguous();
                const Tensor f = ctx.inputs[1].contiguous();
                const ConvDims d = conv_dims(node, a, x.shape(), f.shape(), false);
                Tensor out = Tensor::empty(x.dtype(), {d.batch, d.out_h, d.out_w, d.out_c});
                Tensor bias;
                if (spec.bias) {
                  bias = fused::check_bias(ctx, ctx.inputs[2], x.dtype(), d.out_c).contiguous();
                }
                if (out.numel() > 0) {
                  dispatch_float(x.dtype(), [&](auto tag) {
                    using T = typename decltype(tag)::type;
                    gemm_detail::Epilogue<T> ep;
                    if (spec.bias) ep.bias = bias.data<T>();
                    ep.activation = spec.activation;
                    ep.alpha = static_cast<T>(spec.alpha);
                    conv2d_forward(x.data<T>(), f.data<T>(), out.data<T>(), d, ctx.intra_pool, ep);
                  });
                }
                ctx.outputs[0] = std::move(out);
              } catch (const OpError& e) {
                throw OpError(e.code(), std::string(e.what()) + " (in Conv2D '" + conv +
                                            "', fused into this node)");
              }
            };
          },
          CostHint::kExpensive};
}

}  // namespace

void register_conv_kernels() {
  register_kernel("_FusedConv2D", fused_conv_kernel());
  register_kernel("Conv2D", conv_kernel(ConvKind::kForward, false, Conv2DForward{}));
  register_kernel("Conv2DBackpropInput",
                  conv_kernel(ConvKind::kBackpropInput, false, Conv2DInputGrad{}));
  register_kernel("Conv2DBackpropFilter",
                  conv_kernel(ConvKind::kBackpropFilter, false, Conv2DFilterGrad{}));
  register_kernel("DepthwiseConv2dNative",
                  conv_kernel(ConvKind::kForward, true, DepthwiseForward{}));
  register_kernel("DepthwiseConv2dNativeBackpropInput",
                  conv_kernel(ConvKind::kBackpropInput, true, DepthwiseInputGrad{}));
  register_kernel("DepthwiseConv2dNativeBackpropFilter",
                  conv_kernel(ConvKind::kBackpropFilter, true, DepthwiseFilterGrad{}));
}

}  // namespace opweave
