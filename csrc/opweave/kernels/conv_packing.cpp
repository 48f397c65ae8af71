#include "opweave/kernels/conv_packing.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

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
  // Taps of one filter row whose pixels are neighbours in the image (no dilation along w): a
  // patch row's runs for them are one contiguous run (k_w * channels values, not k_w runs).
  const std::size_t taps = tap_at_.size(), taps_w = g.off_w.size();
  next_adjacent_.assign(taps, 0);
  chain_.assign(taps, 1);
  for (std::size_t t = taps; t-- > 0;) {
    next_adjacent_[t] =
        t + 1 < taps && (t + 1) % taps_w != 0 && tap_at_[t + 1] == tap_at_[t] + g.channels;
    if (next_adjacent_[t] != 0) chain_[t] = chain_[t + 1] + 1;
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
    auto in_image = [&](std::size_t t) {
      return inside || (h + tap_h_[t] >= 0 && h + tap_h_[t] < g_.height && w + tap_w_[t] >= 0 &&
                        w + tap_w_[t] < width);
    };
    std::int64_t done = 0, tap = tap0, c = c0;
    if (inside) {
      while (done < cols) {  // a run per chain of neighbouring taps
        const auto t = static_cast<std::size_t>(tap);
        const std::int64_t len = std::min(chain_[t] * ch - c, cols - done);
        run(r, done, base + tap_at_[t] + c, len);
        done += len;
        tap += chain_[t];
        c = 0;
      }
    }
    while (done < cols) {
      // One run from (tap, c) over the following taps that are its neighbours in the image and,
      // like it, all inside the image or all outside (zeros).
      auto t = static_cast<std::size_t>(tap);
      const bool ok = in_image(t);
      std::int64_t span = ch - c;
      while (done + span < cols && next_adjacent_[t] != 0 && in_image(t + 1) == ok) {
        ++t;
        span += ch;
      }
      const std::int64_t len = std::min(span, cols - done);
      run(r, done, ok ? base + tap_at_[static_cast<std::size_t>(tap)] + c : nullptr, len);
      done += len;
      tap = static_cast<std::int64_t>(t) + 1;  // a run cut short by cols is the row's last
      c = 0;
    }
    if (++j == g_.grid_w) {
      j = 0;
      if (++i == g_.grid_h) i = 0, ++n;
    }
  }
}

namespace {

// Bytes [0, n) of s to d (n >= 4; s stays put for kZero) as fixed-size moves the compiler inlines:
// 32-byte pieces with the last one overlapping the one before, or two overlapping pieces of 16, 8
// or 4 bytes for short runs. A call to memmove costs more than the copy itself for the usual runs
// (a pixel's channels; a filter row of a one-channel image, 5 values), and a plain copy loop is
// what the compiler turns into that call.
template <bool kZero>
inline void move_run(unsigned char* d, const unsigned char* s, std::size_t n) {
  auto piece = [&](std::size_t at, auto size) {
    std::memcpy(d + at, kZero ? s : s + at, decltype(size)::value);
  };
  using S32 = std::integral_constant<std::size_t, 32>;
  using S16 = std::integral_constant<std::size_t, 16>;
  using S8 = std::integral_constant<std::size_t, 8>;
  using S4 = std::integral_constant<std::size_t, 4>;
  if (n >= 32) {
    for (std::size_t at = 0; at + 32 < n; at += 32) piece(at, S32{});
    piece(n - 32, S32{});
  } else if (n >= 16) {
    piece(0, S16{});
    piece(n - 16, S16{});
  } else if (n >= 8) {
    piece(0, S8{});
    piece(n - 8, S8{});
  } else {
    piece(0, S4{});
    piece(n - 4, S4{});
  }
}

template <typename T>
inline void copy_run(T* out, const T* src, std::int64_t len) {
  move_run<false>(reinterpret_cast<unsigned char*>(out),
                  reinterpret_cast<const unsigned char*>(src),
                  sizeof(T) * static_cast<std::size_t>(len));
}

template <typename T>
inline void zero_run(T* out, std::int64_t len) {
  static constexpr unsigned char kZeros[32] = {};
  move_run<true>(reinterpret_cast<unsigned char*>(out), kZeros,
                 sizeof(T) * static_cast<std::size_t>(len));
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
               zero_run(out, len);
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
