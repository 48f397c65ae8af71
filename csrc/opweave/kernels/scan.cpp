// Cumulative sums and products (TensorFlow's Cumsum / Cumprod) along one axis.
//
// The input is viewed as contiguous [O, R, I] (R the scanned axis). With I > 1, rows of I values
// are combined one after another (out[r] = out[r - 1] op x[r], vectorised across the row). With
// I == 1 each row is a prefix scan of its own: groups of N values (32 bytes) get their
// in-group prefixes in log2(N) shift-and-add steps, then the running total of the groups before;
// rows longer than kBlock are cut into fixed blocks whose totals are computed first (in parallel)
// and combined in order, so each block can start from its own running total. The order of the
// operations depends only on R, never on the pool: the same bits for any thread count.
//
// exclusive shifts the inclusive scan by one (the first output is the identity); reverse scans
// from the end (suffix groups and blocks, the same structure mirrored).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

constexpr std::int64_t kBlock = 64 * 1024;

// Integer lanes wrap: they compute on the unsigned type.
template <typename T, bool = std::is_integral_v<T>>
struct LaneOf {
  using type = T;
};
template <typename T>
struct LaneOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Lane = typename LaneOf<T>::type;

// A group of N lanes (8 for 4-byte values, 4 for 8-byte ones) held as two 16-byte vectors, the
// width every x86-64 CPU has: GCC and Clang split wider vector types into scalar code where the
// instruction set lacks them, and shuffles across two halves cost no more.
template <typename T>
struct Half {
  typedef Lane<T> Type __attribute__((vector_size(16)));
  typedef std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t> MaskLane;
  typedef MaskLane Mask __attribute__((vector_size(16)));
  static constexpr int kLanes = 16 / sizeof(T);
};

template <typename T>
struct Group {
  typename Half<T>::Type lo, hi;
  static constexpr int kLanes = 2 * Half<T>::kLanes;
};

template <typename T, bool kProduct>
inline T combine(T a, T b) {
  using L = Lane<T>;
  if constexpr (kProduct) {
    return static_cast<T>(static_cast<L>(a) * static_cast<L>(b));
  } else {
    return static_cast<T>(static_cast<L>(a) + static_cast<L>(b));
  }
}

template <typename T, bool kProduct>
inline Group<T> gcombine(const Group<T>& a, const Group<T>& b) {
  if constexpr (kProduct) {
    return {a.lo * b.lo, a.hi * b.hi};
  } else {
    return {a.lo + b.lo, a.hi + b.hi};
  }
}

template <typename T, bool kProduct>
constexpr T identity() {
  return kProduct ? T(1) : T(0);
}

// GCC spells a two-vector shuffle __builtin_shuffle(a, b, mask), Clang __builtin_shufflevector;
// lane i of the result is a[m[i]] for m[i] < lanes, else b[m[i] - lanes].
#if defined(__clang__)
#define OPWEAVE_SHUFFLE2(a, b, M, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#define OPWEAVE_SHUFFLE1(a, M, ...) __builtin_shufflevector(a, a, __VA_ARGS__)
#else
#define OPWEAVE_SHUFFLE2(a, b, M, ...) __builtin_shuffle(a, b, M{__VA_ARGS__})
#define OPWEAVE_SHUFFLE1(a, M, ...) __builtin_shuffle(a, M{__VA_ARGS__})
#endif

// Lane i of the group result: v[i - K] (up) or v[i + K] (down), the identity where that falls
// outside the group.
template <typename T, int K, bool kUp>
inline Group<T> shifted(const Group<T>& v, typename Half<T>::Type id) {
  // Unused where OPWEAVE_SHUFFLE* expands to __builtin_shufflevector (clang).
  using M [[maybe_unused]] = typename Half<T>::Mask;
  constexpr int H = Half<T>::kLanes;
  if constexpr (K == H) {
    return kUp ? Group<T>{id, v.lo} : Group<T>{v.hi, id};
  } else if constexpr (H == 4 && K == 1) {
    return kUp ? Group<T>{OPWEAVE_SHUFFLE2(id, v.lo, M, 0, 4, 5, 6),
                          OPWEAVE_SHUFFLE2(v.lo, v.hi, M, 3, 4, 5, 6)}
               : Group<T>{OPWEAVE_SHUFFLE2(v.lo, v.hi, M, 1, 2, 3, 4),
                          OPWEAVE_SHUFFLE2(v.hi, id, M, 1, 2, 3, 4)};
  } else if constexpr (H == 4 && K == 2) {
    return kUp ? Group<T>{OPWEAVE_SHUFFLE2(id, v.lo, M, 0, 1, 4, 5),
                          OPWEAVE_SHUFFLE2(v.lo, v.hi, M, 2, 3, 4, 5)}
               : Group<T>{OPWEAVE_SHUFFLE2(v.lo, v.hi, M, 2, 3, 4, 5),
                          OPWEAVE_SHUFFLE2(v.hi, id, M, 2, 3, 4, 5)};
  } else {  // H == 2, K == 1
    return kUp ? Group<T>{OPWEAVE_SHUFFLE2(id, v.lo, M, 0, 2),
                          OPWEAVE_SHUFFLE2(v.lo, v.hi, M, 1, 2)}
               : Group<T>{OPWEAVE_SHUFFLE2(v.lo, v.hi, M, 1, 2),
                          OPWEAVE_SHUFFLE2(v.hi, id, M, 1, 2)};
  }
}

