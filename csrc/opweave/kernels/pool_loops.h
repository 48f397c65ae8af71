// The row loops of max pooling's gradient where windows do not overlap (stride >= window, the
// usual 2x2 / 2), compiled three times from this one source: pool_loops.cpp (baseline x86-64, or
// any CPU), pool_loops_avx2.cpp and pool_loops_avx512.cpp. They only compare, select and copy, so
// every build gives the same bits; the wider ones do 8 or 16 channels per instruction, where the
// baseline's SSE does 4 (a 2x2 window of 32 channels is a handful of vectors, and the loop's
// overhead per window is most of its cost). pool_ops.cpp picks the table once with cpu_info().
#pragma once

#include <cstdint>

namespace opweave::pool_loops {

// One output row (n, oh) of a max pooling over an NHWC image.
template <typename T>
struct Row {
  const T* x = nullptr;  // image n's first pixel
  std::int64_t width = 0, channels = 0;
  std::int64_t h0 = 0, h1 = 0;  // the row's window rows, clipped to the image
  std::int64_t out_w = 0, k_w = 1, stride_w = 1, pad_left = 0;
  const T* dy = nullptr;  // the row's output gradients, out_w x channels
  T* dx = nullptr;        // image n's input gradient
};

template <typename T>
struct Table {
  // For each window of the row: dx = 0 + dy at the cell TensorFlow picks (the first maximum in
  // row-major order; NaN only when it comes first), 0 at its other cells.
  void (*max_grad_disjoint_row)(const Row<T>& row);
};

Table<float> table_baseline_f32();
Table<double> table_baseline_f64();
#if defined(OPWEAVE_X86_64)
Table<float> table_avx2_f32();
Table<double> table_avx2_f64();
Table<float> table_avx512_f32();
Table<double> table_avx512_f64();
#endif

}  // namespace opweave::pool_loops

#if defined(OPWEAVE_POOL_LOOPS_IMPL)
#include <algorithm>

#include "opweave/kernels/vector_math.h"

namespace opweave::pool_loops {
namespace {

// Channels per block: the block's maximum and chosen cell stay in local arrays (registers).
constexpr std::int64_t kBlock = 64;

template <typename T>
void max_grad_disjoint_row(const Row<T>& r) {
  const std::int64_t c_n = r.channels, row = r.width * c_n;
  // Locals, not heap vectors: the compiler knows they alias neither x nor dx, and keeps the
  // channel loops vectorised.
  T best[kBlock];
  T pick[kBlock];  // the chosen cell's index in the window, exact in T
  for (std::int64_t ow = 0; ow < r.out_w; ++ow) {
    const std::int64_t ws = ow * r.stride_w - r.pad_left;
    const std::int64_t w0 = std::max<std::int64_t>(ws, 0), w1 = std::min(ws + r.k_w, r.width);
    if (w0 >= w1 || r.h0 >= r.h1) continue;
    for (std::int64_t c0 = 0; c0 < c_n; c0 += kBlock) {
      const std::int64_t cb = std::min(kBlock, c_n - c0);
      const T* g = r.dy + ow * c_n + c0;
      const T* first = r.x + r.h0 * row + w0 * c_n + c0;
      for (std::int64_t c = 0; c < cb; ++c) best[c] = first[c], pick[c] = T(0);
      T at = 0;
      for (std::int64_t h = r.h0; h < r.h1; ++h) {
        for (std::int64_t w = h == r.h0 ? w0 + 1 : w0; w < w1; ++w) {
          at += 1;
          const T* xp = r.x + h * row + w * c_n + c0;
          for (std::int64_t c = 0; c < cb; ++c) {
            // A greater cell replaces the best (so ties and NaN keep the earlier one).
            const bool greater = best[c] < xp[c];
            best[c] = vector_math::select<T>(greater, xp[c], best[c]);
            pick[c] = vector_math::select<T>(greater, at, pick[c]);
          }
        }
      }
      T here = 0;
      for (std::int64_t h = r.h0; h < r.h1; ++h) {
        for (std::int64_t w = w0; w < w1; ++w, here += 1) {
          T* out = r.dx + h * row + w * c_n + c0;
          // 0 + g: TensorFlow adds into zeros, so a -0 gradient gives +0. Bit-mask selects: GCC
          // keeps ?: on floats a branch, which mispredicts on every other window.
          for (std::int64_t c = 0; c < cb; ++c) {
            out[c] = vector_math::select<T>(pick[c] == here, T(0) + g[c], T(0));
          }
        }
      }
    }
  }
}

template <typename T>
Table<T> make_table() {
  return {&max_grad_disjoint_row<T>};
}

}  // namespace
}  // namespace opweave::pool_loops

#define OPWEAVE_POOL_LOOPS_INSTANTIATE(suffix)                          \
  namespace opweave::pool_loops {                                       \
  Table<float> table_##suffix##_f32() { return make_table<float>(); }   \
  Table<double> table_##suffix##_f64() { return make_table<double>(); } \
  }
#endif
