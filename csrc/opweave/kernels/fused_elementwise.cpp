// The _FusedElementwise kernel (fused_elementwise.h): one loop nest over the output, cut into
// blocks of kBlock elements; for each block every instruction of the program runs over the block
// (its operands and result held in small L1-resident slots), and the last one writes the output.
// Each element goes through the same functions, in the same order, as in the unfused graph: the
// ISA-selected loops of unary_math_loops.h for the rows of elementwise_list.h, the clip function
// of elementwise_fns.h, the same one-line expressions for the comparisons and the nn ops.
// Element i's value depends only on element i of the operands, so the block and thread splits
// never change a bit.
//
// Inputs broadcast to the output's shape: one laid out like the output is read in place, a
// single element is read as a scalar, anything else (a bias row, a column, a transposed view, a
// float16 tensor) is gathered into a slot per block. Shapes are worked out per run by the unfused
// ops' rules; when a run's shapes or dtypes break them (an error to report, or TensorFlow 1's
// Select picking whole rows), the program runs op by op through the registered kernels
// themselves, so the error (naming the inner node) and the result are the unfused graph's.
#include "opweave/kernels/fused_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "opweave/cpu_info.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/half.h"
#include "opweave/kernels/elementwise_fns.h"
#include "opweave/kernels/kernel_util.h"
#include "opweave/kernels/kernels.h"
#include "opweave/parallel_for.h"