// Every lane set to the group's last (kLast) or first lane.
template <typename T, bool kLast>
inline typename Half<T>::Type broadcast_end(const Group<T>& v) {
  // Unused where OPWEAVE_SHUFFLE* expands to __builtin_shufflevector (clang).
  using M [[maybe_unused]] = typename Half<T>::Mask;
  if constexpr (Half<T>::kLanes == 4) {
    return kLast ? OPWEAVE_SHUFFLE1(v.hi, M, 3, 3, 3, 3) : OPWEAVE_SHUFFLE1(v.lo, M, 0, 0, 0, 0);
  } else {
    return kLast ? OPWEAVE_SHUFFLE1(v.hi, M, 1, 1) : OPWEAVE_SHUFFLE1(v.lo, M, 0, 0);
  }
}

template <typename T>
inline Group<T> gload(const T* p) {
  Group<T> g;
  std::memcpy(&g.lo, p, sizeof(g.lo));
  std::memcpy(&g.hi, p + Half<T>::kLanes, sizeof(g.hi));
  return g;
}

template <typename T>
inline void gstore(T* p, const Group<T>& g) {
  std::memcpy(p, &g.lo, sizeof(g.lo));
  std::memcpy(p + Half<T>::kLanes, &g.hi, sizeof(g.hi));
}

// The in-group prefix (kUp: of lanes 0..i; else suffix of lanes i..N-1) in log2(N) steps.
template <typename T, bool kProduct, bool kUp>
inline Group<T> group_scan(Group<T> v, typename Half<T>::Type id) {
  v = gcombine<T, kProduct>(v, shifted<T, 1, kUp>(v, id));
  v = gcombine<T, kProduct>(v, shifted<T, 2, kUp>(v, id));
  if constexpr (Group<T>::kLanes == 8) v = gcombine<T, kProduct>(v, shifted<T, 4, kUp>(v, id));
  return v;
}

// Inclusive scan of src[0, n) into dst (forward) or of src[n-1 .. 0] (reverse), starting from
// `carry`; returns the total. dst may not overlap src except exactly.
template <typename T, bool kProduct, bool kReverse>
T scan_run(const T* src, T* dst, std::int64_t n, T carry) {
  using H = typename Half<T>::Type;
  constexpr std::int64_t kN = Group<T>::kLanes;
  H id, c;
  for (int i = 0; i < Half<T>::kLanes; ++i) {
    id[i] = static_cast<Lane<T>>(identity<T, kProduct>());
    c[i] = static_cast<Lane<T>>(carry);
  }
  const std::int64_t groups = n / kN;
  if constexpr (!kReverse) {
    for (std::int64_t g = 0; g < groups; ++g) {
      Group<T> v = group_scan<T, kProduct, true>(gload(src + g * kN), id);
      v = gcombine<T, kProduct>(v, Group<T>{c, c});
      gstore(dst + g * kN, v);
      c = broadcast_end<T, true>(v);
    }
    T acc = static_cast<T>(c[0]);
    for (std::int64_t i = groups * kN; i < n; ++i) {
      acc = combine<T, kProduct>(acc, src[i]);
      dst[i] = acc;
    }
    return acc;
  } else {
    const std::int64_t head = n - groups * kN;  // the first `head` values come last
    for (std::int64_t g = groups - 1; g >= 0; --g) {
      Group<T> v = group_scan<T, kProduct, false>(gload(src + head + g * kN), id);
      v = gcombine<T, kProduct>(v, Group<T>{c, c});
      gstore(dst + head + g * kN, v);
      c = broadcast_end<T, false>(v);
    }
    T acc = static_cast<T>(c[0]);
    for (std::int64_t i = head - 1; i >= 0; --i) {
      acc = combine<T, kProduct>(acc, src[i]);
      dst[i] = acc;
    }
    return acc;
  }
}

