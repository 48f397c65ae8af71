// Element-wise loop fusion: a chain or tree of element-wise ops (unary math, binary arithmetic,
// comparisons, logical ops, select, clip; kernels/fused_elementwise.h lists them) on one float
// dtype becomes one _FusedElementwise node, whose kernel runs one loop nest over the data instead
// of writing and re-reading every intermediate. Results are bit-identical to the unfused graph
// (the kernel uses the unfused ops' element functions, in the same order).
//
// Clusters grow from a root (the last node; it is rewritten in place, keeping its name, outputs
// and consumers) towards its inputs. A producer joins when:
//   - its op can be fused, on the root's float dtype (or bool), with the root's device;
//   - it is not stateful, fetched, fed (an _Arg), a target, or waited for by a control edge;
//   - every reader of its output is in the cluster (a value read elsewhere is computed once and
//     becomes an input: no recomputation, even of cheap ops);
//   - its static shape is the root's (an unknown dimension matches): a smaller intermediate, such
//     as exp of a bias row, stays a node of its own rather than being recomputed per element.
// Inputs may broadcast (scalars, rows, columns...): the kernel reads them where they are. A
// _FusedElementwise made in an earlier round is inlined like any other producer (identity
// removal runs after this pass, so the second round joins what an Identity kept apart).
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>

#include "opweave/kernels/fused_elementwise.h"
#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

namespace fe = fused_elementwise;

constexpr const char* kFusedOp = "_FusedElementwise";

bool is_float(DType t) {
  return t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64;
}

// What a node would put in a fused program.
struct Member {
  bool fused = false;  // a _FusedElementwise (its program is inlined)
  const fe::OpInfo* op = nullptr;
  std::optional<DType> dtype;  // the float dtype of its values; none for logical ops only
  int instructions = 1;
};

// A _FusedElementwise this pass can inline: its program well formed (one may come from an
// imported GraphDef, so nothing is taken on trust).
bool valid_program(const NodeDef& d) {
  auto attr = [&](const char* key) { return d.attrs.find(key); };
  auto p = attr("program"), o = attr("fused_ops"), n = attr("fused_nodes"), i = attr("immediates");
  if (p == d.attrs.end() || o == d.attrs.end() || n == d.attrs.end() ||
      !std::holds_alternative<std::vector<std::int64_t>>(p->second) ||
      !std::holds_alternative<std::vector<std::string>>(o->second) ||
      !std::holds_alternative<std::vector<std::string>>(n->second)) {
    return false;
  }
  const auto& program = std::get<std::vector<std::int64_t>>(p->second);
  const std::size_t count = program.size() / fe::kFields;
  std::size_t immediates = 0;
  if (i != d.attrs.end()) {
    if (!std::holds_alternative<std::vector<double>>(i->second)) return false;
    immediates = std::get<std::vector<double>>(i->second).size();
  }
  if (count == 0 || program.size() % fe::kFields != 0 || count > fe::kMaxInstructions ||
      std::get<std::vector<std::string>>(o->second).size() != count ||
      std::get<std::vector<std::string>>(n->second).size() != count) {
    return false;
  }
  const auto k = static_cast<std::int64_t>(d.inputs.size());
  for (std::size_t j = 0; j < count; ++j) {
    const std::int64_t* f = &program[j * fe::kFields];
    if (f[0] < 0 || f[0] >= static_cast<std::int64_t>(fe::Op::kCount)) return false;
    const fe::OpInfo& op = fe::info(static_cast<fe::Op>(f[0]));
    for (int a = 0; a < op.arity; ++a) {
      if (f[a + 1] < 0 || f[a + 1] >= k + static_cast<std::int64_t>(j)) return false;
    }
    if (op.immediate &&
        (op.arity == 3 || f[3] < 0 || f[3] >= static_cast<std::int64_t>(immediates))) {
      return false;
    }
  }
  return true;
}

