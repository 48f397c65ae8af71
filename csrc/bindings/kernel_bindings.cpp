// Bindings for opweave.kernels: any registered op's kernel run on NumPy arrays (run_op), plus
// matmul into a caller's array. Thin on purpose: the Python layer (opweave.ops definitions)
// checks arguments, infers shapes and holds the docstrings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "attr_conversion.h"
#include "interpreter_exit.h"
#include "numpy_tensor.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/kernels/gemm.h"
#include "opweave/kernels/kernels.h"
#include "opweave/pools/global_pools.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {
namespace {

// A borrowed view of the array's memory (no owner): the caller keeps the py::array alive for the
// whole kernel call. Kernels may return an input itself (Identity, a Reshape view); to_numpy then
// copies, since a borrowed buffer has no owner to keep alive.
Tensor borrow(const py::array& a) {
  const DType dtype = dtype_from_numpy(a.dtype());
  if (dtype == DType::kString) return tensor_copy_from_numpy(a);
  const auto item = static_cast<std::int64_t>(a.itemsize());
  Shape shape(static_cast<std::size_t>(a.ndim())), strides(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    shape[i] = static_cast<std::int64_t>(a.shape(static_cast<py::ssize_t>(i)));
    const auto s = static_cast<std::int64_t>(a.strides(static_cast<py::ssize_t>(i)));
    if (s % item != 0) throw py::value_error("array strides must be multiples of the item size");
    strides[i] = s / item;
  }
  return Tensor::wrap(dtype, shape, strides, const_cast<void*>(a.data()), nullptr);
}

// The kernel's result as an array that owns (or keeps alive) its memory.
py::array to_numpy(const Tensor& t) {
  return numpy_from_tensor(t, /*writeable=*/true, /*copy=*/t.owner() == nullptr);
}

// num_threads <= 0: the global intra-op pool (the normal case). n >= 1: a private pool of n - 1
// workers plus the caller, created once per n and kept for the life of the process. A test and
// benchmark hook (determinism across thread counts), not a public API. Its workers spin as long
// as the global pool's do (OPWEAVE_SPIN_TIME_US, set_spin_time_us) when it is created, so the
// benchmark times what a user of that setting gets.
ThreadPool* pool_for(int num_threads) {
  if (num_threads <= 0) return global_intra_pool();
  if (num_threads == 1) return nullptr;
  static std::mutex mutex;
  static auto* pools = new std::map<int, std::unique_ptr<ThreadPool>>();  // leaked: no exit order
  std::lock_guard<std::mutex> lock(mutex);
  auto& pool = (*pools)[num_threads];
  if (!pool) {
    PoolOptions options{num_threads - 1, "kernels-test"};
    options.spin_time_us = runtime_info().spin_time_us;
    pool = std::make_unique<ThreadPool>(options);
  }
  return pool.get();
}

// Runs fn with the GIL released. Safe because the arrays the kernel reads and writes are held by
// the caller's arguments until it returns, the kernels see only raw memory (Tensors borrowed from
// those arrays, with no owner to drop without the GIL) and create no Python object. Counted, so
// that interpreter exit waits for a kernel running in a daemon thread (interpreter_exit.h).
template <typename Fn>
auto without_gil(Fn&& fn) {
  CountedGilRelease release;
  return fn();
}

// The kernel of `op` with `attrs`, made once per (op, attrs) and reused: making one parses the
// attributes, which would be most of a small call's cost. Stateful kernels are refused: outside a
// session they have nowhere to keep their state.
std::shared_ptr<const Kernel> kernel_for(const NodeDef& node) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, std::shared_ptr<const Kernel>>();  // leaked
  // Attribute names are identifiers and values are length-prefixed: distinct attrs, distinct keys.
  std::string key = node.op;
  bool cacheable = true;
  for (const auto& [name, value] : node.attrs) {
    const std::optional<std::string> part = attr_cache_key(value);
    if (!part) {
      cacheable = false;
      break;
    }
    key += "\x1f" + name + "=" + *part;
  }
  std::lock_guard<std::mutex> lock(mutex);  // guards the cache; making a kernel never blocks
  if (cacheable) {
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  const KernelDef def = find_kernel(node.op);
  if (def.stateful) {
    throw OpError(ErrorCode::kFailedPrecondition,
                  "op " + node.op + " keeps state between runs and runs only in a Session");
  }
  auto kernel = std::make_shared<const Kernel>(def.make(node));
  if (!cacheable) return kernel;
  if (cache->size() > 4096) cache->clear();  // bounded: attrs may vary without end
  cache->emplace(std::move(key), kernel);
  return kernel;
}

// An op's node and kernel, made once for a fixed (op, attrs, number of outputs) and run many
// times: opweave.kernels keeps one per cached call signature, so a call converts no attributes
// and looks up no kernel.
struct PreparedOp {
  NodeDef node;
  std::shared_ptr<const Kernel> kernel;
};

PreparedOp prepare(const std::string& op, const py::dict& attrs, int num_outputs) {
  if (num_outputs < 0) throw py::value_error("num_outputs must be >= 0");
  PreparedOp p;
  p.node.name = op;
  p.node.op = op;
  p.node.num_outputs = num_outputs;
  for (const auto& [k, v] : attrs) p.node.attrs[k.cast<std::string>()] = attr_from_python(v);
  p.kernel = kernel_for(p.node);
  return p;
}

// Up to this many inputs and outputs live on the stack (every op but long concats and splits).
constexpr std::size_t kInlineSlots = 8;

// Runs the prepared kernel on `inputs` (a list or tuple of arrays); returns its outputs as a list.
py::list run_prepared(const PreparedOp& p, const py::handle& inputs, int num_threads) {
  if (!PyList_Check(inputs.ptr()) && !PyTuple_Check(inputs.ptr())) {
    throw py::type_error("inputs must be a list or tuple of arrays");
  }
  const auto seq = py::reinterpret_borrow<py::sequence>(inputs);
  const std::size_t n_in = seq.size();
  const auto n_out = static_cast<std::size_t>(p.node.num_outputs);
  std::vector<Tensor> heap_slots;
  std::vector<int> heap_index;
  Tensor stack_slots[kInlineSlots];
  int stack_index[kInlineSlots];
  Tensor* slots = stack_slots;
  int* index = stack_index;
  if (n_in + n_out > kInlineSlots) {
    heap_slots.resize(n_in + n_out);
    heap_index.resize(n_in);
    slots = heap_slots.data();
    index = heap_index.data();
  }
  for (std::size_t i = 0; i < n_in; ++i) {
    const py::handle item = seq[i];
    if (!py::isinstance<py::array>(item)) throw py::type_error("inputs must be NumPy arrays");
    slots[i] = borrow(py::reinterpret_borrow<py::array>(item));
    index[i] = static_cast<int>(i);
  }
  ThreadPool* pool = pool_for(num_threads);
  without_gil([&] {
    KernelContext ctx{p.node, InputList(slots, index, n_in), OutputList(slots + n_in, n_out), pool};
    (*p.kernel)(ctx);
    return 0;
  });
  py::list out(n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    out[i] = to_numpy(slots[n_in + i]);
  }
  return out;
}

py::list run_op(const std::string& op, const py::handle& inputs, const py::dict& attrs,
                int num_outputs, int num_threads) {
  return run_prepared(prepare(op, attrs, num_outputs), inputs, num_threads);
}

}  // namespace

