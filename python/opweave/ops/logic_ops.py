"""Logic and selection: logical_and / or / xor (the ``&``, ``|``, ``^`` operators on bool
tensors), and ``where`` in both of TensorFlow 1's forms: with ``x`` and ``y`` it picks between them
(the Select op), with the condition alone it lists the coordinates of its true elements (the Where
op). ``where_v2`` broadcasts the three operands together (SelectV2).

>>> import numpy as np
>>> import opweave as ow
>>> ow.kernels.where(np.array([[True, False], [False, True]]))
array([[0, 0],
       [1, 1]])
"""

from __future__ import annotations

from typing import Any

from ..dtypes import REALS, bool_
from ..framework import Operation, Shape, Tensor, format_shape, register_operator
from ._op_def import OpDef, ShapeContext, broadcast_shape, memoizable, op, public
from .math_ops import TensorLike, per_output_element, select_v2
from .math_unary import logical_not

__all__: list[str] = ["logical_and", "logical_or", "logical_xor", "where", "where_v2"]


def _logical() -> Any:
    return {
        "inputs": ["x: bool", "y: bool"],
        "outputs": ["z: bool"],
        "shape": broadcast_shape,
        "flops": lambda i, o, a: per_output_element(i, o, a, 1),
        "not_differentiable": True,
    }


@op("LogicalAnd", **_logical())
def logical_and(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x and y`` element-wise on bool tensors, with broadcasting (the ``&`` operator).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.logical_and(np.array([True, True]), np.array([True, False]))
    array([ True, False])
    """


@op("LogicalOr", **_logical())
def logical_or(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x or y`` element-wise on bool tensors, with broadcasting (the ``|`` operator).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.logical_or(np.array([False, True]), np.array([False, False]))
    array([False,  True])
    """


@public
def logical_xor(x: TensorLike, y: TensorLike, name: str | None = "LogicalXor") -> Tensor:
    """``x != y`` element-wise on bool tensors, with broadcasting (the ``^`` operator).

    Built as TensorFlow 1 builds it: ``(x or y) and not (x and y)``.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.logical_xor(np.array([True, True]), np.array([True, False]))
    array([False,  True])
    """
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


# -- Select (TensorFlow 1's where with x and y) --------------------------------------------------


def _select_shape(ctx: ShapeContext) -> Shape:
    c, t, e = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    data = _merge(t, e, ctx)
    if c is None or data is None:
        return data
    if len(c) == 0:
        return data
    if len(c) != 1 or len(data) == 0:
        return _merge(data, c, ctx)
    first = data[0]
    if c[0] is not None and first is not None and c[0] != first:
        raise ctx.error(
            f"Dimension 0 in both shapes must be equal, but are {c[0]} and {first}. Shapes are "
            f"{format_shape(c)} and {format_shape((first,))}"
        )
    return data


def _merge(a: Shape, b: Shape, ctx: ShapeContext) -> Shape:
    """The shape both ``a`` and ``b`` describe (TensorFlow's Merge), or ctx's error."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ctx.error(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
    out = []
    for i, (da, db) in enumerate(zip(a, b, strict=True)):
        if da is not None and db is not None and da != db:
            raise ctx.error(
                f"Dimension {i} in both shapes must be equal, but are {da} and {db}. Shapes are "
                f"{format_shape(a)} and {format_shape(b)}"
            )
        out.append(da if da is not None else db)
    return tuple(out)


def _select_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .array_ops import zeros_like_op

    c = op_.inputs[0]
    zeros = zeros_like_op(op_.inputs[1])
    return [None, _SELECT(c, grad, zeros), _SELECT(c, zeros, grad)]


_SELECT = OpDef(
    "Select",
    inputs=["condition: bool", "t: T", "e: T"],
    shape=_select_shape,
    grad=_select_grad,
    flops=lambda i, o, a: per_output_element(i, o, a, 1),
)

# -- Where with the condition alone --------------------------------------------------------------


def _where_shape(ctx: ShapeContext) -> Shape:
    r = ctx.rank(0)
    return (None, r)


@op(
    "Where",
    inputs=["input: T"],
    outputs=["index: int64"],
    types={"T": REALS | {bool_}},
    shape=_where_shape,
    not_differentiable=True,
)
def where_indices(input: TensorLike, name: str | None = None) -> Tensor:
    """The coordinates of the true (bool) or non-zero elements of ``input``, as an int64
    ``[count, rank]`` tensor in row-major order (TensorFlow's Where op)."""


@memoizable
@public
def where(
    condition: TensorLike,
    x: TensorLike = None,
    y: TensorLike = None,
    name: str | None = None,
) -> Tensor:
    """TensorFlow 1's ``where``: elements of ``x`` or ``y`` by ``condition``, or, with the
    condition alone, the coordinates of its true elements.

    With ``x`` and ``y`` (the Select op) they must have one shape, and ``condition`` is a bool
    scalar, a bool tensor of that shape, or a bool vector along their first dimension choosing
    whole rows; nothing else broadcasts (:func:`where_v2` broadcasts). The gradient goes to ``x``
    where the condition holds and to ``y`` elsewhere.

    Without them (the Where op) the result is an int64 ``[num_true, rank(condition)]`` tensor of
    the coordinates of the true (for numbers: non-zero) elements, in row-major order.

    Raises
    ------
    ValueError
        When only one of ``x`` and ``y`` is given, or the shapes do not fit.

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.where(np.array([True, False]), np.array([[1, 2], [3, 4]]),
    ...                  np.array([[5, 6], [7, 8]]))
    array([[1, 2],
           [7, 8]])
    >>> ow.kernels.where(np.array([0.0, 2.0, 0.0, -1.0]))
    array([[1],
           [3]])
    """
    if x is None and y is None:
        return _where_alone(condition, name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return _SELECT(condition, x, y, name=name)  # type: ignore[no-any-return]


@public
def where_v2(
    condition: TensorLike,
    x: TensorLike = None,
    y: TensorLike = None,
    name: str | None = None,
) -> Tensor:
    """TensorFlow 2's ``where``: ``x`` where ``condition`` else ``y``, the three broadcast
    together (SelectV2); with the condition alone, as :func:`where`.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.where_v2(np.array([[True], [False]]), np.array([1, 2]), 0)
    array([[1, 2],
           [0, 0]])
    """
    if x is None and y is None:
        return _where_alone(condition, name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return select_v2(condition, x, y, name=name)


def _where_alone(condition: TensorLike, name: str | None) -> Tensor:
    return where_indices(condition, name=name)


register_operator("__and__", lambda a, b: logical_and(a, b, name="and"))
register_operator("__or__", lambda a, b: logical_or(a, b, name="or"))
register_operator("__xor__", lambda a, b: logical_xor(a, b, name="xor"))
