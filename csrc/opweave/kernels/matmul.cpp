// matmul: NumPy matmul semantics (1-D promotion, broadcast batch dims) plus optional transposes
// of the two innermost dims, on top of gemm(). Transposes and any input strides are folded into
// the strided matrix views, never copied: the packing step reads any layout.
#include <algorithm>
#include <string>
#include <type_traits>

#include "opweave/kernels/gemm.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace {

struct MatmulPlan {
  Shape batch;   // broadcast batch shape
  Shape result;  // final result shape (promoted dims removed)
  std::int64_t m, n, k;
  // Matrix views: row/col strides of the (transposed) 2-D operand and per-batch-dim strides.
  std::int64_t a_rs, a_cs, b_rs, b_cs;
  Shape a_batch_strides, b_batch_strides;
};

[[noreturn]] void matmul_error(const std::string& what, const Shape& a, const Shape& b, bool ta,
                               bool tb) {
  throw_invalid_argument("matmul: " + what + ": a " + shape_to_string(a) +
                         (ta ? " (transposed)" : "") + ", b " + shape_to_string(b) +
                         (tb ? " (transposed)" : ""));
}

MatmulPlan plan_matmul(const Shape& a_shape, const Shape& a_strides, const Shape& b_shape,
                       const Shape& b_strides, bool ta, bool tb) {
  if (a_shape.empty() || b_shape.empty()) {
    matmul_error("operands must have rank >= 1", a_shape, b_shape, ta, tb);
  }
  // Promote 1-D operands: a -> [1, k], b -> [k, 1] (a vector has no orientation to transpose).
  Shape as = a_shape, ast = a_strides, bs = b_shape, bst = b_strides;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) {
    as.insert(as.begin(), 1);
    ast.insert(ast.begin(), 0);
    ta = false;
  }
  if (b_vec) {
    bs.push_back(1);
    bst.push_back(0);
    tb = false;
  }
  const std::size_t ar = as.size(), br = bs.size();
  MatmulPlan plan;
  plan.m = ta ? as[ar - 1] : as[ar - 2];
  const std::int64_t ka = ta ? as[ar - 2] : as[ar - 1];
  const std::int64_t kb = tb ? bs[br - 1] : bs[br - 2];
  plan.n = tb ? bs[br - 2] : bs[br - 1];
  if (ka != kb) {
    matmul_error(
        "inner dimensions differ (" + std::to_string(ka) + " vs " + std::to_string(kb) + ")",
        a_shape, b_shape, ta, tb);
  }
  plan.k = ka;
  plan.a_rs = ta ? ast[ar - 1] : ast[ar - 2];
  plan.a_cs = ta ? ast[ar - 2] : ast[ar - 1];
  plan.b_rs = tb ? bst[br - 1] : bst[br - 2];
  plan.b_cs = tb ? bst[br - 2] : bst[br - 1];
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  try {
    plan.batch = broadcast_shapes(a_batch, b_batch);
  } catch (const OpError&) {
    matmul_error("batch dimensions do not broadcast", a_shape, b_shape, ta, tb);
  }
  const std::size_t nb = plan.batch.size();
  plan.a_batch_strides.assign(nb, 0);
  plan.b_batch_strides.assign(nb, 0);
  for (std::size_t i = 0; i < a_batch.size(); ++i) {
    plan.a_batch_strides[nb - a_batch.size() + i] = a_batch[i] == 1 ? 0 : ast[i];
  }
  for (std::size_t i = 0; i < b_batch.size(); ++i) {
    plan.b_batch_strides[nb - b_batch.size() + i] = b_batch[i] == 1 ? 0 : bst[i];
  }
  plan.result = plan.batch;
  if (!a_vec) plan.result.push_back(plan.m);
  if (!b_vec) plan.result.push_back(plan.n);
  return plan;
}

// Integer matrices (TensorFlow's int32 / int64 MatMul): a plain i-k-j loop, wrapping like the
// other integer arithmetic, rows of C split over the pool (each element's sum in the same order).
template <typename T>
void int_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t a_rs,
              std::int64_t a_cs, const T* b, std::int64_t b_rs, std::int64_t b_cs, T* c,
              ThreadPool* pool) {
  using U = std::make_unsigned_t<T>;
  parallel_for(
      pool, 0, m, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, n * k)),
      [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) {
          U* row = reinterpret_cast<U*>(c + i * n);
          for (std::int64_t j = 0; j < n; ++j) row[j] = 0;
          for (std::int64_t p = 0; p < k; ++p) {
            const U av = static_cast<U>(a[i * a_rs + p * a_cs]);
            const T* brow = b + p * b_rs;
            for (std::int64_t j = 0; j < n; ++j) row[j] += av * static_cast<U>(brow[j * b_cs]);
          }
        }
      },
      static_cast<double>(n * k));
}

