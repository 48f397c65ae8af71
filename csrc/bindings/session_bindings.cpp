// Session.run and the inter-op pools it runs on: opweave._opweave_core.{Executor, InterPool,
// NodeStats, ...}. The Python layer (opweave.session, and opweave._runtime for the pools) resolves
// names, fetch structures, configs and options.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "interpreter_exit.h"
#include "numpy_tensor.h"
#include "optimizer_bindings.h"
#include "opweave/executor/executor.h"
#include "opweave/executor/placement.h"
#include "opweave/pools/global_pools.h"
#include "opweave/pools/session_pools.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

py::object python_exception_of(const std::exception_ptr& cause);  // graph_bindings.cpp

namespace {

// A handle on an inter-op pool: owned (per-session, named), or the global one, which is looked
// up at each use because global_pools.h replaces it after fork() (a handle must not go stale).
struct InterPool {
  std::shared_ptr<ThreadPool> pool;  // null: the global inter-op pool
  ThreadPool* get() const { return pool ? pool.get() : global_inter_pool(); }
};

// One session's executor and where the session placed each node (placement is per session; a
// traced run records it).
struct SessionExecutor {
  // Declared first, destroyed last: a run abandoned at its deadline may still trace into it, and
  // the executor (destroyed first) waits for those runs.
  DevicePlacement placement;
  std::shared_ptr<Executor> executor;

  SessionExecutor() = default;
  SessionExecutor(const SessionExecutor&) = delete;
  SessionExecutor& operator=(const SessionExecutor&) = delete;
  ~SessionExecutor() {
    // Dropping the executor waits for the runs abandoned at their deadline, whose kernels may be
    // py_functions waiting for the GIL: let them have it. No Python object is touched meanwhile.
    if (executor && executor->num_abandoned_runs() > 0 && PyGILState_Check()) {
      py::gil_scoped_release release;
      executor.reset();
    }
  }
};

// What a run reads that this call owns, kept alive until the run's last node finished, also
// when the run is abandoned at its deadline and this call has returned.
struct RunOwned {
  std::shared_ptr<ThreadPool> pool;  // a per-session pool (null: the global one)
  std::unique_ptr<StepStatsCollector> stats;
};

// A pending Python exception taken out of the interpreter (e.g. KeyboardInterrupt from a
// signal handler) so it can be put back after the run. Touched only with the GIL held.
struct SavedPyError {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
  bool set() const { return type != nullptr; }
  void restore() {
    PyErr_Restore(type, value, traceback);
    type = value = traceback = nullptr;
  }
};

py::tuple shapes_to_python(const std::vector<Shape>& shapes) {
  py::list out;
  for (const Shape& shape : shapes) out.append(py::tuple(py::cast(shape)));
  return py::tuple(out);
}

// (node stats, thread names): one NodeStats per node that ran, in the order they ended; thread
// names map thread id -> role.
py::tuple step_stats_to_python(StepStatsCollector& stats) {
  return py::make_tuple(py::cast(stats.take()), py::cast(stats.thread_names()));
}

py::tuple run(SessionExecutor& session, const std::vector<std::tuple<int, int, py::array>>& feeds,
              const std::vector<std::pair<int, int>>& fetches, const std::vector<int>& targets,
              std::optional<InterPool> inter_pool, std::int64_t timeout_ms, bool trace,
              int export_graph) {
  RunRequest req;
  for (const auto& [node, index, array] : feeds) {
    req.feeds.push_back({TensorId{node, index}, tensor_from_numpy(array)});
  }
  for (const auto& [node, index] : fetches) req.fetches.push_back({node, index});
  req.targets = targets;
  auto owned = std::make_shared<RunOwned>();
  if (inter_pool) {
    owned->pool = inter_pool->pool;
    req.inter_pool = inter_pool->get();
  }
  req.intra_pool = global_intra_pool();
  req.timeout_ms = timeout_ms;
  if (trace) {
    owned->stats = std::make_unique<StepStatsCollector>(&session.placement);
    req.observer = owned->stats.get();
  }
  req.keep_alive = owned;
  std::shared_ptr<const CompiledGraph> compiled;
  if (export_graph > 0) req.compiled_out = &compiled;
  SavedPyError interrupt;
  // Runs on the thread that called run() (the waiting caller, or between nodes in caller-thread
  // mode). It takes the GIL only for PyErr_CheckSignals, so Ctrl-C turns into a cancellation.
  req.poll = [&interrupt]() -> bool {
    if (interrupt.set()) return false;
    if (interpreter_exiting()) return false;  // cancel; do not take the GIL at exit
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      PyErr_Fetch(&interrupt.type, &interrupt.value, &interrupt.traceback);
      return false;
    }
    return true;
  };

