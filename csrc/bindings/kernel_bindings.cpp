// Bindings for opweave.kernels: any registered op's kernel run on NumPy arrays (run_op), plus
// matmul into a caller's array. Thin on purpose: the Python layer (opweave.ops definitions)
// checks arguments, infers shapes and holds the docstrings.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
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

// Runs the prepared kernel on slots[0, n_in) (borrowed inputs); its outputs land in
// slots[n_in, n_in + num_outputs).
void run_kernel(const PreparedOp& p, Tensor* slots, int* index, std::size_t n_in, int num_threads,
                bool release_gil) {
  for (std::size_t i = 0; i < n_in; ++i) index[i] = static_cast<int>(i);
  const auto n_out = static_cast<std::size_t>(p.node.num_outputs);
  ThreadPool* pool = pool_for(num_threads);
  auto run = [&] {
    KernelContext ctx{p.node, InputList(slots, index, n_in), OutputList(slots + n_in, n_out), pool};
    (*p.kernel)(ctx);
    return 0;
  };
  if (release_gil) {
    without_gil(run);
  } else {
    // Holding the GIL is safe: kernels run outside a session never call back into Python, and a
    // few thousand elements take less time than releasing and taking back the GIL.
    run();
  }
}

// Inline slots for up to kInlineSlots inputs and outputs, a heap vector beyond.
struct Slots {
  explicit Slots(std::size_t n) {
    if (n > kInlineSlots) {
      heap_slots.resize(n);
      heap_index.resize(n);
      slots = heap_slots.data();
      index = heap_index.data();
    }
  }
  Tensor stack_slots[kInlineSlots];
  int stack_index[kInlineSlots];
  std::vector<Tensor> heap_slots;
  std::vector<int> heap_index;
  Tensor* slots = stack_slots;
  int* index = stack_index;
};

// Runs the prepared kernel on `inputs` (a list or tuple of arrays); returns its outputs as a list.
py::list run_prepared(const PreparedOp& p, const py::handle& inputs, int num_threads) {
  if (!PyList_Check(inputs.ptr()) && !PyTuple_Check(inputs.ptr())) {
    throw py::type_error("inputs must be a list or tuple of arrays");
  }
  const auto seq = py::reinterpret_borrow<py::sequence>(inputs);
  const std::size_t n_in = seq.size();
  const auto n_out = static_cast<std::size_t>(p.node.num_outputs);
  Slots s(n_in + n_out);
  for (std::size_t i = 0; i < n_in; ++i) {
    const py::handle item = seq[i];
    if (!py::isinstance<py::array>(item)) throw py::type_error("inputs must be NumPy arrays");
    s.slots[i] = borrow(py::reinterpret_borrow<py::array>(item));
  }
  run_kernel(p, s.slots, s.index, n_in, num_threads, /*release_gil=*/true);
  py::list out(n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    out[i] = to_numpy(s.slots[n_in + i]);
  }
  return out;
}

// -- the eager memo -------------------------------------------------------------------------
//
// opweave.kernels' shortcut for a call made with arrays only, by position (see _EagerMemo in
// opweave/ops/_op_def.py): the key (each array's dtype and shape) is built, looked up and the
// kernel run without any Python code, the one part of a small call that cannot be made cheap in
// Python.

// The dtypes a memo keys by, as NumPy's own descriptor objects: an array of a builtin dtype in
// native byte order normally holds that very object, so a dtype is recognised by its pointer, and
// byte-swapped or otherwise unusual dtypes are not recognised at all (the call takes the whole
// path, which converts them).
struct MemoDtype {
  PyObject* descr;
  DType dtype;
  std::int64_t itemsize;
};

const std::vector<MemoDtype>& memo_dtypes() {
  static const auto* table = [] {
    // NumPy's type numbers; 7 and 9 (long, long long) are both int64 on our targets.
    const std::pair<int, DType> nums[] = {
        {0, DType::kBool},     {1, DType::kInt8},    {2, DType::kUInt8}, {3, DType::kInt16},
        {5, DType::kInt32},    {7, DType::kInt64},   {9, DType::kInt64}, {11, DType::kFloat32},
        {12, DType::kFloat64}, {23, DType::kFloat16}};
    auto* t = new std::vector<MemoDtype>();  // leaked, with the references it holds: no exit order
    for (const auto& [num, dtype] : nums) {
      py::dtype d(num);
      const auto item = static_cast<std::int64_t>(d.itemsize());
      if (item != static_cast<std::int64_t>(dtype_size(dtype))) continue;
      t->push_back({d.release().ptr(), dtype, item});
    }
    return t;
  }();
  return *table;
}

