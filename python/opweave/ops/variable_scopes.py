"""``get_variable`` and ``variable_scope``: variables shared by name, TensorFlow 1 style.

``get_variable(name, shape, ...)`` creates the variable ``<scope>/<name>`` or, when the current
variable scope reuses variables, returns the existing one. ``variable_scope`` opens a variable
scope (and a name scope for the ops created inside), sets ``reuse``, default initializers and
dtypes for the variables made inside, and is inherited by nested scopes.

>>> import opweave as ow
>>> def layer(x):
...     w = ow.get_variable("w", [2, 2], initializer=lambda shape, dtype=None, partition_info=None:
...                         ow.ones(shape, dtype))
...     return ow.matmul(x, w)
>>> with ow.Graph().as_default():
...     x = ow.ones([1, 2])
...     with ow.variable_scope("layer"):
...         y1 = layer(x)
...     with ow.variable_scope("layer", reuse=True):
...         y2 = layer(x)
...     [v.name for v in ow.global_variables()]
['layer/w:0']
"""

from __future__ import annotations

import enum
import functools
import inspect
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

from ..dtypes import DType, as_dtype, float32
from ..framework import Graph, GraphKeys, get_default_graph
from ..tensor_shape import as_shape
from .variables import Variable

__all__ = [
    "AUTO_REUSE",
    "VariableScope",
    "get_local_variable",
    "get_variable",
    "get_variable_scope",
    "variable_scope",
]


class _ReuseMode(enum.Enum):
    """The ``reuse`` value that creates a variable when missing and reuses it otherwise."""

    AUTO_REUSE = 1


#: ``reuse=AUTO_REUSE``: get_variable creates the variable if it does not exist, else reuses it.
AUTO_REUSE = _ReuseMode.AUTO_REUSE


