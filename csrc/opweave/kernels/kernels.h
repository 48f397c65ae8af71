// Kernel entry points used by the graph executor and by opweave.kernels.* in Python. Every
// kernel takes the intra-op pool to run on (null = serial in the caller), reads strided inputs,
// and returns a new contiguous tensor unless it has an _into variant. Shape or dtype errors throw
// OpError(kInvalidArgument) with both shapes in the message. All functions are thread-safe.
//
//   Tensor c = matmul(a, b, /*transpose_a=*/false, /*transpose_b=*/true, pool);
//   Tensor s = reduce(ReduceOp::kSum, x, std::vector<int>{1}, /*keepdims=*/false, pool);
#pragma once

#include <optional>
#include <vector>

#include "opweave/kernels/elementwise_list.h"
#include "opweave/tensor.h"
#include "opweave/thread_pool.h"

namespace opweave {

// The element-wise math ops: one enumerator per row of elementwise_list.h (which also says which
// dtypes each takes).
// kDiv: true division for floats, floor division for integers (opweave.kernels.div);
// kFloorDiv: floor(a / b) for every type (TensorFlow's FloorDiv); kTruncDiv: C++ division, which
// truncates integers toward zero (TensorFlow's Div).
// kReluGrad: a where b > 0, else 0 (a = the gradient, b = Relu's input).
// kPow: C's pow for floats; integers by repeated squaring (wrapping), a negative exponent is
// kInvalidArgument. kFloorMod: TensorFlow's FloorMod, the remainder with the divisor's sign
// (integer division by zero is kInvalidArgument). kSquaredDifference: (a - b)^2.
#define OPWEAVE_ELEMENTWISE_ENUMERATOR(Name, ...) k##Name,
enum class BinaryOp { OPWEAVE_BINARY_OPS(OPWEAVE_ELEMENTWISE_ENUMERATOR) };
enum class CompareOp { kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual };
// kRound: half to even; kSign of a float zero is +0, of NaN NaN; kLogicalNot takes bool only.
enum class UnaryOp { OPWEAVE_UNARY_OPS(OPWEAVE_ELEMENTWISE_ENUMERATOR) kLogicalNot };
#undef OPWEAVE_ELEMENTWISE_ENUMERATOR
enum class PredicateOp { kIsNan, kIsInf, kIsFinite };
enum class ReduceOp { kSum, kMean, kMax, kMin, kProd };

// NumPy broadcasting of two shapes; throws kInvalidArgument naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// NumPy matmul semantics (rank >= 1; 1-D operands are promoted and the added dim removed;
// leading dims broadcast), with optional transposition of the two innermost dims of a and b.
// float32, float64, int32 or int64 (integers wrap); a and b must have the same dtype. The result is
// bit-identical for any pool size (threads split rows of C, never the K loop).
Shape matmul_result_shape(const Shape& a, const Shape& b, bool transpose_a, bool transpose_b);
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
              ThreadPool* pool);
// Writes into out, which must be contiguous with the result's shape and dtype.
void matmul_into(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
                 const Tensor& out, ThreadPool* pool);

// Reductions over `axes` (negative axes allowed; nullopt = all axes; an empty list = none).
// Same dtype as the input; integer sums and products wrap in that dtype, integer means are
// computed in int64 and truncate toward zero (as TensorFlow does); bool input: sum/mean/prod are
// not supported, max = any, min = all. Results are bit-identical for any pool size. NaN propagates
// as in NumPy. Reducing an empty axis gives the identity: sum 0, prod 1, mean NaN (an integer
// mean is kInvalidArgument), max the lowest value, min the highest.
Tensor reduce(ReduceOp op, const Tensor& x, const std::optional<std::vector<int>>& axes,
              bool keepdims, ThreadPool* pool);

