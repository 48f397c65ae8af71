// Weights packed once: the GEMM panel layout (gemm_detail::PackedB) of a MatMul's constant or
// variable operand, kept with the compiled node between runs. One cache per fused node of a
// compiled signature, shared by every run of that signature, also concurrent ones.
//
//   PackedWeightCache cache;                                     // in the kernel's closure
//   std::shared_ptr<const gemm_detail::PackedB<float>> p =
//       cache.get<float>(w, {w.data<float>(), n, 1}, k, n, pool);  // null: multiply unpacked
//   gemm_detail::gemm<float>(m, n, k, a, b, c, n, pool, ep, p.get());
//
// Keyed by the buffer's identity (its address, shape, strides), and the entry holds the weight
// tensor itself, so that identity means the same values:
//
// - a constant's buffer never changes;
// - a variable's value is shared with a reader by copy-on-write (state/variable.h): while the cache
//   holds the buffer, an update (assign, an optimizer step, a restore) writes a fresh one, which
//   the next run sees as a new identity and packs;
// - the held buffer cannot be freed and its address reused by another tensor.
//
// Only weights whose producers guarantee the first two (a Const, a variable read: the optimizer
// decides) may be cached; a fed tensor (caller-owned memory) never is.
//
// Holding the buffer makes the next update of a variable copy instead of writing in place, and
// repacking costs what the GEMM's own packing costs: both are wasted when the weight changes on
// every run (training). After kMaxChanges runs in a row found a new buffer, the cache lets go and
// stops caching (get() returns null from then on): a training signature pays two repacks, an
// inference signature whose weights are assigned now and then keeps its cache.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "opweave/kernels/gemm.h"
#include "opweave/tensor.h"

namespace opweave {

class PackedWeightCache {
 public:
  static constexpr int kMaxChanges = 2;

  // The packed form of B (a k x n view `b` of tensor `weight`'s buffer) for gemm(): the cached
  // one when this buffer was packed before, else packed now (on `pool`) and kept. Null once the
  // cache has stopped caching. Thread-safe: concurrent runs may both pack on a miss; one result is
  // kept, and each run multiplies with the one it got (same values, same bits).
  template <typename T>
  std::shared_ptr<const gemm_detail::PackedB<T>> get(const Tensor& weight,
                                                     gemm_detail::StridedMatrix<T> b,
                                                     std::int64_t k, std::int64_t n,
                                                     ThreadPool* pool);

  struct Stats {
    std::int64_t packs = 0;  // times a weight was packed (misses)
    std::int64_t hits = 0;
    bool holding = false;  // an entry (and its weight buffer) is kept
    bool stopped = false;  // gave up after kMaxChanges changes in a row
  };
  Stats stats() const;

 private:
  struct Key {
    const void* data = nullptr;
    std::int64_t k = 0, n = 0, rs = 0, cs = 0;
    DType dtype = DType::kFloat32;
    bool operator==(const Key& o) const noexcept {
      return data == o.data && k == o.k && n == o.n && rs == o.rs && cs == o.cs && dtype == o.dtype;
    }
  };

  mutable std::mutex mutex_;  // guards every member below
  Key key_;
  Tensor weight_;                       // holds the packed buffer's source (see above)
  std::shared_ptr<const void> packed_;  // a gemm_detail::PackedB<T> for key_.dtype
  int changes_ = 0;                     // runs in a row that found a new buffer
  bool stopped_ = false;
  std::int64_t packs_ = 0, hits_ = 0;
};

// Every cache's packs and hits since the process started (tests and diagnostics).
struct PackedWeightTotals {
  std::int64_t packs = 0;
  std::int64_t hits = 0;
};
PackedWeightTotals packed_weight_totals() noexcept;

}  // namespace opweave