namespace opweave {
namespace fused_elementwise {
namespace {

constexpr Kind V = Kind::kValue;
constexpr Kind B = Kind::kBool;
constexpr ShapeRule kBcast = ShapeRule::kBroadcast;

#define OPWEAVE_FUSED_UNARY(Name, name, type, cost, types, loop) \
  {Op::k##Name, type, 1, V, {V, V, V}, kBcast, cost, false},
#define OPWEAVE_FUSED_BINARY(Name, name, type, cost, types, loop) \
  {Op::k##Name, type, 2, V, {V, V, V}, kBcast, cost, false},

// In Op order (info() indexes it; static_asserts below check the order).
constexpr OpInfo kOps[] = {
    OPWEAVE_UNARY_OPS(OPWEAVE_FUSED_UNARY)  // the unary rows of elementwise_list.h
    {Op::kRelu6, "Relu6", 1, V, {V, V, V}, kBcast, 1.0, false},
    {Op::kLeakyRelu, "LeakyRelu", 1, V, {V, V, V}, kBcast, 1.0, true},
    OPWEAVE_BINARY_OPS(OPWEAVE_FUSED_BINARY)  // the binary rows
    {Op::kRelu6Grad, "Relu6Grad", 2, V, {V, V, V}, ShapeRule::kSame, 1.0, false},
    {Op::kLeakyReluGrad, "LeakyReluGrad", 2, V, {V, V, V}, ShapeRule::kSame, 1.0, true},
    {Op::kEqual, "Equal", 2, B, {V, V, V}, kBcast, 1.0, false},
    {Op::kNotEqual, "NotEqual", 2, B, {V, V, V}, kBcast, 1.0, false},
    {Op::kLess, "Less", 2, B, {V, V, V}, kBcast, 1.0, false},
    {Op::kLessEqual, "LessEqual", 2, B, {V, V, V}, kBcast, 1.0, false},
    {Op::kGreater, "Greater", 2, B, {V, V, V}, kBcast, 1.0, false},
    {Op::kGreaterEqual, "GreaterEqual", 2, B, {V, V, V}, kBcast, 1.0, false},
    {Op::kLogicalNot, "LogicalNot", 1, B, {B, B, B}, kBcast, 1.0, false},
    {Op::kLogicalAnd, "LogicalAnd", 2, B, {B, B, B}, kBcast, 1.0, false},
    {Op::kLogicalOr, "LogicalOr", 2, B, {B, B, B}, kBcast, 1.0, false},
    {Op::kSelect, "Select", 3, V, {B, V, V}, ShapeRule::kSelect, 1.0, false},
    {Op::kSelectV2, "SelectV2", 3, V, {B, V, V}, kBcast, 1.0, false},
    {Op::kClipByValue, "ClipByValue", 3, V, {V, V, V}, ShapeRule::kClip, 1.0, false},
};
#undef OPWEAVE_FUSED_UNARY
#undef OPWEAVE_FUSED_BINARY
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<std::size_t>(Op::kCount));
constexpr bool in_op_order() {
  for (std::size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (static_cast<std::size_t>(kOps[i].op) != i) return false;
  }
  return true;
}
static_assert(in_op_order());

// Other op types computing one of the ops above (elementwise_list.h's aliases).
struct Alias {
  const char* type;
  Op op;
};
#define OPWEAVE_FUSED_ALIAS(type, Name) {type, Op::k##Name},
constexpr Alias kAliases[] = {OPWEAVE_UNARY_ALIASES(OPWEAVE_FUSED_ALIAS)
                                  OPWEAVE_BINARY_ALIASES(OPWEAVE_FUSED_ALIAS)};
#undef OPWEAVE_FUSED_ALIAS

}  // namespace

const OpInfo& info(Op op) { return kOps[static_cast<std::size_t>(op)]; }

const OpInfo* find_op(const std::string& type) {
  for (const OpInfo& o : kOps) {
    if (type == o.type) return &o;
  }
  for (const Alias& a : kAliases) {
    if (type == a.type) return &info(a.op);
  }
  return nullptr;
}

}  // namespace fused_elementwise

namespace {

namespace fe = fused_elementwise;
using fe::Instruction;
using fe::Kind;
using fe::Op;
using fe::Operand;
using fe::ShapeRule;
using kernel_detail::StridedLoop;

// Elements per block: 512 doubles are 4 KiB, so a dozen live slots stay in L1.
constexpr std::int64_t kBlock = 512;
constexpr std::size_t kSlotBytes = kBlock * sizeof(double);
// A broadcast input whose innermost run (a bias row, a column's repeated element) is at least
// this long is read where it lies, blocks being cut at the runs' ends; shorter runs are copied.
constexpr std::int64_t kMinRun = 64;

fe::Loops select_loops() {
#if defined(OPWEAVE_X86_64)
  const IsaFlags isa = isa_flags();
  if (isa.can_run_avx512_files()) return fe::loops_avx512();
  if (isa.can_run_avx2_files()) return fe::loops_avx2();
#endif
  return fe::loops_baseline();
}

// Chosen at load time, not on first use: see fork_guard.h.
const fe::Loops g_loops = select_loops();

template <typename C>
void execute(const Instruction& in, const Operand* operands, void* dst, std::int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    g_loops.execute_f32(in, operands, dst, n);
  } else {
    g_loops.execute_f64(in, operands, dst, n);
  }
}

// -- operands read from the inputs ----------------------------------------------------------------

// How a run reads input i.
enum class Mode { kUnused, kDirect, kScalar, kGather };

// An input broadcast to the output's shape, gathered (and converted from its storage type S to
// the compute type) one block at a time. dims/strides: the merged loop of StridedLoop<1>.
struct Gather {
  const void* base = nullptr;
  DType dtype = DType::kFloat32;
  Shape dims;
  Shape strides;
  // Stored as the compute type and read along runs of stride 0 or 1 at least kMinRun long: a
  // block within one run reads it in place.
  bool in_place = false;
};

// Where element `begin` of the broadcast input lies (an element offset into its buffer).
std::int64_t offset_of(const Gather& g, std::int64_t begin) {
  std::int64_t offset = 0;
  for (std::size_t d = g.dims.size(); d-- > 0;) {
    offset += (begin % g.dims[d]) * g.strides[d];
    begin /= g.dims[d];
  }
  return offset;
}

template <typename S, typename C>
C widen(S v) {
  if constexpr (std::is_same_v<S, Half>) {
    return v.to_float();
  } else {
    return static_cast<C>(v);
  }
}

// dst[0..n) = elements [begin, begin + n) of the broadcast input, as C. `index` has room for the
// merged rank.
template <typename S, typename C>
void gather_run(const Gather& g, std::int64_t begin, std::int64_t n, C* dst, std::int64_t* index) {
  const S* src = static_cast<const S*>(g.base);
  const int nd = static_cast<int>(g.dims.size());
  std::int64_t rem = begin;
  std::int64_t offset = 0;
  for (int d = nd - 1; d >= 0; --d) {
    const auto k = static_cast<std::size_t>(d);
    index[d] = rem % g.dims[k];
    rem /= g.dims[k];
    offset += index[d] * g.strides[k];
  }
  const std::int64_t inner = g.dims.back();
  const std::int64_t stride = g.strides.back();
  std::int64_t done = 0;
  while (done < n) {
    const std::int64_t count = std::min(inner - index[nd - 1], n - done);
    const S* s = src + offset;
    if (stride == 1) {
      for (std::int64_t i = 0; i < count; ++i) dst[done + i] = widen<S, C>(s[i]);
    } else {
      for (std::int64_t i = 0; i < count; ++i) dst[done + i] = widen<S, C>(s[i * stride]);
    }
    done += count;
    if (done >= n) break;
    offset += count * stride;
    index[nd - 1] += count;
    for (int d = nd - 1; d > 0 && index[d] == g.dims[static_cast<std::size_t>(d)]; --d) {
      const auto k = static_cast<std::size_t>(d);
      index[d] = 0;
      offset += g.strides[k - 1] - g.dims[k] * g.strides[k];
      ++index[d - 1];
    }
  }
}

template <typename C>
void gather(const Gather& g, std::int64_t begin, std::int64_t n, void* dst, std::int64_t* index) {
  switch (g.dtype) {
    case DType::kBool:
      return gather_run<bool, bool>(g, begin, n, static_cast<bool*>(dst), index);
    case DType::kFloat16:
      return gather_run<Half, C>(g, begin, n, static_cast<C*>(dst), index);
    case DType::kFloat32:
      return gather_run<float, C>(g, begin, n, static_cast<C*>(dst), index);
    case DType::kFloat64:
      return gather_run<double, C>(g, begin, n, static_cast<C*>(dst), index);
    default:
      break;  // the run checked the dtypes
  }
}

// Rounds values to float16 and back, as storing them in a float16 tensor would.
void round_to_half(float* v, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) v[i] = Half::from_float(v[i]).to_float();
}

bool same_shape_or_scalar(const Shape& bound, const Shape& t) {
  return bound.empty() || bound == t;
}

// NumPy broadcasting without exceptions (a failure goes to the op-by-op path, which reports it).
bool broadcast_into(Shape& acc, const Shape& s) {
  if (s.size() > acc.size()) acc.insert(acc.begin(), s.size() - acc.size(), 1);
  const std::size_t off = acc.size() - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::int64_t& d = acc[off + i];
    if (d == s[i] || s[i] == 1) continue;
    if (d != 1) return false;
    d = s[i];
  }
  return true;
}

