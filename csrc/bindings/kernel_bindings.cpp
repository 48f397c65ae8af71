// Bindings for opweave.kernels: NumPy arrays in, NumPy arrays out. Thin on purpose: the Python
// layer (python/opweave/kernels.py) checks arguments and holds the docstrings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "interpreter_exit.h"
#include "opweave/kernels/gemm.h"
#include "opweave/kernels/kernels.h"
#include "opweave/runtime.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {
namespace {

DType dtype_from_numpy(const py::dtype& dt) {
  if (dt.is(py::dtype::of<float>())) return DType::kFloat32;
  if (dt.is(py::dtype::of<double>())) return DType::kFloat64;
  if (dt.is(py::dtype::of<std::int32_t>())) return DType::kInt32;
  if (dt.is(py::dtype::of<std::int64_t>())) return DType::kInt64;
  if (dt.is(py::dtype::of<bool>())) return DType::kBool;
  // Equal but not identical dtype objects (e.g. '<f4' spelled differently).
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 8) return DType::kFloat64;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'i' && size == 8) return DType::kInt64;
  if (kind == 'b') return DType::kBool;
  throw py::type_error("opweave kernels do not support dtype " + std::string(py::str(dt)));
}

py::dtype numpy_dtype(DType dt) {
  switch (dt) {
    case DType::kFloat32:
      return py::dtype::of<float>();
    case DType::kFloat64:
      return py::dtype::of<double>();
    case DType::kInt32:
      return py::dtype::of<std::int32_t>();
    case DType::kInt64:
      return py::dtype::of<std::int64_t>();
    case DType::kBool:
      return py::dtype::of<bool>();
  }
  throw py::type_error("unknown dtype");
}

// A borrowed view of the array's memory (no owner): the caller keeps the py::array alive for the
// whole kernel call, and kernels never return views of their inputs.
Tensor borrow(const py::array& a) {
  const auto item = static_cast<std::int64_t>(a.itemsize());
  Shape shape(static_cast<std::size_t>(a.ndim())), strides(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    shape[i] = static_cast<std::int64_t>(a.shape(static_cast<py::ssize_t>(i)));
    const auto s = static_cast<std::int64_t>(a.strides(static_cast<py::ssize_t>(i)));
    if (s % item != 0) throw py::value_error("array strides must be multiples of the item size");
    strides[i] = s / item;
  }
  return Tensor::wrap(dtype_from_numpy(a.dtype()), shape, strides, const_cast<void*>(a.data()),
                      nullptr);
}

