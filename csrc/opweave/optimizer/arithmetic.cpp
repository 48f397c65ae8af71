// Arithmetic simplification, one sweep in topological order (so chains collapse in one go):
//
//   x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1  -> x   when the constant's shape broadcasts into
//       x's static shape (x + zeros of a larger shape is not x) and the dtypes agree. As in
//       TensorFlow's Grappler, x + 0.0 gives x itself: -0.0 stays -0.0 (IEEE gives +0.0).
//   (x + c1) + c2 -> x + (c1 + c2), (x * c1) * c2 -> x * (c1 * c2)   c1 op c2 folded now; the
//       inner node must have no other reader. Re-associating constants changes rounding for
//       floating point, as in TensorFlow's Grappler (ConstantPushDown), which does it for every
//       dtype but float16 / bfloat16; so does this.
//   Neg(Neg(x)) -> x;  Transpose(Transpose(x, p1), p2) -> x or Transpose(x, p1 o p2);
//   Reshape(Reshape(x, s1), s2) -> Reshape(x, s2) when s1 can fail only if s2 does;
//   Cast(x) to x's own dtype -> x.
//
// The first two rules are the ones TensorFlow does inside constant folding: they run only when
// options.arithmetic_with_constants says so. Every rule keeps the ordering (control inputs) of
// what it drops, leaves stateful nodes alone, and keeps a fetched node (as an Identity).
#include <algorithm>
#include <numeric>

#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

bool is_add(const std::string& op) { return op == "Add" || op == "AddV2"; }

