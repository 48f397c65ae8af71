// Element-wise binary ops (with NumPy broadcasting), unary ops and add_n: the rows of
// elementwise_list.h, whose float loops are the ISA table's (unary_math_loops.h) and integer ones
// elementwise_fns.h's. Inputs are read through their strides; the output is a new contiguous
// tensor. Large outputs are split across the pool in
// contiguous chunks: each element is computed by the same expression whoever runs it, so the
// result never depends on the thread count.
#include <cmath>
#include <limits>
#include <type_traits>

#include "opweave/cpu_info.h"
#include "opweave/kernels/elementwise_fns.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/kernels/unary_math_loops.h"
#include "opweave/kernels/vector_math.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

using kernel_detail::dispatch_all;
using kernel_detail::for_elements;
using kernel_detail::kElementwiseParallelThreshold;
using kernel_detail::StridedLoop;

// What a row of elementwise_list.h says about its op, indexed by the enumerator.
struct OpFacts {
  const char* name;    // in error messages
  double cost;         // work per element relative to an add
  ElementTypes types;  // the dtypes it takes
};

#define OPWEAVE_FACTS(Name, name, type, cost, types, loop) {#name, cost, ElementTypes::types},
constexpr OpFacts kBinaryFacts[] = {OPWEAVE_BINARY_OPS(OPWEAVE_FACTS)};
constexpr OpFacts kUnaryFacts[] = {
    OPWEAVE_UNARY_OPS(OPWEAVE_FACTS)  // one per row, then the op on bool
    {"logical_not", 1.0, ElementTypes::kAll}};
#undef OPWEAVE_FACTS

constexpr const OpFacts& facts(BinaryOp op) { return kBinaryFacts[static_cast<int>(op)]; }
constexpr const OpFacts& facts(UnaryOp op) { return kUnaryFacts[static_cast<int>(op)]; }

using namespace elementwise_fns;  // NOLINT: the shared element functions

template <typename T>
unary_math::Table<T> select_math_table() {
#if defined(OPWEAVE_X86_64)
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx512_files()) {
    if constexpr (std::is_same_v<T, float>) return unary_math::table_avx512_f32();
    if constexpr (std::is_same_v<T, double>) return unary_math::table_avx512_f64();
  }
  if (isa.can_run_avx2_files()) {
    if constexpr (std::is_same_v<T, float>) return unary_math::table_avx2_f32();
    if constexpr (std::is_same_v<T, double>) return unary_math::table_avx2_f64();
  }
#endif
  if constexpr (std::is_same_v<T, float>) {
    return unary_math::table_baseline_f32();
  } else {
    return unary_math::table_baseline_f64();
  }
}

// Chosen at load time, not on first use: see fork_guard.h.
const unary_math::Table<float> g_math_f32 = select_math_table<float>();
const unary_math::Table<double> g_math_f64 = select_math_table<double>();

