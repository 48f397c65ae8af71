// Direct convolutions: the products of conv_ops.cpp computed by the runs micro-kernel
// (gemm_runs.h) straight from the NHWC image, without an image-patch matrix.
//
// - conv_direct: C = patches x B, the forward convolution (and the input gradient, which is a
//   forward convolution of the output gradient). A tile of C is MR output pixels x NR output
//   channels; its sum runs over the taps of the filter, each a run of `channels` steps read from
//   the pixels' own places in the image. Taps that fall in the padding for every pixel of the
//   tile are skipped (a 5x5 SAME convolution of a 14x14 image has 16% of its products in the
//   padding); the others read a zero-padded copy of the image where they reach past its edge.
// - conv_direct_transposed: C = patches^T x dy, the filter gradient. A tile of C is a block of
//   (tap, channel) rows x NR output channels; its sum runs over the output rows of the image,
//   each a run of pixels, only over the pixels where the tap lies inside the image.
//
// Neither copies the image into packing buffers (only B: the filter, a few hundred KiB at most).
// Threads split tiles of C, never a sum, and every sum runs in an order fixed by the sizes, so the
// results are the same bits for any pool. Both return false, having written nothing, where they do
// not apply (this CPU's micro-kernel has no runs kernel): the caller then takes gemm_sourced.
#pragma once

#include <cstdint>

#include "opweave/kernels/conv_packing.h"
#include "opweave/kernels/gemm.h"
#include "opweave/thread_pool.h"

namespace opweave::gemm_detail {

// C[g.rows() x n] (row stride ldc) = patches(image, g) x B, B[g.cols() x n] row-major (row stride
// n), then `ep` on each element.
template <typename T>
bool conv_direct(const PatchGeometry& g, const T* image, const T* b, std::int64_t n, T* c,
                 std::int64_t ldc, ThreadPool* pool, const Epilogue<T>& ep = {});

// C[g.cols() x n] (row stride ldc) = patches(image, g)^T x dy, dy[g.rows() x n] row-major.
template <typename T>
bool conv_direct_transposed(const PatchGeometry& g, const T* image, const T* dy, std::int64_t n,
                            T* c, std::int64_t ldc, ThreadPool* pool);

}  // namespace opweave::gemm_detail
