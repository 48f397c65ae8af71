// Remapping (TensorFlow's remapper): a MatMul or a Conv2D and what follows it element by element
// becomes one _FusedMatMul (kernels/fused_ops.cpp) or _FusedConv2D (kernels/conv_ops.cpp), which
// adds the bias and applies the activation to each tile of the result while it is in cache,
// instead of two more passes over it in memory:
//
//   MatMul(a, w)                              -> _FusedMatMul(a, w)        fused_ops []
//   BiasAdd(MatMul(a, w), b), or Add / AddV2   -> _FusedMatMul(a, w, b)     ["BiasAdd"]
//   Act(MatMul(a, w)), Act(BiasAdd(...))       -> ... [..., "Relu"]  (Relu, Relu6, Sigmoid, Tanh)
//   the same with Conv2D(x, f), NHWC           -> _FusedConv2D(x, f[, b])   (never a lone Conv2D)
//   ReluGrad(MaxPoolGrad(x, y, dy), x)         -> _FusedMaxPoolGrad(x, y, dy) ["ReluGrad"]
//
// The root (the last node of the pattern) is rewritten in place, so its name, output and
// consumers stay; its original_nodes list every node it computes. An inner node is fused only
// when the next node of the pattern is its only reader: never a fetched, fed (an _Arg, which no
// pattern matches), stateful or otherwise used node, nor one with control consumers. A lone
// MatMul is rewritten only when w is a constant or a variable read: the fused kernel keeps w
// packed between runs (pack_weights; kernels/packed_weights.h explains why a variable's update is
// seen). Only float32 / float64 rank-2 products whose static shapes say so; an Add only with a
// bias of static shape [n] matching the product's n (so it is a BiasAdd).
//
// The fused kernel computes the same operations in the same order per element (the GEMM, then
// value + bias, then the activation's own loop): the fused graph gives the unfused bits.
#include <algorithm>

#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

bool is_activation(const std::string& op) {
  return op == "Relu" || op == "Relu6" || op == "Sigmoid" || op == "Tanh";
}

bool is_float(const WorkGraph& g, const TensorId& t) {
  const std::optional<DType> d = dtype_of(g, t);
  return d && (*d == DType::kFloat32 || *d == DType::kFloat64);
}

// `inner`'s output 0 may disappear into `next`: nothing else sees it.
bool fusable_inner(const WorkGraph& g, int inner, int next) {
  const NodeDef& d = g.def(inner);
  if (!g.alive(inner) || g.is_protected(inner) || g.is_stateful(inner) || d.num_outputs != 1 ||
      d.device != g.def(next).device || !g.control_uses(inner).empty()) {
    return false;
  }
  const std::vector<WorkGraph::Use>& uses = g.uses(inner);
  return uses.size() == 1 && uses[0].node == next;
}

bool attr_bool(const NodeDef& d, const char* key) { return d.has_attr(key) && d.attr<bool>(key); }

// w is read from a Const or a variable (directly or through the Identity that reads it).
bool packable(const WorkGraph& g, const TensorId& w) {
  const NodeDef& d = g.def(w.node);
  if (d.op == "Const") return g.is_constant(w.node);
  if (d.op == "VariableV2") return true;
  return d.op == "Identity" && d.inputs.size() == 1 && g.def(d.inputs[0].node).op == "VariableV2";
}

struct Match {
  int matmul = -1;
  int bias_node = -1;  // BiasAdd / Add, or -1
  int act_node = -1;   // the activation, or -1
  TensorId bias;
};

// The MatMul's product is rank 2 with a known n, float, and its operands are rank 2.
bool good_matmul(const WorkGraph& g, int mm) {
  const NodeDef& d = g.def(mm);
  if (d.op != "MatMul" || d.inputs.size() != 2 || d.num_outputs != 1 || g.is_stateful(mm)) {
    return false;
  }
  for (const TensorId& t : d.inputs) {
    const StaticShape s = static_shape_of(g, t);
    if (!s.known_rank || s.dims.size() != 2 || dtype_of(g, t) != dtype_of(g, {mm, 0})) return false;
  }
  return is_float(g, {mm, 0});
}