class FusedProgram {
 public:
  explicit FusedProgram(const NodeDef& node);
  void operator()(KernelContext& ctx) const;

 private:
  template <typename C>
  void run(KernelContext& ctx, const std::vector<Shape>& shapes) const;
  void run_op_by_op(KernelContext& ctx) const;
  bool infer_shapes(const InputList& inputs, std::vector<Shape>& shapes) const;
  bool is_value(int reg) const { return kinds_[static_cast<std::size_t>(reg)] == Kind::kValue; }

  std::string name_;
  DType dtype_ = DType::kFloat32;
  int num_inputs_ = 0;
  std::vector<Instruction> code_;
  std::vector<Kind> kinds_;    // per register
  std::vector<int> last_use_;  // per register: the last instruction reading it (-1: none)
  double cost_ = 0.0;          // per output element
  // The op-by-op path: a node and a kernel per instruction (the kernels keep references to
  // nothing but what make() bound; the nodes must outlive every call, so they live here).
  std::vector<NodeDef> defs_;
  std::vector<Kernel> kernels_;
};

[[noreturn]] void bad_program(const NodeDef& node, const std::string& why) {
  throw OpError(ErrorCode::kInvalidArgument,
                "_FusedElementwise node '" + node.name + "' has an invalid program: " + why);
}