class VariableScope:
    """What a variable scope sets for the variables made in it: the name prefix, ``reuse``, and
    defaults for ``initializer``, ``regularizer``, ``dtype`` and ``constraint``.

    Returned by ``with variable_scope(...) as scope`` and :func:`get_variable_scope`; passing it
    to :func:`variable_scope` re-enters it.
    """

    def __init__(
        self,
        reuse: bool | _ReuseMode | None,
        name: str = "",
        initializer: Any = None,
        regularizer: Callable[[Any], Any] | None = None,
        caching_device: Any = None,
        partitioner: Any = None,
        custom_getter: Callable[..., Any] | None = None,
        name_scope: str = "",
        dtype: Any = float32,
        use_resource: bool | None = None,
        constraint: Callable[[Any], Any] | None = None,
    ) -> None:
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = as_dtype(dtype)
        self._use_resource = use_resource
        self._constraint = constraint

    @property
    def name(self) -> str:
        return self._name

    @property
    def original_name_scope(self) -> str:
        """The name scope opened when the scope was first entered (``"layer/"``)."""
        return self._name_scope

    @property
    def reuse(self) -> bool | _ReuseMode | None:
        return self._reuse

    @property
    def initializer(self) -> Any:
        return self._initializer

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def regularizer(self) -> Callable[[Any], Any] | None:
        return self._regularizer

    @property
    def constraint(self) -> Callable[[Any], Any] | None:
        return self._constraint

    @property
    def caching_device(self) -> Any:
        return self._caching_device

    @property
    def partitioner(self) -> Any:
        return self._partitioner

    @property
    def custom_getter(self) -> Callable[..., Any] | None:
        return self._custom_getter

    @property
    def use_resource(self) -> bool | None:
        return self._use_resource

    def reuse_variables(self) -> None:
        """Reuse variables in this scope from now on."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = as_dtype(dtype)

    def set_regularizer(self, regularizer: Callable[[Any], Any] | None) -> None:
        self._regularizer = regularizer

    def set_constraint(self, constraint: Callable[[Any], Any] | None) -> None:
        self._constraint = constraint

    def set_caching_device(self, caching_device: Any) -> None:
        self._caching_device = caching_device

    def set_partitioner(self, partitioner: Any) -> None:
        self._partitioner = partitioner

    def set_custom_getter(self, custom_getter: Callable[..., Any] | None) -> None:
        self._custom_getter = custom_getter

    def set_use_resource(self, use_resource: bool | None) -> None:
        self._use_resource = use_resource

    def get_variable(
        self,
        var_store: _VariableStore,
        name: str,
        shape: Any = None,
        dtype: Any = None,
        initializer: Any = None,
        regularizer: Any = None,
        reuse: Any = None,
        trainable: bool | None = None,
        collections: Any = None,
        validate_shape: bool = True,
        constraint: Any = None,
        custom_getter: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> Variable:
        """The variable ``<scope name>/<name>`` from ``var_store``, with this scope's defaults
        (``custom_getter`` replaces the scope's)."""
        full_name = f"{self.name}/{name}" if self.name else name
        if reuse is None:
            reuse = self._reuse
        if dtype is None:
            dtype = self._dtype
        if initializer is None:
            initializer = self._initializer
        if regularizer is None:
            regularizer = self._regularizer
        if constraint is None:
            constraint = self._constraint
        g = get_default_graph()
        # Variables are named by variable scopes alone: no name scope around their ops.
        custom = custom_getter if custom_getter is not None else self._custom_getter
        with g.name_scope(None):
            if custom is not None:
                return custom(  # type: ignore[no-any-return]
                    var_store.get_variable,
                    full_name,
                    shape=shape,
                    dtype=dtype,
                    initializer=initializer,
                    regularizer=regularizer,
                    reuse=reuse,
                    trainable=trainable,
                    collections=collections,
                    validate_shape=validate_shape,
                    constraint=constraint,
                    **kwargs,
                )
            return var_store.get_variable(
                full_name,
                shape=shape,
                dtype=dtype,
                initializer=initializer,
                regularizer=regularizer,
                reuse=reuse,
                trainable=trainable,
                collections=collections,
                validate_shape=validate_shape,
                constraint=constraint,
            )


def _default_initializer(name: str, dtype: DType) -> tuple[Any, bool]:
    """TensorFlow's default: glorot_uniform for floats, zeros for integers, bools and strings."""
    from .init_ops import glorot_uniform_initializer, zeros_initializer

    if dtype.is_floating:
        return glorot_uniform_initializer(), False
    if dtype.is_integer or dtype.name in ("bool", "string"):
        return zeros_initializer(), False
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


def _takes_no_arguments(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not inspect.Parameter.empty
        or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in params
    )


class _VariableStore:
    """The variables get_variable made in one graph, by full name."""

    def __init__(self) -> None:
        self._vars: dict[str, Variable] = {}
        self._where: dict[str, list[traceback.FrameSummary]] = {}
        self._lock = threading.Lock()

    def get_variable(
        self,
        name: str,
        shape: Any = None,
        dtype: Any = float32,
        initializer: Any = None,
        regularizer: Any = None,
        reuse: Any = None,
        trainable: bool | None = None,
        collections: Any = None,
        validate_shape: bool = True,
        constraint: Any = None,
        **kwargs: Any,
    ) -> Variable:
        from_value = initializer is not None and not callable(initializer)
        if shape is not None and from_value:
            raise ValueError("If initializer is a constant, do not specify shape.")
        dt = as_dtype(dtype).base_dtype
        static = as_shape(shape)
        with self._lock:  # two threads asking for one name get one variable
            found = self._vars.get(name)
            if found is not None:
                if reuse is not True and reuse is not AUTO_REUSE:
                    where = "".join(traceback.format_list(self._where[name][-5:]))
                    raise ValueError(
                        f"Variable {name} already exists, disallowed. Did you mean to set "
                        "reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally defined "
                        f"at:\n\n{where}"
                    )
                if not static.is_compatible_with(found.get_shape()):
                    raise ValueError(
                        f"Trying to share variable {name}, but specified shape {static} and "
                        f"found shape {found.get_shape()}."
                    )
                if dtype is not None and dt is not found.dtype:
                    raise ValueError(
                        f"Trying to share variable {name}, but specified dtype {dt.name} and "
                        f"found dtype {found.dtype.name}."
                    )
                return found
            if reuse is True:
                raise ValueError(
                    f"Variable {name} does not exist, or was not created with tf.get_variable(). "
                    "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
                )
            if initializer is None:
                initializer, from_value = _default_initializer(name, dt)
            variable_dtype: DType | None = dt
            init_val: Any
            if from_value:
                init_val, variable_dtype = initializer, None
            else:
                if inspect.isclass(initializer):
                    initializer = initializer()
                if static.is_fully_defined():
                    dims = static.as_list()
                    if "partition_info" in _parameters(initializer):
                        init_val = functools.partial(
                            initializer, dims, dtype=dt, partition_info=None
                        )
                    else:
                        init_val = functools.partial(initializer, dims, dtype=dt)
                elif _takes_no_arguments(initializer):
                    init_val, variable_dtype = initializer, None
                else:
                    raise ValueError(
                        f"Shape of a new variable ({name}) must be fully defined, but instead "
                        f"was {static}."
                    )
            v = Variable(
                initial_value=init_val,
                name=name,
                trainable=trainable,
                collections=collections,
                dtype=variable_dtype,
                validate_shape=validate_shape,
                constraint=constraint,
            )
            self._vars[name] = v
            self._where[name] = traceback.extract_stack()[:-3]
        if regularizer is not None:
            g = get_default_graph()
            with g.name_scope(name + "/Regularizer/"):
                loss = regularizer(v)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v


def _parameters(fn: Any) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


class _ScopeStore(threading.local):
    """A graph's current variable scope (per thread, as name scopes are)."""

    def __init__(self) -> None:
        self.current = VariableScope(False)


class _GraphScopes:
    """Per graph: the variable store, the current scope of each thread, and how often each
    scope name was opened (to make default names unique)."""

    def __init__(self) -> None:
        self.store = _VariableStore()
        self.scopes = _ScopeStore()
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()


_SCOPES_KEY = "__variable_scopes"
_scopes_lock = threading.Lock()


def _graph_scopes(g: Graph) -> _GraphScopes:
    with _scopes_lock:
        found = g.get_collection(_SCOPES_KEY)
        if found:
            return found[0]  # type: ignore[no-any-return]
        made = _GraphScopes()
        g.add_to_collection(_SCOPES_KEY, made)
        return made


def get_variable_scope() -> VariableScope:
    """The current variable scope (of this thread, in the default graph).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     with ow.variable_scope("a"), ow.variable_scope("b"):
    ...         ow.get_variable_scope().name
    'a/b'
    """
    return _graph_scopes(get_default_graph()).scopes.current


def get_variable(
    name: str,
    shape: Any = None,
    dtype: Any = None,
    initializer: Any = None,
    regularizer: Callable[[Any], Any] | None = None,
    trainable: bool | None = None,
    collections: Any = None,
    caching_device: Any = None,
    partitioner: Any = None,
    validate_shape: bool = True,
    use_resource: bool | None = None,
    custom_getter: Callable[..., Any] | None = None,
    constraint: Callable[[Any], Any] | None = None,
    synchronization: Any = None,
    aggregation: Any = None,
) -> Variable:
    """The variable ``<current variable scope>/<name>``: created, or reused when the scope says
    ``reuse=True`` / ``AUTO_REUSE``.

    Parameters
    ----------
    name : str
    shape : sequence of int, optional
        Required (fully defined) unless ``initializer`` is a tensor or value.
    dtype : DType, default the scope's (float32)
    initializer : callable, tensor or value, optional
        ``initializer(shape, dtype=..., partition_info=None)`` (the ``opweave`` initializers),
        or a tensor / value to start from (then no ``shape``). Default: the scope's, else
        ``glorot_uniform`` for floats and zeros for integers.
    regularizer : callable, optional
        Its result for the new variable goes to ``GraphKeys.REGULARIZATION_LOSSES``.
    trainable, collections, validate_shape, constraint
        As for :class:`opweave.Variable`.

    Raises
    ------
    ValueError
        The variable exists and the scope does not reuse ("Variable v already exists,
        disallowed. Did you mean to set reuse=True ..."); it does not exist and the scope reuses
        ("... does not exist, or was not created with tf.get_variable()"); or a reused variable
        has another shape or dtype.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     with ow.variable_scope("s"):
    ...         v = ow.get_variable("v", initializer=[1.0, 2.0])
    ...     with ow.variable_scope("s", reuse=True):
    ...         v2 = ow.get_variable("v")
    ...     v is v2, v.name
    (True, 's/v:0')
    """
    scopes = _graph_scopes(get_default_graph())
    scope = scopes.scopes.current
    custom: Callable[..., Any] | None
    if custom_getter is not None and scope.custom_getter is not None:
        inner = scope.custom_getter

        def chained(getter: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return custom_getter(functools.partial(inner, getter), *args, **kwargs)

        custom = chained
    else:
        custom = custom_getter or scope.custom_getter
    return scope.get_variable(
        scopes.store,
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        validate_shape=validate_shape,
        constraint=constraint,
        custom_getter=custom,
    )


def get_local_variable(name: str, shape: Any = None, dtype: Any = None, **kwargs: Any) -> Variable:
    """:func:`get_variable` for a local variable (``GraphKeys.LOCAL_VARIABLES``, not
    trainable)."""
    collections = [*(kwargs.pop("collections", None) or []), GraphKeys.LOCAL_VARIABLES]
    kwargs.pop("trainable", None)
    return get_variable(name, shape, dtype, trainable=False, collections=collections, **kwargs)


class variable_scope:  # TensorFlow's (lower-case) name
    """A context manager opening a variable scope (and a name scope for the ops inside).

    Parameters
    ----------
    name_or_scope : str or VariableScope
        The scope's name (appended to the current scope's), or a scope to re-enter.
    default_name : str, optional
        Used (made unique: ``"dense"``, ``"dense_1"``, ...) when ``name_or_scope`` is None.
    values : list, optional
        Accepted for TensorFlow compatibility.
    initializer, regularizer, dtype, constraint, custom_getter
        Defaults for the variables made inside (inherited by nested scopes).
    reuse : True, AUTO_REUSE or None
        True: :func:`get_variable` returns existing variables (and fails for missing ones);
        AUTO_REUSE: creates missing ones; None (or False): inherits the enclosing scope's.
        Reuse is inherited: inside a reusing scope, every nested scope reuses.
    auxiliary_name_scope : bool, default True
        False: open no name scope.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     with ow.variable_scope("model", reuse=ow.AUTO_REUSE):
    ...         a = ow.get_variable("a", initializer=1.0)
    ...         b = ow.get_variable("a", initializer=1.0)
    ...     with ow.variable_scope(None, default_name="dense") as s1:
    ...         pass
    ...     with ow.variable_scope(None, default_name="dense") as s2:
    ...         pass
    ...     a is b, s1.name, s2.name
    (True, 'dense', 'dense_1')
    """

    def __init__(
        self,
        name_or_scope: str | VariableScope | None,
        default_name: str | None = None,
        values: Any = None,
        initializer: Any = None,
        regularizer: Callable[[Any], Any] | None = None,
        caching_device: Any = None,
        partitioner: Any = None,
        custom_getter: Callable[..., Any] | None = None,
        reuse: bool | _ReuseMode | None = None,
        dtype: Any = None,
        use_resource: bool | None = None,
        constraint: Callable[[Any], Any] | None = None,
        auxiliary_name_scope: bool = True,
    ) -> None:
        if default_name is None and name_or_scope is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if name_or_scope is not None and not isinstance(name_or_scope, (str, VariableScope)):
            raise TypeError(
                f"VariableScope: name_or_scope must be a string or VariableScope, "
                f"got {name_or_scope!r}"
            )
        if (
            reuse is not None
            and reuse is not True
            and reuse is not False
            and (reuse is not AUTO_REUSE)
        ):
            raise ValueError(f"reuse must be True, False, None or AUTO_REUSE, got {reuse!r}")
        if name_or_scope is None and reuse:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._reuse = None if reuse is False else reuse  # False means "inherit", as in TF
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint
        self._auxiliary_name_scope = auxiliary_name_scope
        self._exits: list[Any] = []

    def __enter__(self) -> VariableScope:
        g = get_default_graph()
        scopes = _graph_scopes(g)
        old = scopes.scopes.current
        name_scope = ""
        if self._auxiliary_name_scope:
            if isinstance(self._name_or_scope, VariableScope):
                label = self._name_or_scope.name.split("/")[-1]
            elif self._name_or_scope is not None:
                label = self._name_or_scope
            else:
                label = self._default_name or ""
            if label:
                cm = g.name_scope(label)
                name_scope = cm.__enter__()
                self._exits.append(cm)
        if isinstance(self._name_or_scope, VariableScope):
            given = self._name_or_scope
            new = VariableScope(
                given.reuse if not self._reuse else self._reuse,
                name=given.name,
                initializer=given.initializer,
                regularizer=given.regularizer,
                caching_device=given.caching_device,
                partitioner=given.partitioner,
                custom_getter=given.custom_getter,
                name_scope=given.original_name_scope,
                dtype=given.dtype,
                use_resource=given.use_resource,
                constraint=given.constraint,
            )
        else:
            if self._name_or_scope is not None:
                label = self._name_or_scope
            else:
                label = self._unique_default_name(scopes, old)
            full = f"{old.name}/{label}" if old.name else label
            reuse = self._reuse or old.reuse
            new = VariableScope(
                reuse,
                name=full,
                initializer=old.initializer,
                regularizer=old.regularizer,
                caching_device=old.caching_device,
                partitioner=old.partitioner,
                custom_getter=old.custom_getter,
                name_scope=name_scope,
                dtype=old.dtype,
                use_resource=old.use_resource,
                constraint=old.constraint,
            )
        if self._initializer is not None:
            new.set_initializer(self._initializer)
        if self._regularizer is not None:
            new.set_regularizer(self._regularizer)
        if self._caching_device is not None:
            new.set_caching_device(self._caching_device)
        if self._partitioner is not None:
            new.set_partitioner(self._partitioner)
        if self._dtype is not None:
            new.set_dtype(self._dtype)
        if self._use_resource is not None:
            new.set_use_resource(self._use_resource)
        if self._constraint is not None:
            new.set_constraint(self._constraint)
        if self._custom_getter is not None:
            inner = new.custom_getter
            outer = self._custom_getter
            if inner is None:
                new.set_custom_getter(outer)
            else:
                new.set_custom_getter(
                    lambda getter, *a, **k: outer(functools.partial(inner, getter), *a, **k)
                )
        with scopes.lock:
            scopes.counts[new.name] = scopes.counts.get(new.name, 0) + 1
        self._saved = old
        scopes.scopes.current = new
        return new

    def _unique_default_name(self, scopes: _GraphScopes, old: VariableScope) -> str:
        prefix = self._default_name or ""
        base = f"{old.name}/{prefix}" if old.name else prefix
        with scopes.lock:
            if scopes.counts.get(base, 0) == 0:
                return prefix
            i = 1
            while scopes.counts.get(f"{base}_{i}", 0) > 0:
                i += 1
            return f"{prefix}_{i}"

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _graph_scopes(get_default_graph()).scopes.current = self._saved
        while self._exits:
            self._exits.pop().__exit__(exc_type, exc, tb)
