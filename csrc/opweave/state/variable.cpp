#include "opweave/state/variable.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "opweave/cancellation.h"
#include "opweave/errors.h"
#include "opweave/parallel_for.h"

namespace opweave {

namespace {

// The deleter of every Variable's control block: ref_variable() asks a tensor's owner for it
// (std::get_deleter), which tells a ref from any other tensor without a type tag in Tensor.
struct VariableDeleter {
  void operator()(Variable* v) const noexcept { delete v; }
};

// Below this many elements a copy or an update runs on the caller alone (as the element-wise
// kernels decide: waking a worker costs about what one thread needs for 32K elements).
constexpr std::int64_t kParallelElements = 32 * 1024;

std::int64_t num_blocks(std::int64_t n) { return (n + Variable::kBlock - 1) / Variable::kBlock; }

// Elements [b, e) of src copied into dst (same dtype, both contiguous).
void copy_range(const Tensor& src, const Tensor& dst, std::int64_t b, std::int64_t e) {
  if (e <= b) return;
  if (src.dtype() == DType::kString) {
    std::copy(src.data<std::string>() + b, src.data<std::string>() + e,
              dst.data<std::string>() + b);
    return;
  }
  const std::size_t item = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + static_cast<std::size_t>(b) * item,
              static_cast<const char*>(src.raw_data()) + static_cast<std::size_t>(b) * item,
              static_cast<std::size_t>(e - b) * item);
}

// A fresh contiguous copy of `src` (nobody else writes src's elements while this runs).
Tensor fresh_copy(const Tensor& src, ThreadPool* pool) {
  if (!src.is_contiguous()) return src.contiguous();  // contiguous() copies a strided tensor
  Tensor out = Tensor::empty(src.dtype(), src.shape());
  const std::int64_t n = src.numel();
  if (n < kParallelElements) {
    copy_range(src, out, 0, n);
  } else {
    parallel_for(
        pool, 0, n, Variable::kBlock,
        [&](std::int64_t b, std::int64_t e) { copy_range(src, out, b, e); }, 0.5);
  }
  return out;
}

bool shapes_match(const Shape& expected, const Shape& got) {
  if (expected.size() != got.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (expected[i] >= 0 && expected[i] != got[i]) return false;
  }
  return true;
}

[[noreturn]] void throw_cancelled() {
  throw OpError(ErrorCode::kCancelled, "Run was cancelled during a variable update");
}

}  // namespace

Variable::Variable(std::string name, DType dtype, std::optional<Shape> declared)
    : name_(std::move(name)), dtype_(dtype), declared_(std::move(declared)) {}

std::shared_ptr<Variable> make_variable(std::string name, DType dtype,
                                        std::optional<Shape> declared) {
  return std::shared_ptr<Variable>(new Variable(std::move(name), dtype, std::move(declared)),
                                   VariableDeleter{});
}

void Variable::throw_uninitialized() const {
  throw OpError(ErrorCode::kFailedPrecondition, "Attempting to use uninitialized value " + name_);
}

bool Variable::is_initialized() const {
  std::lock_guard<std::mutex> lock(mutex_);  // initialized_ is written under it by assign
  return initialized_;
}

std::optional<Shape> Variable::shape() const {
  std::lock_guard<std::mutex> lock(mutex_);  // value_ may be replaced concurrently
  if (initialized_) return value_.shape();
  return declared_;
}

Tensor Variable::read(ThreadPool* pool) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!initialized_) throw_uninitialized();
  if (writers_ == 0) return value_;  // shared: a later update finds it so and copies on write
  // In-place updates are writing the buffer: copy it block by block, each under the lock the
  // writers hold for that block, so the copy sees every block whole, before or after them.
  const Tensor src = value_;  // keeps the buffer alive once the lock is dropped
  lock.unlock();
  Tensor out = Tensor::empty(src.dtype(), src.shape());
  const std::int64_t n = src.numel();
  auto copy_blocks = [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) {
      std::lock_guard<std::mutex> block_lock(stripe(b));  // excludes the block's writers
      copy_range(src, out, b * kBlock, std::min(n, (b + 1) * kBlock));
    }
  };
  if (n < kParallelElements) {
    copy_blocks(0, num_blocks(n));
  } else {
    parallel_for(pool, 0, num_blocks(n), 1, copy_blocks, 0.5 * kBlock);
    // A cancelled run skips blocks: the copy is incomplete, and the run is failing anyway.
    if (cancellation_requested(current_cancellation())) throw_cancelled();
  }
  return out;
}