class EagerMemo {
 public:
  // The call's result (an array, or a list of them), None when no entry has its signature, or
  // False when its signature is one not to remember (add_miss).
  py::object call(const py::tuple& args, const py::dict& kwargs, int num_threads) {
    if (!key_of(args, kwargs)) return py::none();
    const auto it = entries_.find(key_);
    if (it == entries_.end()) return py::none();
    // Held by this call: another thread may clear the memo while the kernel runs without the GIL.
    const std::shared_ptr<const Entry> entry = it->second;
    const Entry& e = *entry;
    if (e.prepared == nullptr) return py::bool_(false);
    const std::size_t n_in = e.arg.size();
    const auto n_out = static_cast<std::size_t>(e.prepared->node.num_outputs);
    Slots s(n_in + n_out);
    for (std::size_t i = 0; i < n_in; ++i) {
      s.slots[i] = e.arg[i] >= 0 ? borrow_keyed(objs_[static_cast<std::size_t>(e.arg[i])])
                                 : e.constant_tensors[i];
    }
    run_kernel(*e.prepared, s.slots, s.index, n_in, num_threads, e.release_gil);
    if (e.single) return output_array(s.slots[n_in]);
    py::list out(n_out);
    for (std::size_t i = 0; i < n_out; ++i) out[i] = output_array(s.slots[n_in + i]);
    return std::move(out);
  }

  // Remembers that a call with arguments like `args` and `kwargs` runs `prepared` on `inputs`:
  // each an int (that argument, counting keyword arguments after positional ones, in their order)
  // or a constant array. False when the arguments cannot key an entry.
  bool add(const py::tuple& args, const py::dict& kwargs, const py::object& prepared,
           const py::list& inputs, bool single, bool release_gil) {
    if (!key_of(args, kwargs)) return false;
    auto entry = std::make_shared<Entry>();
    Entry& e = *entry;
    e.owner = prepared;
    e.prepared = &prepared.cast<const PreparedOp&>();
    if (single && e.prepared->node.num_outputs != 1) throw py::value_error("single needs 1 output");
    for (const py::handle item : inputs) {
      if (py::isinstance<py::int_>(item)) {
        const int i = item.cast<int>();
        if (i < 0 || static_cast<std::size_t>(i) >= objs_.size() ||
            Py_TYPE(objs_[static_cast<std::size_t>(i)]) !=
                py::detail::npy_api::get().PyArray_Type_) {
          throw py::index_error("inputs: an argument index must name an array argument");
        }
        e.arg.push_back(i);
        e.constants.emplace_back();
        e.constant_tensors.emplace_back();
      } else {
        e.arg.push_back(-1);
        e.constants.push_back(py::array::ensure(item));
        if (!e.constants.back()) throw py::type_error("inputs must be ints or NumPy arrays");
        e.constant_tensors.push_back(borrow(e.constants.back()));
      }
    }
    e.single = single;
    e.release_gil = release_gil;
    if (entries_.size() >= kMaxEntries) entries_.clear();  // bounded: shapes vary without end
    entries_.insert_or_assign(key_, std::move(entry));
    return true;
  }

  // Remembers that calls with arguments like these are not to be remembered (they run several
  // ops, read an array's value, ...): call() then answers False, and the caller records nothing.
  bool add_miss(const py::tuple& args, const py::dict& kwargs) {
    if (!key_of(args, kwargs)) return false;
    if (entries_.size() >= kMaxEntries) entries_.clear();
    entries_.insert_or_assign(key_, std::make_shared<Entry>());
    return true;
  }

