// The GEMM epilogue: bias and activation applied to a block of C right after its last K block,
// while the block is still in L1. Each formula is the op's own, in the same order (c + bias[j],
// then the activation), compiled like the op (baseline flags, no contraction into FMA), and the
// table-driven ones (Sigmoid, Tanh) call the very loops the element-wise ops run: a fused node
// gives the bits of the nodes it replaces.
#include <type_traits>

#include "opweave/kernels/gemm.h"
#include "opweave/kernels/unary_math_loops.h"
#include "opweave/kernels/vector_math.h"

namespace opweave::gemm_detail {

namespace {

namespace vm = vector_math;

// f on every element of a rows x cols block (row stride ldc): one loop over a contiguous block (a
// tile of C written through a scratch tile), else a loop per row.
template <typename T, typename F>
inline void each(T* c, std::int64_t rows, std::int64_t cols, std::int64_t ldc, F f) {
  if (ldc == cols) {
    cols *= rows;
    rows = 1;
  }
  for (std::int64_t i = 0; i < rows; ++i) {
    T* r = c + i * ldc;
    for (std::int64_t j = 0; j < cols; ++j) r[j] = f(r[j]);
  }
}

template <typename T>
inline void each_row(T* c, std::int64_t rows, std::int64_t cols, std::int64_t ldc,
                     unary_math::RunFn<T> fn) {
  if (ldc == cols) {
    fn(c, 1, c, rows * cols);
    return;
  }
  for (std::int64_t i = 0; i < rows; ++i) fn(c + i * ldc, 1, c + i * ldc, cols);
}

}  // namespace

// The bias for all rows, then the activation over the whole block: one dispatch per block, not per
// row (a 12 x 32 tile of a convolution is 12 short rows).
template <typename T>
void apply_epilogue(const Epilogue<T>& ep, std::int64_t rows, std::int64_t cols, std::int64_t j0,
                    T* c, std::int64_t ldc) {
  if (rows <= 0 || cols <= 0) return;
  if (ep.bias != nullptr) {
    const T* b = ep.bias + j0;
    for (std::int64_t i = 0; i < rows; ++i) {
      T* r = c + i * ldc;
      // BiasAdd's and Add's expression: value + bias.
      for (std::int64_t j = 0; j < cols; ++j) r[j] = r[j] + b[j];
    }
  }
  const T alpha = ep.alpha;
  switch (ep.activation) {
    case Activation::kNone:
      break;
    // Bit-mask selects (the same values as ?:): GCC keeps ?: on floats a branch, which
    // mispredicts on every other element of a layer's output.
    case Activation::kRelu:
      each(c, rows, cols, ldc, [](T v) { return vm::select<T>(v < T(0), T(0), v); });
      break;
    case Activation::kRelu6:
      each(c, rows, cols, ldc,
           [](T x) { return vm::select<T>(x < T(0), T(0), vm::select<T>(x > T(6), T(6), x)); });
      break;
    case Activation::kElu:
      each(c, rows, cols, ldc,
           [](T x) { return vm::select<T>(x < T(0), vm::expm1_nonpositive<T>(x), x); });
      break;
    case Activation::kLeakyRelu:
      each(c, rows, cols, ldc, [alpha](T x) { return vm::select<T>(x > T(0), x, x * alpha); });
      break;
    case Activation::kSigmoid:
      each_row(c, rows, cols, ldc, unary_math::selected_table<T>().sigmoid);
      break;
    case Activation::kTanh:
      each_row(c, rows, cols, ldc, unary_math::selected_table<T>().tanh);
      break;
  }
}

template void apply_epilogue<float>(const Epilogue<float>&, std::int64_t, std::int64_t,
                                    std::int64_t, float*, std::int64_t);
template void apply_epilogue<double>(const Epilogue<double>&, std::int64_t, std::int64_t,
                                     std::int64_t, double*, std::int64_t);

}  // namespace opweave::gemm_detail
