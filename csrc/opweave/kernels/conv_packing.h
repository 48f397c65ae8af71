// The image-patch matrix of a 2-D convolution as a BlockSource (gemm.h): gemm_sourced() asks it
// for one block at a time and it copies that block straight from the NHWC image into the GEMM's
// packing buffer, so a convolution never builds a whole im2col matrix.
//
// Row r is a position (n, i, j) of a grid [batch, grid_h, grid_w] (row-major); column q is
// (tap_h, tap_w, c) over taps_h x taps_w x channels (row-major); the element is
//
//   image[n, i * stride_h + off_h[tap_h], j * stride_w + off_w[tap_w], c]
//
// or 0 where that position falls outside the image (padding). A forward convolution's patches
// are the grid of output positions with off_h[kh] = kh * dilation_h - pad_top; the gradient of
// its input is a sum of such products over the output gradient (conv_ops.cpp). Along a row the
// columns are runs of `channels` contiguous values, so blocks are copied run by run.
#pragma once

#include <cstdint>
#include <vector>

#include "opweave/kernels/gemm.h"

namespace opweave::gemm_detail {

struct PatchGeometry {
  std::int64_t batch = 0, height = 0, width = 0, channels = 0;  // the NHWC image
  std::int64_t grid_h = 0, grid_w = 0;                          // positions per image
  std::int64_t stride_h = 1, stride_w = 1;
  std::vector<std::int64_t> off_h, off_w;  // one offset per tap

  std::int64_t rows() const { return batch * grid_h * grid_w; }
  std::int64_t cols() const {
    return static_cast<std::int64_t>(off_h.size() * off_w.size()) * channels;
  }
};

template <typename T>
class PatchSource final : public BlockSource<T> {
 public:
  // image: contiguous NHWC data of g's image shape; both must outlive the source.
  PatchSource(const T* image, const PatchGeometry& g);
  void copy(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols, T* dst,
            std::int64_t ld) const override;
  void copy_transposed(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                       T* dst, std::int64_t ld) const override;
  bool rows_are_contiguous() const override { return true; }

 private:
  // Calls run(dst_offset, src or nullptr for zeros, length) for the runs of columns
  // [j0, j0 + cols) of each row i0, i0 + 1, ... (row r's runs get r - i0 first).
  template <typename Run>
  void for_runs(std::int64_t i0, std::int64_t rows, std::int64_t j0, std::int64_t cols,
                const Run& run) const;

  const T* image_;
  const PatchGeometry& g_;
  // Per tap (tap_h * taps_w + tap_w): its offsets, and its element offset in the image.
  std::vector<std::int64_t> tap_h_, tap_w_, tap_at_;
  // Per tap: whether the next tap's pixel follows its pixel in the image, and how many taps from
  // it on do so in a chain (itself included).
  std::vector<unsigned char> next_adjacent_;
  std::vector<std::int64_t> chain_;
  std::int64_t min_h_ = 0, max_h_ = 0, min_w_ = 0, max_w_ = 0;  // extreme offsets
};

extern template class PatchSource<float>;
extern template class PatchSource<double>;

}  // namespace opweave::gemm_detail
