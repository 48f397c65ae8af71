// Identity and NoOp removal (TensorFlow's dependency optimizer): an Identity's consumers read its
// input instead, a NoOp's control consumers wait for its control inputs instead; a removed node's
// control inputs pass to its consumers, so the ordering it imposed survives. Kept: fetched nodes
// and targets, an Identity of a stateful node's output (a variable read stays a read), and nodes
// whose removal would multiply control edges (inputs x consumers > inputs + consumers).
#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

// Rewiring `inputs` ordering edges to each of `consumers` must not cost more edges than it saves.
bool worth_rewiring(std::size_t inputs, std::size_t consumers) {
  return inputs * consumers <= inputs + consumers;
}

}  // namespace

bool bypass_pass_through(WorkGraph& g, int n, PassContext& ctx, const char* why) {
  const NodeDef& d = g.def(n);
  if (g.is_protected(n) || d.inputs.size() != 1 || d.num_outputs != 1) return false;
  const TensorId x = d.inputs[0];
  // A stateful producer's output (a variable) read through an Identity is a snapshot: keep it.
  if (g.is_stateful(x.node) && g.def(x.node).op != "_Arg") return false;
  const std::size_t consumers = g.uses(n).size() + g.control_uses(n).size();
  if (!worth_rewiring(g.ordering_of(d.control_inputs).size(), consumers)) return false;
  const std::string name = d.name, op = d.op;
  if (!g.bypass(n, x)) return false;
  ctx.note("removed", name, op + why);
  return true;
}

bool run_identity_removal(WorkGraph& g, PassContext& ctx) {
  bool changed = false;
  for (int n : g.topological_order()) {
    if (!g.alive(n) || g.is_protected(n)) continue;
    const NodeDef& d = g.def(n);
    if (d.op == "Identity") {
      changed = bypass_pass_through(g, n, ctx, ": its consumers read its input") || changed;
    } else if (d.op == "NoOp" && d.inputs.empty() && d.num_outputs == 0) {
      const std::vector<int> before = g.ordering_of(d.control_inputs);
      if (!worth_rewiring(before.size(), g.control_uses(n).size())) continue;
      const std::string name = d.name;
      g.replace_control_uses(n, before);
      g.remove(n);
      ctx.note("removed", name, "NoOp: what waited for it waits for its control inputs");
      changed = true;
    }
  }
  return changed;
}

}  // namespace opweave
