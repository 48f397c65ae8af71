// Kernels of the softmax family: Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and
// SparseSoftmaxCrossEntropyWithLogits (the row loops are in nn_loops.h), and L2Loss. Each is one
// numerically stable pass over its rows (max-shifted, log-sum-exp), never a composition of ops.
// Rows are split over the intra-op pool and each row is computed by one thread, so the results
// are the same bits for any thread count. Labels are checked before anything is computed: an
// out-of-range sparse label is an InvalidArgument error naming it, as TensorFlow's CPU kernel.
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/nn_loops.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

using kernel_detail::dispatch_float;
using kernel_detail::pool_threads;

template <typename T>
nn_loops::Table<T> select_table() {
#if defined(OPWEAVE_X86_64)
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx512_files()) {
    if constexpr (std::is_same_v<T, float>) return nn_loops::table_avx512_f32();
    if constexpr (std::is_same_v<T, double>) return nn_loops::table_avx512_f64();
  }
  if (isa.can_run_avx2_files()) {
    if constexpr (std::is_same_v<T, float>) return nn_loops::table_avx2_f32();
    if constexpr (std::is_same_v<T, double>) return nn_loops::table_avx2_f64();
  }
#endif
  if constexpr (std::is_same_v<T, float>) {
    return nn_loops::table_baseline_f32();
  } else {
    return nn_loops::table_baseline_f64();
  }
}

// Chosen at load time, not on first use: see fork_guard.h.
const nn_loops::Table<float> g_table_f32 = select_table<float>();
const nn_loops::Table<double> g_table_f64 = select_table<double>();

template <typename T>
const nn_loops::Table<T>& best_table() {
  if constexpr (std::is_same_v<T, float>) {
    return g_table_f32;
  } else {
    return g_table_f64;
  }
}

// Below this many elements the rows run on the caller: forking costs a few microseconds, about
// what one thread needs for this many exps.
constexpr std::int64_t kRowsParallelElements = 16 * 1024;
// A chunk of rows handed to a thread holds at least this many elements.
constexpr std::int64_t kRowsGrainElements = 8 * 1024;
// CPU cycles per element of a softmax row (max, exp, sum, scale), for parallel_for's decisions.
constexpr double kCyclesPerElement = 6.0;

// fn(row_begin, row_end) over [0, rows) of rows of n elements: whole rows per thread.
template <typename Fn>
void for_row_blocks(ThreadPool* pool, std::int64_t rows, std::int64_t n, const Fn& fn) {
  if (rows <= 0) return;
  const std::int64_t len = std::max<std::int64_t>(n, 1);
  if (rows * len < kRowsParallelElements || pool_threads(pool) == 1 || rows == 1) {
    fn(std::int64_t{0}, rows);
    return;
  }
  const std::int64_t grain = std::max<std::int64_t>(1, kRowsGrainElements / len);
  parallel_for(pool, 0, rows, grain, fn, kCyclesPerElement * static_cast<double>(len));
}

void require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    throw_node_error(ctx.node, std::string(what) + " must be float16, float32 or float64, got " +
                                   dtype_name(t.dtype()));
  }
}

// -- Softmax / LogSoftmax -------------------------------------------------------------------------

void softmax_kernel(KernelContext& ctx, bool log) {
  const Tensor& logits = ctx.inputs[0];
  require_float(ctx, logits, "logits");
  if (logits.ndim() < 1) {
    throw_node_error(ctx.node,
                     "logits must have >= 1 dimension, got " + shape_to_string(logits.shape()));
  }
  // Each row is read before it is written, element by element, so the result may go into the
  // input's own buffer when nothing else reads it.
  Tensor* reuse = ctx.forwardable_input(0);
  const bool in_place = reuse != nullptr && reuse->is_contiguous();
  const Tensor x = in_place ? *reuse : logits.contiguous();
  Tensor out = in_place ? std::move(*reuse) : Tensor::empty(x.dtype(), x.shape());
  const std::int64_t n = x.shape().back();
  if (x.numel() > 0) {
    const std::int64_t rows = x.numel() / n;
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const auto& table = best_table<T>();
      const auto fn = log ? table.log_softmax : table.softmax;
      const T* px = x.data<T>();
      T* py = out.data<T>();
      for_row_blocks(ctx.intra_pool, rows, n, [&](std::int64_t r0, std::int64_t r1) {
        fn(px + r0 * n, py + r0 * n, r1 - r0, n);
      });
    });
  }
  ctx.outputs[0] = std::move(out);
}