// TensorFlow's ArgMax (is_max) / ArgMin along `axis`: the index of the first largest (smallest)
// element; NaN never wins, and a row where nothing beats the lowest (highest) value, such as one
// of NaN only, gives 0 -- TensorFlow's CPU results. out_dtype is int16, int32 or int64. An empty
// axis is kInvalidArgument (unless the result is empty too). Bit-identical for any pool size.
Tensor arg_reduce(bool is_max, const Tensor& x, int axis, DType out_dtype, ThreadPool* pool);

// TensorFlow's Cumsum (is_product false) / Cumprod along `axis`: exclusive leaves the element
// itself out (the first output is 0 or 1), reverse scans from the end. Integers wrap. The same
// bits for any pool size: long rows are cut into fixed blocks whose totals are combined in order.
Tensor scan(bool is_product, const Tensor& x, int axis, bool exclusive, bool reverse,
            ThreadPool* pool);

// Element-wise with broadcasting; both inputs must have the same dtype (no implicit promotion,
// as in TensorFlow). Integer kDiv is floor division; dividing an integer by zero throws
// kInvalidArgument("Integer division by zero").
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, ThreadPool* pool);
// The ops whose row in elementwise_list.h says kNumbers take any numeric dtype (abs and neg wrap,
// round of an integer is itself), kLogicalNot bool only, the others a floating dtype.
Tensor unary(UnaryOp op, const Tensor& x, ThreadPool* pool);
// isnan / isinf / isfinite of a float32 or float64 tensor: a bool tensor of its shape.
Tensor predicate(PredicateOp op, const Tensor& x, ThreadPool* pool);
// Buffer forwarding (as TensorFlow's forward_input): binary() and unary() computed into an
// input's own buffer, with the same results. binary_in_place writes op(a, b) into a (into = 0) or
// b (into = 1). Both return false, touching nothing, unless that input is contiguous and non-empty
// and the result has exactly its shape and dtype (the other operand broadcasts to it); errors are
// left to binary()/unary(). The caller must be the only owner of the buffer.
bool binary_in_place(BinaryOp op, const Tensor& a, const Tensor& b, int into, ThreadPool* pool);
bool unary_in_place(UnaryOp op, const Tensor& x, ThreadPool* pool);
// a op b element-wise with broadcasting, a bool result; both inputs of one dtype (strings only for
// kEqual / kNotEqual). NaN compares unequal to everything, as in NumPy.
Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, ThreadPool* pool);
// condition ? x : y element-wise, the three broadcast together (condition is bool).
Tensor select(const Tensor& condition, const Tensor& x, const Tensor& y, ThreadPool* pool);
// TensorFlow 1's Select: x and y of one shape; condition a scalar, x's shape, or a vector along
// x's first dimension (choosing whole rows). Other shapes are kInvalidArgument.
Tensor select_rows(const Tensor& condition, const Tensor& x, const Tensor& y, ThreadPool* pool);
// TensorFlow's Where with one input: the coordinates of the true (bool) or non-zero elements of
// x, an int64 [count, rank] tensor in row-major order. Rank 0 is kInvalidArgument, as in
// TensorFlow.
Tensor where_indices(const Tensor& x, ThreadPool* pool);
// TensorFlow's ClipByValue: max(min(t, hi), lo) element-wise (NaN propagates); lo and hi are
// scalars or have t's shape, and share its dtype.
Tensor clip_by_value(const Tensor& t, const Tensor& lo, const Tensor& hi, ThreadPool* pool);
// `x` broadcast (NumPy rules) to `shape`, materialised contiguously.
Tensor broadcast_to(const Tensor& x, const Shape& shape, ThreadPool* pool);
// Sum of same-shape, same-dtype tensors.
Tensor add_n(const std::vector<Tensor>& inputs, ThreadPool* pool);
// NumPy astype semantics (float -> int truncates; bool -> 0/1; x != 0 -> true).
Tensor cast(const Tensor& x, DType to, ThreadPool* pool);
// Permutes dimensions and materialises a contiguous result (perm empty = reverse).
Tensor transpose(const Tensor& x, const std::vector<int>& perm, ThreadPool* pool);

}  // namespace opweave
