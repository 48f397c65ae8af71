#include "opweave/kernels/packed_weights.h"

#include <atomic>
#include <type_traits>

namespace opweave {

namespace {
// Relaxed: counters read for reporting only; nothing is published through them.
std::atomic<std::int64_t> g_packs{0};
std::atomic<std::int64_t> g_hits{0};
}  // namespace

PackedWeightTotals packed_weight_totals() noexcept {
  return {g_packs.load(std::memory_order_relaxed), g_hits.load(std::memory_order_relaxed)};
}

template <typename T>
std::shared_ptr<const gemm_detail::PackedB<T>> PackedWeightCache::get(
    const Tensor& weight, gemm_detail::StridedMatrix<T> b, std::int64_t k, std::int64_t n,
    ThreadPool* pool) {
  const DType dtype = std::is_same_v<T, float> ? DType::kFloat32 : DType::kFloat64;
  const Key key{b.data, k, n, b.rs, b.cs, dtype};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return nullptr;
    if (packed_ != nullptr && key_ == key) {
      ++hits_;
      g_hits.fetch_add(1, std::memory_order_relaxed);
      changes_ = 0;
      return std::static_pointer_cast<const gemm_detail::PackedB<T>>(packed_);
    }
    if (packed_ != nullptr && ++changes_ >= kMaxChanges) {
      // The weight changes on every run (training): caching costs a repack and a copy-on-write
      // update per run and saves nothing. Let go of the buffer so updates work in place again.
      stopped_ = true;
      weight_ = Tensor();
      packed_.reset();
      return nullptr;
    }
  }
  // Packed outside the lock: a concurrent run of the signature multiplies meanwhile (packing its
  // own copy if it misses too) instead of waiting.
  auto fresh = std::make_shared<const gemm_detail::PackedB<T>>(k, n, b, pool);
  std::lock_guard<std::mutex> lock(mutex_);
  ++packs_;
  g_packs.fetch_add(1, std::memory_order_relaxed);
  if (!stopped_) {
    // The mutex publishes the packed panels to the runs that read them later.
    key_ = key;
    weight_ = weight;
    packed_ = fresh;
  }
  return fresh;
}

template std::shared_ptr<const gemm_detail::PackedB<float>> PackedWeightCache::get<float>(
    const Tensor&, gemm_detail::StridedMatrix<float>, std::int64_t, std::int64_t, ThreadPool*);
template std::shared_ptr<const gemm_detail::PackedB<double>> PackedWeightCache::get<double>(
    const Tensor&, gemm_detail::StridedMatrix<double>, std::int64_t, std::int64_t, ThreadPool*);

PackedWeightCache::Stats PackedWeightCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {packs_, hits_, packed_ != nullptr, stopped_};
}

}  // namespace opweave
