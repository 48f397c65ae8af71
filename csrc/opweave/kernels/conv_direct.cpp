#include "opweave/kernels/conv_direct.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "opweave/buffer_cache.h"
#include "opweave/errors.h"
#include "opweave/kernels/gemm_microkernel.h"
#include "opweave/parallel_for.h"

namespace opweave::gemm_detail {
namespace {

template <typename T>
const MicroKernel<T>& kernel();
template <>
const MicroKernel<float>& kernel<float>() {
  return best_kernel_f32();
}
template <>
const MicroKernel<double>& kernel<double>() {
  return best_kernel_f64();
}

// A forward run is one row of a pixel's window (or one tap's channels, when dilation spaces the
// taps of a row): with fewer steps than this the kernel's per-run set-up (a B pointer, an offset)
// costs more than the steps, and the patch GEMM (whose K loop runs over all taps at once) is
// faster: a 3x3 filter over one channel.
constexpr std::int64_t kMinRunSteps = 4;
// A forward tile sums over its taps in K blocks of at most this many steps (whole runs), each
// ending in a load-add-store of the tile; the kBlockTiles tiles of a block read one block's B
// from L2 in turn. 128 steps kept B in L1 but cost deep MNIST's 5x5x32 layer (five runs of 160
// steps) five passes over its tiles: 1024 (one pass) ran its forward 1.5% faster, the step at
// batch 256 1.6% (paired runs), and a 3x3x64 layer no slower.
constexpr std::int64_t kGroupSteps = 1024;
constexpr int kBlockTiles = 4;
// Pixels per K block of a filter gradient: each tile sums this many steps in registers, then adds
// them to C (as the GEMM's K blocks do), which keeps the rounding of a long sum in check, and the
// block's image and gradient rows stay in cache while every tile of a tap reads them.
constexpr std::int64_t kGroupPixels = 256;
// A filter gradient with few (tap, channel) rows and output channels (a first layer's) has too few
// tiles to share between threads: it is summed over this many fixed slices of the image rows
// instead (at least kSlicePixels pixels each), the slices added in order. Sizes decide, never the
// thread count.
constexpr std::int64_t kSlicedMaxRows = 128;
constexpr std::int64_t kSlicedMaxCols = 256;
constexpr std::int64_t kSlicePixels = 2048;
constexpr std::int64_t kMaxSlices = 64;

// Scratch memory from the buffer cache (a convolution's are freed on every call, see gemm.cpp).
template <typename T>
class Scratch {
 public:
  explicit Scratch(std::int64_t count)
      : bytes_(sizeof(T) * static_cast<std::size_t>(std::max<std::int64_t>(count, 1))),
        data_(static_cast<T*>(allocate_buffer(bytes_))) {
    if (data_ == nullptr) {
      throw OpError(
          ErrorCode::kResourceExhausted,
          "convolution: cannot allocate " + std::to_string(bytes_) + " bytes of scratch memory");
    }
  }
  ~Scratch() { release_buffer(data_, bytes_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* get() const noexcept { return data_; }

 private:
  std::size_t bytes_;
  T* data_;
};

// How far the taps reach past the image along one axis: positions i * stride + off for i < grid.
struct Reach {
  std::int64_t before = 0, after = 0;
};
Reach reach(std::int64_t size, std::int64_t grid, std::int64_t stride,
            const std::vector<std::int64_t>& offs) {
  if (grid <= 0 || offs.empty()) return {};
  const auto [lo, hi] = std::minmax_element(offs.begin(), offs.end());
  return {std::max<std::int64_t>(0, -*lo),
          std::max<std::int64_t>(0, (grid - 1) * stride + *hi - (size - 1))};
}

// The image with zero borders wide enough for every tap of every grid position, or the image
// itself when no tap reaches past it. Element (n, h, w, c) of the image is at
// data[((n * height + h + top) * width + w + left) * channels + c].
template <typename T>
struct PaddedImage {
  PaddedImage(const T* image, const PatchGeometry& g, ThreadPool* pool) {
    const Reach rh = reach(g.height, g.grid_h, g.stride_h, g.off_h);
    const Reach rw = reach(g.width, g.grid_w, g.stride_w, g.off_w);
    top = rh.before, left = rw.before;
    height = g.height + rh.before + rh.after, width = g.width + rw.before + rw.after;
    if (height == g.height && width == g.width) {
      data = image;
      return;
    }
    const std::int64_t ch = g.channels, row = width * ch;
    storage = std::make_unique<Scratch<T>>(g.batch * height * row);
    T* dst = storage->get();
    parallel_for(
        pool, 0, g.batch * height, 1,
        [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r) {
            const std::int64_t n = r / height, h = r % height - top;
            T* out = dst + r * row;
            if (h < 0 || h >= g.height) {
              std::fill(out, out + row, T(0));
              continue;
            }
            std::fill(out, out + left * ch, T(0));
            std::memcpy(out + left * ch, image + (n * g.height + h) * g.width * ch,
                        sizeof(T) * static_cast<std::size_t>(g.width * ch));
            std::fill(out + (left + g.width) * ch, out + row, T(0));
          }
        },
        static_cast<double>(row));
    data = dst;
  }
  const T* data = nullptr;
  std::int64_t top = 0, left = 0, height = 0, width = 0;
  std::unique_ptr<Scratch<T>> storage;
};

// Balanced blocks of at most `most`: block q of blocks(size, most) covers
// [q * size / count, (q + 1) * size / count) (12 + 12 + 8 channels become 11 + 11 + 10).
std::int64_t block_count(std::int64_t size, std::int64_t most) { return (size + most - 1) / most; }
std::int64_t block_begin(std::int64_t q, std::int64_t size, std::int64_t count) {
  return q * size / count;
}

}  // namespace

// -- forward: C = patches x B --------------------------------------------------------------------

namespace {

// The taps of one axis that land inside the image for grid position i: [lo, hi) (the offsets
// grow with the tap index), empty when none does.
struct TapRange {
  std::int64_t lo = 0, hi = 0;
  bool operator==(const TapRange& o) const noexcept { return lo == o.lo && hi == o.hi; }
};

// Grid positions of one axis grouped by their tap range, in order of first appearance: a 5-tap
// SAME window over 14 positions has 5 groups (positions 0, 1, 2-11, 12, 13).
struct AxisClasses {
  std::vector<TapRange> range;                     // per class
  std::vector<std::vector<std::int64_t>> members;  // per class, its positions in order
};

AxisClasses axis_classes(std::int64_t size, std::int64_t grid, std::int64_t stride,
                         const std::vector<std::int64_t>& offs) {
  AxisClasses out;
  for (std::int64_t i = 0; i < grid; ++i) {
    TapRange r{static_cast<std::int64_t>(offs.size()), 0};
    for (std::size_t t = 0; t < offs.size(); ++t) {
      const std::int64_t y = i * stride + offs[t];
      if (y < 0 || y >= size) continue;
      r.lo = std::min(r.lo, static_cast<std::int64_t>(t));
      r.hi = static_cast<std::int64_t>(t) + 1;
    }
    if (r.hi <= r.lo) r = {0, 0};
    std::size_t cls = 0;
    while (cls < out.range.size() && !(out.range[cls] == r)) ++cls;
    if (cls == out.range.size()) {
      out.range.push_back(r);
      out.members.emplace_back();
    }
    out.members[cls].push_back(i);
  }
  return out;
}

}  // namespace

// Pixels are grouped by the box of taps that land inside the image for them (the class of their
// grid row times that of their grid column), and a tile takes MR pixels of one class from all
// images: its sum runs over exactly those taps, so no product with the padding is computed. The
// tile's pixels need not be neighbours: each has its own pointer into the image and into C.
template <typename T>
bool conv_direct(const PatchGeometry& g, const T* image, const T* b, std::int64_t n, T* c,
                 std::int64_t ldc, ThreadPool* pool, const Epilogue<T>& ep) {
  const MicroKernel<T>& uk = kernel<T>();
  const std::int64_t ch = g.channels, m = g.rows(), k = g.cols();
  if (uk.fn_runs == nullptr || m <= 0 || n <= 0 || k <= 0) return false;
  const std::int64_t taps_w = static_cast<std::int64_t>(g.off_w.size());
  const std::int64_t taps = static_cast<std::int64_t>(g.off_h.size()) * taps_w;
  // Taps of a filter row whose pixels are neighbours (no dilation along w) are one run: their
  // channels follow each other in the image, and their rows of B in the packed panel.
  bool adjacent = true;
  for (std::int64_t tw = 1; tw < taps_w; ++tw) {
    adjacent = adjacent && g.off_w[static_cast<std::size_t>(tw)] ==
                               g.off_w[static_cast<std::size_t>(tw - 1)] + 1;
  }
  if ((adjacent ? taps_w : 1) * ch < kMinRunSteps) return false;
  // The wide kernel where the output channels fill its panels: it reads each pixel's channels
  // once for twice the columns (deep MNIST's 5x5x32x64 layer: 105 -> 112 GFLOP/s in a loop of
  // its interior tiles alone). Its chains are the narrow kernel's: the same bits.
  const bool wide = uk.fn_runs_wide != nullptr && n % uk.runs_wide_nr == 0;
  const int mr = wide ? uk.runs_wide_mr : uk.mr, nr = wide ? uk.runs_wide_nr : uk.nr;
  const MicroKernelRunsFn<T> run_tile = wide ? uk.fn_runs_wide : uk.fn_runs;
  const std::int64_t panels = (n + nr - 1) / nr;
  // B in NR-column panels, zero-padded: tap t of panel q is ch x NR values from
  // bpack + (q * taps + t) * ch * NR.
  Scratch<T> bpack_mem(panels * k * nr);
  T* bpack = bpack_mem.get();
  parallel_for(
      pool, 0, panels * taps, 1,
      [&](std::int64_t e0, std::int64_t e1) {
        for (std::int64_t e = e0; e < e1; ++e) {
          const std::int64_t q = e / taps, t = e % taps;
          const std::int64_t cols = std::min<std::int64_t>(nr, n - q * nr);
          T* dst = bpack + e * ch * nr;
          for (std::int64_t p = 0; p < ch; ++p) {
            const T* src = b + (t * ch + p) * n + q * nr;
            std::copy(src, src + cols, dst + p * nr);
            std::fill(dst + p * nr + cols, dst + (p + 1) * nr, T(0));
          }
        }
      },
      static_cast<double>(ch * nr));
  const AxisClasses rows_cls = axis_classes(g.height, g.grid_h, g.stride_h, g.off_h);
  const AxisClasses cols_cls = axis_classes(g.width, g.grid_w, g.stride_w, g.off_w);
  // Per pixel class (row class x column class): its runs (each a row of its box of taps, or one
  // tap) -- the first tap of each and its offset in the image from the class's first tap's (every
  // tap of the class lies inside the image for every pixel of it, so no padding is ever read) --
  // the steps of a run, its pixel count, and the tiles it makes (the first tile of class cl is
  // tile first_tile[cl]).
  struct PixelClass {
    std::vector<std::int64_t> a_off, tap;
    std::int64_t len = 0;
    std::int64_t first_h = 0, first_w = 0;  // the first tap's offsets
    std::int64_t rows = 0, cols = 0, count = 0, first_tile = 0;
    const std::vector<std::int64_t>* row_members = nullptr;
    const std::vector<std::int64_t>* col_members = nullptr;
    // Per column member: its offset in the image (none for a class without taps) and in C.
    std::vector<std::int64_t> in_col, out_col;
  };
  std::vector<PixelClass> classes;
  std::int64_t tiles = 0;
  for (std::size_t a = 0; a < rows_cls.range.size(); ++a) {
    for (std::size_t bc = 0; bc < cols_cls.range.size(); ++bc) {
      PixelClass cl;
      const TapRange rh = rows_cls.range[a], rw = cols_cls.range[bc];
      if (rh.hi > rh.lo && rw.hi > rw.lo) {
        cl.first_h = g.off_h[static_cast<std::size_t>(rh.lo)];
        cl.first_w = g.off_w[static_cast<std::size_t>(rw.lo)];
      }
      const std::int64_t per_run = adjacent ? rw.hi - rw.lo : 1;
      cl.len = per_run * ch;
      for (std::int64_t th = rh.lo; th < rh.hi; ++th) {
        for (std::int64_t tw = rw.lo; tw < rw.hi; tw += per_run) {
          cl.tap.push_back(th * taps_w + tw);
          cl.a_off.push_back(((g.off_h[static_cast<std::size_t>(th)] - cl.first_h) * g.width +
                              g.off_w[static_cast<std::size_t>(tw)] - cl.first_w) *
                             ch);
        }
      }
      cl.row_members = &rows_cls.members[a];
      cl.col_members = &cols_cls.members[bc];
      for (const std::int64_t gj : *cl.col_members) {
        cl.in_col.push_back(cl.tap.empty() ? 0 : gj * g.stride_w * ch);
        cl.out_col.push_back(gj * ldc);
      }
      cl.rows = static_cast<std::int64_t>(cl.row_members->size());
      cl.cols = static_cast<std::int64_t>(cl.col_members->size());
      cl.count = g.batch * cl.rows * cl.cols;
      cl.first_tile = tiles;
      tiles += (cl.count + mr - 1) / mr;
      classes.push_back(std::move(cl));
    }
  }
  // K blocks: groups of runs whose B (steps x NR) stays in L1 while the tiles of a block read it,
  // as the GEMM's KC x NR micro-panel does; each tile adds its groups' sums to C in order.
  // Blocks: runs of tiles of one class, which share their taps.
  std::vector<std::int64_t> block_first;  // tile index starting each block
  for (std::size_t cl = 0; cl < classes.size(); ++cl) {
    const std::int64_t end_tile = cl + 1 < classes.size() ? classes[cl + 1].first_tile : tiles;
    for (std::int64_t t = classes[cl].first_tile; t < end_tile; t += kBlockTiles) {
      block_first.push_back(t);
    }
  }
  block_first.push_back(tiles);
  const std::int64_t blocks = static_cast<std::int64_t>(block_first.size()) - 1;
  const bool has_ep = !ep.empty();
  // Bias and ReLU (a conv layer's usual epilogue) run in the kernel's registers on the last group
  // of runs; other activations on each pixel's row of C after it.
  const bool ep_in_kernel =
      ep.activation == Activation::kNone || ep.activation == Activation::kRelu;
  parallel_for(
      pool, 0, blocks, 1,
      [&](std::int64_t k0, std::int64_t k1) {
        const T* rows[kBlockTiles][16];  // >= MR of every kernel
        T* c_rows[kBlockTiles][16];
        int counts[kBlockTiles];
        std::vector<const T*> b_run;
        alignas(64) T tile[kBlockTiles][16 * 64];  // >= MR x NR of every kernel
        std::size_t cls = 0;
        for (std::int64_t blk = k0; blk < k1; ++blk) {
          const std::int64_t first = block_first[static_cast<std::size_t>(blk)];
          const int ntiles =
              static_cast<int>(block_first[static_cast<std::size_t>(blk) + 1] - first);
          while (cls + 1 < classes.size() && classes[cls + 1].first_tile <= first) ++cls;
          const PixelClass& cl = classes[cls];
          // The block's pixels: the p-th of the class is image p / (rows * cols), then its row
          // and column members in order. One division for the block's first pixel, then a walk
          // (for a one-channel first layer a tile is ~600 FMAs, and two divisions per pixel cost
          // a tenth of it).
          const std::int64_t p_first = (first - cl.first_tile) * mr;
          const std::int64_t per_image = cl.rows * cl.cols;
          std::int64_t img_n = p_first / per_image, rem = p_first % per_image;
          std::int64_t ri = rem / cl.cols, ci = rem % cl.cols;
          // The pixel's input at the class's first tap (inside the image; a class without taps
          // reads nothing) and its output row: a base per output row, recomputed when the walk
          // leaves it, plus the column's offsets.
          const T* in_row = nullptr;
          T* out_row = nullptr;
          auto start_row = [&] {
            const std::int64_t gi = (*cl.row_members)[static_cast<std::size_t>(ri)];
            in_row = cl.tap.empty()
                         ? image
                         : image + ((img_n * g.height + gi * g.stride_h + cl.first_h) * g.width +
                                    cl.first_w) *
                                       ch;
            out_row = c + (img_n * g.grid_h + gi) * g.grid_w * ldc;
          };
          start_row();
          for (int tt = 0; tt < ntiles; ++tt) {
            const std::int64_t p0 = p_first + tt * mr;
            counts[tt] = static_cast<int>(std::min<std::int64_t>(mr, cl.count - p0));
            for (int i = 0; i < counts[tt]; ++i) {
              rows[tt][i] = in_row + cl.in_col[static_cast<std::size_t>(ci)];
              c_rows[tt][i] = out_row + cl.out_col[static_cast<std::size_t>(ci)];
              if (++ci == cl.cols) {
                ci = 0;
                if (++ri == cl.rows) ri = 0, ++img_n;
                if (p0 + i + 1 < cl.count) start_row();
              }
            }
          }
          const std::int64_t nruns = static_cast<std::int64_t>(cl.tap.size());
          // (A class without taps has runs of no steps: one empty group writes its zeros.)
          const std::int64_t group =
              cl.len > 0 ? std::max<std::int64_t>(1, kGroupSteps / cl.len) : 1;
          b_run.resize(cl.tap.size());
          RunsArgs<T> x;  // the fields every call of the block shares, set once
          x.len = cl.len;
          x.lda = 1;
          x.ldb = nr;
          for (std::int64_t q = 0; q < panels; ++q) {
            for (std::size_t u = 0; u < cl.tap.size(); ++u) {
              b_run[u] = bpack + (q * taps + cl.tap[u]) * ch * nr;
            }
            const std::int64_t cols = std::min<std::int64_t>(nr, n - q * nr);
            // Straight into C when the panel is whole (the epilogue in the kernel's registers,
            // or on each pixel's row while it is still in L1); a partial panel goes through the
            // tile, since the kernel writes NR columns.
            const bool direct = cols == nr;
            // A class without taps (every tap in the padding) still writes its zeros.
            for (std::int64_t u0 = 0; u0 < std::max<std::int64_t>(nruns, 1); u0 += group) {
              x.a_off = cl.a_off.data() + u0;
              x.b_run = b_run.data() + u0;
              x.nruns = std::min(group, nruns - u0);
              x.accumulate = u0 > 0;
              // The epilogue goes with the tile's last group of runs, straight into C.
              const bool ep_now = direct && ep_in_kernel && u0 + group >= nruns;
              x.bias = ep_now && ep.bias != nullptr ? ep.bias + q * nr : nullptr;
              x.relu = ep_now && ep.activation == Activation::kRelu;
              for (int tt = 0; tt < ntiles; ++tt) {
                x.rows = counts[tt];
                x.a_rows = rows[tt];
                if (direct) {
                  x.c_rows = c_rows[tt];
                  x.c_col = q * nr;
                } else {
                  x.c_rows = nullptr;
                  x.c = tile[tt];
                  x.ldc = nr;
                }
                run_tile(x);
              }
            }
            if (direct) {
              if (!has_ep || ep_in_kernel) continue;
              for (int tt = 0; tt < ntiles; ++tt) {
                for (int i = 0; i < counts[tt]; ++i) {
                  apply_epilogue(ep, 1, nr, q * nr, c_rows[tt][i] + q * nr, nr);
                }
              }
              continue;
            }
            for (int tt = 0; tt < ntiles; ++tt) {
              // The tile is final and still in L1: the epilogue now.
              if (has_ep) apply_epilogue(ep, counts[tt], cols, q * nr, tile[tt], nr);
              for (int i = 0; i < counts[tt]; ++i) {
                std::copy(tile[tt] + i * nr, tile[tt] + i * nr + cols, c_rows[tt][i] + q * nr);
              }
            }
          }
        }
      },
      static_cast<double>(kBlockTiles * mr) * static_cast<double>(k) *
          static_cast<double>(panels * nr) / 16.0);
  return true;
}

// -- the filter gradient: C = patches^T x dy
// --------------------------------------------------------

template <typename T>
bool conv_direct_transposed(const PatchGeometry& g, const T* image, const T* dy, std::int64_t n,
                            T* c, std::int64_t ldc, ThreadPool* pool) {
  const MicroKernel<T>& uk = kernel<T>();
  const std::int64_t ch = g.channels, m = g.rows(), k = g.cols();
  if (uk.fn_runs == nullptr || m <= 0 || n <= 0 || k <= 0) return false;
  const int mr = uk.mr, nr = uk.nr;
  const std::int64_t taps_w = static_cast<std::int64_t>(g.off_w.size());
  const std::int64_t taps = static_cast<std::int64_t>(g.off_h.size()) * taps_w;
  const std::int64_t panels = (n + nr - 1) / nr, width = panels * nr;
  // The kernel reads NR values of dy per step: dy with rows padded to whole panels if need be.
  const T* b = dy;
  std::unique_ptr<Scratch<T>> padded_dy;
  if (width != n) {
    padded_dy = std::make_unique<Scratch<T>>(m * width);
    T* dst = padded_dy->get();
    parallel_for(
        pool, 0, m, 64,
        [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r) {
            std::copy(dy + r * n, dy + (r + 1) * n, dst + r * width);
            std::fill(dst + r * width + n, dst + (r + 1) * width, T(0));
          }
        },
        static_cast<double>(width));
    b = dst;
  }
  // Rows of C: with enough channels, a tile is a block of one tap's channels, read as a
  // contiguous run of each pixel (the sum skips the pixels where the tap is off the image);
  // with few (a first layer's), a block of (tap, channel) rows, each its own pointer into a
  // zero-padded copy of the image, so that every tap shares the same runs.
  const bool per_tap = ch * 2 >= mr;
  const std::int64_t row_blocks = per_tap ? block_count(ch, mr) : block_count(k, mr);
  const std::int64_t rows_total = per_tap ? ch : k;
  std::unique_ptr<PaddedImage<T>> img;
  if (!per_tap) img = std::make_unique<PaddedImage<T>>(image, g, pool);
  // Items of work: a tap (all its row blocks and panels) or, per_tap = false, every tile at
  // once; times the slices of the image rows each sums over.
  const std::int64_t grid_rows = g.batch * g.grid_h;
  const std::int64_t slices =
      k <= kSlicedMaxRows && n <= kSlicedMaxCols
          ? std::max<std::int64_t>(1, std::min({kMaxSlices, m / kSlicePixels, grid_rows}))
          : 1;
  const std::int64_t chunks = per_tap ? taps : 1;
  std::unique_ptr<Scratch<T>> partial_mem;
  if (slices > 1) partial_mem = std::make_unique<Scratch<T>>((slices - 1) * k * width);
  const std::int64_t group_rows = std::max<std::int64_t>(1, kGroupPixels / g.grid_w);
  // A chunk of items is a run of taps of one slice, taken group of pixels by group (groups
  // outer, taps inner): the group's image and gradient rows are read from memory once for all
  // the chunk's taps instead of once per tap (nine times for a 3x3 filter over an image too
  // large for the caches). Whole runs of taps per thread: a tap's sum is the same whichever
  // thread runs it, so the grain may follow the pool.
  const int threads = pool != nullptr ? pool->num_workers() + 1 : 1;
  // (Rounded down: parallel_for splits a range only into pieces of at least one grain each.)
  const std::int64_t grain = std::max<std::int64_t>(1, chunks / threads);
  parallel_for(
      pool, 0, slices * chunks, grain,
      [&](std::int64_t e0, std::int64_t e1) {
        std::vector<std::int64_t> a_off;
        std::vector<const T*> b_run, b_row;
        std::vector<char> first(static_cast<std::size_t>(chunks));
        const T* rows[16];  // >= MR of every kernel
        alignas(64) T tile[16 * 64];
        for (std::int64_t s = e0 / chunks; s * chunks < e1; ++s) {
          const std::int64_t tap0 = std::max(e0, s * chunks) - s * chunks;
          const std::int64_t tap1 = std::min(e1, (s + 1) * chunks) - s * chunks;
          // The slice's C: C itself for the first, a partial for the others (added below).
          T* out = s == 0 ? c : partial_mem->get() + (s - 1) * k * width;
          const std::int64_t ld = s == 0 ? ldc : width;
          const std::int64_t row0 = block_begin(s, grid_rows, slices);
          const std::int64_t row1 = block_begin(s + 1, grid_rows, slices);
          std::fill(first.begin(), first.end(), 1);
          for (std::int64_t gr0 = row0; gr0 < row1; gr0 += group_rows) {
            const std::int64_t gr1 = std::min(row1, gr0 + group_rows);
            for (std::int64_t tap = tap0; tap < tap1; ++tap) {
              const std::int64_t th = per_tap ? tap / taps_w : 0, tw = per_tap ? tap % taps_w : 0;
              // The tap's valid columns (per_tap): grid positions j whose pixel is inside the
              // image.
              std::int64_t j0 = 0, j1 = g.grid_w;
              if (per_tap) {
                const std::int64_t ow = g.off_w[static_cast<std::size_t>(tw)];
                j0 = ow >= 0 ? 0 : (-ow + g.stride_w - 1) / g.stride_w;
                j1 = ow >= g.width ? 0 : std::min(g.grid_w, (g.width - 1 - ow) / g.stride_w + 1);
              }
              // The runs of this group: one per grid row whose tap row is inside the image.
              a_off.clear();
              b_row.clear();
              if (j1 > j0) {
                for (std::int64_t rr = gr0; rr < gr1; ++rr) {
                  const std::int64_t img_n = rr / g.grid_h, i = rr % g.grid_h;
                  if (per_tap) {
                    const std::int64_t y = i * g.stride_h + g.off_h[static_cast<std::size_t>(th)];
                    if (y < 0 || y >= g.height) continue;
                    a_off.push_back(((img_n * g.height + y) * g.width + j0 * g.stride_w +
                                     g.off_w[static_cast<std::size_t>(tw)]) *
                                    ch);
                  } else {
                    a_off.push_back(
                        ((img_n * img->height + i * g.stride_h + img->top) * img->width +
                         img->left) *
                        ch);
                  }
                  b_row.push_back(b + (rr * g.grid_w + j0) * width);
                }
              }
              char& is_first = first[static_cast<std::size_t>(tap)];
              if (a_off.empty() && is_first == 0) continue;  // nothing to add
              b_run.resize(b_row.size());
              for (std::int64_t blk = 0; blk < row_blocks; ++blk) {
                const std::int64_t i0 = block_begin(blk, rows_total, row_blocks);
                const int count =
                    static_cast<int>(block_begin(blk + 1, rows_total, row_blocks) - i0);
                RunsArgs<T> x;
                x.rows = count;
                if (per_tap) {
                  x.a_base = image + i0;
                } else {
                  // Row kr = (tap, channel) of C: that tap's pixel in the padded image.
                  for (int i = 0; i < count; ++i) {
                    const std::int64_t kr = i0 + i, t = kr / ch;
                    rows[i] = img->data +
                              (g.off_h[static_cast<std::size_t>(t / taps_w)] * img->width +
                               g.off_w[static_cast<std::size_t>(t % taps_w)]) *
                                  ch +
                              kr % ch;
                  }
                  x.a_rows = rows;
                }
                x.a_off = a_off.data();
                x.b_run = b_run.data();
                x.nruns = static_cast<std::int64_t>(a_off.size());
                x.len = j1 - j0;
                x.lda = g.stride_w * ch;
                x.ldb = width;
                x.accumulate = is_first == 0;
                const std::int64_t crow = (per_tap ? tap * ch : 0) + i0;
                for (std::int64_t q = 0; q < panels; ++q) {
                  for (std::size_t u = 0; u < b_row.size(); ++u) b_run[u] = b_row[u] + q * nr;
                  const std::int64_t cols = std::min<std::int64_t>(nr, n - q * nr);
                  T* ct = out + crow * ld + q * nr;
                  // Partial slices are NR wide; C's last panel may be narrower.
                  const bool whole = cols == nr || s > 0;
                  x.c = whole ? ct : tile;
                  x.ldc = whole ? ld : nr;
                  if (!whole && is_first == 0) {
                    for (int i = 0; i < count; ++i) {
                      std::copy(ct + i * ld, ct + i * ld + cols, tile + i * nr);
                    }
                  }
                  uk.fn_runs(x);
                  if (!whole) {
                    for (int i = 0; i < count; ++i) {
                      std::copy(tile + i * nr, tile + i * nr + cols, ct + i * ld);
                    }
                  }
                }
              }
              is_first = 0;
            }
          }
        }
      },
      static_cast<double>(m / slices) * static_cast<double>(per_tap ? ch : k) *
          static_cast<double>(width) / 16.0);
  // The slices' sums, added in order.
  for (std::int64_t s = 1; s < slices; ++s) {
    const T* p = partial_mem->get() + (s - 1) * k * width;
    for (std::int64_t r = 0; r < k; ++r) {
      for (std::int64_t j = 0; j < n; ++j) c[r * ldc + j] += p[r * width + j];
    }
  }
  return true;
}

template bool conv_direct<float>(const PatchGeometry&, const float*, const float*, std::int64_t,
                                 float*, std::int64_t, ThreadPool*, const Epilogue<float>&);
template bool conv_direct<double>(const PatchGeometry&, const double*, const double*, std::int64_t,
                                  double*, std::int64_t, ThreadPool*, const Epilogue<double>&);
template bool conv_direct_transposed<float>(const PatchGeometry&, const float*, const float*,
                                            std::int64_t, float*, std::int64_t, ThreadPool*);
template bool conv_direct_transposed<double>(const PatchGeometry&, const double*, const double*,
                                             std::int64_t, double*, std::int64_t, ThreadPool*);

}  // namespace opweave::gemm_detail