  std::vector<Tensor> out;
  std::optional<RunFailure> failure;
  std::vector<const void*> feed_owners;
  {
    // Safe to release: until the run returns no Python object is touched except under an
    // explicit gil_scoped_acquire (py_function bodies, the signal poll, decref of feed arrays).
    // Counted, so interpreter exit cancels this run and waits for it (interpreter_exit.h).
    CountedGilRelease release;
    try {
      out = session.executor->run(req);
    } catch (const RunFailure& e) {
      failure.emplace(e);
    }
    for (const auto& f : req.feeds) feed_owners.push_back(f.second.owner().get());
    req.feeds.clear();
  }
  if (interrupt.set()) {
    interrupt.restore();
    throw py::error_already_set();
  }
  if (failure) {
    py::object core_error = py::module_::import("opweave._opweave_core").attr("CoreError");
    py::object err =
        core_error(static_cast<int>(failure->code()), std::string(failure->what()),
                   failure->node_name(), failure->op_type(), python_exception_of(failure->cause()));
    PyErr_SetObject(core_error.ptr(), err.ptr());
    throw py::error_already_set();
  }
  py::list results;
  for (Tensor& t : out) {
    // A tensor only this run references becomes the array's memory; one shared with a constant,
    // a feed or another fetch is copied so the caller may write to the array freely. Tiny ones
    // are copied too: copying 64 bytes costs less than the capsule that would keep them alive.
    const bool unique =
        t.owner() && t.owner().use_count() == 1 && t.numel() > 0 &&
        std::find(feed_owners.begin(), feed_owners.end(), t.owner().get()) == feed_owners.end();
    results.append(numpy_from_tensor(t, /*writeable=*/true, /*copy=*/!unique || t.nbytes() <= 64));
    t = Tensor();
  }
  py::object step_stats = py::none();
  if (owned->stats) step_stats = step_stats_to_python(*owned->stats);
  py::object graph = py::none();
  if (compiled) graph = compiled_graph_to_python(*compiled, /*with_tensors=*/export_graph > 1);
  return py::make_tuple(results, step_stats, graph);
}

}  // namespace

void register_session(py::module_& m) {
  py::class_<InterPool>(m, "InterPool")
      .def_property_readonly("num_threads",
                             [](const InterPool& p) { return p.get()->num_workers(); })
      .def_property_readonly("name", [](const InterPool& p) { return p.get()->options().name; })
      .def("__eq__",
           [](const InterPool& a, const InterPool& b) { return a.pool.get() == b.pool.get(); })
      .def("__hash__", [](const InterPool& p) { return std::hash<void*>()(p.pool.get()); });

  py::class_<SessionExecutor>(m, "Executor")
      .def(py::init([](std::shared_ptr<Graph> g, const OptimizerOptions& optimizer) {
             auto s =
                 std::make_unique<SessionExecutor>();  // not movable: the placement has a mutex
             s->executor =
                 std::make_shared<Executor>(std::shared_ptr<const Graph>(std::move(g)), optimizer);
             return s;
           }),
           py::arg("graph"), py::arg("optimizer") = OptimizerOptions())
      .def("run", &run, py::arg("feeds"), py::arg("fetches"), py::arg("targets"),
           py::arg("inter_pool"), py::arg("timeout_ms"), py::arg("trace"),
           py::arg("export_graph") = 0)
      .def("optimizer_report",
           [](const SessionExecutor& s) -> py::object {
             std::shared_ptr<const OptimizerReport> r = s.executor->last_optimizer_report();
             if (!r) return py::none();
             return optimizer_report_to_python(*r);
           })
      .def(
          "place",
          [](SessionExecutor& s, const std::string& node, std::string device) {
            s.placement.place(node, std::move(device));
          },
          py::arg("node"), py::arg("device"))
      .def("num_compiled", [](const SessionExecutor& s) { return s.executor->num_compiled(); })
      // Released: close() waits for the runs abandoned at their deadline, whose py_function
      // kernels need the GIL to finish; it touches no Python object.
      .def(
          "close", [](SessionExecutor& s) { s.executor->close(); },
          py::call_guard<py::gil_scoped_release>())
      .def("num_abandoned_runs",
           [](const SessionExecutor& s) { return s.executor->num_abandoned_runs(); });

  // A traced run's per-node record (observer.h), read by name from Python.
  py::class_<ChunkRecord>(m, "ChunkStats")
      .def_readonly("begin", &ChunkRecord::begin)
      .def_readonly("end", &ChunkRecord::end)
      .def_readonly("start_nanos", &ChunkRecord::start_nanos)
      .def_readonly("end_nanos", &ChunkRecord::end_nanos)
      .def_readonly("thread_id", &ChunkRecord::thread_id);
  py::class_<NodeExecStats>(m, "NodeStats")
      .def_readonly("node_name", &NodeExecStats::node_name)
      .def_readonly("op", &NodeExecStats::op)
      .def_readonly("device", &NodeExecStats::device)
      .def_readonly("scheduled_nanos", &NodeExecStats::scheduled_nanos)
      .def_readonly("start_nanos", &NodeExecStats::start_nanos)
      .def_readonly("end_nanos", &NodeExecStats::end_nanos)
      .def_readonly("thread_id", &NodeExecStats::thread_id)
      .def_property_readonly(
          "input_shapes", [](const NodeExecStats& s) { return shapes_to_python(s.input_shapes); })
      .def_property_readonly(
          "output_shapes", [](const NodeExecStats& s) { return shapes_to_python(s.output_shapes); })
      .def_property_readonly("output_dtypes",
                             [](const NodeExecStats& s) {
                               py::list names;
                               for (DType d : s.output_dtypes) names.append(dtype_name(d));
                               return py::tuple(names);
                             })
      .def_property_readonly("chunks",
                             [](const NodeExecStats& s) {
                               return py::tuple(py::cast(s.chunks));  // copies: may outlive s
                             })
      .def_property_readonly("original_nodes", [](const NodeExecStats& s) {
        return py::tuple(py::cast(s.original_nodes));
      });

  // Inter-op pools for Session: the global one, named ones, a session's own (pools/).
  m.def("global_inter_pool", [] { return InterPool{}; });
  m.def(
      "named_inter_pool",
      [](const std::string& name, int n) { return InterPool{named_inter_pool(name, n)}; },
      py::arg("name"), py::arg("num_threads"));
  m.def(
      "new_inter_pool",
      [](int n, const std::string& name) { return InterPool{make_session_inter_pool(n, name)}; },
      py::arg("num_threads"), py::arg("name"));
}

}  // namespace opweave::bindings