  void clear() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }

 private:
  static constexpr std::size_t kMaxEntries = 256;
  static constexpr std::size_t kMaxStrings = 32;    // per table: keyword names, str arguments
  static constexpr Py_ssize_t kMaxListLength = 64;  // as _MAX_KEYED_ELEMENTS in _op_def.py
  // Key tags of Python values; an array's part starts with its dtype's index (< kTagNone).
  static constexpr std::int64_t kTagNone = 100, kTagBool = 101, kTagInt = 102, kTagFloat = 103,
                                kTagList = 104, kTagTuple = 105, kTagArrayList = 106,
                                kTagArrayTuple = 107, kTagStr = 108, kTagSame = 109;

  struct Entry {
    py::object owner;                      // the PreparedOp object, kept alive
    const PreparedOp* prepared = nullptr;  // null: a call not to be remembered (add_miss)
    std::vector<int> arg;  // per kernel input: the argument it is, or -1 for constants[i]
    std::vector<py::array> constants;
    // Views of the constants, made once: kernels never write to their inputs.
    std::vector<Tensor> constant_tensors;
    bool single = false;  // the result is the one output itself, not a list
    bool release_gil = true;
  };

  struct KeyHash {
    std::size_t operator()(const std::vector<std::int64_t>& key) const noexcept {
      std::uint64_t h = 1469598103934665603ULL;
      for (const std::int64_t v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ULL;
      return static_cast<std::size_t>(h);
    }
  };

  static const MemoDtype* dtype_of(PyObject* descr) {
    for (const MemoDtype& d : memo_dtypes()) {
      if (d.descr == descr) return &d;
    }
    return nullptr;
  }

  // key_ := the call's signature, objs_ := its arguments (positional, then keyword values).
  // False unless each argument is an ndarray (not a subclass) of rank >= 1 (0-d arrays are keyed
  // by value on the whole path) of a recognised dtype, aligned, with strides a multiple of its item
  // size (keyed by dtype and shape), a list or tuple of at most kMaxListLength such arrays (each
  // in objs_ after the list), or a plain None, int, bool, float, str, or list or tuple of at most
  // kMaxListLength ints (keyed by type and value: a float by its bits, so 0.0 and -0.0 differ).
  bool key_of(const py::tuple& args, const py::dict& kwargs) {
    key_.clear();
    objs_.clear();
    key_.push_back(static_cast<std::int64_t>(args.size()));
    for (const py::handle arg : args) {
      if (!key_value(arg.ptr())) return false;
    }
    key_.push_back(static_cast<std::int64_t>(kwargs.size()));
    for (const auto& [name, value] : kwargs) {
      const int index = name_index(name.ptr());
      if (index < 0 || !key_value(value.ptr())) return false;
      key_.push_back(index);
    }
    return true;
  }

  bool key_value(PyObject* o) {
    objs_.push_back(o);
    if (Py_TYPE(o) == py::detail::npy_api::get().PyArray_Type_) {
      // An array given again (add(x, x)) is keyed as that: which arguments are one array is part
      // of the signature.
      for (std::size_t k = 0; k + 1 < objs_.size(); ++k) {
        if (objs_[k] == o) {
          key_.push_back(kTagSame);
          key_.push_back(static_cast<std::int64_t>(k));
          return true;
        }
      }
      const auto* a = py::detail::array_proxy(o);
      const MemoDtype* d = dtype_of(a->descr);
      if (d == nullptr || a->nd < 1 ||
          (a->flags & py::detail::npy_api::constants::NPY_ARRAY_ALIGNED_) == 0) {
        return false;
      }
      key_.push_back(d - memo_dtypes().data());
      key_.push_back(a->nd);
      for (int i = 0; i < a->nd; ++i) {
        if (a->strides[i] % d->itemsize != 0) return false;
        key_.push_back(a->dimensions[i]);
      }
      return true;
    }
    if (o == Py_None) {
      key_.push_back(kTagNone);
      return true;
    }
    if (PyBool_Check(o)) {
      key_.push_back(kTagBool);
      key_.push_back(o == Py_True ? 1 : 0);
      return true;
    }
    if (PyLong_CheckExact(o)) {
      key_.push_back(kTagInt);
      return key_int(o);
    }
    if (PyFloat_CheckExact(o)) {
      const double v = PyFloat_AS_DOUBLE(o);
      std::int64_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      key_.push_back(kTagFloat);
      key_.push_back(bits);
      return true;
    }
    if (PyUnicode_CheckExact(o)) {
      const int index = string_index(o);
      if (index < 0) return false;
      key_.push_back(kTagStr);
      key_.push_back(index);
      return true;
    }
    const bool list = PyList_CheckExact(o) != 0;
    if (list || PyTuple_CheckExact(o)) {
      const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
      if (n > kMaxListLength) return false;
      PyObject* first = n > 0 ? (list ? PyList_GET_ITEM(o, 0) : PyTuple_GET_ITEM(o, 0)) : nullptr;
      if (first != nullptr && Py_TYPE(first) == py::detail::npy_api::get().PyArray_Type_) {
        // A list of arrays (concat's values): each array keyed, and an argument, in turn.
        key_.push_back(list ? kTagArrayList : kTagArrayTuple);
        key_.push_back(n);
        for (Py_ssize_t i = 0; i < n; ++i) {
          PyObject* e = list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
          if (Py_TYPE(e) != py::detail::npy_api::get().PyArray_Type_ || !key_value(e)) return false;
        }
        return true;
      }
      key_.push_back(list ? kTagList : kTagTuple);
      key_.push_back(n);
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* e = list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
        if (!PyLong_CheckExact(e) || !key_int(e)) return false;
      }
      return true;
    }
    return false;
  }

  // Appends an exact int's value; false (no error set) when it does not fit in 64 bits.
  bool key_int(PyObject* o) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) return false;
    key_.push_back(static_cast<std::int64_t>(v));
    return true;
  }

  // A small number for a keyword's name, or -1 once kMaxStrings distinct names were seen.
  int name_index(PyObject* name) { return intern(names_, name); }
  // The same for a str argument (padding="SAME", data_format, name), by value.
  int string_index(PyObject* text) { return intern(strings_, text); }

  // The index of `text` in `table` (compared by value: strs need not be interned), added when new;
  // -1 when it is not an exact str or the table is full.
  static int intern(std::vector<py::object>& table, PyObject* text) {
    if (!PyUnicode_CheckExact(text)) return -1;
    for (std::size_t i = 0; i < table.size(); ++i) {
      PyObject* known = table[i].ptr();
      if (known == text || PyUnicode_Compare(known, text) == 0) return static_cast<int>(i);
    }
    if (table.size() >= kMaxStrings) return -1;
    table.push_back(py::reinterpret_borrow<py::object>(text));
    return static_cast<int>(table.size() - 1);
  }

  // to_numpy() for a kernel output, made directly (no shape vectors, no pybind11 capsule) when
  // its dtype is one of memo_dtypes() and it owns its memory.
  static py::object output_array(const Tensor& t) {
    const MemoDtype* d = nullptr;
    for (const MemoDtype& m : memo_dtypes()) {
      if (m.dtype == t.dtype()) {
        d = &m;
        break;
      }
    }
    constexpr std::size_t kMaxDims = 32;  // NumPy's own limit before 2.0
    const std::size_t nd = t.shape().size();
    if (d == nullptr || t.owner() == nullptr || nd > kMaxDims) return to_numpy(t);
    Py_intptr_t dims[kMaxDims], strides[kMaxDims];
    for (std::size_t i = 0; i < nd; ++i) {
      dims[i] = static_cast<Py_intptr_t>(t.shape()[i]);
      strides[i] = static_cast<Py_intptr_t>(t.strides()[i] * d->itemsize);
    }
    // The capsule owns a Tensor handle, which keeps the buffer alive as long as the array lives.
    auto keep = std::make_unique<Tensor>(t);
    PyObject* capsule = PyCapsule_New(keep.get(), nullptr, [](PyObject* c) {
      delete static_cast<Tensor*>(PyCapsule_GetPointer(c, nullptr));
    });
    if (capsule == nullptr) throw py::error_already_set();
    keep.release();
    auto base = py::reinterpret_steal<py::object>(capsule);
    const auto& api = py::detail::npy_api::get();
    Py_INCREF(d->descr);  // PyArray_NewFromDescr steals it
    auto out = py::reinterpret_steal<py::object>(api.PyArray_NewFromDescr_(
        api.PyArray_Type_, d->descr, static_cast<int>(nd), dims, strides, t.raw_data(),
        py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr));
    if (!out) throw py::error_already_set();
    if (api.PyArray_SetBaseObject_(out.ptr(), base.release().ptr()) != 0) {
      throw py::error_already_set();
    }
    return out;
  }

  // borrow() for an argument key_of accepted, without its checks.
  static Tensor borrow_keyed(PyObject* o) {
    const auto* a = py::detail::array_proxy(o);
    const MemoDtype* d = dtype_of(a->descr);
    const auto nd = static_cast<std::size_t>(a->nd);
    Shape shape(nd), strides(nd);
    for (std::size_t i = 0; i < nd; ++i) {
      shape[i] = a->dimensions[i];
      strides[i] = a->strides[i] / d->itemsize;
    }
    return Tensor::wrap(d->dtype, shape, strides, a->data, nullptr);
  }

  // Scratch for key_of, used before a kernel runs (the GIL is held throughout). objs_ borrows the
  // call's arguments, which the caller holds until it returns.
  std::vector<std::int64_t> key_;
  std::vector<PyObject*> objs_;
  std::vector<py::object> names_;    // keyword names seen, by name_index
  std::vector<py::object> strings_;  // str arguments seen, by string_index
  std::unordered_map<std::vector<std::int64_t>, std::shared_ptr<const Entry>, KeyHash> entries_;
};

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
  py::class_<EagerMemo>(
      m, "EagerMemo",
      "A kernel function's calls, by their arrays' dtypes and shapes and other arguments' values.")
      .def(py::init<>())
      .def("call", &EagerMemo::call, py::arg("args"), py::arg("kwargs"), py::arg("num_threads") = 0,
           "The result of a call with these arguments, or None when none like them was added.")
      .def("add", &EagerMemo::add, py::arg("args"), py::arg("kwargs"), py::arg("prepared"),
           py::arg("inputs"), py::arg("single"), py::arg("release_gil"),
           "Remembers that a call with arguments like these runs `prepared` on `inputs` (indices "
           "of array arguments, or constant arrays); False when they cannot key an entry.")
      .def("add_miss", &EagerMemo::add_miss, py::arg("args"), py::arg("kwargs"),
           "Remembers that calls with arguments like these are not remembered: call() answers "
           "False for them.")
      .def("clear", &EagerMemo::clear)
      .def("__len__", &EagerMemo::size);
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
