"""One definition per op: its contract, checks, shape inference, cost, gradient and docstring.

An op is defined once, in Python, by an :class:`OpDef`: its TensorFlow type name, its inputs and
outputs (``"x: T"``, ``"values: N * T"``, ``"y: bool"``), the dtypes each type variable accepts,
its attributes with their kinds and defaults, a shape function (unknown dimensions allowed), a FLOP
count and a gradient. Its kernel is registered in C++ under the same type name
(``csrc/opweave/kernels/*_ops.cpp``). From that one definition follow:

- the graph op: inputs converted to tensors (a Python value takes the dtype of the other
  operands when it converts without loss), dtypes checked, attributes checked by the shared
  checking layer (:mod:`opweave.ops._checks`), the static output shapes inferred, the node added;
- the eager function (``opweave.kernels.<name>``): the same checks and shape inference on NumPy
  arrays, then the C++ kernel run directly on them;
- the step-stats FLOP count, and the gradient used by :func:`opweave.gradients`.

The public function is usually the definition itself: ``@op(...)`` on a typed stub whose
parameters are the op's inputs and attributes by name. A function that maps TensorFlow's
arguments (``axis`` / ``reduction_indices``, say) has a body returning the op's arguments as a
dict. Functions composed of several ops call op definitions and other public functions, and work
eagerly too, since an OpDef called in eager mode computes instead of building.

>>> import opweave as ow
>>> ow.nn.relu.op_def.type, ow.nn.relu.op_def.inputs[0].name
('Relu', 'features')
"""

from __future__ import annotations

import collections
import functools
import inspect
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .. import _opweave_core as _core
from .._core_errors import call_core, raise_core_error
from ..dtypes import ANY, INDEX, DType, as_dtype, bool_, float32, implicit_array, int32, int64
from ..framework import Graph, Operation, Shape, Tensor, format_shape, get_default_graph
from ..tensor_shape import TensorShape, as_shape
from . import _checks

