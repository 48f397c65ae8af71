// Graph construction: opweave._opweave_core.{DType, Graph} and the PyFunc kernel. The Python
// layer (opweave.framework / opweave.ops) checks shapes and dtypes; this file only stores nodes.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>

#include "attr_conversion.h"
#include "interpreter_exit.h"
#include "numpy_tensor.h"
#include "opweave/errors.h"
#include "opweave/executor/kernel_registry.h"
#include "opweave/graph/graph.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

// A Python exception raised inside a py_function, carried through the C++ executor so the
// session can re-raise the original object (type and traceback intact).
class PythonException : public std::runtime_error {
 public:
  PythonException(const std::string& what, std::shared_ptr<py::object> value)
      : std::runtime_error(what), value_(std::move(value)) {}
  const std::shared_ptr<py::object>& value() const noexcept { return value_; }

 private:
  std::shared_ptr<py::object> value_;
};

// "TypeName: str(exc)" for the run's error message. Not error_already_set::what(), which formats
// the whole traceback: an error raised N nested runs deep is caught once per level on its way
// out, and formatting its ever longer traceback each time made unwinding quadratic (seconds).
std::string describe_exception(const py::object& exc) {
  std::string what = py::str(py::type::of(exc).attr("__qualname__")).cast<std::string>();
  try {
    what += ": " + py::str(exc).cast<std::string>();
  } catch (py::error_already_set&) {
    what += " (its str() failed)";  // the user's __str__ raised: the type alone must do
  }
  return what;
}

// A plain attribute (attr_conversion.h), or a py_function body wrapped as a HostFunction.
AttrValue node_attr_from_python(const py::handle& v) {
  if (PyCallable_Check(v.ptr())) {
    std::shared_ptr<py::object> fn = gil_safe_ref(py::reinterpret_borrow<py::object>(v));
    auto host = std::make_shared<HostFunction>(
        [fn](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
          // The callable is Python, so it needs the GIL, and holds it only while it runs: the
          // executor and other ops never wait for the GIL while holding a lock it could need.
          // At interpreter exit, fail instead of taking the GIL (see interpreter_exit.h).
          if (interpreter_exiting()) {
            throw OpError(ErrorCode::kCancelled, "Run was cancelled: the interpreter is exiting");
          }
          py::gil_scoped_acquire gil;
          try {
            py::tuple args(inputs.size());
            for (std::size_t i = 0; i < inputs.size(); ++i) {
              args[i] = numpy_from_tensor(inputs[i], /*writeable=*/false, /*copy=*/false);
            }
            py::object result = (*fn)(*args);
            std::vector<Tensor> outputs;
            for (const py::handle& r : result) {
              outputs.push_back(tensor_copy_from_numpy(py::reinterpret_borrow<py::array>(r)));
            }
            return outputs;
          } catch (py::error_already_set& e) {
            py::object exc = e.value();
            const std::string what = describe_exception(exc);
            // Keep the frames of the py_function body on the exception object itself.
            if (e.trace() && !e.trace().is_none())
              PyException_SetTraceback(exc.ptr(), e.trace().ptr());
            auto value = gil_safe_ref(exc);
            throw PythonException(what, std::move(value));
          }
        });
    return host;
  }
  return attr_from_python(v);
}

void register_py_func_kernel() {
  register_kernel(
      "PyFunc", {[](const NodeDef& node) -> Kernel {
                   auto fn = node.attr<std::shared_ptr<HostFunction>>("func");
                   std::vector<DType> tout = node.attr<std::vector<DType>>("Tout");
                   return [fn, tout](KernelContext& ctx) {
                     std::vector<Tensor> out = (*fn)(ctx.inputs.to_vector());
                     if (out.size() != tout.size()) {
                       throw_invalid_argument("py_function returned " + std::to_string(out.size()) +
                                              " values; Tout has " + std::to_string(tout.size()));
                     }
                     for (std::size_t i = 0; i < out.size(); ++i) {
                       if (out[i].dtype() != tout[i]) {
                         throw_invalid_argument(std::string("py_function output ") +
                                                std::to_string(i) + " has dtype " +
                                                dtype_name(out[i].dtype()) + "; Tout says " +
                                                dtype_name(tout[i]));
                       }
                       ctx.outputs[i] = std::move(out[i]);
                     }
                   };
                 },
                 CostHint::kExpensive, /*stateful=*/true, /*float16_via_float32=*/false,
                 /*may_block=*/true});
}

}  // namespace

// The original Python exception behind a failed py_function, or None.
py::object python_exception_of(const std::exception_ptr& cause) {
  if (!cause) return py::none();
  try {
    std::rethrow_exception(cause);
  } catch (const PythonException& e) {
    return *e.value();
  } catch (...) {
    return py::none();
  }
}

void register_graph(py::module_& m) {
  py::enum_<DType>(m, "DType")
      .value("float32", DType::kFloat32)
      .value("float64", DType::kFloat64)
      .value("int32", DType::kInt32)
      .value("int64", DType::kInt64)
      .value("bool", DType::kBool)
      .value("int8", DType::kInt8)
      .value("int16", DType::kInt16)
      .value("uint8", DType::kUInt8)
      .value("float16", DType::kFloat16)
      .value("string", DType::kString);

  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")
      .def(py::init<>())
      .def(
          "add_node",
          [](Graph& g, const std::string& name, const std::string& op,
             const std::vector<std::pair<int, int>>& inputs, const std::vector<int>& control_inputs,
             const py::dict& attrs, const std::string& device, int num_outputs,
             const std::vector<DType>& output_dtypes,
             const std::vector<std::optional<std::vector<std::int64_t>>>& output_shapes,
             bool stateful) {
            NodeDef d;
            d.name = name;
            d.op = op;
            for (const auto& [node, index] : inputs) d.inputs.push_back({node, index});
            d.control_inputs = control_inputs;
            for (const auto& [k, v] : attrs) {
              const std::string key = k.cast<std::string>();
              // An empty list carries no element type: a list called Tout (PyFunc's) is always a
              // list of dtypes. A single dtype called Tout (RandomUniformInt's) is a dtype.
              const bool dtype_list =
                  key == "Tout" && (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v));
              d.attrs[key] =
                  dtype_list ? AttrValue{v.cast<std::vector<DType>>()} : node_attr_from_python(v);
            }
            d.device = device;
            d.num_outputs = num_outputs;
            d.output_dtypes = output_dtypes;
            for (const auto& shape : output_shapes) {
              d.output_shapes.push_back(shape ? StaticShape{true, *shape} : StaticShape{});
            }
            d.stateful = stateful;
            return g.add_node(std::move(d));
          },
          py::arg("name"), py::arg("op"), py::arg("inputs"), py::arg("control_inputs"),
          py::arg("attrs"), py::arg("device"), py::arg("num_outputs"),
          py::arg("output_dtypes") = std::vector<DType>(),
          py::arg("output_shapes") = std::vector<std::optional<std::vector<std::int64_t>>>(),
          py::arg("stateful") = false)
      .def("num_nodes", &Graph::num_nodes);

  register_py_func_kernel();
}

}  // namespace opweave::bindings
