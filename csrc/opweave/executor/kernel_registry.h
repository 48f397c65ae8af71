// The op kernel registry: op type -> a factory that binds one node's attributes into a callable
// kernel, plus a cost hint the executor uses before it has measured the node.
//
//   register_kernel("Identity", {[](const NodeDef&) -> Kernel {
//     return [](KernelContext& ctx) { ctx.outputs[0] = ctx.inputs[0]; };
//   }, CostHint::kCheap});
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "opweave/executor/session_state.h"
#include "opweave/graph/graph.h"
#include "opweave/tensor.h"
#include "opweave/thread_pool.h"

namespace opweave {

// The input tensors of one node execution, read in place from the run's value slots (no copies,
// no allocation): inputs[i] is the tensor feeding input i. Valid while the kernel runs; copy a
// Tensor out of it to keep it longer.
class InputList {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Tensor;
    using difference_type = std::ptrdiff_t;
    using pointer = const Tensor*;
    using reference = const Tensor&;
    iterator(const Tensor* base, const int* index) : base_(base), index_(index) {}
    const Tensor& operator*() const { return base_[*index_]; }
    const Tensor* operator->() const { return &base_[*index_]; }
    iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const iterator& o) const { return index_ == o.index_; }
    bool operator!=(const iterator& o) const { return index_ != o.index_; }

   private:
    const Tensor* base_;
    const int* index_;
  };

  // Input i is base[index[i]], for i < size.
  InputList(Tensor* base, const int* index, std::size_t size)
      : base_(base), index_(index), size_(size) {}
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const Tensor& operator[](std::size_t i) const { return base_[index_[i]]; }
  iterator begin() const { return {base_, index_}; }
  iterator end() const { return {base_, index_ + size_}; }
  // Copies of the handles (sharing the buffers), for APIs that take a vector.
  std::vector<Tensor> to_vector() const { return std::vector<Tensor>(begin(), end()); }

 private:
  friend struct KernelContext;
  Tensor* base_;
  const int* index_;
  std::size_t size_;
};

// The output tensors of one node execution: outputs[i] is where output i goes (empty on entry).
class OutputList {
 public:
  OutputList(Tensor* first, std::size_t size) : first_(first), size_(size) {}
  std::size_t size() const noexcept { return size_; }
  Tensor& operator[](std::size_t i) const { return first_[i]; }

 private:
  Tensor* first_;
  std::size_t size_;
};

// What a kernel sees during one execution. The kernel fills every entry of outputs.
struct KernelContext {
  const NodeDef& node;
  InputList inputs;
  OutputList outputs;
  ThreadPool* intra_pool;  // the pool for parallelism inside this op (null = serial)
  // Bit i set: this node is the only reader of input i's value (see forwardable_input).
  std::uint32_t sole_reader_inputs = 0;
  // The session's state for stateful ops (variables, random generators); null when the kernel
  // runs outside a session (opweave.kernels), where stateful ops are not offered.
  SessionState* state = nullptr;
  // Set when the run is cancelled (deadline, Ctrl-C, close): long kernels may poll it between
  // pieces of work and stop early; their outputs are dropped anyway. Null: never cancelled.
  const std::atomic<bool>* cancelled = nullptr;

  bool cancel_requested() const noexcept {
    // Relaxed: a hint to stop early; nothing is published through the flag.
    return cancelled != nullptr && cancelled->load(std::memory_order_relaxed);
  }
  // The state, or OpError(kFailedPrecondition) naming the node when there is none.
  SessionState& session_state() const;

  // Input i's tensor when the kernel may write its result into that tensor's buffer and return
  // it as an output (std::move it into outputs[k]): this node is the only reader of the value and
  // the handle is the only owner of the buffer (TensorFlow's buffer forwarding). Null otherwise.
  // Until the kernel moves it, inputs[i] still reads it.
  Tensor* forwardable_input(std::size_t i) const noexcept {
    if (i >= 32 || ((sole_reader_inputs >> i) & 1u) == 0) return nullptr;
    Tensor* t = &inputs.base_[inputs.index_[i]];
    return t->sole_owner() ? t : nullptr;
  }
};

using Kernel = std::function<void(KernelContext&)>;

// The values of an integer input (int32 or int64, a scalar or a vector) such as a shape, axes or
// a permutation; `what` names it in the error, which also names the node.
std::vector<std::int64_t> int_list_input(const KernelContext& ctx, std::size_t i, const char* what);
// One integer input (a scalar or a one-element vector, int32 or int64).
std::int64_t int_scalar_input(const KernelContext& ctx, std::size_t i, const char* what);
// "Node 'name' (op: 'Type'): message" as an InvalidArgument error.
[[noreturn]] void throw_node_error(const NodeDef& node, const std::string& message);

// kCheap: always inline (no queue hop is worth it); kExpensive: always spread over the inter-op
// pool (its cost is still measured: a run of a few short expensive nodes that the pool cannot
// speed up runs in the caller's thread, see Executor::run_compiled); kMeasure: start as
// expensive, then let the measured moving-average cost decide.
enum class CostHint { kCheap, kExpensive, kMeasure };

struct KernelDef {
  std::function<Kernel(const NodeDef&)> make;  // may throw OpError for invalid attributes
  CostHint cost = CostHint::kMeasure;
  // Keeps state in the session between runs (variables, random ops): the graph optimizer and
  // the eager kernel calls must not treat it as a pure function of its inputs.
  bool stateful = false;
  // The kernel computes in float32 only: float16 inputs are widened to float32 before it runs
  // and its float32 outputs rounded back to float16 (math on half is done in float, as on
  // CPUs without half arithmetic).
  bool float16_via_float32 = false;
  // The kernel may wait for something outside the graph for as long as that takes (a
  // py_function: the GIL, Python code that sleeps or blocks): the executor never moves it into
  // the caller's thread, where the run could not be abandoned at its deadline.
  bool may_block = false;
};

// Thread-safe. Registering an op type again replaces it (the bindings register PyFunc late).
void register_kernel(const std::string& op, KernelDef def);
// Throws OpError(kNotFound) naming the op when nothing is registered for it.
KernelDef find_kernel(const std::string& op);

}  // namespace opweave