// The float loop of a binary op: the ISA table's (elementwise_list.h).
template <BinaryOp Op, typename T>
unary_math::BinaryRunFn<T> table_binary() {
  const unary_math::Table<T>& t = math_table<T>();
#define OPWEAVE_TABLE_LOOP(Name, name, ...) \
  if constexpr (Op == BinaryOp::k##Name) return t.name;
  OPWEAVE_BINARY_OPS(OPWEAVE_TABLE_LOOP)
#undef OPWEAVE_TABLE_LOOP
  return nullptr;
}

// Floats: the ISA table's loop. Integers and bool: the three inner-loop shapes worth
// specialising (both inputs contiguous, one a broadcast scalar), written as plain indexed loops so
// the compiler vectorises them.
template <BinaryOp Op, typename T>
void binary_run(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* out, std::int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    table_binary<Op, T>()(a, sa, b, sb, out, n);
    return;
  }
  using F = BinaryFn<Op, T>;
  if (sa == 1 && sb == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = F::apply(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (std::int64_t i = 0; i < n; ++i) out[i] = F::apply(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (std::int64_t i = 0; i < n; ++i) out[i] = F::apply(av, b[i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i] = F::apply(a[i * sa], b[i * sb]);
  }
}

// Element stride of an operand read along the flat index of a contiguous output of `numel`
// elements, when one exists: 1 when it is laid out like the output, 0 when it is one element
// broadcast to all; -1 otherwise (the strided path handles it).
inline std::int64_t flat_stride(const Tensor& t, std::int64_t numel) {
  if (t.numel() == numel && t.is_contiguous()) return 1;
  return t.numel() == 1 ? 0 : -1;
}

// out[i] = op(a[i * sa], b[i * sb]) for i < n, with sa, sb in {0, 1}. out may be a or b itself
// (same index: each element is read before it is written).
// Elements of work an element of op costs, relative to an add; the polynomial and remainder ops
// are worth splitting over threads at smaller sizes.
template <BinaryOp Op>
constexpr double kBinaryCost = facts(Op).cost;
template <BinaryOp Op>
constexpr std::int64_t kBinaryThreshold =
    kBinaryCost<Op> > 1.0 ? kElementwiseParallelThreshold / 8 : kElementwiseParallelThreshold;

template <BinaryOp Op, typename T>
void binary_flat(const T* pa, std::int64_t sa, const T* pb, std::int64_t sb, T* po, std::int64_t n,
                 ThreadPool* pool) {
  auto flat = [&](std::int64_t begin, std::int64_t end) {
    binary_run<Op, T>(pa + begin * sa, sa, pb + begin * sb, sb, po + begin, end - begin);
  };
  for_elements(pool, n, kBinaryThreshold<Op>, flat, kBinaryCost<Op>);
}

// Calls fn(std::integral_constant<BinaryOp, op>{}).
template <typename Fn>
void with_binary_op(BinaryOp op, Fn&& fn) {
  switch (op) {
#define OPWEAVE_CASE(Name, ...) \
  case BinaryOp::k##Name:       \
    return fn(std::integral_constant<BinaryOp, BinaryOp::k##Name>{});
    OPWEAVE_BINARY_OPS(OPWEAVE_CASE)
#undef OPWEAVE_CASE
  }
}

// Calls fn(std::integral_constant<UnaryOp, op>{}) for the ops of elementwise_list.h.
template <typename Fn>
void with_unary_op(UnaryOp op, Fn&& fn) {
  switch (op) {
#define OPWEAVE_CASE(Name, ...) \
  case UnaryOp::k##Name:        \
    return fn(std::integral_constant<UnaryOp, UnaryOp::k##Name>{});
    OPWEAVE_UNARY_OPS(OPWEAVE_CASE)
#undef OPWEAVE_CASE
    case UnaryOp::kLogicalNot:
      break;
  }
}

template <BinaryOp Op, typename T>
void binary_typed(const Tensor& a, const Tensor& b, const Tensor& out, ThreadPool* pool) {
  // Both operands flat (the common case, and every tiny op): no stride bookkeeping at all.
  // Each element is computed by the same expression as on the strided path.
  const std::int64_t n = out.numel();
  const std::int64_t fa = flat_stride(a, n);
  const std::int64_t fb = flat_stride(b, n);
  if (fa >= 0 && fb >= 0) {
    binary_flat<Op, T>(a.data<T>(), fa, b.data<T>(), fb, out.data<T>(), n, pool);
    return;
  }
  const StridedLoop<2> loop(out.shape(), {kernel_detail::broadcast_strides(a, out.shape()),
                                          kernel_detail::broadcast_strides(b, out.shape())});
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  auto body = [&](std::int64_t begin, std::int64_t end) {
    loop.run(begin, end,
             [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
               binary_run<Op, T>(pa + off[0], st[0], pb + off[1], st[1], po + o, n);
             });
  };
  for_elements(pool, loop.numel, kBinaryThreshold<Op>, body, kBinaryCost<Op>);
}

template <typename T, typename Fn>
void unary_loop(const Tensor& x, const Tensor& out, ThreadPool* pool, Fn fn, double cost) {
  const std::int64_t threshold =
      cost > 1.0 ? kElementwiseParallelThreshold / 8 : kElementwiseParallelThreshold;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  if (x.is_contiguous()) {  // no stride bookkeeping; the same expression per element
    auto flat = [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) po[i] = fn(px[i]);
    };
    for_elements(pool, x.numel(), threshold, flat, cost);
    return;
  }
  const StridedLoop<1> loop(out.shape(), {x.strides()});
  auto body = [&](std::int64_t begin, std::int64_t end) {
    loop.run(begin, end,
             [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
               const T* src = px + off[0];
               T* dst = po + o;
               if (st[0] == 1) {
                 for (std::int64_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
               } else {
                 for (std::int64_t i = 0; i < n; ++i) dst[i] = fn(src[i * st[0]]);
               }
             });
  };
  for_elements(pool, loop.numel, threshold, body, cost);
}

// unary_loop for the transcendental ops: each contiguous or strided run goes to a loop from the
// ISA-specific table (unary_math_loops.h).
template <typename T>
void unary_runs(const Tensor& x, const Tensor& out, ThreadPool* pool, unary_math::RunFn<T> fn,
                double cost) {
  const std::int64_t threshold =
      cost > 1.0 ? kElementwiseParallelThreshold / 8 : kElementwiseParallelThreshold;
  const T* px = x.data<T>();
  T* po = out.data<T>();
  if (x.is_contiguous()) {  // one run per chunk, no stride bookkeeping
    auto flat = [&](std::int64_t begin, std::int64_t end) {
      fn(px + begin, 1, po + begin, end - begin);
    };
    for_elements(pool, x.numel(), threshold, flat, cost);
    return;
  }
  const StridedLoop<1> loop(out.shape(), {x.strides()});
  auto body = [&](std::int64_t begin, std::int64_t end) {
    loop.run(begin, end,
             [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st, std::int64_t n) {
               fn(px + off[0], st[0], po + o, n);
             });
  };
  for_elements(pool, loop.numel, threshold, body, cost);
}

}  // namespace

const unary_math::Table<float>& elementwise_fns::math_table_f32() { return g_math_f32; }
const unary_math::Table<double>& elementwise_fns::math_table_f64() { return g_math_f64; }
namespace unary_math {
template <>
const Table<float>& selected_table<float>() {
  return g_math_f32;
}
template <>
const Table<double>& selected_table<double>() {
  return g_math_f64;
}
}  // namespace unary_math

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, ThreadPool* pool) {
  const char* name = facts(op).name;
  if (a.dtype() != b.dtype()) {
    throw_invalid_argument(std::string(name) + ": both inputs must have the same dtype, got " +
                           dtype_name(a.dtype()) + " " + shape_to_string(a.shape()) + " and " +
                           dtype_name(b.dtype()) + " " + shape_to_string(b.shape()));
  }
  if ((a.dtype() == DType::kBool && facts(op).types != ElementTypes::kAll) ||
      (!dtype_is_floating(a.dtype()) && facts(op).types == ElementTypes::kFloats)) {
    throw_invalid_argument(
        std::string(name) + " does not support " +
        (a.dtype() == DType::kBool ? std::string("bool inputs")
                                   : std::string("dtype ") + dtype_name(a.dtype())) +
        " (shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) + ")");
  }
  // The result has one operand's shape when the shapes match or the other is one element of no
  // higher rank (x + 1.0): no broadcasting to work out.
  const Shape* same = nullptr;
  if (a.shape() == b.shape() || (b.numel() == 1 && b.ndim() <= a.ndim())) {
    same = &a.shape();
  } else if (a.numel() == 1 && a.ndim() <= b.ndim()) {
    same = &b.shape();
  }
  Shape out_shape;
  if (same == nullptr) {
    try {
      out_shape = broadcast_shapes(a.shape(), b.shape());
    } catch (const OpError& e) {
      throw_invalid_argument(std::string(name) + ": " + e.what());
    }
  }
  Tensor out =
      same ? Tensor::empty(a.dtype(), *same) : Tensor::empty(a.dtype(), std::move(out_shape));
  if (out.numel() == 0) return out;
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_binary_op(op, [&](auto kind) { binary_typed<decltype(kind)::value, T>(a, b, out, pool); });
  });
  return out;
}

bool binary_in_place(BinaryOp op, const Tensor& a, const Tensor& b, int into, ThreadPool* pool) {
  const Tensor& target = into == 0 ? a : b;
  const Tensor& other = into == 0 ? b : a;
  // Bool, mixed and unsupported dtypes: binary() has the rules and the error messages.
  if (a.dtype() != b.dtype() || a.dtype() == DType::kBool) return false;
  if (!dtype_is_floating(a.dtype()) && facts(op).types == ElementTypes::kFloats) return false;
  if (target.numel() == 0 || !target.is_contiguous()) return false;
  // The result must have the target's shape: the other operand has the same shape, is one
  // element of no higher rank, or broadcasts to the target's shape (a bias row).
  if (other.shape() != target.shape() && !(other.numel() == 1 && other.ndim() <= target.ndim())) {
    if (other.ndim() > target.ndim()) return false;
    for (int i = 1; i <= other.ndim(); ++i) {
      const std::int64_t d = other.dim(other.ndim() - i);
      if (d != 1 && d != target.dim(target.ndim() - i)) return false;
    }
  }
  // The target is contiguous with the result's shape, so each element is read at the index it is
  // written to, on the flat and on the strided path alike.
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_binary_op(op,
                   [&](auto kind) { binary_typed<decltype(kind)::value, T>(a, b, target, pool); });
  });
  return true;
}