// The combination of src[0, n) in a fixed order (8 lanes, then their tree), for block totals.
template <typename T, bool kProduct>
T total_of(const T* src, std::int64_t n) {
  T lanes[8];
  for (int l = 0; l < 8; ++l) lanes[l] = identity<T, kProduct>();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] = combine<T, kProduct>(lanes[l], src[i + l]);
  }
  for (int l = 0; i + l < n; ++l) lanes[l] = combine<T, kProduct>(lanes[l], src[i + l]);
  for (int w = 4; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] = combine<T, kProduct>(lanes[l], lanes[l + w]);
  }
  return lanes[0];
}

// Inclusive scan of one row of n values (forward or reverse); rows longer than kBlock go by
// blocks: totals first, then each block from the combination of the totals before it (after it,
// reversed). `pool` splits the blocks; null runs them here.
template <typename T, bool kProduct, bool kReverse>
void scan_row(const T* src, T* dst, std::int64_t n, ThreadPool* pool) {
  if (n <= kBlock) {
    scan_run<T, kProduct, kReverse>(src, dst, n, identity<T, kProduct>());
    return;
  }
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<T> carry(static_cast<std::size_t>(blocks));
  parallel_for(
      pool, 0, blocks, 1,
      [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          const std::int64_t lo = b * kBlock;
          carry[static_cast<std::size_t>(b)] =
              total_of<T, kProduct>(src + lo, std::min(kBlock, n - lo));
        }
      },
      static_cast<double>(kBlock));
  // Each block's starting value: the totals before it (after it, reversed), combined in order.
  T acc = identity<T, kProduct>();
  for (std::int64_t k = 0; k < blocks; ++k) {
    const auto b = static_cast<std::size_t>(kReverse ? blocks - 1 - k : k);
    const T total = carry[b];
    carry[b] = acc;
    acc = combine<T, kProduct>(acc, total);
  }
  parallel_for(
      pool, 0, blocks, 1,
      [&](std::int64_t b0, std::int64_t b1) {
        for (std::int64_t b = b0; b < b1; ++b) {
          const std::int64_t lo = b * kBlock;
          scan_run<T, kProduct, kReverse>(src + lo, dst + lo, std::min(kBlock, n - lo),
                                          carry[static_cast<std::size_t>(b)]);
        }
      },
      static_cast<double>(kBlock) * 2.0);
}

// One row of the I == 1 case with exclusive handled: the inclusive scan of all but the last
// (reverse: first) value, shifted by one place, after the identity.
template <typename T, bool kProduct, bool kReverse>
void scan_row_full(const T* src, T* dst, std::int64_t n, bool exclusive, ThreadPool* pool) {
  if (!exclusive) {
    scan_row<T, kProduct, kReverse>(src, dst, n, pool);
    return;
  }
  if (kReverse) {
    dst[n - 1] = identity<T, kProduct>();
    scan_row<T, kProduct, kReverse>(src + 1, dst, n - 1, pool);
  } else {
    dst[0] = identity<T, kProduct>();
    scan_row<T, kProduct, kReverse>(src, dst + 1, n - 1, pool);
  }
}

template <typename T, bool kProduct, bool kReverse>
void scan_rows(const T* src, T* dst, std::int64_t rows, std::int64_t n, bool exclusive,
               ThreadPool* pool) {
  if (rows < 2 * kernel_detail::pool_threads(pool) && n > kBlock) {
    for (std::int64_t o = 0; o < rows; ++o) {
      scan_row_full<T, kProduct, kReverse>(src + o * n, dst + o * n, n, exclusive, pool);
    }
    return;
  }
  parallel_for(
      pool, 0, rows, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, n)),
      [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o) {
          scan_row_full<T, kProduct, kReverse>(src + o * n, dst + o * n, n, exclusive, nullptr);
        }
      },
      static_cast<double>(n) * 2.0);
}