void Variable::assign(Tensor value, bool validate_shape, bool use_locking, bool adopt,
                      ThreadPool* pool) {
  if (value.dtype() != dtype_) {
    throw_invalid_argument(std::string("Assign: the value has dtype ") + dtype_name(value.dtype()) +
                           " but variable " + name_ + " has dtype " + dtype_name(dtype_));
  }
  // The copy is made before any lock is taken: readers and updates never wait for it.
  Tensor fresh = adopt && value.is_contiguous() ? std::move(value) : fresh_copy(value, pool);
  std::unique_lock<std::mutex> update_lock(update_mutex_, std::defer_lock);
  if (use_locking) update_lock.lock();  // serialises with the other locking updates
  std::unique_lock<std::mutex> lock(mutex_);
  // An update computing a copy would install it after us and undo this assign: wait for it.
  cow_done_.wait(lock, [this] { return !cow_; });
  if (validate_shape) {
    const std::optional<Shape> expected =
        initialized_ ? std::optional<Shape>(value_.shape()) : declared_;
    if (expected && !shapes_match(*expected, fresh.shape())) {
      throw_invalid_argument("Assign requires shapes of both tensors to match. lhs shape= " +
                             shape_to_string(*expected) +
                             " rhs shape= " + shape_to_string(fresh.shape()));
    }
  }
  // In-place updates still running keep their own handle on the old buffer and finish there.
  value_ = std::move(fresh);
  initialized_ = true;
}

std::string variable_key(const std::string& container, const std::string& shared_name,
                         const std::string& node_name) {
  std::string key = "variable:";
  if (!container.empty()) key += container + "/";
  key += shared_name.empty() ? node_name : shared_name;
  return key;
}

Tensor variable_ref(const std::shared_ptr<Variable>& var) {
  // The aliasing handle shares the variable's control block, so get_deleter finds its deleter.
  return Tensor::wrap(var->dtype(), Shape{0}, Shape{1}, nullptr, std::shared_ptr<void>(var));
}

Variable* ref_variable(const Tensor& t) noexcept {
  if (t.raw_data() != nullptr || t.numel() != 0 || t.owner() == nullptr) return nullptr;
  if (std::get_deleter<VariableDeleter>(t.owner()) == nullptr) return nullptr;
  return static_cast<Variable*>(t.owner().get());
}

Tensor deref(const Tensor& t, ThreadPool* pool) {
  const Variable* var = ref_variable(t);
  return var == nullptr ? t : var->read(pool);
}

// -- VariableUpdate -------------------------------------------------------------------------------

VariableUpdate::VariableUpdate(std::vector<Variable*> vars, bool use_locking)
    : use_locking_(use_locking) {
  entries_.resize(vars.size());
  order_.resize(vars.size());
  for (std::size_t i = 0; i < vars.size(); ++i) {
    entries_[i].var = vars[i];
    order_[i] = i;
  }
  std::sort(order_.begin(), order_.end(),
            [&](std::size_t a, std::size_t b) { return vars[a] < vars[b]; });
  for (std::size_t k = 1; k < order_.size(); ++k) {
    if (vars[order_[k]] == vars[order_[k - 1]]) {
      throw_invalid_argument("variable " + vars[order_[k]]->name() +
                             " is passed twice to one update");
    }
  }
  try {
    if (use_locking_) {
      // Address order: two updates of overlapping variable sets cannot wait for each other.
      for (std::size_t k : order_) {
        entries_[k].var->update_mutex_.lock();
        ++update_locks_held_;
      }
    }
    for (std::size_t k : order_) {
      Entry& e = entries_[k];
      Variable& v = *e.var;
      std::unique_lock<std::mutex> lock(v.mutex_);
      // Waiting here holds no stripe, and every update waits in address order, so the one
      // computing a copy of v never waits (transitively) for us.
      v.cow_done_.wait(lock, [&v] { return !v.cow_; });
      if (!v.initialized_) v.throw_uninitialized();
      // While writers_ > 0 no reader shares the buffer (they copy), so it stays ours to write.
      e.in_place = v.writers_ > 0 || v.value_.sole_owner();
      e.old = v.value_;
      if (e.in_place) {
        ++v.writers_;
        e.out = e.old;
      } else {
        v.cow_ = true;
      }
      e.begun = true;
    }
    for (Entry& e : entries_) {
      if (!e.in_place) e.out = Tensor::empty(e.old.dtype(), e.old.shape());
    }
  } catch (...) {
    end();
    throw;
  }
}

VariableUpdate::~VariableUpdate() { end(); }