// -- SoftmaxCrossEntropyWithLogits ----------------------------------------------------------------

void check_matrix(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.ndim() != 2) {
    throw_node_error(ctx.node, std::string(what) + " must be 2-dimensional, got shape " +
                                   shape_to_string(t.shape()));
  }
}

void xent_kernel(KernelContext& ctx) {
  const Tensor& features = ctx.inputs[0];
  const Tensor& labels_in = ctx.inputs[1];
  require_float(ctx, features, "logits");
  if (labels_in.dtype() != features.dtype()) {
    throw_node_error(ctx.node, std::string("logits and labels must have the same dtype, got ") +
                                   dtype_name(features.dtype()) + " and " +
                                   dtype_name(labels_in.dtype()));
  }
  check_matrix(ctx, features, "logits");
  check_matrix(ctx, labels_in, "labels");
  if (features.shape() != labels_in.shape()) {
    throw_node_error(ctx.node, "logits and labels must be same size: logits_size=" +
                                   shape_to_string(features.shape()) +
                                   " labels_size=" + shape_to_string(labels_in.shape()));
  }
  const Tensor x = features.contiguous();
  const Tensor z = labels_in.contiguous();
  const std::int64_t rows = x.shape()[0];
  const std::int64_t n = x.shape()[1];
  Tensor loss = Tensor::empty(x.dtype(), {rows});
  Tensor backprop = Tensor::empty(x.dtype(), x.shape());
  if (n == 0) {
    // No classes: every row's sum of exps is empty. TensorFlow gives NaN losses here.
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill_n(loss.data<T>(), rows, std::numeric_limits<T>::quiet_NaN());
    });
  } else if (rows > 0) {
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const auto fn = best_table<T>().xent;
      const T* px = x.data<T>();
      const T* pz = z.data<T>();
      T* pl = loss.data<T>();
      T* pb = backprop.data<T>();
      for_row_blocks(ctx.intra_pool, rows, n, [&](std::int64_t r0, std::int64_t r1) {
        fn(px + r0 * n, pz + r0 * n, pl + r0, pb + r0 * n, r1 - r0, n);
      });
    });
  }
  ctx.outputs[0] = std::move(loss);
  ctx.outputs[1] = std::move(backprop);
}

// -- SparseSoftmaxCrossEntropyWithLogits ----------------------------------------------------------

// "Received a label value of 5 which is outside the valid range of [0, 3).  Label values: 0 5 1"
// (TensorFlow's text; the list is cut after 64 values).
[[noreturn]] void bad_label(const KernelContext& ctx, std::int64_t value, std::int64_t n,
                            const std::vector<std::int64_t>& labels) {
  std::string msg = "Received a label value of " + std::to_string(value) +
                    " which is outside the valid range of [0, " + std::to_string(n) +
                    ").  Label values:";
  const std::size_t shown = std::min<std::size_t>(labels.size(), 64);
  for (std::size_t i = 0; i < shown; ++i) msg += " " + std::to_string(labels[i]);
  if (shown < labels.size()) msg += " ...";
  throw_node_error(ctx.node, msg);
}