std::optional<Member> as_member(const WorkGraph& g, int n) {
  const NodeDef& d = g.def(n);
  if (!g.alive(n) || d.num_outputs != 1 || d.output_dtypes.size() != 1 || g.is_stateful(n)) {
    return std::nullopt;
  }
  Member m;
  if (d.op == kFusedOp) {
    auto t = d.attrs.find("T");
    auto p = d.attrs.find("program");
    if (t == d.attrs.end() || p == d.attrs.end() || !std::holds_alternative<DType>(t->second) ||
        !std::holds_alternative<std::vector<std::int64_t>>(p->second)) {
      return std::nullopt;
    }
    if (!valid_program(d)) return std::nullopt;
    m.fused = true;
    m.dtype = std::get<DType>(t->second);
    m.instructions =
        static_cast<int>(std::get<std::vector<std::int64_t>>(p->second).size() / fe::kFields);
    return m;
  }
  m.op = fe::find_op(d.op);
  if (m.op == nullptr || static_cast<int>(d.inputs.size()) != m.op->arity) return std::nullopt;
  if (m.op->immediate) {
    auto a = d.attrs.find("alpha");
    if (a != d.attrs.end() && !std::holds_alternative<double>(a->second)) return std::nullopt;
  }
  // The dtype the values have: the output's, or (comparisons) the operands'.
  std::optional<DType> t;
  if (m.op->result == fe::Kind::kValue) {
    t = d.output_dtypes[0];
  } else if (m.op->operand[0] == fe::Kind::kValue) {
    t = dtype_of(g, d.inputs[0]);
    if (d.output_dtypes[0] != DType::kBool) return std::nullopt;
  } else if (d.output_dtypes[0] != DType::kBool) {
    return std::nullopt;
  }
  if (t) {
    if (!is_float(*t)) return std::nullopt;
    m.dtype = t;
  }
  return m;
}

// Whether an intermediate of static shape `s` has the root's shape `root` (unknown dimensions of
// the intermediate are taken to match).
bool same_extent(const StaticShape& s, const StaticShape& root) {
  if (!s.known_rank || !root.known_rank || s.dims.size() != root.dims.size()) return false;
  for (std::size_t i = 0; i < s.dims.size(); ++i) {
    if (s.dims[i] != -1 && s.dims[i] != root.dims[i]) return false;
  }
  return true;
}

// Builds the program of a cluster rooted at `root`.
class ProgramBuilder {
 public:
  ProgramBuilder(const WorkGraph& g, const std::set<int>& cluster) : g_(g), cluster_(cluster) {}

  void emit_root(int root) { emit(root); }

  // The program with leaves renumbered 0..K-1 and instructions K.., as the kernel reads it.
  std::vector<std::int64_t> program() const {
    std::vector<std::int64_t> out = program_;
    const auto k = static_cast<std::int64_t>(leaves_.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (i % fe::kFields == 0) continue;
      const std::int64_t r = out[i];
      if (r == kNone) {
        out[i] = -1;
      } else if (r < 0) {
        out[i] = -r - 1;  // leaf
      } else if ((i % fe::kFields) == 3 && is_immediate_field(i)) {
        out[i] = r;  // an immediate index
      } else {
        out[i] = k + r;
      }
    }
    return out;
  }
  const std::vector<TensorId>& leaves() const { return leaves_; }
  const std::vector<double>& immediates() const { return immediates_; }
  const std::vector<std::string>& ops() const { return ops_; }
  const std::vector<std::string>& nodes() const { return nodes_; }
  int size() const { return static_cast<int>(ops_.size()); }

 private:
  // Registers while building: instruction i is i, leaf j is -(j + 1), kNone an unused field.
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();

  bool is_immediate_field(std::size_t i) const {
    const auto op = static_cast<fe::Op>(program_[i - 3]);
    return fe::info(op).immediate && fe::info(op).arity < 3;
  }

  std::int64_t leaf(const TensorId& t) {
    for (std::size_t j = 0; j < leaves_.size(); ++j) {
      if (leaves_[j] == t) return -static_cast<std::int64_t>(j) - 1;
    }
    leaves_.push_back(t);
    return -static_cast<std::int64_t>(leaves_.size());
  }

