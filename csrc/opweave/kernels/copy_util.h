// Moving elements for the array kernels (concat, split, gather, slice, pad, tile, ...): these ops
// never look at values, so they copy bytes -- memcpy for every plain dtype, one code path per
// element size at most -- and assign std::string objects for string tensors. Large copies run on
// the intra-op pool in contiguous pieces; a copy gives the same bytes whoever runs a piece, so the
// results never depend on the number of threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "opweave/kernels/kernel_util.h"
#include "opweave/parallel_for.h"
#include "opweave/tensor.h"
#include "opweave/thread_pool.h"

namespace opweave::kernel_detail {

// Below this many bytes a data-movement kernel runs on the caller alone: waking a worker costs a
// few microseconds, about what one thread needs to copy this much.
inline constexpr std::int64_t kCopyParallelBytes = 256 * 1024;
// The unit of work of a parallel copy: whole rows, or pieces of a long row of about this many
// bytes (so a one-row problem, such as a 1-D pad, still splits over threads).
inline constexpr std::int64_t kCopyPieceBytes = 64 * 1024;
// The CPU cycles one byte of a large copy costs (for parallel_for's inline/split decision).
inline constexpr double kCopyCyclesPerByte = 0.25;

// n elements of `dtype` from src to dst (not overlapping).
inline void copy_elements(DType dtype, void* dst, const void* src, std::int64_t n) {
  if (n <= 0) return;
  if (dtype == DType::kString) {
    std::copy_n(static_cast<const std::string*>(src), n, static_cast<std::string*>(dst));
    return;
  }
  std::memcpy(dst, src, static_cast<std::size_t>(n) * dtype_size(dtype));
}

// n copies of the element at `value`, written at dst.
inline void fill_elements(DType dtype, void* dst, const void* value, std::int64_t n) {
  if (n <= 0) return;
  if (dtype == DType::kString) {
    std::fill_n(static_cast<std::string*>(dst), n, *static_cast<const std::string*>(value));
    return;
  }
  dispatch_by_size(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, value, sizeof(T));  // the bits, whatever the dtype
    std::fill_n(static_cast<T*>(dst), n, v);
  });
}

// The low half of a wider word is its first element in memory (the pair trick of strided_copy).
inline constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// Element pointer arithmetic on untyped buffers.
inline char* element_ptr(void* base, std::int64_t index, std::size_t item) {
  return static_cast<char*>(base) + index * static_cast<std::int64_t>(item);
}
inline const char* element_ptr(const void* base, std::int64_t index, std::size_t item) {
  return static_cast<const char*>(base) + index * static_cast<std::int64_t>(item);
}

// Runs fn(row_begin, row_end) over [0, rows): on the caller when rows * row_bytes is small, else
// split over the pool in chunks of at least kCopyPieceBytes. For many short rows, where the
// kernel's own loop over a chunk of rows is cheaper than one call per row.
template <typename Fn>
void for_rows(ThreadPool* pool, std::int64_t rows, std::int64_t row_bytes, const Fn& fn) {
  if (rows <= 0) return;
  const std::int64_t bytes = std::max<std::int64_t>(row_bytes, 1);
  if (rows * bytes < kCopyParallelBytes || pool_threads(pool) == 1) {
    fn(std::int64_t{0}, rows);
    return;
  }
  const std::int64_t grain = std::max<std::int64_t>(1, kCopyPieceBytes / bytes);
  parallel_for(pool, 0, rows, grain, fn, kCopyCyclesPerByte * static_cast<double>(bytes));
}

// Runs fn(row, begin, end) for pieces [begin, end) of rows of row_len elements covering
// rows x [0, row_len) exactly once: whole rows when they are short, pieces of about
// kCopyPieceBytes of a long row otherwise; in parallel when the total is large.
template <typename Fn>
void for_row_pieces(ThreadPool* pool, std::int64_t rows, std::int64_t row_len, std::size_t item,
                    const Fn& fn) {
  if (rows <= 0 || row_len <= 0) return;
  const auto item_bytes = static_cast<std::int64_t>(item);
  const std::int64_t piece = std::max<std::int64_t>(1, kCopyPieceBytes / item_bytes);
  const std::int64_t per_row = (row_len + piece - 1) / piece;
  const std::int64_t units = rows * per_row;
  const std::int64_t unit_bytes = std::min(row_len, piece) * item_bytes;
  auto body = [&](std::int64_t u0, std::int64_t u1) {
    for (std::int64_t u = u0; u < u1; ++u) {
      const std::int64_t row = u / per_row;
      const std::int64_t begin = (u % per_row) * piece;
      fn(row, begin, std::min(row_len, begin + piece));
    }
  };
  if (units * unit_bytes < kCopyParallelBytes || pool_threads(pool) == 1) {
    body(0, units);
    return;
  }
  const std::int64_t grain = std::max<std::int64_t>(1, kCopyPieceBytes / unit_bytes);
  parallel_for(pool, 0, units, grain, body, kCopyCyclesPerByte * static_cast<double>(unit_bytes));
}

