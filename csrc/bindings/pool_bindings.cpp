// The global pools from Python (pools/global_pools.h): sizes and the rule that chose them, the
// first-Session rule (sizes and spin time), each pool's counters and workers, the registry of named
// and per-session pools that parallel_info() lists (pools/pool_registry.h), and one parallel NumPy
// workload for the demo. opweave/_runtime.py and opweave/_pool.py wrap these.
//
// GIL: every call that may resize, rebuild or create a pool releases it (CountedGilRelease).
// Resizing waits for the pool's work, which may be a py_function that needs the GIL; creating
// starts threads and waits for them. Each such call copies its arguments to C++ values first, so
// no Python object is touched while the GIL is released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <string>

#include "interpreter_exit.h"
#include "opweave/cpu_info.h"
#include "opweave/errors.h"
#include "opweave/parallel_for.h"
#include "opweave/pools/global_pools.h"
#include "opweave/pools/pool_registry.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {
namespace {

// "intra" or "inter": which global pool a call is about.
bool is_intra(const std::string& pool) {
  if (pool == "intra") return true;
  if (pool == "inter") return false;
  throw_invalid_argument("pool must be 'intra' or 'inter', got '" + pool + "'");
}

ThreadPool* global_pool(const std::string& pool) {
  return is_intra(pool) ? global_intra_pool() : global_inter_pool();
}

py::dict stats_dict(const PoolStats& s) {
  py::dict d;
  d["tasks_run"] = s.tasks_run;
  d["steals"] = s.steals;
  d["parks"] = s.parks;
  d["wakeups"] = s.wakeups;
  d["injected"] = s.injected;
  d["moves"] = s.moves;
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
  d["cgroup_error"] = info.cpu.cgroup_error;
  d["available_cpus"] = info.cpu.available_cpus;
  d["isa"] = info.cpu.isa;
  return d;
}

py::dict in_effect_dict(const ParallelismInEffect& eff) {
  py::dict d;
  d["intra"] = eff.intra;
  d["intra_source"] = eff.intra_source;
  d["intra_applied"] = eff.intra_applied;
  d["inter"] = eff.inter;
  d["inter_source"] = eff.inter_source;
  d["inter_applied"] = eff.inter_applied;
  return d;
}

py::list pools_list() {
  py::list out;
  for (const PoolDescription& d : describe_pools()) {
    py::dict entry;
    entry["kind"] = d.kind;
    entry["label"] = d.label;
    entry["workers"] = d.workers;
    entry["source"] = d.source;
    entry["spin_time_us"] = d.spin_time_us;
    entry["cpus"] = d.cpus;
    out.append(entry);
  }
  return out;
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
  // Sizes and their provenance.
  m.def("intra_op_parallelism", &intra_op_parallelism);
  m.def("inter_op_parallelism", &inter_op_parallelism);
  m.def("intra_op_parallelism_source", &intra_op_parallelism_source);
  m.def("inter_op_parallelism_source", &inter_op_parallelism_source);
  // GIL released: see the top of this file (a resize waits for the pool's work).
  m.def("set_intra_op_parallelism", &set_intra_op_parallelism, py::arg("n"), py::arg("source"),
        py::call_guard<CountedGilRelease>());
  m.def("set_inter_op_parallelism", &set_inter_op_parallelism, py::arg("n"), py::arg("source"),
        py::call_guard<CountedGilRelease>());
  // (size, source, fixed, requested): one pool's whole setting, read in one step.
  m.def(
      "parallelism_setting",
      [](const std::string& pool) {
        const ParallelismSetting s =
            is_intra(pool) ? intra_op_parallelism_setting() : inter_op_parallelism_setting();
        return py::make_tuple(s.size, s.source, s.fixed, s.requested);
      },
      py::arg("pool"));
  m.def(
      "restore_parallelism",
      [](const std::string& pool, int size, std::string source, bool fixed, int requested) {
        const bool intra = is_intra(pool);
        const ParallelismSetting saved{size, std::move(source), fixed, requested};
        CountedGilRelease release;  // see the top of this file; everything was copied above
        if (intra) {
          restore_intra_op_parallelism(saved);
        } else {
          restore_inter_op_parallelism(saved);
        }
      },
      py::arg("pool"), py::arg("size"), py::arg("source"), py::arg("fixed"), py::arg("requested"));

  // The first Session's ConfigProto: sizes, then spin time (global_pools.h).
  m.def(
      "configure_parallelism_if_unset",
      [](int intra, int inter, std::string source) {
        ParallelismInEffect eff;
        {
          CountedGilRelease release;  // creates the pools: see the top of this file
          eff = configure_parallelism_if_unset(intra, inter, std::move(source));
        }
        return in_effect_dict(eff);
      },
      py::arg("intra"), py::arg("inter"), py::arg("source"));
  // GIL released, as above: it waits for the lock held while another thread creates a pool.
  m.def("configure_spin_time_if_unset", &configure_spin_time_if_unset, py::arg("us"),
        py::arg("source"), py::call_guard<CountedGilRelease>());

  // What parallel_info() shows, and what each global pool's workers really run with.
  m.def("runtime_info", &runtime_info_dict);
  m.def("describe_pools", &pools_list);
  m.def("pool_stats",
        [](const std::string& pool) { return stats_dict(global_pool(pool)->stats()); });
  m.def("reset_pool_stats", [](const std::string& pool) { global_pool(pool)->reset_stats(); });
  m.def("pool_worker_thread_ids",
        [](const std::string& pool) { return global_pool(pool)->worker_thread_ids(); });
  m.def("pool_worker_cpus",
        [](const std::string& pool) { return global_pool(pool)->worker_cpus(); });
  m.def("pool_num_workers",
        [](const std::string& pool) { return global_pool(pool)->num_workers(); });
  m.def("pool_spin_time_us",
        [](const std::string& pool) { return global_pool(pool)->options().spin_time_us; });

  m.def("parallel_sin_sum", &parallel_sin_sum, py::arg("x"), py::arg("repeats"));
}

}  // namespace opweave::bindings
