#include "opweave/kernels/conv_packing.h"

#include <algorithm>
#include <cstring>

namespace opweave::gemm_detail {

template <typename T>
PatchSource<T>::PatchSource(const T* image, const PatchGeometry& g) : image_(image), g_(g) {
  for (std::int64_t dh : g.off_h) {
    for (std::int64_t dw : g.off_w) {
      tap_h_.push_back(dh);
      tap_w_.push_back(dw);
      tap_at_.push_back((dh * g.width + dw) * g.channels);
    }
  }
  if (!g.off_h.empty()) {
    min_h_ = *std::min_element(g.off_h.begin(), g.off_h.end());
    max_h_ = *std::max_element(g.off_h.begin(), g.off_h.end());
  }
  if (!g.off_w.empty()) {
    min_w_ = *std::min_element(g.off_w.begin(), g.off_w.end());
    max_w_ = *std::max_element(g.off_w.begin(), g.off_w.end());
  }
}

// No division per run or per row (a 64-bit division costs more than copying a run): rows step
// through (n, i, j) by increments, taps come from the tables, and a row whose whole patch lies
// inside the image skips the bounds checks.
template <typename T>
template <typename Run>
void PatchSource<T>::for_runs(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                              std::int64_t cols, const Run& run) const {
  const std::int64_t ch = g_.channels, width = g_.width;
  const std::int64_t per_image = g_.grid_h * g_.grid_w;
  std::int64_t n = i0 / per_image;
  std::int64_t i = i0 % per_image / g_.grid_w;
  std::int64_t j = i0 % g_.grid_w;
  const std::int64_t tap0 = j0 / ch, c0 = j0 % ch;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t h = i * g_.stride_h, w = j * g_.stride_w;
    const T* base = image_ + ((n * g_.height + h) * width + w) * ch;
    const bool inside =
        h + min_h_ >= 0 && h + max_h_ < g_.height && w + min_w_ >= 0 && w + max_w_ < width;
    std::int64_t done = 0, tap = tap0, c = c0;
    while (done < cols) {
      const std::int64_t len = std::min(ch - c, cols - done);
      const auto t = static_cast<std::size_t>(tap);
      const bool ok = inside || (h + tap_h_[t] >= 0 && h + tap_h_[t] < g_.height &&
                                 w + tap_w_[t] >= 0 && w + tap_w_[t] < width);
      run(r, done, ok ? base + tap_at_[t] + c : nullptr, len);
      done += len;
      c = 0;
      ++tap;
    }
    if (++j == g_.grid_w) {
      j = 0;
      if (++i == g_.grid_h) i = 0, ++n;
    }
  }
}

namespace {

// A run of `len` values: a loop the compiler unrolls into vector moves. A call to memcpy cost
// more than the copy itself for the usual runs (one pixel's channels, 32 to 256 values).
template <typename T>
inline void copy_run(T* __restrict out, const T* __restrict src, std::int64_t len) {
  for (std::int64_t q = 0; q < len; ++q) out[q] = src[q];
}

}  // namespace

template <typename T>
void PatchSource<T>::copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                          T* dst, std::int64_t ld) const {
  for_runs(i0, rows, j0, cols,
           [dst, ld](std::int64_t r, std::int64_t at, const T* src, std::int64_t len) {
             T* out = dst + r * ld + at;
             if (src != nullptr) {
               copy_run(out, src, len);
             } else {
               std::fill(out, out + len, T(0));
             }
           });
}

template <typename T>
void PatchSource<T>::copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                                     std::int64_t cols, T* dst, std::int64_t ld) const {
  for_runs(i0, rows, j0, cols,
           [dst, ld](std::int64_t r, std::int64_t at, const T* src, std::int64_t len) {
             for (std::int64_t q = 0; q < len; ++q)
               dst[(at + q) * ld + r] = src != nullptr ? src[q] : T(0);
           });
}

template class PatchSource<float>;
template class PatchSource<double>;

}  // namespace opweave::gemm_detail