void VariableUpdate::end() noexcept {
  for (std::size_t k : order_) {
    Entry& e = entries_[k];
    if (!e.begun) continue;
    Variable& v = *e.var;
    std::lock_guard<std::mutex> lock(v.mutex_);
    if (e.in_place) {
      // Our handle goes before writers_ drops, so the next update finds the buffer sole-owned.
      e.old = Tensor();
      e.out = Tensor();
      --v.writers_;
    } else {
      if (committed_) v.value_ = std::move(e.out);
      e.out = Tensor();
      e.old = Tensor();
      v.cow_ = false;
      v.cow_done_.notify_all();
    }
    e.begun = false;
  }
  // order_'s first update_locks_held_ update mutexes are held; released in reverse order.
  for (int k = update_locks_held_ - 1; k >= 0; --k) {
    entries_[order_[static_cast<std::size_t>(k)]].var->update_mutex_.unlock();
  }
  update_locks_held_ = 0;
}

void VariableUpdate::for_blocks(ThreadPool* pool, std::int64_t n, double cost_per_element,
                                FunctionRef<void(std::int64_t, std::int64_t)> body) {
  if (n <= 0) return;
  std::vector<Variable*> locked;  // the in-place variables, in address (locking) order
  for (std::size_t k : order_) {
    if (entries_[k].in_place) locked.push_back(entries_[k].var);
  }
  std::atomic<std::int64_t> done{0};
  auto run_blocks = [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t lo = b * Variable::kBlock;
      const std::int64_t hi = std::min(n, lo + Variable::kBlock);
      // (variable address, stripe) order, the one every locker of stripes follows.
      for (Variable* v : locked) v->stripe(b).lock();
      body(lo, hi);
      for (auto it = locked.rbegin(); it != locked.rend(); ++it) (*it)->stripe(b).unlock();
    }
    // Relaxed: read after parallel_for returned, which orders every chunk before it.
    done.fetch_add(b1 - b0, std::memory_order_relaxed);
  };
  const std::int64_t blocks = num_blocks(n);
  if (n < kParallelElements) {
    run_blocks(0, blocks);
  } else {
    parallel_for(pool, 0, blocks, 1, run_blocks,
                 cost_per_element * static_cast<double>(Variable::kBlock));
  }
  if (done.load(std::memory_order_relaxed) != blocks) throw_cancelled();
}

void VariableUpdate::with_range_locked(std::size_t i, std::int64_t begin, std::int64_t end,
                                       FunctionRef<void()> body) {
  const Entry& e = entries_[i];
  if (!e.in_place || end <= begin) {
    body();
    return;
  }
  // The stripes of blocks begin / kBlock .. (end - 1) / kBlock, taken in increasing index order.
  const std::int64_t b0 = begin / Variable::kBlock;
  const std::int64_t b1 = (end - 1) / Variable::kBlock;
  std::array<bool, Variable::kStripes> need{};
  if (b1 - b0 + 1 >= Variable::kStripes) {
    need.fill(true);
  } else {
    for (std::int64_t b = b0; b <= b1; ++b)
      need[static_cast<std::size_t>(b % Variable::kStripes)] = true;
  }
  for (int s = 0; s < Variable::kStripes; ++s) {
    if (need[static_cast<std::size_t>(s)]) e.var->stripes_[static_cast<std::size_t>(s)].lock();
  }
  try {
    body();
  } catch (...) {
    for (int s = Variable::kStripes - 1; s >= 0; --s) {
      if (need[static_cast<std::size_t>(s)]) e.var->stripes_[static_cast<std::size_t>(s)].unlock();
    }
    throw;
  }
  for (int s = Variable::kStripes - 1; s >= 0; --s) {
    if (need[static_cast<std::size_t>(s)]) e.var->stripes_[static_cast<std::size_t>(s)].unlock();
  }
}

void VariableUpdate::copy_unwritten(std::size_t i, ThreadPool* pool) {
  const Entry& e = entries_[i];
  if (e.in_place) return;
  const std::int64_t n = e.old.numel();
  if (n < kParallelElements) {
    copy_range(e.old, e.out, 0, n);
    return;
  }
  std::atomic<std::int64_t> done{0};
  parallel_for(
      pool, 0, n, Variable::kBlock,
      [&](std::int64_t b, std::int64_t end_) {
        copy_range(e.old, e.out, b, end_);
        done.fetch_add(end_ - b, std::memory_order_relaxed);  // read after parallel_for returned
      },
      0.5);
  if (done.load(std::memory_order_relaxed) != n) throw_cancelled();
}

}  // namespace opweave
