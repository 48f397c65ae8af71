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

// Runs `execute` (one executor call for `req`) with the GIL released, a pending signal turning
// into a cancellation; raises KeyboardInterrupt, or CoreError for a failed run, with the GIL.
template <typename Execute>
std::vector<Tensor> run_released(RunRequest& req, Execute&& execute) {
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
  {
    // Safe to release: until the run returns no Python object is touched except under an
    // explicit gil_scoped_acquire (py_function bodies, the signal poll).
    // Counted, so interpreter exit cancels this run and waits for it (interpreter_exit.h).
    CountedGilRelease release;
    try {
      out = execute();
    } catch (const RunFailure& e) {
      failure.emplace(e);
    }
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
  return out;
}

// The fetched tensors as arrays. A tensor only this run references becomes the array's memory;
// one shared with a constant, a feed or another fetch is copied so the caller may write to the
// array freely. Tiny ones are copied too: copying 64 bytes costs less than the capsule that
// would keep them alive.
py::list results_to_python(std::vector<Tensor>& out, const std::vector<const void*>& feed_owners) {
  py::list results(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    Tensor& t = out[i];
    const bool unique =
        t.owner() && t.owner().use_count() == 1 && t.numel() > 0 &&
        std::find(feed_owners.begin(), feed_owners.end(), t.owner().get()) == feed_owners.end();
    results[i] = numpy_from_tensor(t, /*writeable=*/true, /*copy=*/!unique || t.nbytes() <= 64);
    t = Tensor();
  }
  return results;
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
  std::vector<const void*> feed_owners;
  for (const auto& f : req.feeds) feed_owners.push_back(f.second.owner().get());
  std::vector<Tensor> out =
      run_released(req, [&session, &req] { return session.executor->run(req); });
  // With the GIL held: dropping a feed's last reference decrefs its array.
  req.feeds.clear();
  py::list results = results_to_python(out, feed_owners);
  py::object step_stats = py::none();
  if (owned->stats) step_stats = step_stats_to_python(*owned->stats);
  py::object graph = py::none();
  if (compiled) graph = compiled_graph_to_python(*compiled, /*with_tensors=*/export_graph > 1);
  return py::make_tuple(results, step_stats, graph);
}

// One signature prepared for many runs (Session.make_callable): its feeds sorted once, its
// compiled graph kept after the first call, so a call converts its arrays and runs.
struct PreparedRun {
  py::object executor_object;  // the Python Executor: keeps `session` alive
  SessionExecutor* session = nullptr;
  // Per argument: the dtype an array must have to be passed as is, and the static shape it
  // must fit; anything else goes back to Python, which converts or refuses it.
  std::vector<DType> dtypes;
  std::vector<StaticShape> shapes;
  py::object numpy_scalar;         // numpy.generic
  std::vector<TensorId> feed_ids;  // sorted, as the executor compiles them
  std::vector<std::size_t> order;  // feed_ids[k] is the call's argument order[k]
  std::vector<TensorId> fetches;
  std::vector<int> targets;
  std::shared_ptr<const CompiledGraph> compiled;  // read and written with the GIL held
};

PreparedRun prepare(py::object executor_object, const std::vector<std::pair<int, int>>& feeds,
                    const std::vector<std::pair<int, int>>& fetches,
                    const std::vector<int>& targets, const std::vector<DType>& dtypes,
                    const std::vector<std::optional<std::vector<std::int64_t>>>& shapes) {
  PreparedRun p;
  if (dtypes.size() != feeds.size() || shapes.size() != feeds.size()) {
    throw py::value_error("one dtype and one shape per feed");
  }
  p.dtypes = dtypes;
  p.numpy_scalar = py::module_::import("numpy").attr("generic");
  for (const auto& shape : shapes) {
    p.shapes.push_back(shape ? StaticShape{true, *shape} : StaticShape{});
  }
  p.session = &executor_object.cast<SessionExecutor&>();
  p.executor_object = std::move(executor_object);
  p.order.resize(feeds.size());
  for (std::size_t i = 0; i < feeds.size(); ++i) p.order[i] = i;
  std::sort(p.order.begin(), p.order.end(),
            [&feeds](std::size_t a, std::size_t b) { return feeds[a] < feeds[b]; });
  for (std::size_t k : p.order) p.feed_ids.push_back({feeds[k].first, feeds[k].second});
  for (std::size_t k = 1; k < p.feed_ids.size(); ++k) {
    if (p.feed_ids[k] == p.feed_ids[k - 1]) throw py::value_error("a tensor is fed twice");
  }
  for (const auto& [node, index] : fetches) p.fetches.push_back({node, index});
  p.targets = targets;
  return p;
}

// `value` as an array to feed as is: an array (or NumPy scalar) of exactly `dtype` whose shape
// fits `shape`; nothing otherwise (Python then converts it, or raises the error Session.run would).
std::optional<py::array> feedable(const py::handle& value, DType dtype, const StaticShape& shape,
                                  const py::object& numpy_scalar) {
  py::array array;
  if (py::isinstance<py::array>(value)) {
    array = py::reinterpret_borrow<py::array>(value);
  } else if (PyObject_IsInstance(value.ptr(), numpy_scalar.ptr()) == 1) {
    array = py::array::ensure(value);  // a 0-d array of the scalar's own dtype
    if (!array) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (dtype == DType::kString || dtype_from_numpy(array.dtype()) != dtype) return std::nullopt;
  if (shape.known_rank) {
    if (array.ndim() != static_cast<py::ssize_t>(shape.dims.size())) return std::nullopt;
    for (std::size_t i = 0; i < shape.dims.size(); ++i) {
      if (shape.dims[i] >= 0 && shape.dims[i] != array.shape(static_cast<py::ssize_t>(i))) {
        return std::nullopt;
      }
    }
  }
  return array;
}

// The fetched arrays, or None when an argument needs Python's conversion (or is missing).
py::object run_prepared(PreparedRun& p, const py::args& args, std::optional<InterPool> inter_pool,
                        std::int64_t timeout_ms) {
  if (args.size() != p.order.size()) return py::none();
  std::vector<py::array> arrays;
  arrays.reserve(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::optional<py::array> a = feedable(args[i], p.dtypes[i], p.shapes[i], p.numpy_scalar);
    if (!a) return py::none();
    arrays.push_back(std::move(*a));
  }
  std::vector<Tensor> fed;
  fed.reserve(p.order.size());
  std::vector<const void*> feed_owners;
  for (std::size_t k : p.order) {
    fed.push_back(tensor_from_numpy(arrays[k]));
    feed_owners.push_back(fed.back().owner().get());
  }
  RunRequest req;
  if (inter_pool) {
    req.inter_pool = inter_pool->get();
    req.keep_alive = inter_pool->pool;  // a per-session pool lives as long as the run
  }
  req.intra_pool = global_intra_pool();
  req.timeout_ms = timeout_ms;
  std::shared_ptr<const CompiledGraph> g = p.compiled;
  SessionExecutor& session = *p.session;
  std::vector<Tensor> out = run_released(req, [&] {
    // Compiled (and optimized) on the first call, with the GIL released like the run.
    if (!g) g = session.executor->compiled(p.feed_ids, p.fetches, p.targets, req.intra_pool);
    // A copy: `fed` keeps the last reference to each array, dropped below with the GIL held
    // (dropping it here would take the GIL back for a moment, once per feed).
    return session.executor->run_compiled(g, fed, req);
  });
  p.compiled = g;
  fed.clear();  // with the GIL: a feed's last reference decrefs its array
  return results_to_python(out, feed_owners);
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

  py::class_<PreparedRun>(m, "PreparedRun")
      .def(py::init(&prepare), py::arg("executor"), py::arg("feeds"), py::arg("fetches"),
           py::arg("targets"), py::arg("dtypes"), py::arg("shapes"))
      // run(inter_pool, timeout_ms, *values): the values in feed order.
      .def("run", [](PreparedRun& p, std::optional<InterPool> pool, std::int64_t timeout_ms,
                     const py::args& values) { return run_prepared(p, values, pool, timeout_ms); });

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