namespace {

bool unary_supports(UnaryOp op, DType dtype) {
  if (op == UnaryOp::kLogicalNot) return dtype == DType::kBool;
  return dtype != DType::kBool &&
         (dtype_is_floating(dtype) || facts(op).types != ElementTypes::kFloats);
}

// The loop of a float op from the ISA-specific table.
template <typename T>
unary_math::RunFn<T> table_unary(UnaryOp op) {
  const unary_math::Table<T>& t = math_table<T>();
  switch (op) {
#define OPWEAVE_CASE(Name, name, ...) \
  case UnaryOp::k##Name:              \
    return t.name;
    OPWEAVE_UNARY_OPS(OPWEAVE_CASE)
#undef OPWEAVE_CASE
    case UnaryOp::kLogicalNot:
      break;
  }
  return nullptr;
}

// out = op(x) for a supported dtype and a non-empty x; out is contiguous with x's shape and may
// be x itself when x is contiguous (each element is read before it is written).
void unary_into(UnaryOp op, const Tensor& x, const Tensor& out, ThreadPool* pool) {
  const double cost = facts(op).cost;
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      // kLogicalNot, the one op on bool (unary_supports).
      unary_loop<T>(x, out, pool, [](T v) { return !v; }, cost);
    } else if constexpr (std::is_floating_point_v<T>) {
      unary_runs<T>(x, out, pool, table_unary<T>(op), cost);
    } else {
      with_unary_op(op, [&](auto kind) {
        constexpr UnaryOp kOp = decltype(kind)::value;
        // Float-only ops never get here (unary_supports).
        if constexpr (facts(kOp).types != ElementTypes::kFloats) {
          unary_loop<T>(x, out, pool, [](T v) { return IntUnaryFn<kOp, T>::apply(v); }, cost);
        }
      });
    }
  });
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x, ThreadPool* pool) {
  if (!unary_supports(op, x.dtype())) {
    throw_invalid_argument(std::string(facts(op).name) + " does not support dtype " +
                           dtype_name(x.dtype()) + " (input shape " + shape_to_string(x.shape()) +
                           ")");
  }
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  if (out.numel() > 0) unary_into(op, x, out, pool);
  return out;
}