// Hands the tensor's buffer to NumPy: the capsule keeps a reference to it.
py::array to_numpy(const Tensor& t) {
  Shape byte_strides = t.strides();
  for (auto& s : byte_strides) s *= static_cast<std::int64_t>(dtype_size(t.dtype()));
  auto* holder = new std::shared_ptr<void>(t.owner());
  py::capsule keep(holder, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
  return py::array(numpy_dtype(t.dtype()), t.shape(), byte_strides, t.raw_data(), keep);
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

BinaryOp binary_op(const std::string& name) {
  static const std::map<std::string, BinaryOp> ops = {
      {"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub},         {"mul", BinaryOp::kMul},
      {"div", BinaryOp::kDiv}, {"maximum", BinaryOp::kMaximum}, {"minimum", BinaryOp::kMinimum}};
  auto it = ops.find(name);
  if (it == ops.end()) throw py::value_error("unknown binary op " + name);
  return it->second;
}

UnaryOp unary_op(const std::string& name) {
  static const std::map<std::string, UnaryOp> ops = {{"neg", UnaryOp::kNeg},
                                                     {"relu", UnaryOp::kRelu},
                                                     {"exp", UnaryOp::kExp},
                                                     {"tanh", UnaryOp::kTanh},
                                                     {"sigmoid", UnaryOp::kSigmoid}};
  auto it = ops.find(name);
  if (it == ops.end()) throw py::value_error("unknown unary op " + name);
  return it->second;
}

ReduceOp reduce_op(const std::string& name) {
  static const std::map<std::string, ReduceOp> ops = {{"sum", ReduceOp::kSum},
                                                      {"mean", ReduceOp::kMean},
                                                      {"max", ReduceOp::kMax},
                                                      {"min", ReduceOp::kMin}};
  auto it = ops.find(name);
  if (it == ops.end()) throw py::value_error("unknown reduction " + name);
  return it->second;
}

}  // namespace

void register_kernels(py::module_& m) {
  // Every kernel call below releases the GIL while C++ runs. Safe because the input and output
  // arrays are held by this call's arguments until it returns, the kernels see only raw memory
  // (Tensors borrowed from those arrays, no owner to drop without the GIL), and no Python object
  // is created or touched until the GIL is taken back. The release is counted so that interpreter
  // exit waits for a kernel running in a daemon thread (interpreter_exit.h).
  m.def(
      "matmul",
      [](const py::array& a, const py::array& b, bool transpose_a, bool transpose_b,
         std::optional<py::array> out, int num_threads) -> py::array {
        const Tensor ta = borrow(a), tb = borrow(b);
        if (out) {
          const Tensor tout = borrow(*out);
          {
            CountedGilRelease release;
            matmul_into(ta, tb, transpose_a, transpose_b, tout, pool_for(num_threads));
          }
          return *out;
        }
        Tensor result;
        {
          CountedGilRelease release;
          result = matmul(ta, tb, transpose_a, transpose_b, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      py::arg("out") = py::none(), py::arg("num_threads") = 0);
  m.def(
      "reduce",
      [](const std::string& op, const py::array& x, std::optional<std::vector<int>> axes,
         bool keepdims, int num_threads) {
        const Tensor tx = borrow(x);
        const ReduceOp rop = reduce_op(op);
        Tensor result;
        {
          CountedGilRelease release;
          result = reduce(rop, tx, axes, keepdims, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("op"), py::arg("x"), py::arg("axes") = py::none(), py::arg("keepdims") = false,
      py::arg("num_threads") = 0);
  m.def(
      "binary",
      [](const std::string& op, const py::array& a, const py::array& b, int num_threads) {
        const Tensor ta = borrow(a), tb = borrow(b);
        const BinaryOp bop = binary_op(op);
        Tensor result;
        {
          CountedGilRelease release;
          result = binary(bop, ta, tb, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("op"), py::arg("a"), py::arg("b"), py::arg("num_threads") = 0);
  m.def(
      "unary",
      [](const std::string& op, const py::array& x, int num_threads) {
        const Tensor tx = borrow(x);
        const UnaryOp uop = unary_op(op);
        Tensor result;
        {
          CountedGilRelease release;
          result = unary(uop, tx, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("op"), py::arg("x"), py::arg("num_threads") = 0);
  m.def(
      "add_n",
      [](const std::vector<py::array>& xs, int num_threads) {
        std::vector<Tensor> ts;
        for (const auto& x : xs) ts.push_back(borrow(x));
        Tensor result;
        {
          CountedGilRelease release;
          result = add_n(ts, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("inputs"), py::arg("num_threads") = 0);
  m.def(
      "cast",
      [](const py::array& x, const py::dtype& to, int num_threads) {
        const Tensor tx = borrow(x);
        const DType dto = dtype_from_numpy(to);
        Tensor result;
        {
          CountedGilRelease release;
          result = cast(tx, dto, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("x"), py::arg("dtype"), py::arg("num_threads") = 0);
  m.def(
      "transpose",
      [](const py::array& x, const std::vector<int>& perm, int num_threads) {
        const Tensor tx = borrow(x);
        Tensor result;
        {
          CountedGilRelease release;
          result = transpose(tx, perm, pool_for(num_threads));
        }
        return to_numpy(result);
      },
      py::arg("x"), py::arg("perm") = std::vector<int>{}, py::arg("num_threads") = 0);
  m.def(
      "gemm_isa",
      [](const std::string& dtype) {
        return std::string(gemm_detail::gemm_isa(dtype == "float64"));
      },
      py::arg("dtype"), "The micro-kernel instruction set matmul uses for this dtype.");
}

}  // namespace opweave::bindings
