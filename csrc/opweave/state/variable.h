// Variable: the value of one TensorFlow-1 variable (a VariableV2 node) in one session. The graph
// holds the variable's definition; each session's SessionState holds a Variable per VariableV2
// node (keyed by its shared_name, which defaults to the node name), so two sessions on one graph
// hold separate values. Ops reach it through the node's output, a "ref" tensor (variable_ref) that
// names the variable and holds no value, as TensorFlow 1's float32_ref does.
//
//   std::shared_ptr<Variable> v = make_variable("w", DType::kFloat32, Shape{2, 3});
//   v->assign(Tensor::zeros(DType::kFloat32, {2, 3}), /*validate_shape=*/true,
//             /*use_locking=*/true, /*adopt=*/false, pool);
//   Tensor now = v->read(pool);           // the value, shared (no copy) when nothing writes
//   {
//     VariableUpdate update({v.get()}, /*use_locking=*/false);   // an in-place or fresh buffer
//     const float* in = update.in<float>(0);
//     float* out = update.out<float>(0);
//     update.for_blocks(pool, v_numel, /*cost_per_element=*/1.0,
//                       [&](std::int64_t b, std::int64_t e) {
//                         for (std::int64_t i = b; i < e; ++i) out[i] = in[i] + 1.0f;
//                       });
//     update.commit();
//   }
//
// What concurrent runs may rely on (several Python threads running steps on one session, Hogwild
// style, as TensorFlow allows):
//
// - Reads (read(), the Identity that reads a variable, a fetch of a ref) see, element by element,
//   either the value before or after any update running at the same time. A read while no update
//   runs shares the buffer (no copy); an update that then finds the buffer shared computes into a
//   fresh buffer (copy-on-write, at no extra pass: the fused update reads the old buffer and
//   writes the new one) and installs it when it is complete. A read during an in-place update
//   copies the value block by block under the blocks' locks.
// - use_locking = true: an update (or assign) holds the variable's update mutex for its whole
//   duration, so it is atomic with respect to every other use_locking update or assign of that
//   variable: N concurrent AssignAdd(1) with use_locking give exactly +N.
// - use_locking = false: updates of one variable may run at once and interleave block by block
//   (kBlock elements): each block's read-modify-write happens under that block's lock, so memory
//   is never corrupted, no element's update is torn or lost, and the plain (vectorised) loops
//   stay free of data races; but an update of several variables (var, m, v) or of many blocks is
//   not atomic as a whole (Hogwild). A copy-on-write update makes the others wait until it
//   installs its buffer.
// - assign replaces the value (a fresh buffer, or the input's own when it may be adopted); an
//   in-place update running at the same time may then finish on the old buffer and be lost.
//
// Every public method is thread-safe.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "opweave/function_ref.h"
#include "opweave/tensor.h"
#include "opweave/thread_pool.h"

namespace opweave {

class Variable {
 public:
  // Updates lock the value in blocks of this many elements; block b uses stripe b % kStripes.
  static constexpr std::int64_t kBlock = 8192;
  static constexpr int kStripes = 16;

  // `declared`: the VariableV2 node's shape (-1 = an unknown dimension), or nullopt when even the
  // rank is unknown (validate_shape=False variables).
  Variable(std::string name, DType dtype, std::optional<Shape> declared);
  Variable(const Variable&) = delete;
  Variable& operator=(const Variable&) = delete;

  const std::string& name() const noexcept { return name_; }
  DType dtype() const noexcept { return dtype_; }
  const std::optional<Shape>& declared_shape() const noexcept { return declared_; }
  bool is_initialized() const;
  // The current shape; the declared one (nullopt if unknown) before the first assign.
  std::optional<Shape> shape() const;

  // The current value (contiguous). Throws OpError(kFailedPrecondition, "Attempting to use
  // uninitialized value <name>") before the first assign.
  Tensor read(ThreadPool* pool) const;

  // Replaces the value with `value` (converted to a contiguous copy, unless `adopt`: then
  // `value`'s own buffer becomes the variable's, which the caller must solely own). With
  // validate_shape, `value` must have the current shape (the declared one before the first
  // assign): OpError(kInvalidArgument) naming both otherwise. use_locking: see the header.
  void assign(Tensor value, bool validate_shape, bool use_locking, bool adopt, ThreadPool* pool);

 private:
  friend class VariableUpdate;

  std::mutex& stripe(std::int64_t block) const {
    return stripes_[static_cast<std::size_t>(block % kStripes)];
  }
  [[noreturn]] void throw_uninitialized() const;

