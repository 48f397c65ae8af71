"""Variable ops, TensorFlow 1's ``state_ops``: ``VariableV2``, ``assign``, ``assign_add``,
``assign_sub``, ``scatter_update``, ``scatter_add``, ``scatter_sub``, ``is_variable_initialized``.

A variable's value lives in the session (each session its own), not in the graph. The ops here
take and return *refs* -- a ``VariableV2``'s output, or an ``Assign``'s, standing for the variable
itself (TensorFlow's ``float32_ref``); where a ref meets an op that takes a value, it is read
there (an ``Identity``), and fetching a ref gives the variable's value. The kernels are in
``csrc/opweave/kernels/state_ops.cpp``; what concurrent runs may rely on (``use_locking``) is in
``csrc/opweave/state/variable.h`` and :class:`opweave.Variable`.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     v = ow.Variable([1.0, 2.0], name="v")
...     inc = ow.assign_add(v, [10.0, 10.0])
...     with ow.Session() as s:
...         _ = s.run(v.initializer)
...         print(s.run(inc), s.run(v))
[11. 12.] [11. 12.]
"""

from __future__ import annotations

from typing import Any

from ..dtypes import ANY, INDEX, REALS
from ..framework import Shape, Tensor, format_shape
from ._op_def import Attr, OpDef, ShapeContext

__all__ = [
    "assign",
    "assign_add",
    "assign_sub",
    "is_variable_initialized",
    "scatter_add",
    "scatter_sub",
    "scatter_update",
]

TensorLike = Any