bool unary_in_place(UnaryOp op, const Tensor& x, ThreadPool* pool) {
  if (!unary_supports(op, x.dtype()) || x.numel() == 0 || !x.is_contiguous()) return false;
  unary_into(op, x, x, pool);
  return true;
}

Tensor predicate(PredicateOp op, const Tensor& x, ThreadPool* pool) {
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) {
    throw_invalid_argument(std::string("is_nan / is_inf / is_finite need a floating dtype, got ") +
                           dtype_name(x.dtype()) + " (input shape " + shape_to_string(x.shape()) +
                           ")");
  }
  Tensor out = Tensor::empty(DType::kBool, x.shape());
  if (out.numel() == 0) return out;
  kernel_detail::dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unary_math::Table<T>& t = math_table<T>();
    const unary_math::PredicateRunFn<T> fn = op == PredicateOp::kIsNan   ? t.is_nan
                                             : op == PredicateOp::kIsInf ? t.is_inf
                                                                         : t.is_finite;
    const T* px = x.data<T>();
    bool* po = out.data<bool>();
    const StridedLoop<1> loop(out.shape(), {x.strides()});
    auto body = [&](std::int64_t begin, std::int64_t end) {
      loop.run(begin, end,
               [&](std::int64_t o, const std::int64_t* off, const std::int64_t* st,
                   std::int64_t n) { fn(px + off[0], st[0], po + o, n); });
    };
    for_elements(pool, loop.numel, kElementwiseParallelThreshold, body, 1.0);
  });
  return out;
}

Tensor add_n(const std::vector<Tensor>& inputs, ThreadPool* pool) {
  if (inputs.empty()) throw_invalid_argument("add_n: needs at least one input");
  const Tensor& first = inputs.front();
  for (const Tensor& t : inputs) {
    if (t.dtype() != first.dtype() || t.shape() != first.shape()) {
      throw_invalid_argument("add_n: all inputs must have the same shape and dtype, got " +
                             std::string(dtype_name(first.dtype())) + " " +
                             shape_to_string(first.shape()) + " and " + dtype_name(t.dtype()) +
                             " " + shape_to_string(t.shape()));
    }
  }
  if (first.dtype() == DType::kBool) {
    throw_invalid_argument("add_n does not support dtype bool (shape " +
                           shape_to_string(first.shape()) + ")");
  }
  std::vector<Tensor> dense;
  dense.reserve(inputs.size());
  for (const Tensor& t : inputs) dense.push_back(t.contiguous());
  Tensor out = Tensor::empty(first.dtype(), first.shape());
  const std::int64_t n = out.numel();
  if (n == 0) return out;
  dispatch_all(first.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      T* po = out.data<T>();
      // Inputs are added in order (((x0 + x1) + x2) + ...), the same order for every element.
      auto body = [&](std::int64_t b, std::int64_t e) {
        const T* p0 = dense[0].data<T>();
        for (std::int64_t i = b; i < e; ++i) po[i] = p0[i];
        for (std::size_t k = 1; k < dense.size(); ++k) {
          const T* pk = dense[k].data<T>();
          for (std::int64_t i = b; i < e; ++i)
            po[i] = BinaryFn<BinaryOp::kAdd, T>::apply(po[i], pk[i]);
        }
      };
      for_elements(pool, n, kElementwiseParallelThreshold, body, static_cast<double>(dense.size()));
    }
  });
  return out;
}

}  // namespace opweave