__all__ = [
    "REGISTRY",
    "Attr",
    "OpDef",
    "ShapeContext",
    "constant_value",
    "convert_to_tensor",
    "eager_function",
    "executing_eagerly",
    "memoizable",
    "op",
    "public",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Every op definition, by TensorFlow type name.
REGISTRY: dict[str, OpDef] = {}
#: Every public function (op definitions and compositions), by name, for opweave.kernels.
PUBLIC: dict[str, Callable[..., Any]] = {}

_REQUIRED = object()
_MISS = object()  # no cached plan for the call: it takes the whole path


# -- eager mode ----------------------------------------------------------------------------------


# Each op call's (plan, or None when it has none; flat operands; result), see _memoize.
_Record = list[tuple["_Plan | None", list[Any], Any]]


class _EagerState(threading.local):
    active: bool = False
    num_threads: int = 0
    record: _Record | None = None  # while opweave.kernels records a call for its memo


_eager = _EagerState()


def executing_eagerly() -> bool:
    """True inside an ``opweave.kernels`` call: ops compute on arrays instead of building."""
    return _eager.active


def eager_function(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` (a public op function) run eagerly on NumPy arrays: ``opweave.kernels.<name>``.

    The extra keyword ``_num_threads`` (a test hook) runs the kernels on a private pool of that
    many threads instead of the global intra-op pool.
    """

    # An op's stub whose call signature has a plan runs it directly (OpDef._eager_fast); the
    # plan's kernel makes no nested eager call, so the eager state need not be switched on.
    fast: Callable[[tuple[Any, ...], dict[str, Any], int], Any] | None = getattr(
        fn, "_eager_fast", None
    )
    # Calls of a function that computes one op from its arrays' dtypes and shapes and its other
    # arguments' values (see memoizable) are looked up and run in C++ (_memoize).
    memo = _core.EagerMemo() if getattr(fn, "_eager_memoizable", False) else None
    memo_call = memo.call if memo is not None else None

    @functools.wraps(fn)
    def run(*args: Any, _num_threads: int | None = None, **kwargs: Any) -> Any:
        threads = 0
        if _num_threads is not None:
            threads = _checks.check_int(_num_threads, "_num_threads", minimum=1, maximum=4096)
        if memo_call is not None:
            failure: BaseException | None = None
            try:
                result = memo_call(args, kwargs, threads)
            except _core.CoreError as exc:
                failure = exc
            if failure is not None:
                raise_core_error(failure)  # outside the except block: no CoreError as context
            if result is not None and result is not False:
                return result
        state = _eager
        saved_record = state.record
        record: _Record | None = None
        if memo_call is not None and result is None:  # False: a signature not to remember
            state.record = record = []
        try:
            if fast is not None:
                result = fast(args, kwargs, threads)
                if result is not _MISS:
                    if memo is not None and record is not None:
                        _memoize(memo, args, kwargs, record, result)
                    return result
            saved_active, saved_threads = state.active, state.num_threads
            state.active = True
            state.num_threads = threads
            try:
                result = fn(*args, **kwargs)
            finally:
                state.active = saved_active
                state.num_threads = saved_threads
            if memo is not None and record is not None:
                _memoize(memo, args, kwargs, record, result)
            return result
        finally:
            state.record = saved_record

    run.__qualname__ = run.__name__ = name
    run._eager_memo = memo  # type: ignore[attr-defined]  # for tests
    return run


def memoizable(fn: F) -> F:
    """Declares that ``fn``, called eagerly, computes one op from its array arguments' dtypes and
    shapes (never their values) and its other arguments' values, and returns its result as is:
    ``opweave.kernels`` may then remember a call's plan by those and run later calls like it in
    C++. An op's stub is memoizable without saying so. Each call remembered is checked to have
    run one op whose inputs include every array argument itself (_memoize); what the check cannot
    see is an array both read by value and passed on, and ops run through ``opweave.kernels``
    itself (a hit in its memo leaves no record), which ``fn`` must not call."""
    fn._eager_memoizable = True  # type: ignore[attr-defined]
    return fn


#: A memoized call this small (elements in and out) runs its kernel without releasing the GIL:
#: releasing and taking it back costs more than the kernel.
_GIL_HOLD_ELEMENTS = 4096


def _memoize(
    memo: _core.EagerMemo,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    record: _Record,
    result: Any,
) -> None:
    """Adds the recorded call to ``memo``: its plan, or that calls like it are not remembered
    (so that they are not recorded again)."""
    if not _memo_plan(memo, args, kwargs, record, result):
        memo.add_miss(args, kwargs)


def _memo_plan(
    memo: _core.EagerMemo,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    record: _Record,
    result: Any,
) -> bool:
    """Adds the call to ``memo`` when it ran exactly one op by a plan, whose result it returned,
    on all its very array arguments (each at most once, none keyed by value) and the plan's
    constants (made from its other arguments); the memo keys it by all its arguments
    (EagerMemo.add). False when it cannot."""
    if len(record) != 1:
        return False
    plan, flat, op_result = record[0]
    if plan is None or op_result is not result or plan.kind not in (_RESULT_ONE, _RESULT_LIST):
        return False
    reads = plan.op_def._eager_reads
    constants = dict(plan.constants)
    # The arguments as EagerMemo numbers them: positional, then keyword, each list of arrays
    # followed by its arrays.
    given: list[Any] = []
    for v in (*args, *kwargs.values()):
        given.append(v)
        if (type(v) is list or type(v) is tuple) and v and type(v[0]) is np.ndarray:
            given.extend(v)
    inputs: list[int | np.ndarray[Any, Any]] = []
    for j, v in enumerate(flat):
        if j in constants:
            inputs.append(constants[j])
            continue
        # The first argument that is this array: the memo's key says which arguments are one.
        i = next((i for i, a in enumerate(given) if a is v), -1)
        if i < 0 or j in reads or type(v) is not np.ndarray or v.ndim == 0:
            return False
        inputs.append(i)
    # An array argument that is no input of the op may have been read by value in fn's body
    # (leaky_relu's alpha.item(), say), which the memo's key (its shape) does not hold.
    used = {x for x in inputs if type(x) is int}
    if any(
        type(a) is np.ndarray and i not in used and not _earlier(given, i)
        for i, a in enumerate(given)
    ):
        return False
    outputs = [result] if plan.kind == _RESULT_ONE else result
    elements = sum(np.size(a) for a in given if type(a) is np.ndarray)
    elements += sum(np.size(r) for r in outputs)
    single = plan.kind == _RESULT_ONE
    if not memo.add(args, kwargs, plan.prepared, inputs, single, elements > _GIL_HOLD_ELEMENTS):
        return False
    plan.op_def._memos.add(memo)
    return True


def _earlier(given: list[Any], i: int) -> bool:
    """Whether ``given[i]`` is also an earlier argument (the one an op input names)."""
    return any(a is given[i] for a in given[:i])


# -- argument and attribute specs ----------------------------------------------------------------


@dataclass(frozen=True)
class ArgSpec:
    """One input or output of an op: ``"x: T"``, ``"values: N * T"``, ``"y: bool"``,
    ``"output: DstT"`` (an attribute holding the dtype), ``"args: list"`` (any dtypes) or
    ``"ref: Ref(T)"`` (a variable: TensorFlow 1's reference input or output)."""

    name: str
    type_attr: str | None = None  # a type variable ("T") or a type-valued attribute ("DstT")
    fixed: DType | None = None  # a fixed dtype ("bool")
    number_attr: str | None = None  # "N" in "N * T": a list of that many tensors
    is_list: bool = False  # "list": a list of tensors of any dtypes (py_function)
    is_ref: bool = False  # "Ref(T)": a variable, not a value

    @staticmethod
    def parse(spec: str) -> ArgSpec:
        name, _, rest = (p.strip() for p in spec.partition(":"))
        if not rest:
            raise ValueError(f"arg spec {spec!r} has no type")
        if rest.startswith("Ref(") and rest.endswith(")"):
            return ArgSpec(name, type_attr=rest[4:-1].strip(), is_ref=True)
        if rest == "list":
            return ArgSpec(name, is_list=True)
        if "*" in rest:
            number, _, tname = (p.strip() for p in rest.partition("*"))
            return ArgSpec(name, type_attr=tname, number_attr=number)
        try:
            fixed = as_dtype(rest)
        except TypeError:
            return ArgSpec(name, type_attr=rest)
        return ArgSpec(name, fixed=fixed)


@dataclass(frozen=True)
class Attr:
    """An op attribute: its kind, default, and (for strings) the allowed values.

    Kinds: ``"int"``, ``"float"``, ``"bool"``, ``"string"``, ``"type"``, ``"shape"``,
    ``"list(int)"``, ``"list(float)"``, ``"list(type)"``, ``"tensor"`` (an array) and
    ``"func"`` (a callable); ``minimum`` / ``maximum`` bound ints and list(int) entries.
    """

    kind: str
    default: Any = _REQUIRED
    allowed: tuple[str, ...] | None = None
    minimum: int = _checks.INT64_MIN
    maximum: int = _checks.INT64_MAX

    def check(self, value: Any, arg: str, op: str) -> Any:
        """``value`` checked and in canonical form."""
        k = self.kind
        if k == "int":
            return _checks.check_int(value, arg, op=op, minimum=self.minimum, maximum=self.maximum)
        if k == "float":
            return _checks.check_float(value, arg, op=op)
        if k == "bool":
            return _checks.check_bool(value, arg, op=op)
        if k == "string":
            return _checks.check_string(value, arg, op=op, allowed=self.allowed)
        if k == "type":
            try:
                return as_dtype(value)
            except TypeError as e:
                raise TypeError(f"{op}: {arg}: {e}") from None
        if k == "shape":
            if value is None or isinstance(value, TensorShape):
                return as_shape(value)
            dims = _checks.check_int_list(
                [
                    -1 if d is None else getattr(d, "value", d) if d is not None else -1
                    for d in value
                ]
                if not isinstance(value, np.ndarray)
                else value,
                arg,
                op=op,
                minimum=-1,
                allow_scalar=False,
            )
            _checks.shape_product([d for d in dims if d >= 0], arg, op=op)
            return TensorShape([None if d == -1 else d for d in dims])
        if k == "list(int)":
            return _checks.check_int_list(
                value, arg, op=op, minimum=self.minimum, maximum=self.maximum
            )
        if k == "list(float)":
            return [_checks.check_float(v, f"{arg}[{i}]", op=op) for i, v in enumerate(value)]
        if k == "list(type)":
            if isinstance(value, (str, DType, type, np.dtype)):
                raise TypeError(f"{op}: {arg} must be a list of dtypes, got {value!r}")
            return [as_dtype(v) for v in value]
        if k == "tensor":
            return value
        if k == "func":
            if not callable(value):
                raise TypeError(f"{op}: {arg} must be callable, got {_short(value)}")
            return value
        raise ValueError(f"unknown attr kind {k!r}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- shape inference -----------------------------------------------------------------------------


@dataclass
class ShapeContext:
    """What a shape function sees: the inputs' static shapes, dtypes and (when known before the
    run) values, and the checked attributes. In eager mode every shape and value is known."""

    op: OpDef
    name: str
    inputs: list[Any]  # Tensors (graph mode) or arrays (eager); lists for list inputs
    attrs: dict[str, Any]
    shapes: list[Shape] = field(default_factory=list)  # flattened over list inputs
    dtypes: list[DType] = field(default_factory=list)
    flat: list[Any] = field(default_factory=list)
    # The (flattened) inputs whose values the shape function read: an eager call signature keys
    # its cached plan by those values too (see OpDef._eager_key).
    reads: set[int] = field(default_factory=set)

    def shape(self, i: int) -> Shape:
        """The static shape of (flattened) input ``i``."""
        return self.shapes[i]

    def rank(self, i: int) -> int | None:
        s = self.shapes[i]
        return None if s is None else len(s)

    def value(self, i: int) -> np.ndarray[Any, Any] | None:
        """The value of (flattened) input ``i`` when it is known before the run, else None."""
        self.reads.add(i)
        return constant_value(self.flat[i])

    def shape_value(self, i: int) -> Shape:
        """Input ``i`` (an integer vector) read as a shape: partly known values allowed, -1 or an
        unknown element meaning an unknown dimension; None when even its length is unknown."""
        self.reads.add(i)
        return constant_value_as_shape(self.flat[i])

    def error(self, message: str) -> ValueError:
        """``message`` with TensorFlow's suffix naming the node, the op and the input shapes."""
        return ValueError(
            f"{message} for '{self.name}' (op: '{self.op.type}') with input shapes: "
            + ", ".join(format_shape(s) for s in self.shapes)
            + "."
        )


ShapeFn = Callable[[ShapeContext], Sequence[Shape] | Shape]


def same_shape(ctx: ShapeContext) -> Shape:
    """The first input's shape (element-wise unary ops)."""
    return ctx.shape(0)


def broadcast_shapes(a: Shape, b: Shape, ctx: ShapeContext | None = None) -> Shape:
    """NumPy broadcasting of two static shapes; ValueError naming them when they clash."""
    if a is None or b is None:
        return None
    out: list[int | None] = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None or db is None:
            out.append(da if db is None else db)
        elif da == db:
            out.append(da)
        else:
            message = f"Dimensions must be equal, but are {da} and {db}"
            if ctx is not None:
                raise ctx.error(message)
            raise ValueError(f"{message}: shapes {format_shape(a)} and {format_shape(b)}")
    return tuple(reversed(out))


def broadcast_shape(ctx: ShapeContext) -> Shape:
    """The broadcast of all inputs' shapes (element-wise binary and ternary ops)."""
    shape = ctx.shape(0)
    for i in range(1, len(ctx.shapes)):
        shape = broadcast_shapes(shape, ctx.shape(i), ctx)
    return shape


# -- static values -------------------------------------------------------------------------------


def constant_value(t: Any) -> np.ndarray[Any, Any] | None:
    """The value of ``t`` when it is known without running the graph: a constant, the shape,
    size or rank of a tensor whose shape is known, or an array (eager mode); else None."""
    if not isinstance(t, Tensor):
        return np.asarray(t) if isinstance(t, np.ndarray) else None
    op_ = t.op
    if op_.type == "Const":
        value: np.ndarray[Any, Any] = op_.attrs["value"]
        return value
    if op_.type in ("Identity", "StopGradient", "Snapshot"):
        return constant_value(op_.inputs[0])
    src = op_.inputs[0]._shape if op_.inputs else None
    out_dtype = t.dtype.as_numpy_dtype
    if op_.type == "Shape" and src is not None and all(d is not None for d in src):
        return np.array(src, dtype=out_dtype)
    if op_.type == "Size" and src is not None and all(d is not None for d in src):
        return np.array(math.prod(d for d in src if d is not None), dtype=out_dtype)
    if op_.type == "Rank" and src is not None:
        return np.array(len(src), dtype=np.int32)
    fn = _CONSTANT_RULES.get(op_.type)
    return fn(t) if fn is not None else None


def constant_value_as_shape(t: Any) -> Shape:
    """An integer vector ``t`` read as a (partly known) shape; see ShapeContext.shape_value."""
    v = constant_value(t)
    if v is not None:
        if v.ndim == 0:
            return None if int(v) == -1 else (int(v),)
        return tuple(None if int(d) == -1 else int(d) for d in v.reshape(-1))
    if isinstance(t, Tensor):
        if t.op.type == "Shape":
            return t.op.inputs[0]._shape
        fn = _SHAPE_RULES.get(t.op.type)
        if fn is not None:
            return fn(t)
        if t._shape is not None and len(t._shape) == 1 and t._shape[0] is not None:
            return (None,) * t._shape[0]
    return None


# Extra rules added by the op families (Pack of scalars, ConcatV2 of vectors, a slice of Shape).
_CONSTANT_RULES: dict[str, Callable[[Tensor], np.ndarray[Any, Any] | None]] = {}
_SHAPE_RULES: dict[str, Callable[[Tensor], Shape]] = {}


def constant_rule(op_type: str) -> Callable[[F], F]:
    """Register how ``constant_value`` sees through ops of ``op_type``."""

    def register(fn: F) -> F:
        _CONSTANT_RULES[op_type] = fn
        return fn

    return register


def shape_rule(op_type: str) -> Callable[[F], F]:
    """Register how ``constant_value_as_shape`` reads ops of ``op_type``."""

    def register(fn: F) -> F:
        _SHAPE_RULES[op_type] = fn
        return fn

    return register


# -- variables (ref tensors) ---------------------------------------------------------------------

# Op types whose output is a variable (a ref, TensorFlow 1's float32_ref): VariableV2, Assign, ...
_REF_OPS: set[str] = set()


def is_ref(t: Tensor) -> bool:
    """True when ``t`` stands for a variable (a VariableV2's or an Assign's output), whose value
    is read where it is used."""
    return t.op.type in _REF_OPS


def read_ref(t: Tensor, name: str | None = None) -> Tensor:
    """An Identity reading the variable ``t`` refers to, made in the current name scope and
    control-dependency context (so it reads after the ops those name), as TensorFlow 1 reads a
    ref where an op takes a value."""
    g = t.graph
    full = g.unique_name(name or f"{t.op.name}/read")
    return g._create_op(
        "Identity", [t], {"T": t.dtype}, [(t.dtype, t._shape)], full, unique_name=full
    ).outputs[0]


# -- conversion of Python values -----------------------------------------------------------------

# Builds one tensor from a (nested) list holding tensors, as TensorFlow's auto-packing does
# (``[-1, tf.shape(x)[1]]``); array_ops registers Pack here. Arguments: the list, a dtype hint.
_AUTO_PACK: list[Callable[[Any, DType | None], Any]] = []


def register_auto_pack(fn: Callable[[Any, DType | None], Any]) -> None:
    """Make a list or tuple holding tensors convert to a tensor through ``fn``."""
    _AUTO_PACK[:] = [fn]


def _auto_pack(value: Any, dtype: DType | None) -> Any:
    """``value`` packed into one tensor when it is a list or tuple holding tensors, else itself."""
    if _AUTO_PACK and isinstance(value, (list, tuple)) and _contains_tensor(value):
        return _AUTO_PACK[0](value, dtype)
    return value


def _inferred_dtype(value: Any) -> DType:
    """TensorFlow's dtype for a value given without one: NumPy arrays and scalars keep theirs;
    Python floats become float32, Python ints int32 (int64 when some value does not fit), bools
    bool, bytes and str string."""
    if isinstance(value, (np.ndarray, np.generic)):
        return as_dtype(value.dtype)
    arr = np.asarray(value)
    if arr.dtype.kind == "f":
        return float32
    if arr.dtype.kind in "iu":
        info = np.iinfo(np.int32)
        fits = arr.size == 0 or (info.min <= arr.min() and arr.max() <= info.max)
        return int32 if fits else int64
    if arr.dtype.kind in "SU" or (arr.dtype.kind == "O" and _all_text(arr)):
        return as_dtype("string")
    if arr.dtype.kind == "O":
        raise TypeError(
            f"Failed to convert object of type {type(value).__name__} to Tensor. Contents: "
            f"{_short(value)}. Consider casting elements to a supported type."
        )
    return as_dtype(arr.dtype)


def _all_text(arr: np.ndarray[Any, Any]) -> bool:
    return all(isinstance(v, (bytes, str)) for v in arr.reshape(-1))


def _conversion_error(value: Any, dtype: DType) -> TypeError:
    """TensorFlow's "Expected int32, but got 2.5 of type 'float'.", naming the first element of a
    Python sequence that does not convert."""
    culprit = value
    if isinstance(value, (list, tuple)):
        for element in np.asarray(value, dtype=object).flat:
            try:
                implicit_array(element, dtype)
            except (TypeError, ValueError, OverflowError):
                culprit = element
                break
    return TypeError(
        f"Expected {dtype.name}, but got {_short(culprit)} of type '{type(culprit).__name__}'."
    )


def to_array(value: Any, dtype: DType | None = None) -> np.ndarray[Any, Any]:
    """``value`` as an array of ``dtype`` (inferred as TensorFlow does when None); a value that
    does not convert without loss is TypeError("Expected int32, but got 2.5 ...")."""
    if _contains_tensor(value):
        raise TypeError(
            f"Cannot convert {_short(value)} to an array: it holds symbolic Tensors (use "
            "opweave.stack to combine tensors)"
        )
    dt = _inferred_dtype(value) if dtype is None else dtype
    if dt is not bool_ and _holds_python_bools(value):
        # As TensorFlow: True is not a number for an op argument (feeds still take it).
        raise _conversion_error(value, dt)
    try:
        arr = implicit_array(value, dt)
    except (TypeError, ValueError, OverflowError):
        raise _conversion_error(value, dt) from None
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _holds_python_bools(value: Any) -> bool:
    """A Python or NumPy bool, or a (nested) list of them."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, (list, tuple)) and value:
        return _holds_python_bools(value[0])
    return False


def _contains_tensor(value: Any) -> bool:
    if isinstance(value, (Tensor, Operation)) or hasattr(value, "_as_tensor"):  # or a Variable
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def make_const(value: np.ndarray[Any, Any], dtype: DType, name: str = "Const") -> Tensor:
    """A Const node holding a copy of ``value`` (already of ``dtype``)."""
    arr = np.array(value, copy=True, order="C")  # ascontiguousarray would make 0-d arrays 1-d
    g = get_default_graph()
    return g._create_op(
        "Const", [], {"value": arr, "dtype": dtype}, [(dtype, tuple(arr.shape))], name
    ).outputs[0]


def convert_to_tensor(
    value: Any, dtype: Any = None, name: str | None = None, preferred_dtype: Any = None
) -> Any:
    """``value`` itself when it is a Tensor (its dtype checked against ``dtype``), else a
    constant of ``dtype`` (in eager mode: an array).

    Like :func:`opweave.constant`, a value that does not convert to ``dtype`` without loss is a
    TypeError (``Expected int32, but got 2.5 of type 'float'.``), never truncated.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.convert_to_tensor([1, 2]).dtype
    opweave.int32
    """
    if (
        type(value) is np.ndarray
        and dtype is None
        and preferred_dtype is None
        and _eager.active
        and value.dtype in _PASS_THROUGH
    ):
        return value  # what the path below returns for it (to_array keeps such an array as is)
    dt = None if dtype is None else as_dtype(dtype)
    value = _auto_pack(value, dt)
    if hasattr(value, "_as_tensor"):  # Variables and other tensor-like objects
        value = value._as_tensor()
    if isinstance(value, Tensor):
        if _eager.active:
            raise TypeError(
                f"opweave.kernels computes on arrays; got the symbolic Tensor {value.name!r}"
            )
        if dt is not None and value.dtype is not dt:
            raise TypeError(
                f"Tensor conversion requested dtype {dt.name} for Tensor with dtype "
                f"{value.dtype.name}: {value!r}"
            )
        return value
    if isinstance(value, Operation):
        raise TypeError(f"Can not convert an Operation ({value.name!r}) into a Tensor.")
    if dt is None and preferred_dtype is not None:
        pd = as_dtype(preferred_dtype)
        try:
            arr = to_array(value, pd)
        except TypeError:
            arr = to_array(value)
    else:
        arr = to_array(value, dt)
    if _eager.active:
        return arr
    return make_const(arr, as_dtype(arr.dtype), name or "Const")


def _like(value: Any, dtype: DType, name: str = "Const") -> Any:
    """``value`` as a tensor of ``dtype`` when it converts implicitly (``2`` beside a float
    tensor is ``2.0``), else of its own dtype (``2.5`` beside an int tensor stays float32, so the
    op's dtype check rejects it), as TensorFlow's dtype hint for operands does."""
    try:
        arr = to_array(value, dtype)
    except TypeError as hinted:
        if _holds_python_bools(value):
            raise  # a bool beside numbers is TensorFlow's "Expected int32 ... got True" error
        try:
            arr = to_array(value)
        except TypeError:
            raise hinted from None  # "Expected int32, but got 10**30 ..." says more
    if _eager.active:
        return arr
    return make_const(arr, as_dtype(arr.dtype), name)


def _is_symbolic(value: Any) -> bool:
    return isinstance(value, Tensor) or hasattr(value, "_as_tensor")


def _operand_dtype(value: Any) -> DType | None:
    """The dtype an operand already has (a Tensor's, an array's), used as the hint for the other
    operands of its type variable; None for Python values."""
    if hasattr(value, "_as_tensor"):
        value = value._as_tensor()
    if isinstance(value, Tensor):
        return value.dtype
    if _eager.active and isinstance(value, (np.ndarray, np.generic)):
        try:
            return as_dtype(value.dtype)
        except TypeError:
            return None
    return None


# -- eager call signatures and plans --------------------------------------------------------------

_NO_KEY = object()  # a value with no exact, hashable key
_MAX_PLANS = 256  # per op; signatures may vary without end (shapes, scalar values)
_MAX_KEYED_ELEMENTS = 64  # longer values are not keyed (their calls take the whole path)

# NumPy dtypes of arrays that go to the kernels as they are (native byte order, not string).
_PASS_THROUGH: dict[np.dtype[Any], DType] = {}


def _init_pass_through() -> None:
    from ..dtypes import ALL, string

    for d in ALL:
        if d is not string:
            # NumPy's own dtype object as the key: an array's dtype is usually that very object,
            # so the lookup ends at an identity check (comparing distinct dtype objects is slow).
            dt = np.dtype(d.as_numpy_dtype)
            _PASS_THROUGH[dt if dt.isnative else dt.newbyteorder("=")] = d


_init_pass_through()


def _value_key(v: Any, depth: int = 0) -> Any:
    """A hashable key equal for two values exactly when the eager path treats them alike: the
    type is part of it (1, 1.0 and True differ), floats by value and sign (0.0 and -0.0 differ;
    NaN never matches), NumPy scalars by dtype and bytes; _NO_KEY for anything else."""
    t = type(v)
    if v is None:
        return None
    if t is int:
        return ("i", v)
    if t is bool:
        return ("b", v)
    if t is float:
        return ("f", v, math.copysign(1.0, v))
    if t is str:
        return ("s", v)
    if t is DType:
        return ("D", v.name)
    if t is list or t is tuple:
        if depth >= 2 or len(v) > _MAX_KEYED_ELEMENTS:
            return _NO_KEY
        # Lists of plain ints (shapes, axes, begin / size) are most of them: keyed by the ints
        # themselves under their own tags, without a key per element.
        for e in v:
            if type(e) is not int:
                break
        else:
            return ("L" if t is list else "T", tuple(v))
        parts = []
        for e in v:
            k = _value_key(e, depth + 1)
            if k is _NO_KEY:
                return _NO_KEY
            parts.append(k)
        return ("l" if t is list else "t", tuple(parts))
    if isinstance(v, np.generic) and v.dtype in _PASS_THROUGH:
        return ("g", v.dtype.str, v.tobytes())
    if isinstance(v, np.dtype):
        return ("d", v.str, v.name)
    if t is type and issubclass(v, np.generic):
        return ("T", v)
    return _NO_KEY


def _key_operand(v: Any, valued: bool, key: list[Any], flat: list[Any]) -> bool:
    """Appends operand ``v``'s key part and its flat entry; False when it has no key. An array's
    part starts with its shape, a tuple, and a value's with a str tag (or is None), so an array's
    dtype is only ever compared with another array's (a NumPy dtype equals some strings)."""
    if type(v) is np.ndarray:
        dt = v.dtype
        if dt not in _PASS_THROUGH:
            return False
        if valued or v.ndim == 0:
            if v.size > _MAX_KEYED_ELEMENTS:
                return False
            key.append((v.shape, dt, v.tobytes()))
        else:
            key.append((v.shape, dt))
        flat.append(v)
        return True
    k = _value_key(v)
    if k is _NO_KEY:
        return False
    key.append(k)
    flat.append(None)
    return True


_RESULT_NONE, _RESULT_ONE, _RESULT_LIST, _RESULT_TUPLE = range(4)


class _Plan:
    """A cached eager call signature: the prepared kernel and the arrays made from the call's
    Python values (read-only, by flat position); see OpDef._eager_call."""

    __slots__ = ("constants", "kind", "op_def", "prepared")

    def __init__(
        self,
        prepared: Any,
        constants: tuple[tuple[int, np.ndarray[Any, Any]], ...],
        kind: int,
        op_def: OpDef,
    ) -> None:
        self.prepared = prepared
        self.constants = constants
        self.kind = kind
        self.op_def = op_def

    def run(self, flat: list[Any], num_threads: int) -> Any:
        for i, const in self.constants:
            flat[i] = const
        try:
            results = _core.run_prepared(self.prepared, flat, num_threads)
        except _core.CoreError as exc:
            failure: BaseException = exc
        else:
            kind = self.kind
            result: Any
            if kind == _RESULT_ONE:
                result = results[0]
            elif kind == _RESULT_LIST:
                result = results
            elif kind == _RESULT_TUPLE:
                result = self.op_def._tuple(*results)
            else:
                result = None
            record = _eager.record
            if record is not None:
                record.append((self, flat, result))
            return result
        raise_core_error(failure)  # outside the except block: no CoreError shown as context
        return None  # unreachable (raise_core_error never returns); for RET503


# -- the op definition ---------------------------------------------------------------------------

GradFn = Callable[..., Sequence[Any]]
FlopsFn = Callable[
    [Sequence[Sequence[int]], Sequence[Sequence[int]], Mapping[str, Any]], int | None
]


class OpDef:
    """The one definition of an op; calling it builds the op (or computes it in eager mode).

    Parameters
    ----------
    type : str
        TensorFlow's op type name (``"Relu"``); its C++ kernel is registered under it.
    inputs, outputs : sequence of str
        Arg specs: ``"x: T"``, ``"values: N * T"``, ``"y: bool"``, ``"output: DstT"``,
        ``"args: list"``.
    attrs : dict of str to Attr
        The attributes other than type variables.
    types : dict of str to frozenset of DType
        The dtypes each type variable (``T``, ``Tidx``) accepts.
    shape : callable, optional
        ``shape(ctx) -> shape or list of shapes`` (raw tuples with None, or None for an unknown
        rank); default: the first input's shape.
    grad : callable, optional
        ``grad(op, *output_grads) -> list of input gradients`` (None where not differentiable).
        Ops without one are not differentiable (``opweave.gradients`` raises LookupError naming
        the op type) unless ``not_differentiable`` says their inputs get no gradient.
    flops : callable, optional
        ``flops(input_shapes, output_shapes, attrs) -> int`` for one execution.
    stateful : bool
        Keeps state between runs (variables, random ops): never folded or merged by the graph
        optimizer, and not offered eagerly.
    reads_refs : bool
        Its kernel reads the value of a variable given as an input (Identity, TensorFlow 1's
        ``v/read``); for other ops, a variable where a value goes is read by an Identity made in
        front of the op.
    default_name : str, optional
        The node name when the caller gives none (default: the type name).
    """

    def __init__(
        self,
        type: str,
        *,
        inputs: Sequence[str] = (),
        outputs: Sequence[str] = ("output: T",),
        attrs: Mapping[str, Attr] | None = None,
        types: Mapping[str, frozenset[DType]] | None = None,
        shape: ShapeFn | None = None,
        grad: GradFn | None = None,
        not_differentiable: bool = False,
        flops: FlopsFn | None = None,
        stateful: bool = False,
        reads_refs: bool = False,
        default_name: str | None = None,
        doc: str | None = None,
    ) -> None:
        if type in REGISTRY:
            raise ValueError(f"op {type!r} is defined twice")
        self.type = type
        self.inputs = tuple(ArgSpec.parse(s) for s in inputs)
        self.outputs = tuple(ArgSpec.parse(s) for s in outputs)
        self.attrs: dict[str, Attr] = dict(attrs or {})
        self.types: dict[str, frozenset[DType]] = dict(types or {})
        self.shape_fn: ShapeFn = shape or same_shape
        self.grad = grad
        self.not_differentiable = not_differentiable
        self.flops = flops
        self.stateful = stateful
        self.reads_refs = reads_refs
        self.default_name = default_name or type
        self.doc = doc
        self._arg_names = [a.name for a in self.inputs] + list(self.attrs)
        self._n_inputs = len(self.inputs)
        self._input_is_list = tuple(bool(a.number_attr or a.is_list) for a in self.inputs)
        self._arg_position = {a: i for i, a in enumerate(self._arg_names)}
        self._unset_tail: list[Any] = [_REQUIRED] * self._n_inputs + [None] * len(self.attrs)
        # Variables (ref inputs) and stateful ops never run eagerly: no plans to keep.
        self._no_plans = stateful or any(a.is_ref for a in self.inputs)
        # Eager plans by call signature, and the inputs whose values key them (_eager_call).
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        self._eager_reads: frozenset[int] = frozenset()
        # The opweave.kernels memos holding plans of this op, cleared with the plans.
        self._memos: set[_core.EagerMemo] = set()
        for spec in self.inputs + self.outputs:
            t = spec.type_attr
            if t is not None and t not in self.types and t not in self.attrs:
                self.types[t] = ANY
        if any(a.is_ref for a in self.outputs):
            _REF_OPS.add(type)
        if len({a.name for a in self.outputs}) > 1:
            self._tuple = collections.namedtuple(  # type: ignore[misc]
                type, [a.name for a in self.outputs]
            )
        REGISTRY[type] = self

    def __repr__(self) -> str:
        return f"<OpDef {self.type}>"

    # -- calling --------------------------------------------------------------------------------
    def __call__(self, *args: Any, name: str | None = None, **kwargs: Any) -> Any:
        """Build the op (graph mode) or run its kernel (eager mode); see the class docstring."""
        if _eager.active:
            keyed = self._eager_key(args, kwargs, name)
            if keyed is not None:
                plan = self._plans.get(keyed[0])
                if plan is not None:
                    return plan.run(keyed[1], _eager.num_threads)
            return self._eager_call(args, kwargs, name, keyed)
        values = self._bind(args, kwargs)
        name = _checks.check_name(name, self.default_name)
        # The node's final name, so errors name it; "scope/" is taken as is (TensorFlow's
        # convention for a name that is already a unique scope name).
        name = name[:-1] if name.endswith("/") else get_default_graph().unique_name(name)
        inputs = self._convert_inputs(values, name)
        attrs = self._check_attrs(values)
        dtypes = self._resolve_types(inputs, attrs, name)
        ctx = self._shape_context(inputs, attrs, name)
        out_shapes = self._infer_shapes(ctx)
        out_dtypes = self._output_dtypes(dtypes, attrs, len(out_shapes))
        return self._build(ctx, attrs, dtypes, out_dtypes, out_shapes, name)

    # -- eager calls ----------------------------------------------------------------------------
    #
    # Everything a call checks and infers before its kernel runs (argument binding, conversions
    # of Python values, attribute checks, dtype resolution, shape inference, the core attributes)
    # is a function of its call signature: each array operand's dtype and shape, the exact value
    # of every other argument, and the values of the arrays the shape function reads. The first
    # call of a signature goes the whole way (so every error is raised exactly as before) and
    # leaves a plan: the prepared kernel plus the arrays made from Python values. Later calls of
    # the signature only build the key and run the plan.

    def _eager_call(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: Any,
        keyed: tuple[tuple[Any, ...], list[Any]] | None,
    ) -> Any:
        """A call that takes the whole path, leaving a plan when it has a signature."""
        values = self._bind(args, kwargs)
        name = _checks.check_name(name, self.default_name)
        inputs = self._convert_inputs(values, name)
        attrs = self._check_attrs(values)
        dtypes = self._resolve_types(inputs, attrs, name)
        ctx = self._shape_context(inputs, attrs, name)
        out_shapes = self._infer_shapes(ctx)
        out_dtypes = self._output_dtypes(dtypes, attrs, len(out_shapes))
        if self.stateful:
            raise TypeError(f"{self.type} keeps state between runs; it runs only in a Session")
        from ..framework import _core_attrs

        arrays = [np.asarray(a) for a in ctx.flat]
        core_attrs = _core_attrs(self._core_attrs(attrs, dtypes))
        results = call_core(
            _core.run_op, self.type, arrays, core_attrs, len(out_dtypes), _eager.num_threads
        )
        plan = None
        if keyed is not None:
            plan = self._remember(args, kwargs, name, ctx, arrays, core_attrs, len(out_dtypes))
        result = self._result(tuple(results), None)
        record = _eager.record
        if record is not None:
            record.append((plan, arrays, result))
        return result

    def _eager_key(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], name: Any
    ) -> tuple[tuple[Any, ...], list[Any]] | None:
        """The call's signature and its flattened operands (the arrays; None where a Python
        value goes), or None when the call has no signature to cache by (the whole path runs)."""
        if (name is not None and type(name) is not str) or self._no_plans:
            return None
        n_in = self._n_inputs
        if kwargs:
            n = len(args)
            if n > len(self._arg_names):
                return None
            # Every argument at its position: an input not given stays _REQUIRED (no key), an
            # attr not given is None.
            full = list(args) + self._unset_tail[n:]
            position = self._arg_position
            for k, v in kwargs.items():
                if position.get(k, -1) < n:  # unknown, or given by position too
                    return None
                full[position[k]] = v
            ins: Sequence[Any] = full[:n_in]
            attrs: Sequence[Any] = full[n_in:]
        else:
            if not n_in <= len(args) <= len(self._arg_names):
                return None
            ins = args[:n_in]
            # Attrs not given are None, as in the keyword form: both forms have one key.
            attrs = args[n_in:] + (None,) * (len(self._arg_names) - len(args))
        reads = self._eager_reads
        key: list[Any] = []
        flat: list[Any] = []
        is_list_input = self._input_is_list
        # By index, not zip(..., strict=True): a keyword call of zip costs more than the loop.
        for i in range(n_in):
            v = ins[i]
            if is_list_input[i]:
                if type(v) is not list and type(v) is not tuple:
                    return None
                key.append(len(v))
                for e in v:
                    if not _key_operand(e, len(flat) in reads, key, flat):
                        return None
            elif (
                type(v) is np.ndarray
                and v.ndim
                and v.dtype in _PASS_THROUGH
                and not (reads and len(flat) in reads)
            ):
                # The common case, inline: an array whose value no shape function reads (the
                # same part as _key_operand's).
                key.append((v.shape, v.dtype))
                flat.append(v)
            elif not _key_operand(v, len(flat) in reads, key, flat):
                return None
        for v in attrs:
            if v is None:
                key.append(None)
            else:
                k = _value_key(v)
                if k is _NO_KEY:
                    return None
                key.append(k)
        return tuple(key), flat

    def _eager_fast(self, args: tuple[Any, ...], num_threads: int) -> Any:
        """The result of a call (all arguments by position, in ``_arg_names`` order, no name)
        whose signature has a plan; _MISS when it has none."""
        keyed = self._eager_key(args, {}, None)
        if keyed is None:
            return _MISS
        plan = self._plans.get(keyed[0])
        if plan is None:
            return _MISS
        return plan.run(keyed[1], num_threads)

    def _remember(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: Any,
        ctx: ShapeContext,
        arrays: list[np.ndarray[Any, Any]],
        core_attrs: dict[str, Any],
        num_outputs: int,
    ) -> _Plan | None:
        """Caches the plan of a call that went the whole way (see _eager_call); returns it."""
        if not ctx.reads <= self._eager_reads:
            # The shape function read more values than the signatures so far held: from now on
            # they are part of the key (older plans are keyed without them and are dropped).
            self._eager_reads = self._eager_reads | frozenset(ctx.reads)
            self._plans.clear()
            for memo in self._memos:
                memo.clear()
            self._memos.clear()
        keyed = self._eager_key(args, kwargs, name)
        if keyed is None:
            return None
        key, flat = keyed
        constants: list[tuple[int, np.ndarray[Any, Any]]] = []
        for i, (given, used) in enumerate(zip(flat, arrays, strict=True)):
            if given is used:
                continue
            if given is not None and given.ndim != 0 and i not in self._eager_reads:
                return None  # an array converted by its value, which the key does not hold
            const = np.array(used, copy=True)
            const.flags.writeable = False
            constants.append((i, const))
        try:
            prepared = call_core(_core.prepare_op, self.type, core_attrs, num_outputs)
        except Exception:  # no plan; the call itself succeeded
            return None
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        plan = self._plans[key] = _Plan(prepared, tuple(constants), self._result_kind(), self)
        return plan

    def _result_kind(self) -> int:
        if not self.outputs:
            return _RESULT_NONE
        if len(self.outputs) == 1:
            a = self.outputs[0]
            return _RESULT_LIST if (a.number_attr or a.is_list) else _RESULT_ONE
        return _RESULT_TUPLE

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(self._arg_names):
            raise TypeError(f"{self.type} takes at most {len(self._arg_names)} arguments")
        values = dict(zip(self._arg_names, args, strict=False))
        for k, v in kwargs.items():
            if k not in self._arg_names:
                raise TypeError(f"{self.type} got an unexpected argument {k!r}")
            if k in values:
                raise TypeError(f"{self.type} got multiple values for argument {k!r}")
            values[k] = v
        for a in self.inputs:
            if a.name not in values:
                raise TypeError(f"{self.type} missing required input {a.name!r}")
        return values

    def _convert_inputs(self, values: dict[str, Any], name: str) -> list[Any]:
        """Each input as a Tensor (eager: an array), or a list of them for list inputs. Python
        values take the dtype of the tensors sharing their type variable when they convert
        without loss; integer-only inputs (axes, shapes) go through the checking layer."""
        hints: dict[str, DType] = {}
        for a in self.inputs:
            if a.type_attr is None:
                continue
            items = values[a.name] if (a.number_attr or a.is_list) else [values[a.name]]
            if a.number_attr and not isinstance(items, (list, tuple)):
                raise TypeError(
                    f"Expected list for '{a.name}' argument to '{self.type}' Op, not "
                    f"{_short(items)}."
                )
            for v in items:
                d = _operand_dtype(v)
                if d is not None and a.type_attr not in hints:
                    hints[a.type_attr] = d
            explicit = values.get(a.type_attr)
            if a.type_attr in self.attrs and explicit is not None and a.type_attr not in hints:
                hints[a.type_attr] = as_dtype(explicit)
        out: list[Any] = []
        for a in self.inputs:
            raw = values[a.name]
            if a.number_attr or a.is_list:
                if not isinstance(raw, (list, tuple)):
                    raw = [raw] if a.is_list else raw
                out.append([self._convert_one(v, a, hints, name) for v in raw])
            else:
                out.append(self._convert_one(raw, a, hints, name))
        return out

    def _convert_one(self, value: Any, a: ArgSpec, hints: dict[str, DType], name: str) -> Any:
        if a.is_ref:
            return self._convert_ref(value, a, name)
        value = _auto_pack(value, a.fixed or hints.get(a.type_attr or ""))
        if hasattr(value, "_as_tensor"):
            value = value._as_tensor()
        if isinstance(value, Tensor) and is_ref(value) and not self.reads_refs:
            value = read_ref(value)  # a variable where a value goes: read it here
        if isinstance(value, Tensor):
            if _eager.active:
                raise TypeError(
                    f"opweave.kernels computes on arrays; argument {a.name!r} of {self.type} "
                    f"is the symbolic Tensor {value.name!r}"
                )
            return value
        if isinstance(value, Operation):
            raise TypeError(
                f"Input {a.name!r} of '{self.type}' Op '{name}' must be a Tensor, got the "
                f"Operation {value.name!r}"
            )
        if value is None:
            raise ValueError(
                f"Input {a.name!r} of '{self.type}' Op '{name}' is None; expected a tensor"
            )
        if a.fixed is not None:
            target: DType | None = a.fixed
        elif a.type_attr is not None:
            target = hints.get(a.type_attr)
        else:
            target = None
        allowed = self.types.get(a.type_attr or "", ANY)
        index_like = (a.fixed is None and allowed <= INDEX) or a.fixed in INDEX
        if index_like and not isinstance(value, np.ndarray):
            # Axes, shapes, counts: exact integers only (no bool, float or str), checked here.
            ints = _checks.check_int_list(value, a.name, op=f"{self.type} '{name}'")
            shaped = (
                np.asarray(value, dtype=object).shape if not _checks.is_exact_int(value) else ()
            )
            arr = np.array(ints, dtype=np.int64).reshape(shaped)
            fits = not ints or (min(ints) >= -(2**31) and max(ints) < 2**31)
            want = target if target is not None else (int32 if fits else int64)
            if want is int32 and not fits:
                want = int64
            return self._wrap(arr.astype(want.as_numpy_dtype), want)
        if _eager.active and isinstance(value, (np.ndarray, np.generic)):
            arr = np.asarray(value)
            if not arr.dtype.isnative:
                arr = arr.astype(arr.dtype.newbyteorder("="))
            if arr.dtype.kind in "SUO":
                return implicit_array(arr, as_dtype("string"))
            try:
                as_dtype(arr.dtype)
            except TypeError:
                raise TypeError(
                    f"{self.type}: {a.name} has dtype {arr.dtype}, which opweave does not support"
                ) from None
            if target is not None and as_dtype(arr.dtype) is not target and arr.ndim == 0:
                return _like(value, target)  # a NumPy scalar is weak, like a Python one
            return arr
        if target is not None:
            return _like(value, target)
        return convert_to_tensor(value)

    def _convert_ref(self, value: Any, a: ArgSpec, name: str) -> Tensor:
        """A ref input: a Variable or a ref tensor (a VariableV2's or an Assign's output)."""
        if _eager.active:
            raise TypeError(f"{self.type} keeps state between runs; it runs only in a Session")
        if hasattr(value, "_ref"):
            value = value._ref()
        if isinstance(value, Tensor) and is_ref(value):
            return value
        raise TypeError(
            f"Input '{a.name}' of '{self.type}' Op '{name}' requires l-value input (a Variable), "
            f"got {_short(value)}"
        )

    def _wrap(self, arr: np.ndarray[Any, Any], dtype: DType) -> Any:
        return arr if _eager.active else make_const(arr, dtype)

    def _check_attrs(self, values: dict[str, Any]) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        for key, spec in self.attrs.items():
            if key in values and values[key] is not None:
                attrs[key] = spec.check(values[key], key, self.type)
            elif spec.default is _REQUIRED:
                raise TypeError(f"{self.type} missing required attribute {key!r}")
            else:
                attrs[key] = spec.default
        return attrs

    def _resolve_types(
        self, inputs: list[Any], attrs: dict[str, Any], name: str
    ) -> dict[str, DType]:
        """Each type variable's dtype, checked: all its inputs agree, and it is allowed."""
        dtypes: dict[str, DType] = {}
        first: dict[str, str] = {}
        for a, value in zip(self.inputs, inputs, strict=True):
            if a.is_list:
                continue
            items = value if a.number_attr else [value]
            for v in items:
                d = _dtype_of(v)
                if a.fixed is not None:
                    if d is not a.fixed:
                        raise TypeError(
                            f"Input '{a.name}' of '{self.type}' Op '{name}' has type {d.name} "
                            f"that does not match expected type of {a.fixed.name}."
                        )
                    continue
                t = a.type_attr
                assert t is not None
                if t in dtypes and dtypes[t] is not d:
                    raise TypeError(
                        f"Input '{a.name}' of '{self.type}' Op '{name}' has type {d.name} that "
                        f"does not match type {dtypes[t].name} of argument '{first[t]}'."
                    )
                if t not in dtypes:
                    dtypes[t] = d
                    first[t] = a.name
            if a.number_attr and a.number_attr not in attrs:
                attrs[a.number_attr] = len(items)
        for t, d in dtypes.items():
            allowed = self.types.get(t)
            if allowed is not None and d not in allowed:
                raise TypeError(
                    f"Value passed to parameter '{first[t]}' of '{self.type}' Op '{name}' has "
                    f"DataType {d.name} not in list of allowed values: "
                    + ", ".join(x.name for x in _ordered(allowed))
                )
            if t in self.attrs and attrs.get(t) is not None and attrs[t] is not d:
                raise TypeError(
                    f"'{self.type}' Op '{name}': {t}={attrs[t].name} but the input "
                    f"'{first[t]}' has dtype {d.name}"
                )
        return dtypes

    def _shape_context(self, inputs: list[Any], attrs: dict[str, Any], name: str) -> ShapeContext:
        ctx = ShapeContext(self, name, inputs, attrs)
        for a, value in zip(self.inputs, inputs, strict=True):
            for v in value if (a.number_attr or a.is_list) else [value]:
                ctx.flat.append(v)
                ctx.shapes.append(_shape_of(v))
                ctx.dtypes.append(_dtype_of(v))
        return ctx

    def _infer_shapes(self, ctx: ShapeContext) -> list[Shape]:
        result = self.shape_fn(ctx)
        multi = len(self.outputs) != 1 or self.outputs[0].number_attr or self.outputs[0].is_list
        if not multi:
            return [_canonical_shape(result)]
        return [_canonical_shape(s) for s in result]  # type: ignore[union-attr]

    def _output_dtypes(
        self, dtypes: dict[str, DType], attrs: dict[str, Any], count: int
    ) -> list[DType]:
        out: list[DType] = []
        for a in self.outputs:
            if a.fixed is not None:
                d: Any = a.fixed
            elif a.is_list:
                out.extend(attrs.get("Tout") or attrs.get("T") or [])
                continue
            elif a.type_attr in dtypes:
                d = dtypes[a.type_attr]
            else:
                d = attrs.get(a.type_attr or "")
                if isinstance(d, list):
                    out.extend(d)
                    continue
            if a.number_attr:
                out.extend([d] * (count - len(out) - (len(self.outputs) - 1)))
            else:
                out.append(d)
        return out

    def _core_attrs(self, attrs: dict[str, Any], dtypes: dict[str, DType]) -> dict[str, Any]:
        merged = dict(attrs)
        merged.update(dtypes)
        return merged

    def _build(
        self,
        ctx: ShapeContext,
        attrs: dict[str, Any],
        dtypes: dict[str, DType],
        out_dtypes: list[DType],
        out_shapes: list[Shape],
        name: str,
    ) -> Any:
        g = get_default_graph()
        op_ = g._create_op(
            self.type,
            ctx.flat,
            self._core_attrs(attrs, dtypes),
            list(zip(out_dtypes, out_shapes, strict=True)),
            name,
            unique_name=name,
            stateful=self.stateful,
        )
        return self._result(op_.outputs, op_)

    def _result(self, outputs: tuple[Any, ...], op_: Operation | None) -> Any:
        if not self.outputs:
            return op_
        if len(self.outputs) == 1:
            a = self.outputs[0]
            if a.number_attr or a.is_list:
                return list(outputs)
            return outputs[0]
        return self._tuple(*outputs)


def _ordered(dtypes: frozenset[DType]) -> list[DType]:
    from ..dtypes import ALL

    return [d for d in ALL if d in dtypes]


def _dtype_of(value: Any) -> DType:
    if isinstance(value, Tensor):
        return value.dtype
    return as_dtype(np.asarray(value).dtype)


def _shape_of(value: Any) -> Shape:
    if isinstance(value, Tensor):
        return value._shape
    return tuple(int(d) for d in np.shape(value))


def _canonical_shape(shape: Any) -> Shape:
    if shape is None:
        return None
    if isinstance(shape, TensorShape):
        return shape.as_raw()
    return tuple(None if d is None else int(d) for d in shape)


# -- the decorator for public functions ----------------------------------------------------------


def _stub() -> None:
    """A docstring-only body."""


def _is_stub(fn: Callable[..., Any]) -> bool:
    return fn.__code__.co_code == _stub.__code__.co_code


def op(type: str, **definition: Any) -> Callable[[F], F]:
    """Define an op and its public function in one place.

    The decorated function's signature is the public API (TensorFlow's argument names); its
    docstring documents both. A docstring-only body maps parameters to the op's inputs and
    attributes by name (``name`` names the node); a body returning a dict gives the op's
    arguments explicitly; any other return value is returned as is. See :class:`OpDef` for the
    keyword arguments.

    Examples
    --------
    >>> from opweave.dtypes import FLOATS
    >>> @op("MyRelu", inputs=["features: T"], types={"T": FLOATS})
    ... def my_relu(features, name=None):
    ...     '''max(features, 0)'''
    >>> my_relu.op_def.type
    'MyRelu'
    >>> del REGISTRY["MyRelu"], PUBLIC["my_relu"]
    """

    def wrap(fn: F) -> F:
        op_def = OpDef(type, doc=fn.__doc__, **definition)
        sig = inspect.signature(fn)
        stub = _is_stub(fn)
        names = set(op_def._arg_names)
        for p in sig.parameters:
            if stub and p != "name" and p not in names:
                raise TypeError(f"{fn.__name__}: parameter {p!r} is not an input or attr of {type}")

        # A stub whose parameters are all plain (positional or keyword) binds its arguments
        # itself; anything unusual (a missing or unexpected argument) goes through inspect,
        # which raises Python's own TypeError.
        params = list(sig.parameters.values())
        plain = stub and all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)
        param_names = tuple(p.name for p in params)
        param_set = frozenset(param_names)
        defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}

        def bind_stub(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            if plain and len(args) <= len(param_names):
                values = dict(zip(param_names, args, strict=False))
                for k, v in kwargs.items():
                    if k in values or k not in param_set:
                        break
                    values[k] = v
                else:
                    if len(values) == len(param_names):
                        return values
                    for k in param_names:
                        if k not in values:
                            if k not in defaults:
                                break
                            values[k] = defaults[k]
                    else:
                        return values
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        @functools.wraps(fn)
        def public_fn(*args: Any, **kwargs: Any) -> Any:
            if stub:
                values = bind_stub(args, kwargs)
                name = values.pop("name", None)
                return op_def(name=name, **values)
            result = fn(*args, **kwargs)
            if isinstance(result, dict):
                return op_def(**result)
            return result

        public_fn.op_def = op_def  # type: ignore[attr-defined]
        public_fn._eager_memoizable = stub  # type: ignore[attr-defined]
        # opweave.kernels' shortcut to a cached plan (eager_function), for a plain stub whose
        # parameters are the op's inputs and attrs in the op's order (then maybe name).
        own = tuple(p for p in param_names if p != "name")
        if (
            plain
            and own == tuple(op_def._arg_names[: len(own)])
            and param_names[len(own) :] in ((), ("name",))
        ):
            public_fn._eager_fast = _stub_fast_path(op_def, own, defaults)  # type: ignore[attr-defined]
        PUBLIC[fn.__name__] = public_fn
        return public_fn  # type: ignore[return-value]

    return wrap


def _stub_fast_path(
    op_def: OpDef, own: tuple[str, ...], defaults: dict[str, Any]
) -> Callable[[tuple[Any, ...], dict[str, Any], int], Any]:
    """The arguments of a call to a plain stub as the op's positional arguments, run through
    OpDef._eager_fast; _MISS (the whole path, which raises any error) for anything else: a
    missing, repeated or unknown argument, or a name."""
    n_own = len(own)
    pad = tuple(defaults.get(p, _REQUIRED) for p in own)
    # The fewest positional arguments that leave no required parameter unset.
    min_args = max((i + 1 for i, d in enumerate(pad) if d is _REQUIRED), default=0)
    position = {p: i for i, p in enumerate(own)}

    def fast(args: tuple[Any, ...], kwargs: dict[str, Any], num_threads: int) -> Any:
        n = len(args)
        if not kwargs:
            if n >= n_own:
                return op_def._eager_fast(args, num_threads) if n == n_own else _MISS
            if n < min_args:
                return _MISS
            return op_def._eager_fast(args + pad[n:], num_threads)
        if n > n_own:
            return _MISS
        full = list(args) + list(pad[n:])
        for k, v in kwargs.items():
            i = position.get(k, -1)
            if i < n:  # unknown (or name), or given twice
                return _MISS
            full[i] = v
        for i in range(n, min_args):
            if full[i] is _REQUIRED:
                return _MISS
        return op_def._eager_fast(tuple(full), num_threads)

    return fast


def public(fn: F) -> F:
    """Register a composed public function (several ops) so ``opweave.kernels`` offers it."""
    PUBLIC[fn.__name__] = fn
    return fn


def graph_of(*values: Any) -> Graph:
    """The graph of the first Tensor among ``values`` (else the default graph)."""
    for v in values:
        if isinstance(v, Tensor):
            return v.graph
    return get_default_graph()


def iter_defs() -> Iterator[OpDef]:
    """Every op definition, in definition order."""
    return iter(list(REGISTRY.values()))