// The control inputs of these nodes, for what a rewrite no longer reads.
std::vector<int> controls_of(const WorkGraph& g, std::initializer_list<int> nodes) {
  std::vector<int> out;
  for (int n : nodes) {
    const std::vector<int>& c = g.def(n).control_inputs;
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

// `n` keeps `m`'s computation inside it: its names, and its ordering.
void take_over(WorkGraph& g, int n, int m, const std::vector<int>& dropped) {
  std::vector<int> control = g.def(m).control_inputs;
  control.insert(control.end(), dropped.begin(), dropped.end());
  for (int c : g.ordering_of(control)) g.add_control_input(n, c);
  const std::vector<WorkGraph::Use>& uses = g.uses(m);
  const bool only_n =
      std::all_of(uses.begin(), uses.end(), [n](const WorkGraph::Use& u) { return u.node == n; });
  if (only_n && g.control_uses(m).empty() && !g.is_protected(m)) {
    g.absorb_names(n, m);  // m is read only by n, which is taking it over: m goes
  } else {
    g.mark_rewritten(n);
    g.edit(n).original_nodes.push_back(g.def(m).name);
  }
}

// x op unit -> x.
bool unit_operand(WorkGraph& g, int n, PassContext& ctx) {
  const NodeDef& d = g.def(n);
  const bool add = is_add(d.op), mul = d.op == "Mul", sub = d.op == "Sub", div = d.op == "RealDiv";
  if (!(add || mul || sub || div) || d.inputs.size() != 2) return false;
  for (int side : {1, 0}) {
    if (side == 0 && !(add || mul)) continue;  // 0 - x and 1 / x are not x
    const TensorId c = d.inputs[static_cast<std::size_t>(side)];
    const TensorId x = d.inputs[static_cast<std::size_t>(1 - side)];
    if (!g.is_constant(c.node)) continue;
    const Tensor& value = g.constant_value(c.node);
    if (!all_elements_equal(value, (mul || div) ? 1.0 : 0.0)) continue;
    const std::optional<DType> xt = dtype_of(g, x);
    if (!xt || *xt != value.dtype() || !broadcasts_into(static_shape_of(g, x), value.shape())) {
      continue;
    }
    const std::string name = d.name, op = d.op;
    if (!g.bypass(n, x, {c.node})) return false;
    ctx.note(g.alive(n) ? "rewritten" : "removed", name,
             op + " by " + (side == 1 ? "its second" : "its first") + " operand (" +
                 ((mul || div) ? "ones" : "zeros") + ") is its other operand");
    return true;
  }
  return false;
}

// (x op c1) op c2 -> x op (c1 op c2), for op Add/AddV2 or Mul.
bool push_down_constants(WorkGraph& g, int n, PassContext& ctx) {
  const NodeDef& d = g.def(n);
  const bool add = is_add(d.op);
  if (!(add || d.op == "Mul") || d.inputs.size() != 2) return false;
  for (int side : {1, 0}) {
    const TensorId c2 = d.inputs[static_cast<std::size_t>(side)];
    const TensorId child = d.inputs[static_cast<std::size_t>(1 - side)];
    if (!g.is_constant(c2.node) || g.is_constant(child.node)) continue;
    const int m = child.node;
    const NodeDef& md = g.def(m);
    if ((add ? !is_add(md.op) : md.op != "Mul") || md.inputs.size() != 2 || md.device != d.device ||
        g.is_protected(m) || g.is_stateful(m) || g.uses(m).size() != 1 ||
        !g.control_uses(m).empty()) {
      continue;
    }
    const bool left_const = g.is_constant(md.inputs[0].node);
    const bool right_const = g.is_constant(md.inputs[1].node);
    if (left_const == right_const) continue;  // two constants: constant folding's job
    const TensorId c1 = md.inputs[left_const ? 0 : 1];
    const TensorId x = md.inputs[left_const ? 1 : 0];
    const Tensor& v2 = g.constant_value(c2.node);
    const DType t = v2.dtype();
    if (t == DType::kFloat16 || t == DType::kBool || t == DType::kString) continue;
    if (g.constant_value(c1.node).dtype() != t || dtype_of(g, x) != std::optional<DType>(t)) {
      continue;
    }
    std::optional<std::vector<Tensor>> folded =
        evaluate_now(g, n, d, {g.constant_value(c1.node), v2}, ctx);
    if (!folded) continue;
    // The new constant stands for no node of the graph as written (c1 op c2 never was one):
    // the rewritten node takes over the inner one's names instead.
    const std::string name = d.name;
    const int k = g.add_constant(name + "/folded_constant", (*folded)[0],
                                 g.ordering_of(controls_of(g, {c1.node, c2.node})), {}, d.device);
    g.set_input(n, side, {k, 0});
    g.set_input(n, 1 - side, x);
    take_over(g, n, m, {});
    ctx.note(
        "rewritten", name,
        std::string(add ? "(x + c1) + c2 -> x + (c1 + c2)" : "(x * c1) * c2 -> x * (c1 * c2)") +
            " with " + g.def(m).name + "; the constants re-associated (rounding may differ)");
    return true;
  }
  return false;
}

bool double_negation(WorkGraph& g, int n, PassContext& ctx) {
  const NodeDef& d = g.def(n);
  if (d.op != "Neg" || d.inputs.size() != 1 || d.inputs[0].index != 0) return false;
  const int m = d.inputs[0].node;
  if (g.def(m).op != "Neg" || g.def(m).inputs.size() != 1 || g.is_stateful(m)) return false;
  const std::string name = d.name;
  const TensorId x = g.def(m).inputs[0];
  const std::vector<int> dropped = g.def(m).control_inputs;
  if (!g.bypass(n, x, dropped)) return false;
  ctx.note(g.alive(n) ? "rewritten" : "removed", name, "Neg(Neg(x)) is x");
  return true;
}

bool is_permutation(const std::vector<std::int64_t>& p) {
  std::vector<char> seen(p.size(), 0);
  for (std::int64_t v : p) {
    if (v < 0 || v >= static_cast<std::int64_t>(p.size()) || seen[static_cast<std::size_t>(v)]) {
      return false;
    }
    seen[static_cast<std::size_t>(v)] = 1;
  }
  return true;
}

bool double_transpose(WorkGraph& g, int n, PassContext& ctx) {
  const NodeDef& d = g.def(n);
  if (d.op != "Transpose" || d.inputs.size() != 2 || d.inputs[0].index != 0) return false;
  const int m = d.inputs[0].node;
  const NodeDef& md = g.def(m);
  if (md.op != "Transpose" || md.inputs.size() != 2 || g.is_stateful(m)) return false;
  const int p1 = md.inputs[1].node, p2 = d.inputs[1].node;
  if (!g.is_constant(p1) || !g.is_constant(p2)) return false;
  const auto v1 = int_values(g.constant_value(p1)), v2 = int_values(g.constant_value(p2));
  const TensorId x = md.inputs[0];
  const StaticShape xs = static_shape_of(g, x);
  // Known rank, two permutations of it: then neither transpose can fail.
  if (!v1 || !v2 || v1->size() != v2->size() || !is_permutation(*v1) || !is_permutation(*v2) ||
      !xs.known_rank || xs.dims.size() != v1->size() || v1->empty()) {
    return false;
  }
  std::vector<std::int64_t> q(v1->size());
  for (std::size_t j = 0; j < q.size(); ++j) q[j] = (*v1)[static_cast<std::size_t>((*v2)[j])];
  std::vector<std::int64_t> identity(q.size());
  std::iota(identity.begin(), identity.end(), 0);
  const std::string name = d.name;
  if (q == identity) {
    std::vector<int> dropped = md.control_inputs;
    dropped.push_back(p1);
    dropped.push_back(p2);
    if (!g.bypass(n, x, dropped)) return false;
    ctx.note(g.alive(n) ? "rewritten" : "removed", name, "two transposes that cancel out");
    return true;
  }
  if (g.uses(m).size() != 1 || g.is_protected(m)) return false;  // would not save a transpose
  const Tensor& perm2 = g.constant_value(p2);
  Tensor composed = Tensor::empty(perm2.dtype(), {static_cast<std::int64_t>(q.size())});
  for (std::size_t j = 0; j < q.size(); ++j) {
    if (perm2.dtype() == DType::kInt32) {
      composed.data<std::int32_t>()[j] = static_cast<std::int32_t>(q[j]);
    } else {
      composed.data<std::int64_t>()[j] = q[j];
    }
  }
  const int k = g.add_constant(name + "/composed_perm", composed,
                               g.ordering_of(controls_of(g, {p1, p2})), {}, d.device);
  g.set_inputs(n, {x, {k, 0}});
  take_over(g, n, m, {});
  ctx.note("rewritten", name, "Transpose(Transpose(x)) -> one Transpose with " + g.def(m).name);
  return true;
}

// Known product of a reshape target (the -1 entry left out), whether it has a -1; nothing for an
// invalid one.
std::optional<std::pair<std::int64_t, bool>> reshape_product(const std::vector<std::int64_t>& s) {
  std::int64_t product = 1;
  bool infer = false;
  for (std::int64_t v : s) {
    if (v == -1) {
      if (infer) return std::nullopt;
      infer = true;
    } else if (v <= 0 || product > (std::int64_t{1} << 62) / v) {
      return std::nullopt;  // zero-size and invalid targets: not worth reasoning about
    } else {
      product *= v;
    }
  }
  return std::make_pair(product, infer);
}

bool reshape_of_reshape(WorkGraph& g, int n, PassContext& ctx) {
  const NodeDef& d = g.def(n);
  if (d.op != "Reshape" || d.inputs.size() != 2 || d.inputs[0].index != 0) return false;
  const int m = d.inputs[0].node;
  const NodeDef& md = g.def(m);
  if (md.op != "Reshape" || md.inputs.size() != 2 || g.is_stateful(m)) return false;
  const int s1 = md.inputs[1].node, s2 = d.inputs[1].node;
  if (!g.is_constant(s1) || !g.is_constant(s2)) return false;
  const auto v1 = int_values(g.constant_value(s1)), v2 = int_values(g.constant_value(s2));
  if (!v1 || !v2) return false;
  const auto r1 = reshape_product(*v1), r2 = reshape_product(*v2);
  if (!r1 || !r2) return false;
  // The inner reshape must succeed whenever the outer one does (else dropping it would hide an
  // error): with a -1 it needs k1 | size, implied by k1 | k2; without, size == k1 == k2.
  const auto [k1, infer1] = *r1;
  const auto [k2, infer2] = *r2;
  const bool safe = infer1 ? k2 % k1 == 0 : (!infer2 && k1 == k2);
  if (!safe) return false;
  const std::string name = d.name;
  const TensorId x = md.inputs[0];
  g.set_input(n, 0, x);
  take_over(g, n, m, {s1});
  ctx.note("rewritten", name, "Reshape(Reshape(x)) -> Reshape(x) with " + g.def(m).name);
  return true;
}

bool cast_to_same_dtype(WorkGraph& g, int n, PassContext& ctx) {
  const NodeDef& d = g.def(n);
  if (d.op != "Cast" || d.inputs.size() != 1) return false;
  auto dst = d.attrs.find("DstT");
  if (dst == d.attrs.end() || !std::holds_alternative<DType>(dst->second)) return false;
  if (dtype_of(g, d.inputs[0]) != std::optional<DType>(std::get<DType>(dst->second))) return false;
  const std::string name = d.name;
  const TensorId x = d.inputs[0];
  if (!g.bypass(n, x)) return false;
  ctx.note(g.alive(n) ? "rewritten" : "removed", name, "Cast to the dtype it already has");
  return true;
}

}  // namespace

bool run_arithmetic(WorkGraph& g, PassContext& ctx) {
  bool changed = false;
  const bool with_constants = ctx.options.arithmetic_with_constants;
  for (int n : g.topological_order()) {
    if (!g.alive(n) || g.is_stateful(n)) continue;
    const bool done =
        (with_constants && (unit_operand(g, n, ctx) || push_down_constants(g, n, ctx))) ||
        double_negation(g, n, ctx) || double_transpose(g, n, ctx) ||
        reshape_of_reshape(g, n, ctx) || cast_to_same_dtype(g, n, ctx);
    changed = changed || done;
  }
  return changed;
}

}  // namespace opweave