// A Conv2D in NHWC, float, with operands of rank 4: its output channels are the last axis, where
// the epilogue adds the bias.
bool good_conv(const WorkGraph& g, int conv) {
  const NodeDef& d = g.def(conv);
  if (d.op != "Conv2D" || d.inputs.size() != 2 || d.num_outputs != 1 || g.is_stateful(conv)) {
    return false;
  }
  if (d.has_attr("data_format") && d.attr<std::string>("data_format") != "NHWC") return false;
  for (const TensorId& t : d.inputs) {
    const StaticShape s = static_shape_of(g, t);
    if (!s.known_rank || s.dims.size() != 4 || dtype_of(g, t) != dtype_of(g, {conv, 0})) {
      return false;
    }
  }
  return is_float(g, {conv, 0});
}

bool good_product(const WorkGraph& g, int node) {
  return good_matmul(g, node) || good_conv(g, node);
}

// Root -> the pattern it ends, if any.
std::optional<Match> match(const WorkGraph& g, int root) {
  Match m;
  int cur = root;
  const NodeDef& rd = g.def(root);
  if (is_activation(rd.op)) {
    if (rd.inputs.size() != 1 || rd.inputs[0].index != 0) return std::nullopt;
    m.act_node = root;
    cur = rd.inputs[0].node;
    if (!fusable_inner(g, cur, root)) return std::nullopt;
  }
  const NodeDef& cd = g.def(cur);
  if (cd.op == "BiasAdd" || cd.op == "Add" || cd.op == "AddV2") {
    if (cd.inputs.size() != 2) return std::nullopt;
    if (cd.op == "BiasAdd" && cd.has_attr("data_format") &&
        cd.attr<std::string>("data_format") != "NHWC") {
      return std::nullopt;
    }
    // BiasAdd's value is its first input; an Add's product may be either.
    bool found = false;
    for (int side : {0, 1}) {
      if (cd.op == "BiasAdd" && side == 1) break;
      const TensorId p = cd.inputs[static_cast<std::size_t>(side)];
      const TensorId b = cd.inputs[static_cast<std::size_t>(1 - side)];
      if (p.index != 0 || !good_product(g, p.node) || !fusable_inner(g, p.node, cur)) continue;
      const StaticShape prod = static_shape_of(g, {p.node, 0});
      const StaticShape bs = static_shape_of(g, b);
      if (dtype_of(g, b) != dtype_of(g, p)) continue;
      if (cd.op != "BiasAdd") {
        // An Add is a BiasAdd only when b is certainly a row of values along the last axis.
        if (!bs.known_rank || bs.dims.size() != 1 || bs.dims[0] < 0 || !prod.known_rank ||
            prod.dims.empty() || prod.dims.back() != bs.dims[0]) {
          continue;
        }
      }
      m.bias_node = cur;
      m.bias = b;
      m.matmul = p.node;
      found = true;
      break;
    }
    if (!found) return std::nullopt;
  } else if (cd.op == "MatMul") {
    if (!good_matmul(g, cur)) return std::nullopt;
    m.matmul = cur;
    if (m.act_node < 0 && !packable(g, g.def(cur).inputs[1])) return std::nullopt;
  } else if (cd.op == "Conv2D" && m.act_node >= 0) {
    if (!good_conv(g, cur)) return std::nullopt;
    m.matmul = cur;
  } else {
    return std::nullopt;
  }
  return m;
}

void rewrite(WorkGraph& g, int root, const Match& m, PassContext& ctx) {
  const NodeDef mm = g.def(m.matmul);  // a copy: the root may be the MatMul itself
  std::vector<std::string> fused_ops;
  if (m.bias_node >= 0) fused_ops.emplace_back("BiasAdd");
  if (m.act_node >= 0) fused_ops.push_back(g.def(m.act_node).op);
  std::vector<TensorId> inputs = mm.inputs;
  if (m.bias_node >= 0) inputs.push_back(m.bias);
  const std::optional<DType> dtype = dtype_of(g, {m.matmul, 0});
  const bool conv = mm.op == "Conv2D";
  const bool pack = !conv && packable(g, mm.inputs[1]);
  std::vector<int> inner;
  for (int n : {m.matmul, m.bias_node}) {
    if (n >= 0 && n != root) inner.push_back(n);
  }
  std::string what = mm.name;
  if (m.bias_node >= 0 && m.bias_node != m.matmul) what += " + " + g.def(m.bias_node).name;
  if (m.act_node >= 0) what += " + " + g.def(m.act_node).name;
  const std::string fused_op = conv ? "_FusedConv2D" : "_FusedMatMul";
  {
    NodeDef& d = g.edit(root);
    d.op = fused_op;
    d.attrs.clear();
    if (conv) {
      // The convolution's own attributes (strides, padding, explicit_paddings, dilations,
      // data_format), as the kernel reads them.
      d.attrs = mm.attrs;
      d.attrs.erase("T");
      d.attrs["conv_name"] = mm.name;
    } else {
      d.attrs["transpose_a"] = attr_bool(mm, "transpose_a");
      d.attrs["transpose_b"] = attr_bool(mm, "transpose_b");
      d.attrs["matmul_name"] = mm.name;
      d.attrs["pack_weights"] = pack;
    }
    d.attrs["fused_ops"] = fused_ops;
    if (dtype) d.attrs["T"] = *dtype;
  }
  g.set_inputs(root, inputs);
  if (inner.empty()) {
    g.mark_rewritten(root);
  }
  for (int n : inner) {
    for (int c : g.ordering_of(g.def(n).control_inputs)) g.add_control_input(root, c);
    g.absorb_names(root, n);
  }
  std::string ops;
  for (const std::string& o : fused_ops) ops += (ops.empty() ? "" : ", ") + o;
  ctx.note(inner.empty() ? "rewritten" : "fused", g.def(root).name,
           what + " -> " + fused_op + " [" + ops + "]" + (pack ? ", weights packed once" : ""));
}

