"""``Variable``: state that lives in the session, TensorFlow 1 style, and the collections and
initializers that go with it.

The graph holds a variable's definition -- a ``VariableV2`` node named like the variable, its
initial value, an ``Assign`` that stores it (``v.initializer``) and an ``Identity`` that reads it
(``v/read``, what ``v`` means where an op takes a value). Each :class:`opweave.Session` holds its
own value, created by running the initializer; reading a variable that was never initialized in
that session is a ``FailedPreconditionError`` naming it.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     w = ow.Variable([[1.0, 2.0]], name="w")
...     y = ow.matmul(w, [[3.0], [4.0]])
...     with ow.Session() as s:
...         s.run(ow.global_variables_initializer())
...         print(w.name, s.run(y).tolist())
w:0 [[11.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import _default_session
from ..dtypes import DType, as_dtype, string
from ..framework import Graph, GraphKeys, Operation, Tensor, get_default_graph
from ..tensor_shape import TensorShape, as_shape
from . import state_ops
from ._op_def import convert_to_tensor, read_ref
from .control_flow_ops import group, no_op

__all__ = [
    "Variable",
    "VariableV1",
    "all_variables",
    "global_variables",
    "global_variables_initializer",
    "initialize_all_variables",
    "initialize_local_variables",
    "initialize_variables",
    "local_variables",
    "local_variables_initializer",
    "model_variables",
    "moving_average_variables",
    "report_uninitialized_variables",
    "trainable_variables",
    "variables_initializer",
]


class Variable:
    """A variable: a value kept in each session between runs, updated by ops.

    Parameters
    ----------
    initial_value : tensor-like or callable
        The value the initializer stores: a tensor, a Python value or array, or a function of no
        arguments returning one (called once, here). Required.
    trainable : bool, default True
        Also add the variable to ``GraphKeys.TRAINABLE_VARIABLES``, which optimizers train.
    collections : list of str, optional
        Default ``[GraphKeys.GLOBAL_VARIABLES]``.
    validate_shape : bool, default True
        False allows an initial value of unknown shape, and assignments that change the shape.
    name : str, optional
        Default ``"Variable"`` (made unique: ``"Variable_1"``, ...).
    dtype : DType, optional
        Converts the initial value to it (without loss) when given.
    constraint : callable, optional
        Kept as ``constraint`` for optimizers that project after updating.

    Notes
    -----
    A Variable is usable wherever a tensor is: as an op input and with Python's operators (it
    reads ``value()``), in ``Session.run`` fetches (its value after the run's updates) and as a
    ``feed_dict`` key (the fed value replaces the variable's for that run's reads).

    Concurrent runs (several Python threads running steps on one session, Hogwild style) are
    defined: a read sees each element before or after any concurrent update; ``use_locking=True``
    updates of a variable are atomic with respect to each other (N concurrent locking
    ``assign_add(1)`` add exactly N); unlocked updates may interleave block by block (8192
    elements) but never corrupt memory or lose an element's update -- except that an ``assign``
    replaces the value, so an unlocked update finishing after it may be lost.

    ``dtype`` is the value's dtype (``float32``; TensorFlow 1 says ``float32_ref``).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable(1.0, name="v")
    ...     double = v.assign(v * 2.0)
    ...     with ow.Session() as s:
    ...         _ = s.run(v.initializer)
    ...         print(s.run(double), s.run(double), v.eval(s))
    2.0 4.0 4.0
    """

    # Variables compare by identity, as Tensors do (usable as dict and feed_dict keys).
    __hash__ = object.__hash__

    def __init__(
        self,
        initial_value: Any = None,
        trainable: bool | None = None,
        collections: Iterable[str] | None = None,
        validate_shape: bool = True,
        caching_device: Any = None,
        name: str | None = None,
        variable_def: Any = None,
        dtype: Any = None,
        expected_shape: Any = None,
        import_scope: str | None = None,
        constraint: Callable[[Tensor], Tensor] | None = None,
        use_resource: bool | None = None,
        synchronization: Any = None,
        aggregation: Any = None,
        shape: Any = None,
    ) -> None:
        if variable_def is not None:
            if initial_value is not None:
                raise ValueError("variable_def and initial_value are mutually exclusive.")
            self._init_from_proto(variable_def, import_scope)
            return
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        if constraint is not None and not callable(constraint):
            raise ValueError("The `constraint` argument must be a callable.")
        if trainable is None:
            trainable = True
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if not isinstance(collections, (list, tuple, set)):
            raise ValueError(
                "collections argument to Variable constructor must be a list, tuple, or set. "
                f"Got {collections} of type {type(collections)}"
            )
        collections = list(collections)
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections.append(GraphKeys.TRAINABLE_VARIABLES)
        self._trainable = bool(trainable)
        self._constraint = constraint
        dt: DType | None = None if dtype is None else as_dtype(dtype).base_dtype
        g = get_default_graph()
        self._graph = g
        from_fn = callable(initial_value)
        # As TensorFlow's init_scope: the definition ignores the control dependencies around it
        # (the initializer must not wait for, or re-run, ops of a training step).
        with g.control_dependencies(None), g.name_scope(name or "Variable") as scope:
            if from_fn:
                with g.name_scope("Initializer"):
                    init = convert_to_tensor(initial_value(), dtype=dt, name="initial_value")
            else:
                init = convert_to_tensor(initial_value, dtype=dt, name="initial_value")
            if not isinstance(init, Tensor):
                raise TypeError(f"initial_value must be a tensor, got {init!r}")
            if init.graph is not g:
                raise ValueError(
                    f"initial_value {init.name!r} is from a different graph than the variable"
                )
            var_shape = init.shape if shape is None else as_shape(shape)
            if shape is not None and validate_shape:
                var_shape = var_shape.merge_with(init.shape)
            if validate_shape and not var_shape.is_fully_defined():
                raise ValueError(f"initial_value must have a shape specified: {init!r}")
            if not validate_shape and shape is None:
                var_shape = TensorShape(None)
            self._initial_value: Tensor | None = init
            self._variable = state_ops.variable_op_v2(var_shape, init.dtype.base_dtype, name=scope)
            self._initializer_op: Operation = state_ops.assign(
                self._variable, init, validate_shape=validate_shape
            ).op
            self._snapshot = read_ref(self._variable, name="read")
        g.add_to_collections(collections, self)

    def _init_from_proto(self, variable_def: Any, import_scope: str | None) -> None:
        """A Variable for the graph elements a ``VariableDef`` names in the default graph (under
        ``import_scope``): what TensorFlow's ``Variable(variable_def=...)`` does."""
        from ..graphdef._meta_graph import prepend_name_scope

        for field in ("variable_name", "initializer_name", "snapshot_name"):
            if not isinstance(getattr(variable_def, field, None), str):
                raise TypeError(f"variable_def must be a VariableDef message, got {variable_def!r}")
        g = get_default_graph()

        def element(name: str) -> Any:
            return g.as_graph_element(prepend_name_scope(name, import_scope))

        ref = element(variable_def.variable_name)
        initializer = element(variable_def.initializer_name)
        snapshot = element(variable_def.snapshot_name)
        initial = (
            element(variable_def.initial_value_name) if variable_def.initial_value_name else None
        )
        self._adopt(ref, initializer, snapshot, initial, bool(variable_def.trainable))

    def _adopt(
        self,
        ref: Any,
        initializer: Any,
        snapshot: Any,
        initial_value: Tensor | None,
        trainable: bool,
    ) -> None:
        """Become the variable made of these existing graph elements (a graph imported from a
        meta graph): its ``VariableV2`` output, initializing op, read and initial value."""
        if not (isinstance(ref, Tensor) and ref.op.type == "VariableV2" and ref.value_index == 0):
            raise ValueError(f"the variable must be the output of a VariableV2 op, got {ref!r}")
        if not isinstance(initializer, Operation):
            raise ValueError(f"the variable's initializer must be an op, got {initializer!r}")
        if not isinstance(snapshot, Tensor):
            raise ValueError(f"the variable's snapshot must be a tensor, got {snapshot!r}")
        if initial_value is not None and not isinstance(initial_value, Tensor):
            raise ValueError(
                f"the variable's initial value must be a tensor, got {initial_value!r}"
            )
        self._graph = ref.graph
        self._trainable = trainable
        self._constraint = None
        self._variable = ref
        self._initializer_op = initializer
        self._snapshot = snapshot
        # None when the VariableDef does not name it (meta graphs of old TensorFlow versions).
        self._initial_value = initial_value

    @staticmethod
    def from_proto(variable_def: Any, import_scope: str | None = None) -> Variable:
        """The Variable a ``VariableDef`` (``to_proto``'s result) names in the default graph.

        >>> import opweave as ow
        >>> with ow.Graph().as_default():
        ...     v = ow.Variable([1.0], name="v")
        ...     same = ow.Variable.from_proto(v.to_proto())
        ...     same.name, same.initializer.name, same.trainable
        ('v:0', 'v/Assign', True)
        """
        return Variable(variable_def=variable_def, import_scope=import_scope)

    def to_proto(self, export_scope: str | None = None) -> Any:
        """The variable as TensorFlow's ``VariableDef`` message (what a meta graph's variable
        collections hold): the names of its graph elements, with ``export_scope`` removed; None
        when the variable is not under ``export_scope``. Needs the ``protobuf`` package."""
        from ..graphdef._meta_graph import strip_name_scope
        from ..graphdef._protos import messages

        if export_scope is not None and not self._variable.name.startswith(export_scope):
            return None
        proto = messages().VariableDef(
            variable_name=strip_name_scope(self._variable.name, export_scope),
            initializer_name=strip_name_scope(self._initializer_op.name, export_scope),
            snapshot_name=strip_name_scope(self._snapshot.name, export_scope),
            trainable=self._trainable,
        )
        if self._initial_value is not None:
            proto.initial_value_name = strip_name_scope(self._initial_value.name, export_scope)
        return proto

    # -- what the variable is --------------------------------------------------------------------
    @property
    def name(self) -> str:
        """``"<op name>:0"`` (``"v:0"``)."""
        return self._variable.name

    @property
    def op(self) -> Operation:
        """The ``VariableV2`` op."""
        return self._variable.op

    @property
    def dtype(self) -> DType:
        """The value's dtype."""
        return self._variable.dtype

    @property
    def shape(self) -> TensorShape:
        """The static shape."""
        return self._variable.shape

    def get_shape(self) -> TensorShape:
        """The static shape (same as :attr:`shape`)."""
        return self.shape

    def set_shape(self, shape: Any) -> None:
        """Make the static shape more specific (ValueError when incompatible)."""
        self._variable.set_shape(shape)
        self._snapshot.set_shape(shape)

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def device(self) -> str:
        return self._variable.device

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def constraint(self) -> Callable[[Tensor], Tensor] | None:
        return self._constraint

    @property
    def initializer(self) -> Operation:
        """The ``Assign`` op that stores the initial value (run it once per session)."""
        return self._initializer_op

    @property
    def initial_value(self) -> Tensor | None:
        """The tensor the initializer stores (None for a variable imported from a meta graph
        that does not name it)."""
        return self._initial_value

    def __repr__(self) -> str:
        return (
            f"<opweave.Variable '{self.name}' shape={tuple(self.shape.as_list() or ())} "
            f"dtype={self.dtype.name}>"
            if self.shape.ndims is not None
            else f"<opweave.Variable '{self.name}' shape=<unknown> dtype={self.dtype.name}>"
        )

    # -- reading --------------------------------------------------------------------------------
    def value(self) -> Tensor:
        """The variable's value as a tensor: its ``v/read`` Identity, made with the variable.

        It is a snapshot taken when the read runs -- in a run that also updates the variable,
        possibly before the update, and an update never changes a value already read (TensorFlow
        1's ref reads may alias the buffer and see it change). For a read after an update, use
        :meth:`read_value` inside ``control_dependencies([update])``."""
        return self._snapshot

    def read_value(self) -> Tensor:
        """A new read of the variable, made in the current context: inside
        ``control_dependencies([update])`` it reads after ``update``."""
        return read_ref(self._variable, name=self.op.name + "/read")

    def eval(self, session: Any = None) -> Any:
        """The variable's value in ``session`` (default: the current default session)."""
        return self._variable.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        """Store ``value`` in the variable, in ``session`` (default: the current one), by running
        the initializer with its initial value fed."""
        if session is None:
            session = _default_session.innermost()
            if session is None:
                raise ValueError(
                    "Either session argument should be provided or default session should be "
                    "established"
                )
        session.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    def _ref(self) -> Tensor:
        """The ``VariableV2``'s output: the variable itself (TensorFlow's ``float32_ref``)."""
        return self._variable

    def _as_graph_element(self) -> Tensor:
        return self._variable

    def _as_tensor(self) -> Tensor:
        return self._snapshot

    # -- updating -------------------------------------------------------------------------------
    def assign(
        self,
        value: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        """An op storing ``value``; returns the ref (which reads the new value) or, with
        ``read_value=False``, the op."""
        out = state_ops.assign(self._variable, value, use_locking=use_locking, name=name)
        return out if read_value else out.op

    def assign_add(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        """An op adding ``delta``; returns the ref or, with ``read_value=False``, the op."""
        out = state_ops.assign_add(self._variable, delta, use_locking=use_locking, name=name)
        return out if read_value else out.op

    def assign_sub(
        self,
        delta: Any,
        use_locking: bool = False,
        name: str | None = None,
        read_value: bool = True,
    ) -> Any:
        """An op subtracting ``delta``; returns the ref or, with ``read_value=False``, the op."""
        out = state_ops.assign_sub(self._variable, delta, use_locking=use_locking, name=name)
        return out if read_value else out.op

    # Python's operators and indexing read the value, as TensorFlow's Variable does.
    def __getitem__(self, key: Any) -> Tensor:
        return self.value()[key]

    def __iter__(self) -> Any:
        return iter(self.value())

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise TypeError(
            f"Cannot convert the Variable {self.name!r} to a numpy array: its value exists only "
            "in a Session (use sess.run(v) or v.eval())"
        )

    def __bool__(self) -> bool:
        raise TypeError(
            "Using an opweave.Variable as a Python bool is not allowed: its value exists only "
            "in a Session"
        )


def _forward_operator(op_name: str) -> Callable[..., Tensor]:
    def method(self: Variable, *args: Any) -> Tensor:
        return getattr(self.value(), op_name)(*args)  # type: ignore[no-any-return]

    method.__name__ = op_name
    return method


# Python's operators read the value and build the op a Tensor's operator builds.
for _name in (
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__rtruediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__pow__",
    "__rpow__",
    "__matmul__",
    "__rmatmul__",
    "__neg__",
    "__abs__",
    "__invert__",
    "__and__",
    "__rand__",
    "__or__",
    "__ror__",
    "__xor__",
    "__rxor__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
):
    setattr(Variable, _name, _forward_operator(_name))
del _name

#: TensorFlow 1's name for the same class.
VariableV1 = Variable


# -- collections -----------------------------------------------------------------------------------


def global_variables(scope: str | None = None) -> list[Variable]:
    """The variables in ``GraphKeys.GLOBAL_VARIABLES`` (every variable not made local), those
    whose name starts with ``scope`` (a regular expression) when given.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     a = ow.Variable(1.0, name="a")
    ...     b = ow.Variable(2.0, name="b", trainable=False)
    ...     [v.name for v in ow.global_variables()], [v.name for v in ow.trainable_variables()]
    (['a:0', 'b:0'], ['a:0'])
    """
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def all_variables() -> list[Variable]:
    """Deprecated name of :func:`global_variables`."""
    return global_variables()


def trainable_variables(scope: str | None = None) -> list[Variable]:
    """The variables in ``GraphKeys.TRAINABLE_VARIABLES`` (what optimizers train by default)."""
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list[Variable]:
    """The variables in ``GraphKeys.LOCAL_VARIABLES`` (per-process state such as epoch
    counters, not saved in checkpoints)."""
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope: str | None = None) -> list[Variable]:
    """The variables in ``GraphKeys.MODEL_VARIABLES``."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope: str | None = None) -> list[Variable]:
    """The variables in ``GraphKeys.MOVING_AVERAGE_VARIABLES``."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


# -- initializers --------------------------------------------------------------------------------


def variables_initializer(var_list: Sequence[Variable], name: str = "init") -> Operation:
    """One op running the initializers of ``var_list`` (a no-op for an empty list).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     a, b = ow.Variable(1.0), ow.Variable(2.0)
    ...     with ow.Session() as s:
    ...         s.run(ow.variables_initializer([a]))
    ...         print(s.run(ow.report_uninitialized_variables()))
    [b'Variable_1']
    """
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer() -> Operation:
    """The op initializing every global variable (``init``); run it once per session.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable([1, 2])
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         print(s.run(v))
    [1 2]
    """
    return variables_initializer(global_variables())


def local_variables_initializer() -> Operation:
    """The op initializing every local variable."""
    return variables_initializer(local_variables())


def initialize_all_variables() -> Operation:
    """Deprecated name of :func:`global_variables_initializer`."""
    return global_variables_initializer()


def initialize_local_variables() -> Operation:
    """Deprecated name of :func:`local_variables_initializer`."""
    return local_variables_initializer()


def initialize_variables(var_list: Sequence[Variable], name: str = "init") -> Operation:
    """Deprecated name of :func:`variables_initializer`."""
    return variables_initializer(var_list, name)


def report_uninitialized_variables(
    var_list: Sequence[Variable] | None = None, name: str = "report_uninitialized_variables"
) -> Tensor:
    """A string vector: the op names of the variables of ``var_list`` (default: every global and
    local variable) not initialized in the session running it.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     a, b = ow.Variable(1.0, name="a"), ow.Variable(2.0, name="b")
    ...     report = ow.report_uninitialized_variables()
    ...     with ow.Session() as s:
    ...         _ = s.run(a.initializer)
    ...         print(s.run(report))
    [b'b']
    """
    from .array_ops import constant, gather, reshape, stack
    from .logic_ops import where
    from .math_unary import logical_not

    if var_list is None:
        var_list = global_variables() + local_variables()
    g = get_default_graph()
    with g.control_dependencies(None), g.name_scope(name) as scope:
        if not var_list:
            return constant([], dtype=string, name=scope[:-1])
        # TensorFlow's graph: the names where the initialized mask is false (its boolean_mask).
        names = constant([v.op.name for v in var_list], dtype=string)
        uninitialized = logical_not(stack([state_ops.is_variable_initialized(v) for v in var_list]))
        return gather(names, reshape(where(uninitialized), [-1]), name=scope[:-1])