FusedProgram::FusedProgram(const NodeDef& node) : name_(node.name) {
  dtype_ = node.attr<DType>("T");
  if (dtype_ != DType::kFloat16 && dtype_ != DType::kFloat32 && dtype_ != DType::kFloat64) {
    bad_program(node,
                std::string("T must be float16, float32 or float64, got ") + dtype_name(dtype_));
  }
  const auto& program = node.attr<std::vector<std::int64_t>>("program");
  const std::vector<double> none;
  const auto& immediates =
      node.has_attr("immediates") ? node.attr<std::vector<double>>("immediates") : none;
  const std::vector<std::string> no_names;
  const auto& ops =
      node.has_attr("fused_ops") ? node.attr<std::vector<std::string>>("fused_ops") : no_names;
  const auto& nodes =
      node.has_attr("fused_nodes") ? node.attr<std::vector<std::string>>("fused_nodes") : no_names;
  num_inputs_ = static_cast<int>(node.inputs.size());
  const std::size_t count = program.size() / fe::kFields;
  if (program.empty() || program.size() % fe::kFields != 0 || count > fe::kMaxInstructions) {
    bad_program(node, "it must hold 1 to " + std::to_string(fe::kMaxInstructions) + " groups of " +
                          std::to_string(fe::kFields) + " integers");
  }
  if (num_inputs_ > fe::kMaxInputs) bad_program(node, "too many inputs");
  kinds_.assign(static_cast<std::size_t>(num_inputs_), Kind::kValue);
  std::vector<char> input_kind_known(static_cast<std::size_t>(num_inputs_), 0);
  last_use_.assign(static_cast<std::size_t>(num_inputs_) + count, -1);
  for (std::size_t j = 0; j < count; ++j) {
    const std::int64_t* f = &program[j * fe::kFields];
    if (f[0] < 0 || f[0] >= static_cast<std::int64_t>(Op::kCount)) {
      bad_program(node, "unknown op " + std::to_string(f[0]));
    }
    const fe::OpInfo& op = fe::info(static_cast<Op>(f[0]));
    Instruction in{op.op, {-1, -1, -1}, 0.0};
    const std::int64_t registers = num_inputs_ + static_cast<std::int64_t>(j);
    for (int k = 0; k < 3; ++k) {
      const std::int64_t r = f[k + 1];
      if (k >= op.arity) {
        if (k == 2 && op.immediate) {
          if (r < 0 || r >= static_cast<std::int64_t>(immediates.size())) {
            bad_program(node, "an immediate index is out of range");
          }
          in.immediate = immediates[static_cast<std::size_t>(r)];
        } else if (r != -1) {
          bad_program(node,
                      std::string(op.type) + " takes " + std::to_string(op.arity) + " operands");
        }
        continue;
      }
      if (r < 0 || r >= registers) bad_program(node, "an operand register is out of range");
      const auto ri = static_cast<std::size_t>(r);
      if (r < num_inputs_ && !input_kind_known[ri]) {
        kinds_[ri] = op.operand[k];
        input_kind_known[ri] = 1;
      }
      if (kinds_[ri] != op.operand[k]) {
        bad_program(node, std::string("an operand of ") + op.type + " has the wrong kind");
      }
      in.operand[k] = static_cast<int>(r);
      last_use_[ri] = static_cast<int>(j);
    }
    kinds_.push_back(op.result);
    cost_ += op.cost;
    code_.push_back(in);
    NodeDef def;
    def.name = j < nodes.size() ? nodes[j] : node.name;
    def.op = j < ops.size() ? ops[j] : op.type;
    if (!fe::find_op(def.op) || fe::find_op(def.op)->op != op.op) def.op = op.type;
    def.device = node.device;
    if (op.immediate) def.attrs["alpha"] = AttrValue{in.immediate};
    def.attrs["T"] =
        AttrValue{op.result == Kind::kBool && op.operand[0] == Kind::kBool ? DType::kBool : dtype_};
    defs_.push_back(std::move(def));
  }
  for (const NodeDef& def : defs_) kernels_.push_back(find_kernel(def.op).make(def));
}