  const std::string name_;
  const DType dtype_;
  const std::optional<Shape> declared_;
  // Held by use_locking updates and assigns for their whole duration. Taken before mutex_.
  std::mutex update_mutex_;
  // Guards value_ (the handle, not the elements), initialized_, writers_ and cow_.
  mutable std::mutex mutex_;
  std::condition_variable cow_done_;  // signalled when cow_ goes false
  Tensor value_;
  bool initialized_ = false;
  // In-place updates running. While it is positive no reader shares value_'s buffer (readers
  // copy under the stripes), so further updates may write it in place too.
  int writers_ = 0;
  // A copy-on-write update is computing the next value from value_; updates and assigns wait.
  bool cow_ = false;
  // Taken per block by in-place writers and by readers copying during them; never while waiting
  // for anything else, and always in (variable address, stripe index) order.
  mutable std::array<std::mutex, kStripes> stripes_;
};

// The SessionState key of a VariableV2 node's Variable: "variable:" + [container + "/"] +
// (shared_name, or the node's name when shared_name is empty), as TensorFlow keys its resource
// manager. Every session's variables are its SessionState's entries of type Variable:
//
//   executor.state().for_each<Variable>([&](const std::string& key, Variable& v) {
//     if (v.is_initialized()) save(v.name(), v.read(pool));
//   });
//   auto v = executor.state().find<Variable>(variable_key("", "w"));  // null until "w" ran once
std::string variable_key(const std::string& container, const std::string& shared_name,
                         const std::string& node_name);

// A Variable whose control block ref_variable() recognises. Use this, not make_shared.
std::shared_ptr<Variable> make_variable(std::string name, DType dtype,
                                        std::optional<Shape> declared);

// The tensor a VariableV2 node outputs: no elements, the variable's dtype; it keeps the variable
// alive and names it for Assign, Apply* and the reading Identity.
Tensor variable_ref(const std::shared_ptr<Variable>& var);
// The variable `t` refers to, or null when `t` is not a ref (e.g. a value fed in its place).
Variable* ref_variable(const Tensor& t) noexcept;
// A ref's current value (Variable::read), or `t` itself when it is not a ref: what an Identity
// and a fetch of a ref produce.
Tensor deref(const Tensor& t, ThreadPool* pool);

// One update of one or more distinct variables (a variable and its optimizer slots) that reads
// every element's old value and writes its new one: AssignAdd, ApplyAdam, ScatterAdd, ...
//
// Construction begins it: with use_locking, each variable's update mutex is taken (in address
// order); then each variable gets its target buffer -- in place when no reader shares the value
// (or other in-place updates run), else a fresh buffer (copy-on-write). It throws
// OpError(kFailedPrecondition) naming a variable that is not initialized, and
// OpError(kInvalidArgument) for a variable passed twice. commit() installs the new values; the
// destructor releases everything, discarding the fresh buffers of an update not committed (so a
// failed or cancelled copy-on-write update changes nothing; a failed in-place one may have
// updated some blocks). One thread uses an update; for_blocks spreads its work over the pool.
class VariableUpdate {
 public:
  VariableUpdate(std::vector<Variable*> vars, bool use_locking);
  ~VariableUpdate();
  VariableUpdate(const VariableUpdate&) = delete;
  VariableUpdate& operator=(const VariableUpdate&) = delete;

  // vars[i]'s value before the update (contiguous): read elements from in(i).
  const Tensor& old_value(std::size_t i) const { return entries_[i].old; }
  const Shape& shape(std::size_t i) const { return entries_[i].old.shape(); }
  bool in_place(std::size_t i) const { return entries_[i].in_place; }
  template <typename T>
  const T* in(std::size_t i) const {
    return entries_[i].old.data<T>();
  }
  // Where vars[i]'s new elements go: in(i)'s buffer when in place, a fresh one otherwise (whose
  // elements the update must all write, e.g. by copy_unwritten() before a scatter).
  template <typename T>
  T* out(std::size_t i) const {
    return entries_[i].out.data<T>();
  }

  // Runs body(begin, end) over [0, n) in blocks of Variable::kBlock elements (on the pool when n
  // is large), each with its lock held on every variable updated in place, so concurrent updates
  // and readers see each block before or after. Throws OpError(kCancelled) when the run was
  // cancelled and some blocks were skipped. body must only compute (never wait or lock).
  void for_blocks(ThreadPool* pool, std::int64_t n, double cost_per_element,
                  FunctionRef<void(std::int64_t, std::int64_t)> body);
  // Runs body() with the locks of elements [begin, end) of vars[i] held (when in place): for
  // updates of scattered rows.
  void with_range_locked(std::size_t i, std::int64_t begin, std::int64_t end,
                         FunctionRef<void()> body);
  // Copies vars[i]'s old elements into a fresh (copy-on-write) target; nothing when in place.
  void copy_unwritten(std::size_t i, ThreadPool* pool);
  // Installs the fresh buffers as the variables' values.
  void commit() noexcept { committed_ = true; }

 private:
  struct Entry {
    Variable* var = nullptr;
    Tensor old;  // the value read (keeps an in-place target alive while the update writes it)
    Tensor out;  // the target: old itself in place, else a fresh buffer
    bool in_place = false;
    bool begun = false;
  };
  void end() noexcept;

  std::vector<Entry> entries_;      // in the caller's order
  std::vector<std::size_t> order_;  // entries_ by variable address: the locking order
  bool use_locking_ = false;
  int update_locks_held_ = 0;  // how many of order_'s update mutexes are held
  bool committed_ = false;
};

}  // namespace opweave
