// The graph optimizer's options and reports, and compiled signatures as Python structures
// (Session.optimizer_report(), RunMetadata.partition_graphs, the inputs of traced nodes).
// Every function here must be called with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include "opweave/executor/compiled_graph.h"
#include "opweave/optimizer/optimizer.h"

namespace opweave::bindings {

// {"nodes_before", "nodes_after", "skipped", "passes": [{"pass", "iteration", "nodes_before",
// "nodes_after", "micros", "error", "changes": [(kind, node, detail), ...]}, ...]}
pybind11::dict optimizer_report_to_python(const OptimizerReport& report);

// The nodes a compiled signature runs, plus its fed nodes, as dicts with TensorFlow's NodeDef
// fields: "name", "op", "input" ("a", "a:1", "^c"), "device", "attr" (tensor values as NumPy
// copies, left out unless with_tensors) and "original_nodes". A fed node is listed without
// inputs: they do not run.
pybind11::list compiled_graph_to_python(const CompiledGraph& graph, bool with_tensors);

}  // namespace opweave::bindings
