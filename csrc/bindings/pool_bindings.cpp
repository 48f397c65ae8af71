// The pools from Python: sizes and their provenance, counters, and one parallel NumPy workload
// for the demo. opweave/_pool.py wraps these with docstrings and argument checks.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>

#include "interpreter_exit.h"
#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/runtime.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {
namespace {

ThreadPool* pool_named(const std::string& name) {
  if (name == "intra") return global_intra_pool();
  if (name == "inter") return global_inter_pool();
  throw_invalid_argument("pool must be 'intra' or 'inter', got '" + name + "'");
}

py::dict stats_dict(const PoolStats& s) {
  py::dict d;
  d["tasks_run"] = s.tasks_run;
  d["steals"] = s.steals;
  d["parks"] = s.parks;
  d["wakeups"] = s.wakeups;
  d["injected"] = s.injected;
  return d;
}

py::dict runtime_info_dict() {
  const RuntimeInfo info = runtime_info();
  py::dict d;
  d["intra_op_parallelism"] = info.intra_op_parallelism;
  d["intra_source"] = info.intra_source;
  d["intra_pool_created"] = info.intra_pool_created;
  d["inter_op_parallelism"] = info.inter_op_parallelism;
  d["inter_source"] = info.inter_source;
  d["inter_pool_created"] = info.inter_pool_created;
  d["spin_time_us"] = info.spin_time_us;
  d["spin_time_source"] = info.spin_time_source;
  d["affinity"] = std::string(affinity_name(info.affinity));
  d["affinity_source"] = info.affinity_source;
  d["online_cpus"] = info.cpu.online_cpus;
  d["affinity_cpus"] = info.cpu.affinity_cpus;
  d["cgroup_quota_cpus"] = info.cpu.cgroup_quota_cpus;
  d["available_cpus"] = info.cpu.available_cpus;
  d["isa"] = info.cpu.isa;
  return d;
}

// sum over i of sum over k < repeats of sin(x[i] + k): ~repeats * 20 ns of work per element.
// A fixed-block parallel_reduce, so the result is the same bits for any thread count.
double parallel_sin_sum(const py::array_t<double, py::array::c_style | py::array::forcecast>& x,
                        int repeats) {
  const double* data = x.data();
  const auto n = static_cast<std::int64_t>(x.size());
  // The GIL is released only while the loop runs: it reads `data` alone, which stays valid
  // because the caller's argument holds a reference to the array, and touches no Python object.
  CountedGilRelease release;
  return parallel_reduce(
      global_intra_pool(), 0, n, 4096, 0.0,
      [&](std::int64_t b, std::int64_t e) {
        double s = 0;
        for (std::int64_t i = b; i < e; ++i) {
          for (int k = 0; k < repeats; ++k) s += std::sin(data[i] + k);
        }
        return s;
      },
      [](double a, double b) { return a + b; }, /*cost_per_element=*/60.0 * repeats);
}

}  // namespace

void register_pool(py::module_& m) {
  m.def("runtime_info", &runtime_info_dict);
  m.def("pool_stats",
        [](const std::string& name) { return stats_dict(pool_named(name)->stats()); });
  m.def("reset_pool_stats", [](const std::string& name) { pool_named(name)->reset_stats(); });
  m.def("pool_worker_thread_ids",
        [](const std::string& name) { return pool_named(name)->worker_thread_ids(); });
  m.def("pool_worker_cpus",
        [](const std::string& name) { return pool_named(name)->worker_cpus(); });
  m.def("pool_num_workers",
        [](const std::string& name) { return pool_named(name)->num_workers(); });
  // What the pool's workers really run with (runtime_info() reports the rule in effect).
  m.def("pool_spin_time_us",
        [](const std::string& name) { return pool_named(name)->options().spin_time_us; });
  m.def("intra_op_parallelism", &intra_op_parallelism);
  m.def("inter_op_parallelism", &inter_op_parallelism);
  // Resizing joins worker threads; releasing the GIL lets a worker that is finishing a
  // py_function (which needs the GIL) complete instead of deadlocking the join. No Python
  // object is touched meanwhile (the source string was copied to std::string).
  m.def("set_intra_op_parallelism", &set_intra_op_parallelism, py::arg("n"), py::arg("source"),
        py::call_guard<CountedGilRelease>());
  m.def("set_inter_op_parallelism", &set_inter_op_parallelism, py::arg("n"), py::arg("source"),
        py::call_guard<CountedGilRelease>());
  m.def(
      "configure_parallelism_if_unset",
      [](int intra, int inter, std::string source) {
        ParallelismInEffect eff;
        {
          // Same reason as set_*: creating pools must not wait on the GIL holder (us).
          CountedGilRelease release;
          eff = configure_parallelism_if_unset(intra, inter, std::move(source));
        }
        py::dict d;
        d["intra"] = eff.intra;
        d["intra_source"] = eff.intra_source;
        d["intra_applied"] = eff.intra_applied;
        d["inter"] = eff.inter;
        d["inter_source"] = eff.inter_source;
        d["inter_applied"] = eff.inter_applied;
        return d;
      },
      py::arg("intra"), py::arg("inter"), py::arg("source"));
  m.def("parallel_sin_sum", &parallel_sin_sum, py::arg("x"), py::arg("repeats"));
}

}  // namespace opweave::bindings