bool FusedProgram::infer_shapes(const InputList& inputs, std::vector<Shape>& shapes) const {
  shapes.resize(static_cast<std::size_t>(num_inputs_) + code_.size());
  for (int i = 0; i < num_inputs_; ++i) {
    shapes[static_cast<std::size_t>(i)] = inputs[static_cast<std::size_t>(i)].shape();
  }
  for (std::size_t j = 0; j < code_.size(); ++j) {
    const Instruction& in = code_[j];
    const fe::OpInfo& op = fe::info(in.op);
    auto s = [&](int k) -> const Shape& { return shapes[static_cast<std::size_t>(in.operand[k])]; };
    Shape& out = shapes[static_cast<std::size_t>(num_inputs_) + j];
    switch (op.shape) {
      case ShapeRule::kBroadcast:
        out = s(0);
        for (int k = 1; k < op.arity; ++k) {
          if (!broadcast_into(out, s(k))) return false;
        }
        break;
      case ShapeRule::kSame:
        if (s(0) != s(1)) return false;
        out = s(0);
        break;
      case ShapeRule::kSelect:
        // A condition picking whole rows is Select's own business (select_rows).
        if (s(1) != s(2) || !same_shape_or_scalar(s(0), s(1))) return false;
        out = s(1);
        break;
      case ShapeRule::kClip:
        if (!same_shape_or_scalar(s(1), s(0)) || !same_shape_or_scalar(s(2), s(0))) return false;
        out = s(0);
        break;
    }
  }
  return true;
}

void FusedProgram::operator()(KernelContext& ctx) const {
  if (ctx.inputs.size() != static_cast<std::size_t>(num_inputs_)) {
    throw_node_error(ctx.node, "_FusedElementwise: expected " + std::to_string(num_inputs_) +
                                   " inputs, got " + std::to_string(ctx.inputs.size()));
  }
  for (int i = 0; i < num_inputs_; ++i) {
    const DType want = is_value(i) ? dtype_ : DType::kBool;
    // Another dtype: the ops' own kernels say what is wrong with it.
    if (ctx.inputs[static_cast<std::size_t>(i)].dtype() != want) return run_op_by_op(ctx);
  }
  std::vector<Shape> shapes;
  if (!infer_shapes(ctx.inputs, shapes)) return run_op_by_op(ctx);
  if (dtype_ == DType::kFloat64) {
    run<double>(ctx, shapes);
  } else {
    run<float>(ctx, shapes);
  }
}

