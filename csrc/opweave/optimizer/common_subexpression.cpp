// Common-subexpression elimination: two nodes with the same op, device, inputs (in order, or
// either order for Add / AddV2 / Mul, whose results do not depend on it), control inputs and
// attributes compute the same values, so the later one is dropped and its consumers read the
// earlier one. Constants with equal values (dtype, shape and bytes) merge too. Never for stateful
// nodes (two random ops with the same seed are two draws), nodes reading a stateful node's output
// (two reads of a variable are two reads, as TensorFlow never merges nodes with ref inputs),
// nodes without outputs, or a protected (fetched, target) node as the one dropped.
#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "opweave/optimizer/pass.h"

namespace opweave {

namespace {

void mix(std::size_t& h, std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

bool commutative(const std::string& op) { return op == "Add" || op == "AddV2" || op == "Mul"; }

std::vector<TensorId> canonical_inputs(const NodeDef& d) {
  std::vector<TensorId> in = d.inputs;
  if (commutative(d.op) && in.size() == 2 && in[1] < in[0]) std::swap(in[0], in[1]);
  return in;
}

std::vector<int> sorted_control(const NodeDef& d) {
  std::vector<int> c = d.control_inputs;
  std::sort(c.begin(), c.end());
  return c;
}

std::size_t hash_tensor(const Tensor& t) {
  std::size_t h = std::hash<int>()(static_cast<int>(t.dtype()));
  for (std::int64_t d : t.shape()) mix(h, std::hash<std::int64_t>()(d));
  if (t.dtype() == DType::kString || !t.defined()) return h;
  // The first bytes are enough to tell most constants apart; equality compares them all.
  const Tensor c = t.contiguous();
  const std::size_t n = std::min<std::size_t>(c.nbytes(), 256);
  mix(h, std::hash<std::string>()(std::string(static_cast<const char*>(c.raw_data()), n)));
  return h;
}

bool equal_tensors(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.raw_data() == b.raw_data() && a.strides() == b.strides()) return true;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  if (a.dtype() == DType::kString) {
    for (std::int64_t i = 0; i < ca.numel(); ++i) {
      if (ca.data<std::string>()[i] != cb.data<std::string>()[i]) return false;
    }
    return true;
  }
  // Bytes, not values: -0.0 and 0.0, or two NaNs with other payloads, stay apart.
  return ca.nbytes() == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

std::size_t hash_attr(const AttrValue& v) {
  std::size_t h = v.index();
  std::visit(
      [&h](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, Tensor>) {
          mix(h, hash_tensor(x));
        } else if constexpr (std::is_same_v<X, std::int64_t> || std::is_same_v<X, double> ||
                             std::is_same_v<X, bool> || std::is_same_v<X, std::string>) {
          mix(h, std::hash<X>()(x));
        } else if constexpr (std::is_same_v<X, DType>) {
          mix(h, static_cast<std::size_t>(x));
        } else if constexpr (std::is_same_v<X, std::shared_ptr<HostFunction>>) {
          mix(h, std::hash<const void*>()(x.get()));
        } else {
          mix(h, x.size());  // the lists: their length is enough for a hash
        }
      },
      v);
  return h;
}

bool equal_attrs(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&b](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        const X& y = std::get<X>(b);
        if constexpr (std::is_same_v<X, Tensor>) {
          return equal_tensors(x, y);
        } else if constexpr (std::is_same_v<X, double>) {
          return std::memcmp(&x, &y, sizeof(double)) == 0;  // bits, as for tensors
        } else {
          return x == y;
        }
      },
      a);
}

std::size_t hash_node(const NodeDef& d) {
  std::size_t h = std::hash<std::string>()(d.op);
  mix(h, std::hash<std::string>()(d.device));
  mix(h, static_cast<std::size_t>(d.num_outputs));
  for (const TensorId& in : canonical_inputs(d)) {
    mix(h, static_cast<std::size_t>(in.node));
    mix(h, static_cast<std::size_t>(in.index));
  }
  for (int c : sorted_control(d)) mix(h, static_cast<std::size_t>(c));
  for (const auto& [key, value] : d.attrs) {
    mix(h, std::hash<std::string>()(key));
    mix(h, hash_attr(value));
  }
  return h;
}

bool same_computation(const NodeDef& a, const NodeDef& b) {
  if (a.op != b.op || a.device != b.device || a.num_outputs != b.num_outputs ||
      a.attrs.size() != b.attrs.size() || canonical_inputs(a) != canonical_inputs(b) ||
      sorted_control(a) != sorted_control(b)) {
    return false;
  }
  for (auto ia = a.attrs.begin(), ib = b.attrs.begin(); ia != a.attrs.end(); ++ia, ++ib) {
    if (ia->first != ib->first || !equal_attrs(ia->second, ib->second)) return false;
  }
  return true;
}

// Reads the output of a stateful node (a variable's ref, a random draw); a feed is a plain value.
bool reads_state(const WorkGraph& g, const NodeDef& d) {
  for (const TensorId& in : d.inputs) {
    if (g.def(in.node).op != "_Arg" && g.is_stateful(in.node)) return true;
  }
  return false;
}

}  // namespace

bool run_common_subexpression(WorkGraph& g, PassContext& ctx) {
  bool changed = false;
  std::unordered_multimap<std::size_t, int> seen;
  for (int n : g.topological_order()) {
    const NodeDef& d = g.def(n);
    if (d.num_outputs == 0 || g.is_stateful(n) || reads_state(g, d)) continue;
    const std::size_t h = hash_node(d);
    int twin = -1;
    for (auto [it, end] = seen.equal_range(h); it != end; ++it) {
      if (same_computation(g.def(it->second), d)) {
        twin = it->second;
        break;
      }
    }
    if (twin < 0 || g.is_protected(n)) {
      seen.emplace(h, n);
      continue;
    }
    const std::string name = d.name;
    for (int k = 0; k < d.num_outputs; ++k) g.replace_uses({n, k}, {twin, k});
    g.replace_control_uses(n, {twin});
    g.absorb_names(twin, n);
    g.set_inputs(n, {});
    g.set_control_inputs(n, {});
    g.remove(n);
    ctx.note("merged", name, "into " + g.def(twin).name + " (same op, inputs and attributes)");
    changed = true;
  }
  return changed;
}

}  // namespace opweave