void register_kernels(py::module_& m) {
  m.def("run_op", &run_op, py::arg("op"), py::arg("inputs"), py::arg("attrs"),
        py::arg("num_outputs"), py::arg("num_threads") = 0,
        "Runs the kernel registered for `op` on arrays; returns its outputs.");
  py::class_<PreparedOp>(m, "PreparedOp",
                         "An op's kernel made for fixed attributes (prepare_op), run by "
                         "run_prepared.")
      .def_property_readonly("op", [](const PreparedOp& p) { return p.node.op; });
  m.def("prepare_op", &prepare, py::arg("op"), py::arg("attrs"), py::arg("num_outputs"),
        "The kernel registered for `op`, made for `attrs`, to run many times.");
  m.def("run_prepared", &run_prepared, py::arg("prepared"), py::arg("inputs"),
        py::arg("num_threads") = 0,
        "Runs a prepared kernel on a list or tuple of arrays; returns its outputs.");
  m.def(
      "matmul_into",
      [](const py::array& a, const py::array& b, bool transpose_a, bool transpose_b,
         const py::array& out, int num_threads) {
        const Tensor ta = borrow(a), tb = borrow(b), tout = borrow(out);
        ThreadPool* pool = pool_for(num_threads);
        without_gil([&] {
          matmul_into(ta, tb, transpose_a, transpose_b, tout, pool);
          return 0;
        });
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a"), py::arg("transpose_b"), py::arg("out"),
      py::arg("num_threads") = 0);
  m.def(
      "gemm_isa",
      [](const std::string& dtype) {
        return std::string(gemm_detail::gemm_isa(dtype == "float64"));
      },
      py::arg("dtype"), "The micro-kernel instruction set matmul uses for this dtype.");
  m.def(
      "gemm_ceiling_gflops",
      [](const std::string& dtype, double seconds) {
        if (dtype != "float32" && dtype != "float64") {
          throw py::value_error("gemm_ceiling_gflops: dtype must be 'float32' or 'float64', got '" +
                                dtype + "'");
        }
        if (!(seconds > 0 && seconds <= 60)) {
          throw py::value_error("gemm_ceiling_gflops: seconds must be in (0, 60]");
        }
        // Without the GIL: a timing loop of its own thread, no Python object touched.
        return without_gil(
            [&] { return gemm_detail::gemm_ceiling_gflops(dtype == "float64", seconds); });
      },
      py::arg("dtype"), py::arg("seconds") = 0.2,
      "GFLOP/s of the matmul micro-kernel on one thread, its panels cached (the benches' "
      "ceiling).");
}

}  // namespace opweave::bindings
