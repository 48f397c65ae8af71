// The row loops of max pooling, and of its gradient where windows do not overlap (stride >=
// window, the usual 2x2 / 2), compiled three times from this one source: pool_loops.cpp (baseline
// x86-64, or any CPU), pool_loops_avx2.cpp and pool_loops_avx512.cpp. They only compare, select and
// copy, so every build gives the same bits; the wider ones do 8 or 16 channels per instruction,
// where the baseline's SSE does 4 (a 2x2 window of 32 channels is a handful of vectors, and the
// loop's overhead per window is most of its cost). pool_ops.cpp picks the table once with
// cpu_info().
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
  T* y = nullptr;         // max_pool_row: the row's outputs, out_w x channels
  // max_grad_disjoint_row: ReluGrad fused after the gradient (its features being the pooling's
  // input): the chosen cell gets dy only where its value is > 0.
  bool relu_grad = false;
};

template <typename T>
struct Table {
  // For each window of the row: y = the running maximum from the lowest value that only a greater
  // cell replaces (NaN cells skipped, as TensorFlow's CPU kernel).
  void (*max_pool_row)(const Row<T>& row);
  // For each window of the row: dx = 0 + dy at the cell TensorFlow picks (the first maximum in
  // row-major order; NaN only when it comes first), 0 at its other cells (and with relu_grad,
  // 0 at the chosen cell too unless its value is > 0).
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
#include <cstring>
#include <limits>
#include <type_traits>

#include "opweave/kernels/vector_math.h"
#include "opweave/kernels/vector_width.h"

namespace opweave::pool_loops {
namespace {

using simd_width::kVectorBytes;

// Channels as one GCC/clang vector of the build's width: a window's running maximum and chosen
// cell stay in registers across its cells (plain loops over local arrays kept them in memory,
// loaded and stored for every cell).
template <typename T>
struct Lanes {
  typedef T V __attribute__((vector_size(kVectorBytes)));
  typedef std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t> M
      __attribute__((vector_size(kVectorBytes)));
  static constexpr std::int64_t kCount = kVectorBytes / sizeof(T);
  static V load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  static void store(T* p, V v) { std::memcpy(p, &v, sizeof(V)); }
  static V splat(T value) {
    V v = {};
    return v + value;
  }
};

template <typename T>
void max_pool_row(const Row<T>& r) {
  using L = Lanes<T>;
  using V = typename L::V;
  using M = typename L::M;
  const std::int64_t c_n = r.channels, row = r.width * c_n;
  const V lowest = L::splat(std::numeric_limits<T>::lowest());
  for (std::int64_t ow = 0; ow < r.out_w; ++ow) {
    const std::int64_t ws = ow * r.stride_w - r.pad_left;
    const std::int64_t w0 = std::max<std::int64_t>(ws, 0), w1 = std::min(ws + r.k_w, r.width);
    T* y = r.y + ow * c_n;
    std::int64_t c = 0;
    for (; c + L::kCount <= c_n; c += L::kCount) {
      V best = lowest;
      for (std::int64_t h = r.h0; h < r.h1; ++h) {
        for (std::int64_t w = w0; w < w1; ++w) {
          const V v = L::load(r.x + h * row + w * c_n + c);
          const M greater = best < v;  // false for a NaN cell, which is skipped
          best = greater ? v : best;
        }
      }
      L::store(y + c, best);
    }
    for (; c < c_n; ++c) {
      T best = std::numeric_limits<T>::lowest();
      for (std::int64_t h = r.h0; h < r.h1; ++h) {
        for (std::int64_t w = w0; w < w1; ++w) {
          const T v = r.x[h * row + w * c_n + c];
          best = vector_math::select<T>(best < v, v, best);
        }
      }
      y[c] = best;
    }
  }
}

// The gradient of one window for channels [c, c + count) of a row: vectors of L::kCount, or
// single channels (the remainder). A greater cell replaces the best (so ties and NaN keep the
// earlier one); the chosen cell gets 0 + dy (TensorFlow adds into zeros, so a -0 gradient gives
// +0), the others 0.
template <typename T>
void max_grad_window(const Row<T>& r, std::int64_t w0, std::int64_t w1, const T* g, std::int64_t c,
                     std::int64_t end) {
  using L = Lanes<T>;
  using V = typename L::V;
  using M = typename L::M;
  const std::int64_t c_n = r.channels, row = r.width * c_n;
  for (; c + L::kCount <= end; c += L::kCount) {
    V best = L::load(r.x + r.h0 * row + w0 * c_n + c);
    V pick = {};  // the chosen cell's index in the window, exact in T
    T at = 0;
    for (std::int64_t h = r.h0; h < r.h1; ++h) {
      for (std::int64_t w = h == r.h0 ? w0 + 1 : w0; w < w1; ++w) {
        at += 1;
        const V v = L::load(r.x + h * row + w * c_n + c);
        const M greater = best < v;
        best = greater ? v : best;
        pick = greater ? L::splat(at) : pick;
      }
    }
    const V zero = {};
    const V grad = zero + L::load(g + c);
    // ReluGrad's `features > 0 ? g : 0`: only the chosen cell (value `best`) has a gradient.
    M keep = M{} == M{};  // all lanes
    if (r.relu_grad) keep = best > zero;
    T here = 0;
    for (std::int64_t h = r.h0; h < r.h1; ++h) {
      for (std::int64_t w = w0; w < w1; ++w, here += 1) {
        const M chosen = (pick == here) & keep;
        L::store(r.dx + h * row + w * c_n + c, chosen ? grad : zero);
      }
    }
  }
  for (; c < end; ++c) {
    T best = r.x[r.h0 * row + w0 * c_n + c], pick = 0, at = 0;
    for (std::int64_t h = r.h0; h < r.h1; ++h) {
      for (std::int64_t w = h == r.h0 ? w0 + 1 : w0; w < w1; ++w) {
        at += 1;
        const bool greater = best < r.x[h * row + w * c_n + c];
        best = vector_math::select<T>(greater, r.x[h * row + w * c_n + c], best);
        pick = vector_math::select<T>(greater, at, pick);
      }
    }
    const bool keep = !r.relu_grad || best > T(0);
    T here = 0;
    for (std::int64_t h = r.h0; h < r.h1; ++h) {
      for (std::int64_t w = w0; w < w1; ++w, here += 1) {
        r.dx[h * row + w * c_n + c] =
            vector_math::select<T>(pick == here && keep, T(0) + g[c], T(0));
      }
    }
  }
}

template <typename T>
void max_grad_disjoint_row(const Row<T>& r) {
  const std::int64_t c_n = r.channels;
  for (std::int64_t ow = 0; ow < r.out_w; ++ow) {
    const std::int64_t ws = ow * r.stride_w - r.pad_left;
    const std::int64_t w0 = std::max<std::int64_t>(ws, 0), w1 = std::min(ws + r.k_w, r.width);
    if (w0 >= w1 || r.h0 >= r.h1) continue;
    max_grad_window(r, w0, w1, r.dy + ow * c_n, 0, c_n);
  }
}

template <typename T>
Table<T> make_table() {
  return {&max_pool_row<T>, &max_grad_disjoint_row<T>};
}

}  // namespace
}  // namespace opweave::pool_loops

#define OPWEAVE_POOL_LOOPS_INSTANTIATE(suffix)                          \
  namespace opweave::pool_loops {                                       \
  Table<float> table_##suffix##_f32() { return make_table<float>(); }   \
  Table<double> table_##suffix##_f64() { return make_table<double>(); } \
  }
#endif