template <typename C>
void FusedProgram::run(KernelContext& ctx, const std::vector<Shape>& shapes) const {
  const Shape& out_shape = shapes.back();
  const int last = static_cast<int>(code_.size()) - 1;
  const bool bool_out = !is_value(num_inputs_ + last);
  const DType out_dtype = bool_out ? DType::kBool : dtype_;
  const std::int64_t numel = shape_numel(out_shape);
  const bool half = dtype_ == DType::kFloat16;

  // How each input is read. A value input laid out like the output is read in place (float16
  // ones are converted block by block); one element is a scalar; the rest is gathered.
  const auto k_inputs = static_cast<std::size_t>(num_inputs_);
  std::vector<Mode> mode(k_inputs, Mode::kUnused);
  std::vector<Gather> gathers(k_inputs);
  std::vector<double> scalars(k_inputs, 0.0);  // 8 bytes each: a C or a bool, converted
  for (std::size_t i = 0; i < k_inputs; ++i) {
    if (last_use_[i] < 0) continue;
    const Tensor& t = ctx.inputs[i];
    const bool convert = t.dtype() == DType::kFloat16;
    if (t.numel() == 1) {
      mode[i] = Mode::kScalar;
      void* s = &scalars[i];
      if (t.dtype() == DType::kBool) {
        *static_cast<bool*>(s) = *t.data<bool>();
      } else if (convert) {
        *static_cast<C*>(s) = t.data<Half>()->to_float();
      } else {
        *static_cast<C*>(s) = *t.data<C>();
      }
    } else if (!convert && t.shape() == out_shape && t.is_contiguous()) {
      mode[i] = Mode::kDirect;
    } else {
      mode[i] = Mode::kGather;
      const StridedLoop<1> loop(out_shape, {kernel_detail::broadcast_strides(t, out_shape)});
      Gather& g = gathers[i];
      g = Gather{t.raw_data(), t.dtype(), loop.shape, loop.strides[0], false};
      g.in_place =
          !convert && (g.strides.back() == 0 || g.strides.back() == 1) && g.dims.back() >= kMinRun;
    }
  }

  // Read before the output may take over an input's buffer (the pointers stay valid).
  std::vector<const unsigned char*> direct(k_inputs, nullptr);
  std::vector<std::size_t> direct_size(k_inputs, 0);
  for (std::size_t i = 0; i < k_inputs; ++i) {
    if (mode[i] != Mode::kDirect) continue;
    direct[i] = static_cast<const unsigned char*>(ctx.inputs[i].raw_data());
    direct_size[i] = dtype_size(ctx.inputs[i].dtype());
  }
  // The output, in the buffer of an input nobody else reads when one has its shape and dtype:
  // element i of every block is written after each instruction read element i of that input.
  Tensor out;
  bool have_out = false;
  for (std::size_t i = 0; i < k_inputs && !have_out; ++i) {
    const Tensor& t = ctx.inputs[i];
    if (t.dtype() != out_dtype || t.shape() != out_shape || !t.is_contiguous()) continue;
    if (Tensor* reuse = ctx.forwardable_input(i)) {
      out = std::move(*reuse);
      have_out = true;
    }
  }
  if (!have_out) out = Tensor::empty(out_dtype, out_shape);
  if (numel == 0) {
    ctx.outputs[0] = std::move(out);
    return;
  }

  // Slots for gathered inputs (live for the whole block) and for instruction results (free after
  // their last reader). The last instruction writes the output directly unless it is float16.
  const bool direct_out = !(half && !bool_out);
  std::vector<int> slot_of(k_inputs + code_.size(), -1);
  int num_slots = 0;
  std::vector<int> free_slots;
  for (std::size_t i = 0; i < k_inputs; ++i) {
    if (mode[i] == Mode::kGather) slot_of[i] = num_slots++;
  }
  for (std::size_t j = 0; j < code_.size(); ++j) {
    const std::size_t r = k_inputs + j;
    if (static_cast<int>(j) != last || !direct_out) {
      if (free_slots.empty()) {
        slot_of[r] = num_slots++;
      } else {
        slot_of[r] = free_slots.back();
        free_slots.pop_back();
      }
    }
    // Operands read for the last time free their slots for the instructions after this one.
    for (int k = 0; k < 3; ++k) {
      const int o = code_[j].operand[k];
      if (o < num_inputs_ || last_use_[static_cast<std::size_t>(o)] != static_cast<int>(j)) {
        continue;
      }
      bool seen = false;  // an operand read twice by this instruction is freed once
      for (int q = 0; q < k; ++q) seen = seen || code_[j].operand[q] == o;
      if (!seen) free_slots.push_back(slot_of[static_cast<std::size_t>(o)]);
    }
  }

  std::size_t max_rank = 1;
  std::vector<const Gather*> in_place;
  for (std::size_t i = 0; i < k_inputs; ++i) {
    max_rank = std::max(max_rank, gathers[i].dims.size());
    if (mode[i] == Mode::kGather && gathers[i].in_place) in_place.push_back(&gathers[i]);
  }
  unsigned char* out_bytes = static_cast<unsigned char*>(out.raw_data());
  const std::size_t out_size = dtype_size(out_dtype);
  auto body = [&](std::int64_t begin, std::int64_t end) {
    // 64-byte aligned slots, allocated once per piece of the range.
    const std::size_t bytes = static_cast<std::size_t>(num_slots) * kSlotBytes + 64;
    std::unique_ptr<unsigned char[]> memory(new unsigned char[bytes]);
    const auto base = reinterpret_cast<std::uintptr_t>(memory.get());
    unsigned char* slots = memory.get() + ((64 - base % 64) % 64);
    auto slot = [&](int s) { return slots + static_cast<std::size_t>(s) * kSlotBytes; };
    std::vector<std::int64_t> index(max_rank);
    std::vector<Operand> reg(k_inputs + code_.size(), Operand{nullptr, 0});
    for (std::size_t i = 0; i < k_inputs; ++i) {
      if (mode[i] == Mode::kScalar) reg[i] = Operand{&scalars[i], 0};
    }
    for (std::int64_t b0 = begin, n = 0; b0 < end; b0 += n) {
      n = std::min(kBlock, end - b0);
      // Cut the block where a run read in place ends, unless that leaves a short block.
      for (const Gather* g : in_place) {
        const std::int64_t left = g->dims.back() - b0 % g->dims.back();
        if (left < n && left >= kMinRun) n = left;
      }
      for (std::size_t i = 0; i < k_inputs; ++i) {
        if (mode[i] == Mode::kDirect) {
          reg[i] = Operand{direct[i] + static_cast<std::size_t>(b0) * direct_size[i], 1};
        } else if (mode[i] == Mode::kGather) {
          const Gather& g = gathers[i];
          if (g.in_place && b0 % g.dims.back() + n <= g.dims.back()) {
            const auto* at = static_cast<const unsigned char*>(g.base) +
                             offset_of(g, b0) * static_cast<std::int64_t>(dtype_size(g.dtype));
            reg[i] = Operand{at, g.strides.back()};
          } else {
            void* dst = slot(slot_of[i]);
            gather<C>(g, b0, n, dst, index.data());
            reg[i] = Operand{dst, 1};
          }
        }
      }
      for (std::size_t j = 0; j < code_.size(); ++j) {
        const Instruction& in = code_[j];
        const std::size_t r = k_inputs + j;
        const bool to_out = static_cast<int>(j) == last && direct_out;
        void* dst = to_out ? out_bytes + static_cast<std::size_t>(b0) * out_size : slot(slot_of[r]);
        const Operand ops[3] = {
            in.operand[0] >= 0 ? reg[static_cast<std::size_t>(in.operand[0])] : Operand{},
            in.operand[1] >= 0 ? reg[static_cast<std::size_t>(in.operand[1])] : Operand{},
            in.operand[2] >= 0 ? reg[static_cast<std::size_t>(in.operand[2])] : Operand{}};
        execute<C>(in, ops, dst, n);
        if constexpr (std::is_same_v<C, float>) {
          if (half && kinds_[r] == Kind::kValue) round_to_half(static_cast<float*>(dst), n);
        }
        reg[r] = Operand{dst, 1};
      }
      if (!direct_out) {
        const float* v = static_cast<const float*>(reg.back().p);
        Half* o = reinterpret_cast<Half*>(out_bytes) + b0;
        for (std::int64_t i = 0; i < n; ++i) o[i] = Half::from_float(v[i]);
      }
    }
  };
  const double cost = std::max(1.0, cost_);
  const std::int64_t threshold = std::max<std::int64_t>(
      4 * kBlock, static_cast<std::int64_t>(
                      static_cast<double>(kernel_detail::kElementwiseParallelThreshold) / cost));
  kernel_detail::for_elements(ctx.intra_pool, numel, threshold, body, cost);
  ctx.outputs[0] = std::move(out);
}