// I > 1: out[o, r, :] = out[o, r -+ 1, :] op x[o, r (-+ 1 if exclusive), :], streaming rows.
template <typename T, bool kProduct>
void scan_columns(const T* src, T* dst, std::int64_t o_count, std::int64_t r_count,
                  std::int64_t i_count, bool exclusive, bool reverse, ThreadPool* pool) {
  constexpr std::int64_t kChunk = 4096;
  const std::int64_t chunks = (i_count + kChunk - 1) / kChunk;
  parallel_for(
      pool, 0, o_count * chunks, 1,
      [&](std::int64_t u0, std::int64_t u1) {
        for (std::int64_t u = u0; u < u1; ++u) {
          const std::int64_t o = u / chunks;
          const std::int64_t j0 = (u % chunks) * kChunk;
          const std::int64_t w = std::min(kChunk, i_count - j0);
          const T* in = src + o * r_count * i_count + j0;
          T* out = dst + o * r_count * i_count + j0;
          for (std::int64_t k = 0; k < r_count; ++k) {
            const std::int64_t r = reverse ? r_count - 1 - k : k;
            const std::int64_t prev = reverse ? r + 1 : r - 1;
            T* row = out + r * i_count;
            if (exclusive) {
              if (k == 0) {
                for (std::int64_t j = 0; j < w; ++j) row[j] = identity<T, kProduct>();
              } else {
                const T* before = out + prev * i_count;
                const T* x = in + prev * i_count;
                for (std::int64_t j = 0; j < w; ++j) row[j] = combine<T, kProduct>(before[j], x[j]);
              }
            } else {
              const T* x = in + r * i_count;
              if (k == 0) {
                for (std::int64_t j = 0; j < w; ++j) {
                  row[j] = combine<T, kProduct>(identity<T, kProduct>(), x[j]);
                }
              } else {
                const T* before = out + prev * i_count;
                for (std::int64_t j = 0; j < w; ++j) row[j] = combine<T, kProduct>(before[j], x[j]);
              }
            }
          }
        }
      },
      static_cast<double>(r_count * std::min(kChunk, i_count)));
}

template <typename T, bool kProduct>
void scan_typed(const T* src, T* dst, std::int64_t o, std::int64_t r, std::int64_t i,
                bool exclusive, bool reverse, ThreadPool* pool) {
  if (i > 1) {
    scan_columns<T, kProduct>(src, dst, o, r, i, exclusive, reverse, pool);
  } else if (reverse) {
    scan_rows<T, kProduct, true>(src, dst, o, r, exclusive, pool);
  } else {
    scan_rows<T, kProduct, false>(src, dst, o, r, exclusive, pool);
  }
}

}  // namespace

Tensor scan(bool is_product, const Tensor& x, int axis, bool exclusive, bool reverse,
            ThreadPool* pool) {
  const char* name = is_product ? "cumprod" : "cumsum";
  if (axis < -x.ndim() || axis >= x.ndim()) {
    throw_invalid_argument(std::string(name) + ": Expected scan axis in the range [" +
                           std::to_string(-x.ndim()) + ", " + std::to_string(x.ndim()) +
                           "), but got " + std::to_string(axis));
  }
  const DType dt = x.dtype();
  if (dt == DType::kBool || dt == DType::kString || dt == DType::kFloat16) {
    throw_invalid_argument(std::string(name) + " does not support dtype " + dtype_name(dt));
  }
  if (dt == DType::kInt8 || dt == DType::kInt16 || dt == DType::kUInt8) {
    // In int32: sums and products wrap to the same values modulo 2^8 or 2^16.
    return cast(scan(is_product, cast(x, DType::kInt32, pool), axis, exclusive, reverse, pool), dt,
                pool);
  }
  const int a = axis < 0 ? axis + x.ndim() : axis;
  std::int64_t o_count = 1, i_count = 1;
  for (int d = 0; d < x.ndim(); ++d) {
    if (d < a) o_count *= x.dim(d);
    if (d > a) i_count *= x.dim(d);
  }
  const std::int64_t r_count = x.dim(a);
  Tensor out = Tensor::empty(dt, x.shape());
  if (out.numel() == 0) return out;
  const Tensor src = x.contiguous();
  kernel_detail::dispatch_all(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) {
      const T* ps = src.data<T>();
      T* po = out.data<T>();
      if (is_product) {
        scan_typed<T, true>(ps, po, o_count, r_count, i_count, exclusive, reverse, pool);
      } else {
        scan_typed<T, false>(ps, po, o_count, r_count, i_count, exclusive, reverse, pool);
      }
    }
  });
  return out;
}

}  // namespace opweave