  std::int64_t operand(const TensorId& t) {
    if (t.index == 0 && cluster_.count(t.node)) return emit(t.node);
    return leaf(t);
  }

  void push(fe::Op op, const std::int64_t (&regs)[3], std::int64_t immediate_field,
            const std::string& type, const std::string& node) {
    program_.push_back(static_cast<std::int64_t>(op));
    for (int k = 0; k < 3; ++k) program_.push_back(regs[k]);
    if (immediate_field != kNone) program_.back() = immediate_field;
    ops_.push_back(type);
    nodes_.push_back(node);
  }

  std::int64_t emit(int n) {
    auto done = emitted_.find(n);
    if (done != emitted_.end()) return done->second;
    const NodeDef& d = g_.def(n);
    std::vector<std::int64_t> in;
    for (const TensorId& t : d.inputs) in.push_back(operand(t));
    if (d.op == kFusedOp) {
      // Its program, replayed on this cluster's registers.
      const auto& p = d.attr<std::vector<std::int64_t>>("program");
      const std::vector<double> none;
      const auto& imm = d.has_attr("immediates") ? d.attr<std::vector<double>>("immediates") : none;
      const auto& ops = d.attr<std::vector<std::string>>("fused_ops");
      const auto& names = d.attr<std::vector<std::string>>("fused_nodes");
      const auto k = static_cast<std::int64_t>(in.size());
      std::vector<std::int64_t> local;  // its instruction i -> a register here
      for (std::size_t i = 0; i * fe::kFields < p.size(); ++i) {
        const auto op = static_cast<fe::Op>(p[i * fe::kFields]);
        const fe::OpInfo& info = fe::info(op);
        std::int64_t regs[3] = {kNone, kNone, kNone};
        for (int f = 0; f < info.arity; ++f) {
          const std::int64_t r = p[i * fe::kFields + 1 + static_cast<std::size_t>(f)];
          regs[f] =
              r < k ? in[static_cast<std::size_t>(r)] : local[static_cast<std::size_t>(r - k)];
        }
        std::int64_t immediate = kNone;
        if (info.immediate) {
          immediate = static_cast<std::int64_t>(immediates_.size());
          immediates_.push_back(imm[static_cast<std::size_t>(p[i * fe::kFields + 3])]);
        }
        local.push_back(static_cast<std::int64_t>(ops_.size()));
        push(op, regs, immediate, ops[i], names[i]);
      }
      return emitted_[n] = local.back();
    }
    const fe::OpInfo* info = fe::find_op(d.op);
    std::int64_t regs[3] = {kNone, kNone, kNone};
    for (std::size_t f = 0; f < in.size(); ++f) regs[f] = in[f];
    std::int64_t immediate = kNone;
    if (info->immediate) {
      immediate = static_cast<std::int64_t>(immediates_.size());
      // TensorFlow's default slope when the attribute is missing (the kernel's too).
      immediates_.push_back(d.has_attr("alpha") ? d.attr<double>("alpha") : 0.2);
    }
    const auto reg = static_cast<std::int64_t>(ops_.size());
    push(info->op, regs, immediate, d.op, d.name);
    return emitted_[n] = reg;
  }

  const WorkGraph& g_;
  const std::set<int>& cluster_;
  std::map<int, std::int64_t> emitted_;
  std::vector<std::int64_t> program_;
  std::vector<TensorId> leaves_;
  std::vector<double> immediates_;
  std::vector<std::string> ops_;
  std::vector<std::string> nodes_;
};

std::string list_ops(const std::vector<std::string>& ops) {
  std::string out;
  for (std::size_t i = 0; i < ops.size(); ++i) out += (i ? ", " : "") + ops[i];
  return out;
}

}  // namespace

