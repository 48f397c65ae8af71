// Constant folding: a node whose data inputs are all constants is computed now, once, by its own
// kernel on the intra-op pool (so the value is the one the run would compute, bit for bit), and
// becomes a Const. Never for stateful nodes, nodes without inputs (placeholders, feeds), targets,
// or outputs larger than max_constant_bytes (checked on the static shape before computing when it
// is known, so a huge Fill is never even built). A folded node keeps the ordering that it and
// its constant inputs had (their control inputs), so an Assign it waited for still runs first.
#include <algorithm>

#include "opweave/cancellation.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/optimizer/pass.h"
#include "opweave/trace.h"

namespace opweave {

namespace {

// Bytes a tensor of this many elements takes in a constant (strings: their characters too).
std::int64_t tensor_bytes(const Tensor& t) {
  if (t.dtype() != DType::kString) return static_cast<std::int64_t>(t.nbytes());
  std::int64_t bytes = 0;
  const Tensor c = t.contiguous();
  for (std::int64_t i = 0; i < c.numel(); ++i) {
    bytes += static_cast<std::int64_t>(sizeof(std::string) + c.data<std::string>()[i].size());
  }
  return bytes;
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_to_string(t.shape());
}

}  // namespace

std::optional<std::vector<Tensor>> evaluate_now(const WorkGraph& graph, int id, const NodeDef& def,
                                                const std::vector<Tensor>& inputs, PassContext& ctx,
                                                std::string* why) {
  if (graph.is_stateful(id) || def.num_outputs <= 0) return std::nullopt;
  KernelDef kernel_def;
  try {
    kernel_def = find_kernel(def.op);
  } catch (const OpError&) {
    return std::nullopt;
  }
  if (kernel_def.stateful) return std::nullopt;
  const std::int64_t cap = ctx.options.max_constant_bytes;
  // Known sizes are checked before anything is computed.
  if (def.output_dtypes.size() == static_cast<std::size_t>(def.num_outputs) &&
      def.output_shapes.size() == def.output_dtypes.size()) {
    for (std::size_t k = 0; k < def.output_shapes.size(); ++k) {
      const StaticShape& s = def.output_shapes[k];
      if (!s.fully_known() || def.output_dtypes[k] == DType::kString) continue;
      const double bytes = static_cast<double>(shape_numel(s.dims)) *
                           static_cast<double>(dtype_size(def.output_dtypes[k]));
      if (bytes > static_cast<double>(cap)) {
        if (why) {
          *why = "not folded: its output would take " +
                 std::to_string(static_cast<std::int64_t>(bytes)) +
                 " bytes, more than max_folded_constant_in_bytes (" + std::to_string(cap) + ")";
        }
        return std::nullopt;
      }
    }
  }
  std::vector<Tensor> slots(inputs);
  std::vector<int> index(inputs.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
  slots.resize(inputs.size() + static_cast<std::size_t>(def.num_outputs));
  try {
    // Not cancellable and not traced: this value is kept for every later run of the signature,
    // so it must be whole whatever the run that compiles it (maybe a cancelled or traced run
    // nesting this one in a py_function) has installed on this thread.
    const ScopedCancellation no_cancel(nullptr);
    const ScopedChunkObserver no_trace(nullptr);
    const Kernel kernel = kernel_def.make(def);
    // Sole-reader bits 0: the kernel must not write into a constant's buffer.
    KernelContext kctx{
        def,
        InputList(slots.data(), index.data(), index.size()),
        OutputList(slots.data() + inputs.size(), static_cast<std::size_t>(def.num_outputs)),
        ctx.intra_pool,
        0,
        nullptr,
        nullptr};
    kernel(kctx);
  } catch (const std::exception& e) {
    if (why) *why = std::string("not folded: its kernel fails (") + e.what() + ")";
    return std::nullopt;
  }
  std::vector<Tensor> out(slots.begin() + static_cast<std::ptrdiff_t>(inputs.size()), slots.end());
  for (const Tensor& t : out) {
    if (!t.defined()) return std::nullopt;
    if (tensor_bytes(t) > cap) {
      if (why) {
        *why = "not folded: its output takes " + std::to_string(tensor_bytes(t)) +
               " bytes, more than max_folded_constant_in_bytes (" + std::to_string(cap) + ")";
      }
      return std::nullopt;
    }
  }
  return out;
}

bool run_constant_folding(WorkGraph& g, PassContext& ctx) {
  bool changed = false;
  for (int n : g.topological_order()) {
    if (!g.alive(n)) continue;
    const NodeDef& d = g.def(n);
    if (d.op == "Const" || d.inputs.empty() || d.num_outputs == 0 || g.is_target(n)) continue;
    // A fetched node stays where it is: with one output it can become a Const in place.
    if (g.is_protected(n) && d.num_outputs != 1) continue;
    bool all_constant = true;
    for (const TensorId& in : d.inputs) all_constant = all_constant && g.is_constant(in.node);
    if (!all_constant || g.is_stateful(n)) continue;
    std::vector<Tensor> inputs;
    for (const TensorId& in : d.inputs) inputs.push_back(g.constant_value(in.node));
    std::string why;
    std::optional<std::vector<Tensor>> out = evaluate_now(g, n, d, inputs, ctx, &why);
    if (!out) {
      if (!why.empty()) ctx.note("kept", d.name, why);
      continue;
    }
    std::vector<int> control = d.control_inputs;
    std::vector<int> producers;
    for (const TensorId& in : d.inputs) {
      if (std::find(producers.begin(), producers.end(), in.node) != producers.end()) continue;
      producers.push_back(in.node);
      const std::vector<int>& more = g.def(in.node).control_inputs;
      control.insert(control.end(), more.begin(), more.end());
    }
    control = g.ordering_of(control);
    changed = true;
    if (d.num_outputs == 1) {
      const std::string name = d.name;
      // What a folded input stood for becomes part of what this one stands for when the input
      // dies with this rewrite (its list moves); a constant others still read keeps its own.
      g.mark_rewritten(n);
      for (int p : producers) {
        const std::vector<WorkGraph::Use>& uses = g.uses(p);
        const bool only_n = std::all_of(uses.begin(), uses.end(),
                                        [n](const WorkGraph::Use& u) { return u.node == n; });
        if (!g.def(p).original_nodes.empty() && only_n && g.control_uses(p).empty() &&
            !g.is_protected(p)) {
          g.absorb_names(n, p);
        }
      }
      NodeDef& e = g.edit(n);
      const Tensor& value = (*out)[0];
      e.op = "Const";
      e.attrs.clear();
      e.attrs["value"] = AttrValue{value};
      e.attrs["dtype"] = AttrValue{value.dtype()};
      e.output_dtypes = {value.dtype()};
      e.output_shapes = {StaticShape{true, value.shape()}};
      g.set_inputs(n, {});
      g.set_control_inputs(n, control);
      ctx.note("folded", name, "into a constant (" + describe(value) + ")");
      continue;
    }
    // Several outputs: a constant for each output something reads, then the node goes.
    const std::string name = d.name;
    const std::string device = d.device;
    for (int k = 0; k < d.num_outputs; ++k) {
      if (g.num_uses({n, k}) == 0) continue;
      const Tensor& value = (*out)[static_cast<std::size_t>(k)];
      const int c =
          g.add_constant(name + "/folded_" + std::to_string(k), value, control, {name}, device);
      g.replace_uses({n, k}, {c, 0});
      ctx.note("added", g.def(c).name, "output " + std::to_string(k) + " of " + name);
    }
    g.replace_control_uses(n, control);
    g.remove(n);
    ctx.note("folded", name, "into " + std::to_string(d.num_outputs) + " constants");
  }
  return changed;
}

}  // namespace opweave
