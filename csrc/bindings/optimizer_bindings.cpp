// The graph optimizer: opweave._opweave_core.OptimizerOptions, and the Python shapes of its
// reports and of compiled signatures. opweave._optimizer maps ConfigProto's switches onto the
// options and wraps the reports.
#include "optimizer_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <set>

#include "numpy_tensor.h"
#include "opweave/optimizer/pass.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

py::object attr_to_python(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> py::object {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, Tensor>) {
          return numpy_from_tensor(v, /*writeable=*/true, /*copy=*/true);
        } else if constexpr (std::is_same_v<V, std::shared_ptr<HostFunction>>) {
          return py::none();  // a py_function body: the Python graph holds the callable
        } else {
          return py::cast(v);
        }
      },
      value);
}

// "a" for output 0, "a:k" otherwise, as GraphDef spells inputs.
std::string input_name(const Graph& graph, const TensorId& t) {
  const std::string name = graph.node(t.node)->name;
  return t.index == 0 ? name : name + ":" + std::to_string(t.index);
}

py::dict node_to_python(const Graph& graph, const NodeDef& def, bool with_inputs,
                        bool with_tensors) {
  py::dict d;
  d["name"] = def.name;
  d["op"] = def.op;
  py::list inputs;
  if (with_inputs) {
    for (const TensorId& in : def.inputs) inputs.append(input_name(graph, in));
    for (int c : def.control_inputs) inputs.append("^" + graph.node(c)->name);
  }
  d["input"] = inputs;
  d["device"] = def.device;
  py::dict attrs;
  for (const auto& [key, value] : def.attrs) {
    if (with_tensors || !std::holds_alternative<Tensor>(value)) {
      attrs[py::str(key)] = attr_to_python(value);
    }
  }
  d["attr"] = attrs;
  d["original_nodes"] = py::cast(def.original_nodes);
  return d;
}

}  // namespace

py::dict optimizer_report_to_python(const OptimizerReport& report) {
  py::dict out;
  out["nodes_before"] = report.nodes_before;
  out["nodes_after"] = report.nodes_after;
  out["skipped"] = report.skipped;
  py::list passes;
  for (const PassReport& p : report.passes) {
    py::dict d;
    d["pass"] = p.pass;
    d["iteration"] = p.iteration;
    d["nodes_before"] = p.nodes_before;
    d["nodes_after"] = p.nodes_after;
    d["micros"] = p.micros;
    d["error"] = p.error;
    py::list changes;
    for (const OptimizerChange& c : p.changes)
      changes.append(py::make_tuple(c.kind, c.node, c.detail));
    d["changes"] = changes;
    passes.append(d);
  }
  out["passes"] = passes;
  return out;
}

py::list compiled_graph_to_python(const CompiledGraph& compiled, bool with_tensors) {
  py::list nodes;
  const std::shared_ptr<const Graph>& source = compiled.source();
  if (!source) return nodes;
  std::set<std::string> listed;
  for (int i = 0; i < compiled.num_nodes(); ++i) listed.insert(compiled.node(i).def->name);
  for (const TensorId& f : compiled.feeds()) {
    const std::shared_ptr<const NodeDef> def = source->node(f.node);
    if (listed.insert(def->name).second) {
      nodes.append(node_to_python(*source, *def, /*with_inputs=*/false, with_tensors));
    }
  }
  for (int i = 0; i < compiled.num_nodes(); ++i) {
    nodes.append(
        node_to_python(*source, *compiled.node(i).def, /*with_inputs=*/true, with_tensors));
  }
  return nodes;
}

void register_optimizer(py::module_& m) {
  py::class_<OptimizerOptions>(m, "OptimizerOptions")
      .def(py::init<>())
      .def_static("all", &OptimizerOptions::all)
      .def_readwrite("passes", &OptimizerOptions::passes)
      .def_readwrite("arithmetic_with_constants", &OptimizerOptions::arithmetic_with_constants)
      .def_readwrite("max_constant_bytes", &OptimizerOptions::max_constant_bytes)
      .def_readwrite("min_graph_nodes", &OptimizerOptions::min_graph_nodes)
      .def_readwrite("max_iterations", &OptimizerOptions::max_iterations)
      .def_readwrite("fail_on_errors", &OptimizerOptions::fail_on_errors);
  m.def("optimizer_pass_names", [] {
    std::vector<std::string> names;
    for (const PassInfo& p : optimizer_passes()) names.emplace_back(p.name);
    return names;
  });
}

}  // namespace opweave::bindings