void sparse_xent_kernel(KernelContext& ctx) {
  const Tensor& features = ctx.inputs[0];
  const Tensor& labels_t = ctx.inputs[1];
  require_float(ctx, features, "logits");
  check_matrix(ctx, features, "logits");
  if (labels_t.ndim() != 1) {
    throw_node_error(ctx.node,
                     "labels must be 1-D, but got shape " + shape_to_string(labels_t.shape()));
  }
  if (labels_t.shape()[0] != features.shape()[0]) {
    throw_node_error(ctx.node,
                     "logits and labels must have the same first dimension, got "
                     "logits shape " +
                         shape_to_string(features.shape()) + " and labels shape " +
                         shape_to_string(labels_t.shape()));
  }
  const std::int64_t rows = features.shape()[0];
  const std::int64_t n = features.shape()[1];
  std::vector<std::int64_t> labels(static_cast<std::size_t>(rows));
  {
    const Tensor c = labels_t.contiguous();
    kernel_detail::dispatch_index(c.dtype(), [&](auto tag) {
      using I = typename decltype(tag)::type;
      const I* p = c.data<I>();
      for (std::size_t k = 0; k < labels.size(); ++k) labels[k] = static_cast<std::int64_t>(p[k]);
    });
  }
  for (const std::int64_t v : labels) {
    if (v < 0 || v >= n) bad_label(ctx, v, n, labels);
  }
  const Tensor x = features.contiguous();
  Tensor loss = Tensor::empty(x.dtype(), {rows});
  Tensor backprop = Tensor::empty(x.dtype(), x.shape());
  if (rows > 0) {
    dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const auto fn = best_table<T>().sparse_xent;
      const T* px = x.data<T>();
      T* pl = loss.data<T>();
      T* pb = backprop.data<T>();
      for_row_blocks(ctx.intra_pool, rows, n, [&](std::int64_t r0, std::int64_t r1) {
        fn(px + r0 * n, labels.data() + r0, pl + r0, pb + r0 * n, r1 - r0, n);
      });
    });
  }
  ctx.outputs[0] = std::move(loss);
  ctx.outputs[1] = std::move(backprop);
}

// -- L2Loss -------------------------------------------------------------------------------------

// Blocks of a fixed size, combined by parallel_reduce's fixed tree: the sum depends on the size
// only, not on the threads.
constexpr std::int64_t kL2Block = 16 * 1024;

void l2_loss_kernel(KernelContext& ctx) {
  const Tensor& t = ctx.inputs[0];
  require_float(ctx, t, "t");
  const Tensor x = t.contiguous();
  Tensor out = Tensor::empty(x.dtype(), {});
  dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto fn = best_table<T>().sum_squares;
    const T* px = x.data<T>();
    ThreadPool* pool = x.numel() < kRowsParallelElements * 4 ? nullptr : ctx.intra_pool;
    const T sum = parallel_reduce<T>(
        pool, 0, x.numel(), kL2Block, T(0),
        [&](std::int64_t b, std::int64_t e) { return fn(px + b, e - b); },
        [](T a, T b) { return a + b; }, 1.0);
    *out.data<T>() = sum * T(0.5);
  });
  ctx.outputs[0] = std::move(out);
}

}  // namespace

void register_softmax_kernels() {
  const bool half = true;  // float16 is computed in float32 and rounded back, as TensorFlow does
  register_kernel("Softmax", {[](const NodeDef&) -> Kernel {
                                return [](KernelContext& ctx) { softmax_kernel(ctx, false); };
                              },
                              CostHint::kMeasure, false, half});
  register_kernel("LogSoftmax", {[](const NodeDef&) -> Kernel {
                                   return [](KernelContext& ctx) { softmax_kernel(ctx, true); };
                                 },
                                 CostHint::kMeasure, false, half});
  register_kernel(
      "SoftmaxCrossEntropyWithLogits",
      {[](const NodeDef&) -> Kernel { return xent_kernel; }, CostHint::kMeasure, false, half});
  register_kernel("SparseSoftmaxCrossEntropyWithLogits",
                  {[](const NodeDef&) -> Kernel { return sparse_xent_kernel; }, CostHint::kMeasure,
                   false, half});
  register_kernel("L2Loss", {[](const NodeDef&) -> Kernel { return l2_loss_kernel; },
                             CostHint::kMeasure, false, half});
}

}  // namespace opweave