template <typename T>
void run_matmul(const MatmulPlan& plan, const Tensor& a, const Tensor& b, const Tensor& out,
                ThreadPool* pool) {
  const std::int64_t batches = shape_numel(plan.batch);
  const std::int64_t mn = plan.m * plan.n;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = out.data<T>();
  const int nb = static_cast<int>(plan.batch.size());
  auto one = [&](std::int64_t batch, ThreadPool* inner_pool) {
    std::int64_t rem = batch, offa = 0, offb = 0;
    for (int d = nb - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      const std::int64_t idx = rem % plan.batch[du];
      rem /= plan.batch[du];
      offa += idx * plan.a_batch_strides[du];
      offb += idx * plan.b_batch_strides[du];
    }
    if constexpr (std::is_integral_v<T>) {
      int_gemm<T>(plan.m, plan.n, plan.k, pa + offa, plan.a_rs, plan.a_cs, pb + offb, plan.b_rs,
                  plan.b_cs, pc + batch * mn, inner_pool);
    } else {
      gemm_detail::gemm<T>(plan.m, plan.n, plan.k, {pa + offa, plan.a_rs, plan.a_cs},
                           {pb + offb, plan.b_rs, plan.b_cs}, pc + batch * mn, plan.n, inner_pool);
    }
  };
  if (batches > 1 && gemm_detail::gemm_is_small(plan.m, plan.n, plan.k)) {
    // Many small matrices: one thread per matrix (gemm's result does not depend on its pool).
    parallel_for(
        pool, 0, batches, 1,
        [&](std::int64_t b0, std::int64_t b1) {
          for (std::int64_t i = b0; i < b1; ++i) one(i, nullptr);
        },
        2.0 * static_cast<double>(mn) * static_cast<double>(plan.k));
  } else {
    for (std::int64_t i = 0; i < batches; ++i) one(i, pool);
  }
}

void check_dtypes(const Tensor& a, const Tensor& b) {
  const DType d = a.dtype();
  if (d != b.dtype() ||
      (d != DType::kFloat32 && d != DType::kFloat64 && d != DType::kInt32 && d != DType::kInt64)) {
    throw_invalid_argument(std::string("matmul: needs two float32, float64, int32 or int64 "
                                       "operands, got ") +
                           dtype_name(a.dtype()) + " " + shape_to_string(a.shape()) + " and " +
                           dtype_name(b.dtype()) + " " + shape_to_string(b.shape()));
  }
}

}  // namespace

Shape matmul_result_shape(const Shape& a, const Shape& b, bool transpose_a, bool transpose_b) {
  return plan_matmul(a, contiguous_strides(a), b, contiguous_strides(b), transpose_a, transpose_b)
      .result;
}

void matmul_into(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                 const Tensor& out, ThreadPool* pool) {
  check_dtypes(a, b);
  const MatmulPlan plan =
      plan_matmul(a.shape(), a.strides(), b.shape(), b.strides(), transpose_a, transpose_b);
  if (out.dtype() != a.dtype() || out.shape() != plan.result || !out.is_contiguous()) {
    throw_invalid_argument(
        "matmul: out must be a contiguous " + std::string(dtype_name(a.dtype())) +
        " tensor of shape " + shape_to_string(plan.result) + ", got " + dtype_name(out.dtype()) +
        " " + shape_to_string(out.shape()) + (out.is_contiguous() ? "" : " (not contiguous)"));
  }
  if (out.numel() == 0) return;
  switch (a.dtype()) {
    case DType::kFloat32:
      return run_matmul<float>(plan, a, b, out, pool);
    case DType::kFloat64:
      return run_matmul<double>(plan, a, b, out, pool);
    case DType::kInt32:
      return run_matmul<std::int32_t>(plan, a, b, out, pool);
    default:
      return run_matmul<std::int64_t>(plan, a, b, out, pool);
  }
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
              ThreadPool* pool) {
  check_dtypes(a, b);
  const MatmulPlan plan =
      plan_matmul(a.shape(), a.strides(), b.shape(), b.strides(), transpose_a, transpose_b);
  Tensor out = Tensor::empty(a.dtype(), plan.result);
  if (out.numel() == 0) return out;
  matmul_into(a, b, transpose_a, transpose_b, out, pool);
  return out;
}

}  // namespace opweave
