// _FusedElementwise: a chain or tree of element-wise ops run as one loop nest. The graph
// optimizer's elementwise_fusion pass (optimizer/elementwise_fusion.cpp) writes the program; the
// kernel (fused_elementwise.cpp) evaluates it block by block, each block of a few hundred elements
// kept in L1 from the first instruction to the last, with the very element functions the unfused
// kernels use (elementwise_fns.h, the ISA tables of unary_math_loops.h), so the result is the
// unfused graph's, bit for bit, for any thread count.
//
// The node's attributes:
//   T            the float dtype of the program's values (float16, float32, float64); float16
//                values are rounded to float16 after every instruction, as the unfused kernels
//                (computing in float32) store them
//   program      4 integers per instruction: op, then up to three operand registers (-1: none);
//                registers 0..K-1 are the node's K inputs, register K + i instruction i's result;
//                the last instruction's result is the node's output. For LeakyRelu and
//                LeakyReluGrad the last field indexes `immediates` (their alpha).
//   immediates   the instructions' constant attributes (doubles)
//   fused_ops    the op type each instruction stands for (TensorFlow's names)
//   fused_nodes  the node each instruction stands for (errors name it)
//
// Internal to the kernels and the optimizer.
#pragma once

#include <cstdint>
#include <string>

#include "opweave/kernels/elementwise_list.h"

namespace opweave::fused_elementwise {

// The op codes of `program`: the rows of elementwise_list.h (unary, then binary, in their order),
// then the ops the fused loop knows besides. Codes are not stable across builds that add rows.
#define OPWEAVE_FUSED_ENUMERATOR(Name, ...) k##Name,
enum class Op : std::int64_t {
  // value -> value: the unary rows, then the nn activations with an immediate
  OPWEAVE_UNARY_OPS(OPWEAVE_FUSED_ENUMERATOR)  // kNeg ... (one per row)
  kRelu6,
  kLeakyRelu,
  // value x value -> value: the binary rows, then the nn gradients
  OPWEAVE_BINARY_OPS(OPWEAVE_FUSED_ENUMERATOR)  // kAdd ... (one per row)
  kRelu6Grad,
  kLeakyReluGrad,
  // value x value -> bool
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  // bool -> bool, bool x bool -> bool
  kLogicalNot,
  kLogicalAnd,
  kLogicalOr,
  // bool x value x value -> value; value x value x value -> value
  kSelect,    // TensorFlow 1's Select: x and y of one shape, a scalar or same-shape condition
  kSelectV2,  // broadcasting
  kClipByValue,
  kCount,
};
#undef OPWEAVE_FUSED_ENUMERATOR

// What a register holds: a value of the program's dtype, or a bool.
enum class Kind { kValue, kBool };

// How an op's result shape follows from its operands' (the unfused kernel's rules).
enum class ShapeRule {
  kBroadcast,  // NumPy broadcasting (binary, compare, SelectV2)
  kSame,       // the operands must have one shape (the nn gradient ops)
  kSelect,     // TensorFlow 1's Select (a vector condition picking rows is left to the op itself)
  kClip,       // ClipByValue: bounds scalars or of t's shape
};

struct OpInfo {
  Op op;
  const char* type;  // the op type it computes (the first of several, e.g. RealDiv for Div)
  int arity;
  Kind result;
  Kind operand[3];
  ShapeRule shape;
  double cost;     // work per element relative to an add, for splitting over threads
  bool immediate;  // reads an alpha from `immediates`
};

// The op a node of type `type` computes in a fused loop, or null when it cannot be fused.
const OpInfo* find_op(const std::string& type);
const OpInfo& info(Op op);

// One instruction as the kernel keeps it.
struct Instruction {
  Op op;
  int operand[3];  // registers; -1 where the op takes fewer
  double immediate;
};

// One operand of an instruction within a block: element i is p[i * stride], stride 0 or 1.
struct Operand {
  const void* p;
  std::int64_t stride;
};

// The block loops, compiled once per instruction set (fused_elementwise_loops.h): dst[0..n) =
// the instruction applied to its operands' elements 0..n), in the compute type (float for
// float16 and float32 programs).
struct Loops {
  void (*execute_f32)(const Instruction& in, const Operand* operands, void* dst, std::int64_t n);
  void (*execute_f64)(const Instruction& in, const Operand* operands, void* dst, std::int64_t n);
};
Loops loops_baseline();
#if defined(OPWEAVE_X86_64)
Loops loops_avx2();
Loops loops_avx512();
#endif

inline constexpr int kFields = 4;            // per instruction in `program`
inline constexpr int kMaxInstructions = 96;  // per fused node
inline constexpr int kMaxInputs = 24;        // per fused node

}  // namespace opweave::fused_elementwise