// The unfused graph, op by op, through the registered kernels: the run's shapes or dtypes are
// outside what the loop handles, most likely an error the right op must report.
void FusedProgram::run_op_by_op(KernelContext& ctx) const {
  std::vector<Tensor> regs(static_cast<std::size_t>(num_inputs_) + code_.size());
  for (int i = 0; i < num_inputs_; ++i) {
    regs[static_cast<std::size_t>(i)] = ctx.inputs[static_cast<std::size_t>(i)];
  }
  for (std::size_t j = 0; j < code_.size(); ++j) {
    const Instruction& in = code_[j];
    const int arity = fe::info(in.op).arity;
    Tensor result[1];
    KernelContext k{defs_[j],
                    InputList(regs.data(), in.operand, static_cast<std::size_t>(arity)),
                    OutputList(result, 1),
                    ctx.intra_pool,
                    0,
                    ctx.state,
                    ctx.cancelled};
    try {
      kernels_[j](k);
    } catch (const OpError& e) {
      throw OpError(e.code(), "in " + defs_[j].name + " (" + defs_[j].op + ", fused into " + name_ +
                                  "): " + e.what());
    }
    regs[static_cast<std::size_t>(num_inputs_) + j] = std::move(result[0]);
  }
  ctx.outputs[0] = std::move(regs.back());
}

}  // namespace

void register_fused_elementwise_kernels() {
  register_kernel("_FusedElementwise", {[](const NodeDef& node) -> Kernel {
                                          auto program = std::make_shared<const FusedProgram>(node);
                                          return [program](KernelContext& ctx) { (*program)(ctx); };
                                        },
                                        CostHint::kMeasure});
}

}  // namespace opweave
