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

template <typename T, typename F>
inline void each(T* r, std::int64_t cols, F f) {
  for (std::int64_t j = 0; j < cols; ++j) r[j] = f(r[j]);
}

}  // namespace

template <typename T>
void apply_epilogue(const Epilogue<T>& ep, std::int64_t rows, std::int64_t cols, std::int64_t j0,
                    T* c, std::int64_t ldc) {
  if (rows <= 0 || cols <= 0) return;
  const unary_math::Table<T>& table = unary_math::selected_table<T>();
  const T alpha = ep.alpha;
  for (std::int64_t i = 0; i < rows; ++i) {
    T* r = c + i * ldc;
    if (ep.bias != nullptr) {
      const T* b = ep.bias + j0;
      // BiasAdd's and Add's expression: value + bias.
      for (std::int64_t j = 0; j < cols; ++j) r[j] = r[j] + b[j];
    }
    switch (ep.activation) {
      case Activation::kNone:
        break;
      case Activation::kRelu:
        each(r, cols, [](T v) { return v < T(0) ? T(0) : v; });
        break;
      case Activation::kRelu6:
        each(r, cols, [](T x) { return x < T(0) ? T(0) : (x > T(6) ? T(6) : x); });
        break;
      case Activation::kElu:
        each(r, cols, [](T x) { return vm::select<T>(x < T(0), vm::expm1_nonpositive<T>(x), x); });
        break;
      case Activation::kLeakyRelu:
        each(r, cols, [alpha](T x) { return x > T(0) ? x : x * alpha; });
        break;
      case Activation::kSigmoid:
        table.sigmoid(r, 1, r, cols);
        break;
      case Activation::kTanh:
        table.tanh(r, 1, r, cols);
        break;
    }
  }
}

template void apply_epilogue<float>(const Epilogue<float>&, std::int64_t, std::int64_t,
                                    std::int64_t, float*, std::int64_t);
template void apply_epilogue<double>(const Epilogue<double>&, std::int64_t, std::int64_t,
                                     std::int64_t, double*, std::int64_t);

}  // namespace opweave::gemm_detail