def merge_shapes(ctx: ShapeContext, a: Shape, b: Shape) -> Shape:
    """The more specific of two compatible static shapes; TensorFlow's ValueError otherwise."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ctx.error(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
    out: list[int | None] = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x is not None and y is not None and x != y:
            raise ctx.error(
                f"Dimension {i} in both shapes must be equal, but are {x} and {y}. Shapes are "
                f"{format_shape(a)} and {format_shape(b)}."
            )
        out.append(x if x is not None else y)
    return tuple(out)


def _variable_shape(ctx: ShapeContext) -> Shape:
    return ctx.attrs["shape"].as_raw()  # type: ignore[no-any-return]


VARIABLE_V2 = OpDef(
    "VariableV2",
    outputs=["ref: Ref(dtype)"],
    attrs={
        "shape": Attr("shape"),
        "dtype": Attr("type"),
        "container": Attr("string", ""),
        "shared_name": Attr("string", ""),
    },
    shape=_variable_shape,
    # The variable is where gradients with respect to it stop (opweave.gradients' xs).
    not_differentiable=True,
    stateful=True,
)


def _assign_shape(ctx: ShapeContext) -> Shape:
    if not ctx.attrs["validate_shape"]:
        return ctx.shape(1)
    return merge_shapes(ctx, ctx.shape(0), ctx.shape(1))


_ASSIGN = OpDef(
    "Assign",
    inputs=["ref: Ref(T)", "value: T"],
    outputs=["output_ref: Ref(T)"],
    attrs={"validate_shape": Attr("bool", True), "use_locking": Attr("bool", True)},
    shape=_assign_shape,
    not_differentiable=True,
    stateful=True,
)


def _same_shape(ctx: ShapeContext) -> Shape:
    return merge_shapes(ctx, ctx.shape(0), ctx.shape(1))


_ASSIGN_ADD = OpDef(
    "AssignAdd",
    inputs=["ref: Ref(T)", "value: T"],
    outputs=["output_ref: Ref(T)"],
    types={"T": REALS},
    attrs={"use_locking": Attr("bool", False)},
    shape=_same_shape,
    not_differentiable=True,
    stateful=True,
)

_ASSIGN_SUB = OpDef(
    "AssignSub",
    inputs=["ref: Ref(T)", "value: T"],
    outputs=["output_ref: Ref(T)"],
    types={"T": REALS},
    attrs={"use_locking": Attr("bool", False)},
    shape=_same_shape,
    not_differentiable=True,
    stateful=True,
)


def _scatter_shape(ctx: ShapeContext) -> Shape:
    ref, indices, updates = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    if ref is not None and len(ref) == 0:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    if ref is not None and indices is not None and updates is not None and len(updates) > 0:
        want = indices + ref[1:]
        try:
            merge_shapes(ctx, updates, want)
        except ValueError:
            raise ctx.error(
                f"Shapes must be equal rank (updates.shape = indices.shape + ref.shape[1:] or "
                f"updates.shape = []), but updates.shape is {format_shape(updates)}, "
                f"indices.shape {format_shape(indices)} and ref.shape {format_shape(ref)}"
            ) from None
    return ref


def _scatter_def(type_: str, use_locking: bool) -> OpDef:
    return OpDef(
        type_,
        inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"],
        outputs=["output_ref: Ref(T)"],
        types={"T": REALS, "Tindices": INDEX},
        attrs={"use_locking": Attr("bool", use_locking)},
        shape=_scatter_shape,
        not_differentiable=True,
        stateful=True,
    )


_SCATTER_UPDATE = OpDef(
    "ScatterUpdate",
    inputs=["ref: Ref(T)", "indices: Tindices", "updates: T"],
    outputs=["output_ref: Ref(T)"],
    types={"T": ANY, "Tindices": INDEX},
    attrs={"use_locking": Attr("bool", True)},
    shape=_scatter_shape,
    not_differentiable=True,
    stateful=True,
)
_SCATTER_ADD = _scatter_def("ScatterAdd", False)
_SCATTER_SUB = _scatter_def("ScatterSub", False)

_IS_VARIABLE_INITIALIZED = OpDef(
    "IsVariableInitialized",
    inputs=["ref: Ref(dtype)"],
    outputs=["is_initialized: bool"],
    shape=lambda ctx: (),
    not_differentiable=True,
    stateful=True,
)


def variable_op_v2(
    shape: Any, dtype: Any, name: str = "Variable", container: str = "", shared_name: str = ""
) -> Tensor:
    """The ``VariableV2`` node: the ref of a variable of ``shape`` and ``dtype`` (no value until
    an ``assign`` runs). :class:`opweave.Variable` and :func:`opweave.get_variable` make it."""
    return VARIABLE_V2(  # type: ignore[no-any-return]
        shape=shape, dtype=dtype, container=container, shared_name=shared_name, name=name
    )


def assign(
    ref: Any,
    value: TensorLike,
    validate_shape: bool | None = None,
    use_locking: bool | None = None,
    name: str | None = None,
) -> Tensor:
    """Store ``value`` in the variable ``ref``; returns the ref, which reads the new value.

    Parameters
    ----------
    ref : Variable or ref Tensor
    value : tensor-like
        Of the variable's dtype (a different dtype is a TypeError when the op is built).
    validate_shape : bool, default True
        ``value`` must have the variable's shape: a ValueError when the op is built if the static
        shapes differ, an InvalidArgumentError in the run otherwise. False lets the variable take
        ``value``'s shape.
    use_locking : bool, default True
        The assignment is atomic with respect to the other locking updates of the variable.
    name : str, optional

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable(0, name="v")
    ...     with ow.Session() as s:
    ...         print(s.run(ow.assign(v, 5)))
    5
    """
    return _ASSIGN(  # type: ignore[no-any-return]
        ref,
        value,
        validate_shape=True if validate_shape is None else validate_shape,
        use_locking=True if use_locking is None else use_locking,
        name=name,
    )


def assign_add(
    ref: Any, value: TensorLike, use_locking: bool | None = None, name: str | None = None
) -> Tensor:
    """Add ``value`` (the variable's shape and dtype) to the variable ``ref``; returns the ref.

    ``use_locking=True`` makes the update atomic with respect to the other locking updates of the
    variable (N concurrent ``assign_add(v, 1, use_locking=True)`` add exactly N); without it,
    concurrent updates interleave block by block (see :class:`opweave.Variable`).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable([1, 2], name="v")
    ...     with ow.Session() as s:
    ...         _ = s.run(v.initializer)
    ...         print(s.run(ow.assign_add(v, [1, 1])))
    [2 3]
    """
    return _ASSIGN_ADD(  # type: ignore[no-any-return]
        ref, value, use_locking=False if use_locking is None else use_locking, name=name
    )


def assign_sub(
    ref: Any, value: TensorLike, use_locking: bool | None = None, name: str | None = None
) -> Tensor:
    """Subtract ``value`` from the variable ``ref``; returns the ref (see :func:`assign_add`).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable(3.0, name="v")
    ...     with ow.Session() as s:
    ...         _ = s.run(v.initializer)
    ...         print(s.run(ow.assign_sub(v, 1.0)))
    2.0
    """
    return _ASSIGN_SUB(  # type: ignore[no-any-return]
        ref, value, use_locking=False if use_locking is None else use_locking, name=name
    )


def scatter_update(
    ref: Any,
    indices: TensorLike,
    updates: TensorLike,
    use_locking: bool = True,
    name: str | None = None,
) -> Tensor:
    """``ref[indices[i], ...] = updates[i, ...]`` (rows of the variable); returns the ref.

    ``updates`` has shape ``indices.shape + ref.shape[1:]``, or is a scalar for every row. An
    index outside ``[0, ref.shape[0])`` is an InvalidArgumentError. With repeated indices the last
    update wins.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable([[0, 0], [0, 0], [0, 0]], name="v")
    ...     with ow.Session() as s:
    ...         _ = s.run(v.initializer)
    ...         print(s.run(ow.scatter_update(v, [2, 0], [[1, 2], [3, 4]])).tolist())
    [[3, 4], [0, 0], [1, 2]]
    """
    return _SCATTER_UPDATE(  # type: ignore[no-any-return]
        ref, indices, updates, use_locking=use_locking, name=name
    )


def scatter_add(
    ref: Any,
    indices: TensorLike,
    updates: TensorLike,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """``ref[indices[i], ...] += updates[i, ...]``; repeated indices add up, in index order.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable([1.0, 1.0], name="v")
    ...     with ow.Session() as s:
    ...         _ = s.run(v.initializer)
    ...         print(s.run(ow.scatter_add(v, [1, 1], [2.0, 3.0])))
    [1. 6.]
    """
    return _SCATTER_ADD(  # type: ignore[no-any-return]
        ref, indices, updates, use_locking=use_locking, name=name
    )


def scatter_sub(
    ref: Any,
    indices: TensorLike,
    updates: TensorLike,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """``ref[indices[i], ...] -= updates[i, ...]`` (see :func:`scatter_add`).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable([5, 5], name="v")
    ...     with ow.Session() as s:
    ...         _ = s.run(v.initializer)
    ...         print(s.run(ow.scatter_sub(v, [0], [2])))
    [3 5]
    """
    return _SCATTER_SUB(  # type: ignore[no-any-return]
        ref, indices, updates, use_locking=use_locking, name=name
    )


def is_variable_initialized(ref: Any, name: str | None = None) -> Tensor:
    """A bool scalar: whether the variable ``ref`` holds a value in the session running it.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable(1.0)
    ...     with ow.Session() as s:
    ...         before = s.run(ow.is_variable_initialized(v))
    ...         _ = s.run(v.initializer)
    ...         print(before, s.run(ow.is_variable_initialized(v)))
    False True
    """
    return _IS_VARIABLE_INITIALIZED(ref, name=name)  # type: ignore[no-any-return]