// Copies the elements of a strided source into a strided destination of the same `shape`
// (element strides, negative or zero allowed for the source; the destination's elements must be
// distinct): memcpy for runs contiguous in both, an element loop (one instantiation per element
// size) for the others.
inline void strided_copy(ThreadPool* pool, DType dtype, void* dst, const Shape& dst_strides,
                         const void* src, const Shape& src_strides, const Shape& shape) {
  const StridedLoop<2> loop(shape, {dst_strides, src_strides});
  if (loop.numel == 0) return;
  const std::size_t item = dtype_size(dtype);
  auto body = [&](std::int64_t begin, std::int64_t end) {
    loop.run(begin, end,
             [&](std::int64_t, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
               char* to = element_ptr(dst, off[0], item);
               const char* from = element_ptr(src, off[1], item);
               if (st[0] == 1 && st[1] == 1) {
                 copy_elements(dtype, to, from, n);
               } else if (dtype == DType::kString) {
                 const auto* s = reinterpret_cast<const std::string*>(from);
                 auto* d = reinterpret_cast<std::string*>(to);
                 for (std::int64_t i = 0; i < n; ++i) d[i * st[0]] = s[i * st[1]];
               } else {
                 dispatch_by_size(dtype, [&](auto tag) {
                   using T = typename decltype(tag)::type;
                   const T* s = reinterpret_cast<const T*>(from);
                   T* d = reinterpret_cast<T*>(to);
                   const std::int64_t ds = st[0];
                   const std::int64_t ss = st[1];
                   if (kLittleEndian && ds == 1 && ss == 2 && sizeof(T) <= 4 && n > 1) {
                     // Every other element: read pairs as one wider word and keep its low half
                     // (little-endian), which the compiler vectorises; the last element alone,
                     // since its pair may lie past the end of the source.
                     using Pair = std::conditional_t<
                         sizeof(T) == 1, std::uint16_t,
                         std::conditional_t<sizeof(T) == 2, std::uint32_t, std::uint64_t>>;
                     for (std::int64_t i = 0; i < n - 1; ++i) {
                       Pair w;
                       std::memcpy(&w, s + 2 * i, sizeof(Pair));
                       d[i] = static_cast<T>(w);
                     }
                     d[n - 1] = s[2 * (n - 1)];
                   } else if (ds == 1) {
                     for (std::int64_t i = 0; i < n; ++i) d[i] = s[i * ss];
                   } else {
                     for (std::int64_t i = 0; i < n; ++i) d[i * ds] = s[i * ss];
                   }
                 });
               }
             });
  };
  const auto bytes = loop.numel * static_cast<std::int64_t>(item);
  if (bytes < kCopyParallelBytes || pool_threads(pool) == 1) {
    body(0, loop.numel);
    return;
  }
  const std::int64_t grain =
      std::max<std::int64_t>(1, kCopyPieceBytes / static_cast<std::int64_t>(item));
  parallel_for(pool, 0, loop.numel, grain, body,
               kCopyCyclesPerByte * static_cast<double>(item) * 2.0);
}

// A view of `t`'s buffer: `shape` with element `strides`, starting `offset` elements into it.
// Shares the buffer (and its owner), as TensorFlow's slices of dimension 0 do.
inline Tensor view_of(const Tensor& t, std::int64_t offset, const Shape& shape,
                      const Shape& strides) {
  return Tensor::wrap(t.dtype(), shape, strides,
                      element_ptr(t.raw_data(), offset, dtype_size(t.dtype())), t.owner());
}

// The strided view materialised: the view itself when it is already contiguous (no copy), else a
// new contiguous tensor.
inline Tensor materialize(const Tensor& view, ThreadPool* pool) {
  if (view.is_contiguous()) return view;
  Tensor out = Tensor::empty(view.dtype(), view.shape());
  strided_copy(pool, view.dtype(), out.raw_data(), out.strides(), view.raw_data(), view.strides(),
               view.shape());
  return out;
}

}  // namespace opweave::kernel_detail