bool run_elementwise_fusion(WorkGraph& g, PassContext& ctx) {
  const std::vector<int> order = g.topological_order();
  std::vector<int> position(static_cast<std::size_t>(g.size()), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  }
  std::vector<char> taken(static_cast<std::size_t>(g.size()), 0);
  bool changed = false;
  // Consumers first: a node some consumer's cluster takes is never a root of its own.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int root = *it;
    if (taken[static_cast<std::size_t>(root)]) continue;
    const std::optional<Member> rm = as_member(g, root);
    if (!rm) continue;
    const NodeDef& rd = g.def(root);
    const StaticShape root_shape = static_shape_of(g, {root, 0});
    std::optional<DType> dtype = rm->dtype;
    std::set<int> cluster = {root};
    int instructions = rm->instructions;
    // Producers by descending topological position: when one comes up, every consumer it has in
    // the cluster has already joined.
    auto later = [&](int a, int b) {
      return position[static_cast<std::size_t>(a)] < position[static_cast<std::size_t>(b)];
    };
    std::priority_queue<int, std::vector<int>, decltype(later)> pending(later);
    std::set<int> seen;
    auto push_inputs = [&](int n) {
      for (const TensorId& t : g.def(n).inputs) {
        if (t.index == 0 && seen.insert(t.node).second) pending.push(t.node);
      }
    };
    push_inputs(root);
    while (!pending.empty()) {
      const int p = pending.top();
      pending.pop();
      if (taken[static_cast<std::size_t>(p)] || g.is_protected(p) || !g.control_uses(p).empty() ||
          g.def(p).device != rd.device) {
        continue;
      }
      const std::optional<Member> pm = as_member(g, p);
      if (!pm || (pm->dtype && dtype && *pm->dtype != *dtype)) continue;
      if (instructions + pm->instructions > fe::kMaxInstructions) continue;
      if (!same_extent(static_shape_of(g, {p, 0}), root_shape)) continue;
      const std::vector<WorkGraph::Use>& uses = g.uses(p);
      const bool inside = std::all_of(uses.begin(), uses.end(), [&](const WorkGraph::Use& u) {
        return cluster.count(u.node) != 0;
      });
      if (!inside) continue;
      cluster.insert(p);
      instructions += pm->instructions;
      if (!dtype) dtype = pm->dtype;
      push_inputs(p);
    }
    if (cluster.size() < 2) continue;
    ProgramBuilder builder(g, cluster);
    builder.emit_root(root);
    if (static_cast<int>(builder.leaves().size()) > fe::kMaxInputs) continue;
    const std::string name = rd.name;
    const std::vector<TensorId> leaves = builder.leaves();
    {
      NodeDef& d = g.edit(root);
      d.op = kFusedOp;
      d.attrs.clear();
      d.attrs["T"] = AttrValue{dtype.value_or(DType::kFloat32)};
      d.attrs["program"] = AttrValue{builder.program()};
      d.attrs["immediates"] = AttrValue{builder.immediates()};
      d.attrs["fused_ops"] = AttrValue{builder.ops()};
      d.attrs["fused_nodes"] = AttrValue{builder.nodes()};
    }
    g.set_inputs(root, leaves);
    // The inner nodes' ordering passes to the root; their names too (traces and the report name
    // them). Unread now, they go in the pruning after this pass.
    std::vector<int> inner(cluster.begin(), cluster.end());
    for (int n : inner) {
      if (n == root) continue;
      for (int c : g.ordering_of(g.def(n).control_inputs)) g.add_control_input(root, c);
    }
    g.mark_rewritten(root);
    for (int n : inner) {
      if (n == root) continue;
      g.absorb_names(root, n);
      taken[static_cast<std::size_t>(n)] = 1;
    }
    ctx.note("fused", name,
             std::to_string(builder.size()) + " element-wise ops into one loop (" +
                 list_ops(builder.ops()) + "), " + std::to_string(leaves.size()) +
                 (leaves.size() == 1 ? " input" : " inputs"));
    changed = true;
  }
  return changed;
}

}  // namespace opweave
