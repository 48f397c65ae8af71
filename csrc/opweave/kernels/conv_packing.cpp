#include "opweave/kernels/conv_packing.h"

#include <algorithm>
#include <cstring>

namespace opweave::gemm_detail {

template <typename T>
template <typename Run>
void PatchSource<T>::for_runs(std::int64_t r, std::int64_t j0, std::int64_t cols,
                              const Run& run) const {
  const std::int64_t per_image = g_.grid_h * g_.grid_w;
  const std::int64_t n = r / per_image;
  const std::int64_t i = r % per_image / g_.grid_w;
  const std::int64_t j = r % g_.grid_w;
  const std::int64_t ch = g_.channels;
  const auto taps_w = static_cast<std::int64_t>(g_.off_w.size());
  const T* img = image_ + n * g_.height * g_.width * ch;
  std::int64_t tap = j0 / ch, c = j0 % ch;
  std::int64_t done = 0;
  while (done < cols) {
    const std::int64_t len = std::min(ch - c, cols - done);
    const std::int64_t h = i * g_.stride_h + g_.off_h[static_cast<std::size_t>(tap / taps_w)];
    const std::int64_t w = j * g_.stride_w + g_.off_w[static_cast<std::size_t>(tap % taps_w)];
    const bool inside = h >= 0 && h < g_.height && w >= 0 && w < g_.width;
    run(done, inside ? img + (h * g_.width + w) * ch + c : nullptr, len);
    done += len;
    c = 0;
    ++tap;
  }
}

template <typename T>
void PatchSource<T>::copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                          T* dst, std::int64_t ld) const {
  for (std::int64_t r = 0; r < rows; ++r) {
    T* out = dst + r * ld;
    for_runs(i0 + r, j0, cols, [out](std::int64_t at, const T* src, std::int64_t len) {
      if (src != nullptr) {
        std::memcpy(out + at, src, sizeof(T) * static_cast<std::size_t>(len));
      } else {
        std::fill(out + at, out + at + len, T(0));
      }
    });
  }
}

template <typename T>
void PatchSource<T>::copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0,
                                     std::int64_t cols, T* dst, std::int64_t ld) const {
  for (std::int64_t r = 0; r < rows; ++r) {
    T* out = dst + r;
    for_runs(i0 + r, j0, cols, [out, ld](std::int64_t at, const T* src, std::int64_t len) {
      for (std::int64_t q = 0; q < len; ++q) out[(at + q) * ld] = src != nullptr ? src[q] : T(0);
    });
  }
}

template class PatchSource<float>;
template class PatchSource<double>;

}  // namespace opweave::gemm_detail
