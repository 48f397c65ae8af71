"""Graphs, operations and symbolic tensors, TensorFlow 1 style.

Ops are added to the default graph (or the one made default with :meth:`Graph.as_default`);
a :class:`opweave.Session` runs them.

>>> import opweave as ow
>>> g = ow.Graph()
>>> with g.as_default():
...     x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
...     y = x * 2.0
>>> y.name, y.shape.as_list()
('mul:0', [None, 2])
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from . import _default_session
from . import _opweave_core as _core
from .dtypes import DType
from .tensor_shape import TensorShape, as_shape

__all__ = [
    "Graph",
    "GraphKeys",
    "Operation",
    "Shape",
    "Tensor",
    "add_to_collection",
    "add_to_collections",
    "control_dependencies",
    "device",
    "format_shape",
    "get_collection",
    "get_collection_ref",
    "get_default_graph",
    "name_scope",
    "register_operator",
    "reset_default_graph",
]

#: A static shape: a tuple of dims (``None`` = unknown dim), or ``None`` for an unknown rank.
Shape = tuple[int | None, ...] | None

# Operator functions (``__add__`` -> a function building an Add) registered by the ops package.
_OPERATORS: dict[str, Callable[..., Tensor]] = {}


def register_operator(name: str, fn: Callable[..., Tensor]) -> None:
    """Make ``Tensor.<name>`` (e.g. ``"__add__"``) build its op with ``fn``."""
    _OPERATORS[name] = fn


_VALID_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")


def format_shape(shape: Shape) -> str:
    """TensorFlow's spelling of a static shape: ``[?,2]``, or ``<unknown>``.

    >>> format_shape((None, 2))
    '[?,2]'
    """
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class Tensor:
    """A symbolic output of an :class:`Operation`; its value exists only inside a run.

    Attributes
    ----------
    op : Operation
        The operation that produces it.
    value_index : int
        Which output of ``op`` it is.
    dtype : DType
        Its element type.
    shape : TensorShape
        Its static shape (unknown dims are None; the rank may be unknown).

    Notes
    -----
    Python's operators build ops as in TensorFlow 1: ``+ - * @ ** //`` and ``%`` build
    ``add``, ``subtract``, ``multiply``, ``matmul``, ``pow``, ``floordiv`` and ``floormod``; ``/``
    builds :func:`~opweave.truediv` (integer operands are divided as floats), ``< <= > >=``
    comparisons, ``& | ^ ~`` logical ops on bool tensors, ``-x`` and ``abs(x)`` negation and
    absolute value, and ``x[...]`` a strided slice. ``==`` compares tensors by identity, as in
    TensorFlow 1 (use :func:`~opweave.equal` for element-wise equality).
    """

    # Tensors compare by identity (as in TensorFlow 1), so they work as feed_dict keys.
    __hash__ = object.__hash__

    def __init__(self, op: Operation, value_index: int, dtype: DType, shape: Shape) -> None:
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape

    @property
    def shape(self) -> TensorShape:
        """The static shape (unknown dimensions are None; the rank may be unknown)."""
        return TensorShape(self._shape)

    def set_shape(self, shape: Any) -> None:
        """Make the static shape more specific; ValueError when ``shape`` is incompatible."""
        merged = self.shape.merge_with(as_shape(shape))
        self._shape = merged.as_raw()

    @property
    def consumers_count(self) -> int:
        """How many inputs of other ops read this tensor."""
        return sum(1 for op in self.graph.get_operations() for t in op.inputs if t is self)

    def consumers(self) -> list[Operation]:
        """The ops that read this tensor."""
        return [op for op in self.graph.get_operations() if any(t is self for t in op.inputs)]

    @property
    def name(self) -> str:
        """``"<op name>:<output index>"``."""
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> Graph:
        """The graph this tensor belongs to."""
        return self.op.graph

    @property
    def device(self) -> str:
        """The device requested for the producing op ('' = the session picks)."""
        return self.op.device

    def get_shape(self) -> TensorShape:
        """The static shape (same as :attr:`shape`)."""
        return self.shape

    def eval(self, feed_dict: Any = None, session: Any = None) -> Any:
        """This tensor's value: ``session.run(self, feed_dict)``.

        ``session`` defaults to the innermost session entered with ``with`` in this thread.
        """
        return _session_for(session, self.graph).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return (
            f"<opweave.Tensor '{self.name}' shape={format_shape(self._shape)} "
            f"dtype={self.dtype.name}>"
        )

    # Operators build graph ops through functions the ops package registers (register_operator):
    # this module never imports the ops, so there is no import cycle.
    def __add__(self, other: Any) -> Tensor:
        return _OPERATORS["__add__"](self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _OPERATORS["__add__"](other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _OPERATORS["__sub__"](self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _OPERATORS["__sub__"](other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _OPERATORS["__mul__"](self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _OPERATORS["__mul__"](other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return _OPERATORS["__truediv__"](self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _OPERATORS["__truediv__"](other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _OPERATORS["__floordiv__"](self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _OPERATORS["__floordiv__"](other, self)

    def __mod__(self, other: Any) -> Tensor:
        return _OPERATORS["__mod__"](self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _OPERATORS["__mod__"](other, self)

    def __pow__(self, other: Any) -> Tensor:
        return _OPERATORS["__pow__"](self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return _OPERATORS["__pow__"](other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _OPERATORS["__matmul__"](self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _OPERATORS["__matmul__"](other, self)

    def __neg__(self) -> Tensor:
        return _OPERATORS["__neg__"](self)

    def __abs__(self) -> Tensor:
        return _OPERATORS["__abs__"](self)

    def __invert__(self) -> Tensor:
        return _OPERATORS["__invert__"](self)

    def __and__(self, other: Any) -> Tensor:
        return _OPERATORS["__and__"](self, other)

    def __rand__(self, other: Any) -> Tensor:
        return _OPERATORS["__and__"](other, self)

    def __or__(self, other: Any) -> Tensor:
        return _OPERATORS["__or__"](self, other)

    def __ror__(self, other: Any) -> Tensor:
        return _OPERATORS["__or__"](other, self)

    def __xor__(self, other: Any) -> Tensor:
        return _OPERATORS["__xor__"](self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return _OPERATORS["__xor__"](other, self)

    def __lt__(self, other: Any) -> Tensor:
        return _OPERATORS["__lt__"](self, other)

    def __le__(self, other: Any) -> Tensor:
        return _OPERATORS["__le__"](self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _OPERATORS["__gt__"](self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _OPERATORS["__ge__"](self, other)

    def __getitem__(self, key: Any) -> Tensor:
        return _OPERATORS["__getitem__"](self, key)

    def __iter__(self) -> Iterator[Tensor]:
        shape = self._shape
        if shape is None or not shape or shape[0] is None:
            raise TypeError(
                f"Tensor {self.name!r} is not iterable: its first dimension must be known "
                f"(shape {format_shape(shape)})"
            )
        return (self[i] for i in range(shape[0]))

    def __len__(self) -> int:
        raise TypeError(
            f"len is not well defined for symbolic Tensors ({self.name!r}); "
            "use opweave.shape(x)[0] or x.shape[0]"
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError(
            f"Cannot convert a symbolic Tensor ({self.name}) to a numpy array: its value exists "
            "only inside Session.run"
        )

    def __bool__(self) -> bool:
        raise TypeError(
            "Using an opweave.Tensor as a Python bool is not allowed: its value exists only "
            "inside Session.run"
        )


class Operation:
    """A node of a :class:`Graph`: an op type, inputs, attributes and outputs.

    Attributes
    ----------
    name : str
        Unique within the graph (name scopes prefix it: ``"tower_0/MatMul"``).
    type : str
        The op type (``"MatMul"``, ``"PyFunc"``, ...).
    inputs : tuple of Tensor
    control_inputs : tuple of Operation
        Ops that must finish before this one starts.
    outputs : tuple of Tensor
    device : str
        The requested device (``"/device:CPU:1"``), or ``""``.
    """

    def __init__(
        self,
        graph: Graph,
        node_id: int,
        name: str,
        op_type: str,
        inputs: Sequence[Tensor],
        control_inputs: Sequence[Operation],
        device: str,
        attrs: dict[str, Any],
    ) -> None:
        self.graph = graph
        self._id = node_id
        self.name = name
        self.type = op_type
        self.inputs = tuple(inputs)
        self.control_inputs = tuple(control_inputs)
        self.device = device
        self.attrs = attrs
        self.outputs: tuple[Tensor, ...] = ()

    def __repr__(self) -> str:
        return f"<opweave.Operation '{self.name}' type={self.type}>"

    def values(self) -> tuple[Tensor, ...]:
        """The outputs (TensorFlow's ``Operation.values()``)."""
        return self.outputs

    def get_attr(self, name: str) -> Any:
        """The value of attribute ``name``; ValueError when the op has none of that name."""
        if name not in self.attrs:
            raise ValueError(f"Operation {self.name!r} has no attr named {name!r}.")
        return self.attrs[name]

    @property
    def node_def(self) -> dict[str, Any]:
        """The node as a dict with TensorFlow's NodeDef fields (name, op, input, device, attr)."""
        return {
            "name": self.name,
            "op": self.type,
            "input": [t.name if t.value_index else t.op.name for t in self.inputs]
            + [f"^{c.name}" for c in self.control_inputs],
            "device": self.device,
            "attr": dict(self.attrs),
        }

    def run(self, feed_dict: Any = None, session: Any = None) -> None:
        """Run this op: ``session.run(self, feed_dict)`` (default: the current session)."""
        _session_for(session, self.graph).run(self, feed_dict=feed_dict)


def _session_for(session: Any, graph: Graph) -> Any:
    if session is None:
        session = _default_session.innermost()
        if session is None:
            raise ValueError(
                "Cannot evaluate without a session: pass session=, or use `with Session():`"
            )
    if session.graph is not graph:
        raise ValueError("The session's graph is not the graph of this tensor or op")
    return session


def _canonical_device(spec: str | None) -> str:
    """``'/CPU:1'``, ``'cpu:1'`` or ``'/job:localhost/.../device:CPU:1'`` -> ``'/device:CPU:1'``."""
    if not spec:
        return ""
    m = re.search(r"(?:^|/)(?:device:)?([A-Za-z]+):(\d+)$", spec.strip())
    if not m:
        raise ValueError(f"invalid device specification {spec!r}; expected e.g. '/CPU:1'")
    return f"/device:{m.group(1).upper()}:{m.group(2)}"


class Graph:
    """A dataflow graph: ops added while it is the default graph, run by a Session.

    Adding ops is thread-safe. Operations and tensors can be looked up by name.

    Examples
    --------
    >>> import opweave as ow
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     c = ow.constant(1.0, name="c")
    >>> g.get_tensor_by_name("c:0") is c
    True
    """

    def __init__(self) -> None:
        self._core = _core.Graph()
        self._lock = threading.RLock()  # serialises op creation from several Python threads
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._scope = threading.local()
        self._collections: dict[str, list[Any]] = {}
        self._finalized = False
        #: The graph-level random seed (``opweave.set_random_seed``); None when unset.
        self.seed: int | None = None

    # -- collections (TensorFlow's GraphKeys: variables, train ops, ...) ------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        """Append ``value`` to the collection ``name``."""
        with self._lock:
            self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Iterable[str] | str, value: Any) -> None:
        """Append ``value`` to each collection in ``names`` (a name or several)."""
        for n in [names] if isinstance(names, str) else set(names):
            self.add_to_collection(n, value)

    def get_collection_ref(self, name: str) -> list[Any]:
        """The collection ``name`` itself (a list that may be changed in place)."""
        with self._lock:
            return self._collections.setdefault(name, [])

    def get_collection(self, name: str, scope: str | None = None) -> list[Any]:
        """A copy of the collection ``name``, filtered to items whose name starts with
        ``scope`` (a regular expression matched at the start of the name) when given."""
        with self._lock:
            items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(str(i.name))]

    def get_all_collection_keys(self) -> list[str]:
        """The names of the non-empty collections."""
        with self._lock:
            return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        """Empty the collection ``name``."""
        with self._lock:
            self._collections.pop(name, None)

    def finalize(self) -> None:
        """Make the graph read-only: adding an op afterwards is a RuntimeError."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        """True once :meth:`finalize` was called."""
        return self._finalized

    # -- per-thread construction scopes ---------------------------------------------------------
    def _stack(self, key: str) -> list[Any]:
        stack: list[Any] | None = getattr(self._scope, key, None)
        if stack is None:
            stack = []
            setattr(self._scope, key, stack)
        return stack

    @contextlib.contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Make this the default graph (for this thread) inside a ``with`` block."""
        _default_stack().append(self)
        try:
            yield self
        finally:
            _default_stack().pop()

    def unique_name(self, name: str) -> str:
        """``name`` under the current name scope, made unique with ``_1``, ``_2``, ... suffixes."""
        scopes = self._stack("names")
        full = (scopes[-1] if scopes else "") + name
        with self._lock:
            count = self._names_in_use.get(full, 0)
            self._names_in_use[full] = count + 1
            if count:
                while f"{full}_{count}" in self._names_in_use:
                    count += 1
                full = f"{full}_{count}"
                self._names_in_use[full] = 1
        return full

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Prefix the names of ops created inside with ``name/``; yields the scope string.

        A name ending in ``/`` is used as is (re-entering a scope); ``None`` or ``""`` resets to
        the top level.
        """
        if not name:
            scope = ""
        elif name.endswith("/"):
            scope = name
        else:
            scope = self.unique_name(name) + "/"
        scopes = self._stack("names")
        scopes.append(scope)
        try:
            yield scope
        finally:
            scopes.pop()

    @contextlib.contextmanager
    def control_dependencies(
        self, control_inputs: Iterable[Operation | Tensor] | None
    ) -> Iterator[None]:
        """Ops created inside run only after every op in ``control_inputs`` (None clears)."""
        stack = self._stack("control")
        if control_inputs is None:
            saved = list(stack)
            stack.clear()
            try:
                yield
            finally:
                stack.extend(saved)
            return
        ops_: list[Operation] = []
        for c in control_inputs:
            if hasattr(c, "_as_graph_element"):  # a Variable: its VariableV2 op, as TensorFlow
                c = c._as_graph_element()
            op = c.op if isinstance(c, Tensor) else c
            if not isinstance(op, Operation):
                raise TypeError(f"control input must be an Operation or Tensor, got {c!r}")
            if op.graph is not self:
                raise ValueError(f"control input {op.name!r} is from a different graph")
            ops_.append(op)
        stack.append(ops_)
        try:
            yield
        finally:
            stack.pop()

    @contextlib.contextmanager
    def device(self, spec: str | None) -> Iterator[None]:
        """Request a device (``'/CPU:1'``) for ops created inside; the session validates it."""
        stack = self._stack("device")
        stack.append(_canonical_device(spec))
        try:
            yield
        finally:
            stack.pop()

    # -- op creation ----------------------------------------------------------------------------
    def _create_op(
        self,
        op_type: str,
        inputs: Sequence[Tensor],
        attrs: dict[str, Any],
        outputs: Sequence[tuple[DType, Shape]],
        name: str,
        control_inputs: Sequence[Operation] = (),
        unique_name: str | None = None,
        stateful: bool = False,
    ) -> Operation:
        for t in inputs:
            if t.graph is not self:
                raise ValueError(
                    f"{op_type} op '{name}': input {t.name!r} is from a different graph "
                    f"({t.graph!r}) than the op ({self!r})"
                )
        for c in control_inputs:
            if c.graph is not self:
                raise ValueError(
                    f"{op_type} op '{name}': control input {c.name!r} is from a different graph "
                    f"({c.graph!r}) than the op ({self!r})"
                )
        full = unique_name if unique_name is not None else self.unique_name(name)
        if not _VALID_NAME.match(full):
            raise ValueError(f"{full!r} is not a valid op name")
        deps: list[Operation] = [op for group in self._stack("control") for op in group]
        for c in control_inputs:
            if c not in deps:
                deps.append(c)
        devices = self._stack("device")
        device = devices[-1] if devices else ""
        core_attrs = _core_attrs(attrs)
        with self._lock:
            if self._finalized:
                raise RuntimeError("Graph is finalized and cannot be modified.")
            if full in self._by_name:
                raise ValueError(f"duplicate op name {full!r}")
            node_id = self._core.add_node(
                full,
                op_type,
                [(t.op._id, t.value_index) for t in inputs],
                [c._id for c in deps],
                core_attrs,
                device,
                len(outputs),
                # What shape inference found, for the graph optimizer's proofs (x * ones is x
                # only if the ones do not broadcast x to a larger shape).
                [dt._core for dt, _ in outputs],
                [
                    None if shape is None else [-1 if d is None else d for d in shape]
                    for _, shape in outputs
                ],
                stateful,
            )
            op = Operation(self, node_id, full, op_type, inputs, deps, device, attrs)
            op.outputs = tuple(Tensor(op, i, dt, shape) for i, (dt, shape) in enumerate(outputs))
            self._ops.append(op)
            self._by_name[full] = op
            self._names_in_use.setdefault(full, 1)
        return op

    # -- lookup ---------------------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        """Every op, in creation order."""
        with self._lock:
            return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        """The op called ``name``; KeyError when there is none."""
        with self._lock:
            op = self._by_name.get(name)
        if op is None:
            raise KeyError(f"The name {name!r} refers to an Operation not in the graph.")
        return op

    def get_tensor_by_name(self, name: str) -> Tensor:
        """The tensor ``"<op>:<index>"``; KeyError when there is none."""
        op_name, sep, index = name.rpartition(":")
        if not sep or not index.isdigit():
            raise ValueError(
                f"The name {name!r} looks like an (invalid) Operation name, not a Tensor. "
                'Tensor names must be of the form "<op_name>:<output_index>".'
            )
        op = self.get_operation_by_name(op_name)
        i = int(index)
        if i >= len(op.outputs):
            raise KeyError(f"The name {name!r} refers to a Tensor which does not exist.")
        return op.outputs[i]

    # -- GraphDef (TensorFlow's serialized form; opweave.graphdef) -------------------------------
    @property
    def version(self) -> int:
        """How many ops the graph has; :meth:`as_graph_def` takes it as ``from_version``."""
        with self._lock:
            return len(self._ops)

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """The graph as a TensorFlow ``GraphDef`` protobuf message.

        Parameters
        ----------
        from_version : int, optional
            Only the ops added since :attr:`version` had this value.
        add_shapes : bool
            Add each node's static output shapes as its ``_output_shapes`` attribute.

        Raises
        ------
        ValueError
            When an op cannot be written (a ``py_function``: a GraphDef holds no Python code).
        ImportError
            When the ``protobuf`` package is not installed (extra ``opweave[graphdef]``).

        Examples
        --------
        >>> import opweave as ow
        >>> g = ow.Graph()
        >>> with g.as_default():
        ...     _ = ow.constant(1.0, name="one") + 1.0
        >>> [(n.name, n.op) for n in g.as_graph_def().node]
        [('one', 'Const'), ('Const', 'Const'), ('add', 'Add')]
        """
        from .graphdef._export import graph_to_graph_def

        return graph_to_graph_def(self, from_version, add_shapes)

    def __reduce__(self) -> tuple[Any, ...]:
        # Graphs pickle as their GraphDef bytes (plus the seed and the collections, as a
        # MetaGraphDef's), rebuilt by a function that only parses them: unpickling a graph runs
        # no code from the pickle. Collections of other Python objects do not travel.
        from .graphdef._io import graph_from_bytes
        from .graphdef._meta_graph import collections_bytes

        data = self.as_graph_def().SerializeToString()
        collections = collections_bytes(self)
        if self.seed is None and not collections:
            return (graph_from_bytes, (data,))
        return (graph_from_bytes, (data, self.seed, collections))

    def as_graph_element(self, obj: str | Tensor | Operation) -> Tensor | Operation:
        """A tensor or op of this graph from itself, its name (``"x:0"`` or ``"x"``) or an object
        standing for one (a Variable stands for its VariableV2's output, as in TensorFlow)."""
        if hasattr(obj, "_as_graph_element"):
            obj = obj._as_graph_element()
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph.")
            return obj
        if isinstance(obj, str):
            if ":" in obj:
                return self.get_tensor_by_name(obj)
            return self.get_operation_by_name(obj)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a Tensor or Operation.")


def _core_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes the C++ kernels read: dtypes as core enums, shapes of known rank as lists
    (-1 for an unknown dim); Python-only values (None, unknown-rank shapes, names starting with
    ``_``) stay on the Python Operation."""
    out: dict[str, Any] = {}
    for k, v in attrs.items():
        if k.startswith("_") or v is None:
            continue
        if isinstance(v, TensorShape):
            # A shape the kernels may read (VariableV2's): its dims, -1 where unknown.
            raw = v.as_raw()
            if raw is not None:
                out[k] = [-1 if d is None else d for d in raw]
            continue
        if isinstance(v, DType):
            out[k] = v._core
        elif isinstance(v, (list, tuple)) and v and isinstance(v[0], DType):
            out[k] = [d._core for d in v]
        else:
            out[k] = v
    return out


_thread_defaults = threading.local()
_global_default: list[Graph] = [Graph()]


def _default_stack() -> list[Graph]:
    stack: list[Graph] | None = getattr(_thread_defaults, "stack", None)
    if stack is None:
        stack = []
        _thread_defaults.stack = stack
    return stack


def get_default_graph() -> Graph:
    """The innermost graph made default by ``as_default()`` in this thread, else the global one.

    >>> isinstance(get_default_graph(), Graph)
    True
    """
    stack = _default_stack()
    return stack[-1] if stack else _global_default[0]


def reset_default_graph() -> None:
    """Replace the global default graph with a new, empty one."""
    if _default_stack():
        raise AssertionError("Do not use reset_default_graph() inside a Graph.as_default() block")
    _global_default[0] = Graph()


def name_scope(name: str | None) -> contextlib.AbstractContextManager[str]:
    """``get_default_graph().name_scope(name)``: prefix op names with ``name/``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.name_scope("tower") as scope:
    ...     print(scope, ow.constant(1.0).op.name)
    tower/ tower/Const
    """
    return get_default_graph().name_scope(name)


def control_dependencies(
    control_inputs: Iterable[Operation | Tensor] | None,
) -> contextlib.AbstractContextManager[None]:
    """``get_default_graph().control_dependencies(...)``: run-after constraints."""
    return get_default_graph().control_dependencies(control_inputs)


def device(spec: str | None) -> contextlib.AbstractContextManager[None]:
    """``get_default_graph().device(spec)``: place ops created inside on ``spec`` (``'/CPU:1'``)."""
    return get_default_graph().device(spec)


class GraphKeys:
    """TensorFlow 1's standard collection names (``opweave.GraphKeys.GLOBAL_VARIABLES``, ...).

    >>> GraphKeys.GLOBAL_VARIABLES, GraphKeys.TRAINABLE_VARIABLES
    ('variables', 'trainable_variables')
    """

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES  # the deprecated name
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    SUMMARIES = "summaries"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SAVERS = "savers"
    SAVEABLE_OBJECTS = "saveable_objects"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    CONCATENATED_VARIABLES = "concatenated_variables"
    EVAL_STEP = "eval_step"
    ASSET_FILEPATHS = "asset_filepaths"
    SUMMARY_OP = "summary_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    #: The collections a variable may be in (used to tell variables from other items).
    _VARIABLE_COLLECTIONS = (
        GLOBAL_VARIABLES,
        LOCAL_VARIABLES,
        METRIC_VARIABLES,
        MODEL_VARIABLES,
        TRAINABLE_VARIABLES,
        MOVING_AVERAGE_VARIABLES,
        CONCATENATED_VARIABLES,
        TRAINABLE_RESOURCE_VARIABLES,
    )


def add_to_collection(name: str, value: Any) -> None:
    """``get_default_graph().add_to_collection(name, value)``."""
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names: Iterable[str] | str, value: Any) -> None:
    """``get_default_graph().add_to_collections(names, value)``."""
    get_default_graph().add_to_collections(names, value)


def get_collection(key: str, scope: str | None = None) -> list[Any]:
    """A copy of the default graph's collection ``key`` (items whose name matches ``scope``).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.add_to_collection("things", 1)
    ...     ow.get_collection("things")
    [1]
    """
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key: str) -> list[Any]:
    """The default graph's collection ``key`` itself (a list that may be changed in place)."""
    return get_default_graph().get_collection_ref(key)
