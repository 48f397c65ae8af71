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
  std::string key = node.op;
  for (const auto& [name, value] : node.attrs) key += "\x1f" + name + "=" + attr_cache_key(value);
  std::lock_guard<std::mutex> lock(mutex);  // guards the cache; making a kernel never blocks
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  const KernelDef def = find_kernel(node.op);
  if (def.stateful) {
    throw OpError(ErrorCode::kFailedPrecondition,
                  "op " + node.op + " keeps state between runs and runs only in a Session");
  }
  auto kernel = std::make_shared<const Kernel>(def.make(node));
  if (cache->size() > 4096) cache->clear();  // bounded: attrs may vary without end
  cache->emplace(std::move(key), kernel);
  return kernel;
}

std::vector<py::array> run_op(const std::string& op, const std::vector<py::array>& inputs,
                              const py::dict& attrs, int num_outputs, int num_threads) {
  NodeDef node;
  node.name = op;
  node.op = op;
  node.num_outputs = num_outputs;
  for (const auto& [k, v] : attrs) node.attrs[k.cast<std::string>()] = attr_from_python(v);
  const std::shared_ptr<const Kernel> kernel = kernel_for(node);
  std::vector<Tensor> slots;
  slots.reserve(inputs.size() + static_cast<std::size_t>(num_outputs));
  for (const py::array& a : inputs) slots.push_back(borrow(a));
  std::vector<int> index(inputs.size());
  for (std::size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
  slots.resize(inputs.size() + static_cast<std::size_t>(num_outputs));
  ThreadPool* pool = pool_for(num_threads);
  without_gil([&] {
    KernelContext ctx{
        node, InputList(slots.data(), index.data(), inputs.size()),
        OutputList(slots.data() + inputs.size(), static_cast<std::size_t>(num_outputs)), pool};
    (*kernel)(ctx);
    return 0;
  });
  std::vector<py::array> out;
  for (std::size_t i = inputs.size(); i < slots.size(); ++i) out.push_back(to_numpy(slots[i]));
  return out;
}

}  // namespace

void register_kernels(py::module_& m) {
  m.def("run_op", &run_op, py::arg("op"), py::arg("inputs"), py::arg("attrs"),
        py::arg("num_outputs"), py::arg("num_threads") = 0,
        "Runs the kernel registered for `op` on arrays; returns its outputs.");
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
}

}  // namespace opweave::bindings