// ReluGrad(MaxPoolGrad(x, y, dy), x), the backward pass of MaxPool after a Relu (ReluGrad's
// features are the Relu's output, which is the pooling's input): one _FusedMaxPoolGrad(x, y, dy)
// ["ReluGrad"] (kernels/pool_ops.cpp) that zeroes a window's gradient where the chosen cell is
// <= 0 in its own pass, instead of a second pass over the layer's input-sized gradient.
// Returns the MaxPoolGrad it absorbed, or -1.
int fuse_pool_relu_grad(WorkGraph& g, int root, PassContext& ctx) {
  const NodeDef& rd = g.def(root);
  if (rd.op != "ReluGrad" || rd.inputs.size() != 2 || rd.num_outputs != 1 ||
      rd.inputs[0].index != 0 || !is_float(g, {root, 0})) {
    return -1;
  }
  const int mpg = rd.inputs[0].node;
  const NodeDef& md = g.def(mpg);
  if (md.op != "MaxPoolGrad" || md.inputs.size() != 3 || !(md.inputs[0] == rd.inputs[1]) ||
      dtype_of(g, {mpg, 0}) != dtype_of(g, {root, 0}) || !fusable_inner(g, mpg, root)) {
    return -1;
  }
  const NodeDef pool_grad = md;  // a copy: editing the root may move the graph's storage
  const std::string what = pool_grad.name + " + " + rd.name;
  {
    NodeDef& d = g.edit(root);
    d.op = "_FusedMaxPoolGrad";
    // MaxPoolGrad's attributes (ksize, strides, padding, data_format, T), as the kernel reads them.
    d.attrs = pool_grad.attrs;
    d.attrs["fused_ops"] = std::vector<std::string>{"ReluGrad"};
  }
  g.set_inputs(root, pool_grad.inputs);
  for (int c : g.ordering_of(pool_grad.control_inputs)) g.add_control_input(root, c);
  g.absorb_names(root, mpg);
  ctx.note("fused", g.def(root).name, what + " -> _FusedMaxPoolGrad [ReluGrad]");
  return mpg;
}

}  // namespace

bool run_remapping(WorkGraph& g, PassContext& ctx) {
  std::vector<int> order = g.topological_order();
  std::reverse(order.begin(), order.end());  // consumers first: the longest pattern wins
  std::vector<char> fused(static_cast<std::size_t>(g.size()), 0);
  bool changed = false;
  for (int n : order) {
    // A node already fused into a consumer (unread until the pruning that follows) starts none.
    if (!g.alive(n) || fused[static_cast<std::size_t>(n)] || g.def(n).op == "_FusedMatMul" ||
        g.def(n).op == "_FusedConv2D" || g.def(n).op == "_FusedMaxPoolGrad" || g.is_stateful(n)) {
      continue;
    }
    if (const int absorbed = fuse_pool_relu_grad(g, n, ctx); absorbed >= 0) {
      fused[static_cast<std::size_t>(absorbed)] = 1;
      changed = true;
      continue;
    }
    const std::optional<Match> m = match(g, n);
    if (!m) continue;
    for (int inner : {m->matmul, m->bias_node, m->act_node}) {
      if (inner >= 0) fused[static_cast<std::size_t>(inner)] = 1;
    }
    rewrite(g, n, *m, ctx);
    changed = true;
  }
  return changed;
}

}  // namespace opweave
