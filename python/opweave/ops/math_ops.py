"""Arithmetic: element-wise ops with NumPy broadcasting, reductions, matmul and add_n.

Both operands of a binary op must have the same dtype, as in TensorFlow (no silent mixing of
float32 and float64): a Python or NumPy scalar takes the tensor operand's dtype when it converts
without loss (``float_tensor + 2`` adds ``2.0``), otherwise the op is a TypeError naming both
dtypes, never a truncation.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     a = ow.placeholder(ow.float32, shape=(None, 3))
...     b = ow.constant([[1.0], [2.0], [3.0]])
...     y = ow.reduce_sum(ow.nn.relu(a @ b), axis=0)
>>> y.shape
TensorShape([Dimension(1)])
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import (
    FLOATS,
    INDEX,
    NUMBERS,
    REALS,
    DType,
    bool_,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
)
from ..framework import Operation, Shape, Tensor, register_operator
from . import _checks, _grad_util
from ._op_def import (
    Attr,
    OpDef,
    ShapeContext,
    broadcast_shape,
    broadcast_shapes,
    convert_to_tensor,
    executing_eagerly,
    memoizable,
    op,
    public,
)
from .array_ops import cast, reshape, shape, zeros_like_op

__all__: list[str] = [
    "add",
    "add_n",
    "clip_by_value",
    "div",
    "divide",
    "equal",
    "exp",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "invert_permutation",
    "less",
    "less_equal",
    "matmul",
    "maximum",
    "minimum",
    "mod",
    "mul",
    "multiply",
    "neg",
    "negative",
    "not_equal",
    "pow",
    "range",
    "realdiv",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "select_v2",
    "sigmoid",
    "squared_difference",
    "sub",
    "subtract",
    "tanh",
    "to_double",
    "to_float",
    "to_int32",
    "to_int64",
    "truediv",
]

TensorLike = Any
Shapes = Sequence[Sequence[int]]
SIGNED_INTS = frozenset({int8, int16, int32, int64})


# -- FLOP counts (step stats, the timeline) ------------------------------------------------------


def per_output_element(
    inputs: Shapes, outputs: Shapes, attrs: Mapping[str, Any], k: int = 1
) -> int | None:
    """``k`` FLOPs per element of the first output (element-wise ops)."""
    return k * math.prod(outputs[0]) if outputs else None


def per_input_element(inputs: Shapes, outputs: Shapes, attrs: Mapping[str, Any]) -> int | None:
    """One FLOP per element of the first input (reductions)."""
    return math.prod(inputs[0]) if inputs else None


# -- gradient helpers ----------------------------------------------------------------------------


def _fully_known_equal(a: Shape, b: Shape) -> bool:
    return a is not None and a == b and all(d is not None for d in a)


def static_reduction_axes(
    s: Shape, out: Shape, others: Sequence[Shape] | None = None
) -> tuple[list[int], list[int]] | None:
    """The axes to sum a gradient of shape ``out`` over to undo its broadcast from shape ``s``,
    decided from static shapes: ``(leading, inner)`` -- the axes ``s`` lacks (dropped) and those
    where it is 1 (kept) -- or None when unknown dimensions leave it open.

    ``others`` are the shapes of the operands broadcast with ``s`` (None: not known), which
    settle an unknown dimension of ``s``: where every other operand lacks the axis or has 1
    there, ``s`` gave the output its extent and is not reduced. TensorFlow's gradients decide
    this the same way (``SmartBroadcastGradientArgs``), so that a training graph reads no
    ``Shape`` of the forward activations: a MatMul whose only reader is the bias add fuses.

    >>> static_reduction_axes((512,), (None, 512), [(None, 512)])
    ([0], [])
    >>> static_reduction_axes((None, 512), (None, 512), [(512,)])
    ([], [])
    >>> static_reduction_axes((None, 1), (None, 8), [(None, 8)]) is None
    True
    """
    if s is None or out is None or len(s) > len(out):
        return None
    lead = len(out) - len(s)
    inner: list[int] = []
    for i, d in enumerate(s):
        axis = lead + i
        if d == 1:
            # Summing over an axis that was 1 all along is a copy: safe whatever `out` is there.
            if out[axis] != 1:
                inner.append(axis)
        elif d is None:
            if others is None:
                return None
            for o in others:
                if o is None:
                    return None
                j = axis - (len(out) - len(o))
                if j >= 0 and o[j] != 1:
                    return None  # unknown or > 1: s may be 1 there and broadcast
    return list(builtins.range(lead)), inner


def _sum_to(grad: Tensor, axes: tuple[list[int], list[int]]) -> Tensor:
    """``grad`` summed over static ``(leading, inner)`` axes (see static_reduction_axes)."""
    lead, inner = axes
    if lead:
        grad = reduce_sum(grad, lead)
    if inner:
        grad = reduce_sum(grad, [a - len(lead) for a in inner], keepdims=True)
    return grad


def unbroadcast(grad: Tensor, x: Tensor, rx: Any = None) -> Tensor:
    """``grad`` (of a broadcast result) summed back to the shape of input ``x``."""
    if _fully_known_equal(grad._shape, x._shape):
        return grad
    if rx is None:
        axes = static_reduction_axes(x._shape, grad._shape)
        if axes is not None:
            return _sum_to(grad, axes)
        rx, _ = broadcast_gradient_args(shape(x), shape(grad))
    return reshape(reduce_sum(grad, rx), shape(x))


def _binary_grads(op_: Operation, gx: Tensor | None, gy: Tensor | None) -> list[Any]:
    """Gradients of a broadcasting binary op from its gradients at the broadcast shape."""
    x, y = op_.inputs
    if _fully_known_equal(x._shape, y._shape):
        return [gx, gy]
    out = op_.outputs[0]._shape
    ax = static_reduction_axes(x._shape, out, [y._shape])
    ay = static_reduction_axes(y._shape, out, [x._shape])
    if ax is not None and ay is not None:
        return [
            None if gx is None else _sum_to(gx, ax),
            None if gy is None else _sum_to(gy, ay),
        ]
    rx, ry = broadcast_gradient_args(shape(x), shape(y))
    return [
        None if gx is None else reshape(reduce_sum(gx, rx), shape(x)),
        None if gy is None else reshape(reduce_sum(gy, ry), shape(y)),
    ]


_BROADCAST_GRADIENT_ARGS = OpDef(
    "BroadcastGradientArgs",
    inputs=["s0: T", "s1: T"],
    outputs=["r0: T", "r1: T"],
    types={"T": INDEX},
    shape=lambda ctx: [(None,), (None,)],
    not_differentiable=True,
)


def broadcast_gradient_args(s0: TensorLike, s1: TensorLike) -> tuple[Tensor, Tensor]:
    """The axes to sum a gradient over to undo the broadcast of shapes ``s0`` and ``s1``."""
    r = _BROADCAST_GRADIENT_ARGS(s0, s1)
    return r.r0, r.r1


# -- element-wise binary ops ---------------------------------------------------------------------


def _binary_op(
    type_: str,
    types: frozenset[DType],
    grad: Any,
    flops: int = 1,
    **kwargs: Any,
) -> OpDef:
    return OpDef(
        type_,
        inputs=["x: T", "y: T"],
        outputs=["z: T"],
        types={"T": types},
        shape=broadcast_shape,
        grad=grad,
        flops=lambda i, o, a: per_output_element(i, o, a, flops),
        **kwargs,
    )


def _add_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return _binary_grads(op_, grad, grad)


def _sub_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return _binary_grads(op_, grad, negative(grad))


def _mul_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, y = op_.inputs
    return _binary_grads(op_, multiply(grad, y), multiply(x, grad))


def _realdiv_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, y = op_.inputs
    return _binary_grads(op_, realdiv(grad, y), multiply(grad, realdiv(realdiv(negative(x), y), y)))


_ADD = _binary_op("Add", NUMBERS, _add_grad, default_name="Add")
_ADD_V2 = _binary_op("AddV2", NUMBERS, _add_grad)
_SUB = _binary_op("Sub", NUMBERS, _sub_grad)
_MUL = _binary_op("Mul", NUMBERS, _mul_grad)
_REALDIV = _binary_op("RealDiv", FLOATS, _realdiv_grad)
_FLOORDIV = _binary_op("FloorDiv", REALS, lambda op_, g: [None, None])
_DIV = _binary_op("Div", REALS, _realdiv_grad)


def _select_grads(op_: Operation, grad: Tensor, x_wins: Tensor) -> list[Any]:
    """Maximum / Minimum: the gradient goes to x where ``x_wins``, else to y."""
    zeros = zeros_like_op(grad)
    return _binary_grads(op_, select_v2(x_wins, grad, zeros), select_v2(x_wins, zeros, grad))


def _maximum_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, y = op_.inputs
    return _select_grads(op_, grad, greater_equal(x, y))


def _minimum_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, y = op_.inputs
    return _select_grads(op_, grad, less_equal(x, y))


_MAXIMUM = _binary_op("Maximum", REALS, _maximum_grad)
_MINIMUM = _binary_op("Minimum", REALS, _minimum_grad)


@memoizable
@public
def add(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x + y`` with NumPy broadcasting (same dtype required, as in TensorFlow).

    A Python or NumPy operand takes the tensor operand's dtype when it converts without loss
    (``float_tensor + 2`` adds ``2.0``); otherwise it keeps its own and the op is a TypeError,
    never a truncation. The same holds for every binary op.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.constant([1]) + 2.5
    Traceback (most recent call last):
    ...
    TypeError: Input 'y' of 'Add' Op 'add' has type float32 that does not match type int32 of ...
    """
    return _ADD(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def subtract(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x - y`` with broadcasting."""
    return _SUB(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def multiply(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x * y`` with broadcasting."""
    return _MUL(x, y, name=name)  # type: ignore[no-any-return]


sub = subtract
mul = multiply


@memoizable
@public
def realdiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y`` for floating tensors."""
    return _REALDIV(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def floordiv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``floor(x / y)`` with broadcasting (Python's ``//``); integer division by zero is an
    InvalidArgumentError."""
    return _FLOORDIV(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def div(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """TensorFlow 1's ``tf.div``: ``x / y`` with broadcasting, flooring for integers.

    Integer division floors (``div([-7, 7], 2)`` is ``[-4, 3]``) and integer division by zero
    fails with ``InvalidArgumentError``; floats divide exactly. The ``/`` operator on tensors is
    :func:`truediv` instead, as in TensorFlow 1 under Python 3.
    """
    a, b = _operands(x, y)
    if _dtype_of(a).is_floating:
        return realdiv(a, b, name=name or "div")
    return floordiv(a, b, name=name or "div")


@memoizable
@public
def truediv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y`` as Python 3 divides: TensorFlow 1's ``tf.truediv``, what ``/`` on tensors does.

    int8, int16 and uint8 operands are cast to float32, int32 and int64 operands to float64
    (exact for integers up to 2**53), so the result is never floored; float operands divide as
    :func:`realdiv`. Both operands must have the same dtype (a Python number takes the tensor's
    when it converts without loss).

    Raises
    ------
    TypeError
        For operands of different dtypes ("`x` and `y` must have the same dtype, got
        opweave.int32 != opweave.float32.", TensorFlow's text) or bool operands.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     q = ow.constant([-7, 7]) / 2
    ...     with ow.Session() as sess:
    ...         print(q.dtype, sess.run(q))
    opweave.float64 [-3.5  3.5]
    """
    name = _checks.check_name(name, "truediv")
    a, b = _operands(x, y)
    da, db = _dtype_of(a), _dtype_of(b)
    if da is not db:
        raise TypeError(f"`x` and `y` must have the same dtype, got {da!r} != {db!r}.")
    if not da.is_numeric:
        raise TypeError(
            f"Invalid dtype {da!r} in truediv. Expected one of opweave.int32, opweave.int64, "
            "opweave.float32, opweave.float64."
        )
    if da.is_floating:
        return realdiv(a, b, name=name)
    target = float64 if da.size >= 4 else float32
    if executing_eagerly():
        return realdiv(cast(a, target), cast(b, target))
    from ..framework import get_default_graph

    # As TensorFlow: the casts live in a name scope and the division is named after it.
    with get_default_graph().name_scope(name) as scope:
        a, b = cast(a, target), cast(b, target)
    return realdiv(a, b, name=scope[:-1] + "/")


divide = truediv


@memoizable
@public
def maximum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Element-wise maximum with broadcasting; NaN propagates."""
    return _MAXIMUM(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def minimum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Element-wise minimum with broadcasting; NaN propagates."""
    return _MINIMUM(x, y, name=name)  # type: ignore[no-any-return]


# -- pow, floormod, squared_difference -----------------------------------------------------------


def _pow_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """TensorFlow's: grad * (y x^(y-1), z log x), with log x taken as 0 where x <= 0."""
    x, y = op_.inputs
    if not x.dtype.is_floating:
        return [None, None]
    from .array_ops import ones_like
    from .math_unary import log

    z = op_.outputs[0]
    gx = multiply(grad, multiply(y, pow(x, subtract(y, 1))))
    mask = greater(x, 0)
    safe_x = select_v2(mask, x, ones_like(x))
    log_x = select_v2(mask, log(safe_x), zeros_like_op(x))
    return _binary_grads(op_, gx, multiply(multiply(grad, z), log_x))


def _floormod_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """TensorFlow's: grad * (1, -floor(x / y))."""
    x, y = op_.inputs
    if not x.dtype.is_floating:
        return [None, None]
    return _binary_grads(op_, grad, multiply(grad, negative(floordiv(x, y))))


def _squared_difference_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """TensorFlow's: 2 grad (x - y) for x, its negative for y."""
    x, y = op_.inputs
    if not x.dtype.is_floating:
        return [None, None]
    x_grad = multiply(multiply(grad, 2), subtract(x, y))
    gx, gy = _binary_grads(op_, x_grad, x_grad)
    return [gx, None if gy is None else negative(gy)]


_POW = _binary_op("Pow", FLOATS | SIGNED_INTS, _pow_grad, flops=20)
_FLOORMOD = _binary_op("FloorMod", REALS, _floormod_grad, flops=4)
_SQUARED_DIFFERENCE = _binary_op("SquaredDifference", FLOATS | INDEX, _squared_difference_grad, 2)


@memoizable
@public
def pow(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x ** y`` element-wise with broadcasting (the ``**`` operator).

    Floats follow C's ``pow``: a negative base with an integer exponent keeps its sign
    (``pow(-2.0, 3.0)`` is -8), with a non-integer exponent gives NaN; ``pow(0.0, -1.0)`` is inf
    and ``pow(x, 0)`` is 1. Integers wrap; a negative integer exponent fails the run with
    InvalidArgumentError ("Integers to negative integer powers are not allowed"), as in
    TensorFlow.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.pow(np.array([-2.0, 4.0]), np.array([3.0, 0.5]))
    array([-8.,  2.])
    """
    return _POW(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def floormod(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """The remainder of floor division, with the divisor's sign, as Python's ``%`` (the ``%``
    operator; also ``mod``).

    ``floormod(-7, 2)`` is 1 and ``floormod(7, -2)`` is -1, for integers and floats. Floats
    compute C's ``fmod`` and then move a remainder whose sign differs from the divisor's by one
    divisor, exactly as TensorFlow (``floormod(x, 0.0)`` is NaN). Integer division by zero fails
    the run with InvalidArgumentError ("Integer division by zero").

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.floormod(np.array([-7, 7]), np.array([2, -2]))
    array([ 1, -1])
    """
    return _FLOORMOD(x, y, name=name)  # type: ignore[no-any-return]


mod = floormod


@memoizable
@public
def squared_difference(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``(x - y) ** 2`` element-wise with broadcasting.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.squared_difference(np.array([1.0, 5.0]), np.array([3.0, 5.0]))
    array([4., 0.])
    """
    return _SQUARED_DIFFERENCE(x, y, name=name)  # type: ignore[no-any-return]


# -- clip_by_value -------------------------------------------------------------------------------


def _clip_shape(ctx: ShapeContext) -> Shape:
    t = ctx.shape(0)
    for i, arg in ((1, "clip_value_min"), (2, "clip_value_max")):
        s = ctx.shape(i)
        if s is None or t is None or len(s) == 0:
            continue
        if len(s) != len(t) or any(
            a is not None and b is not None and a != b for a, b in zip(s, t, strict=True)
        ):
            raise ctx.error(f"{arg} must be a scalar or have the shape of t")
    return t


def _clip_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """TensorFlow's: the gradient passes to t inside [min, max] (bounds included), to a bound
    where t is beyond it."""
    x, lo, hi = op_.inputs
    zeros = zeros_like_op(grad)
    below, above = less(x, lo), greater(x, hi)
    from .logic_ops import logical_or

    gx = select_v2(logical_or(below, above), zeros, grad)
    glo, ghi = select_v2(below, grad, zeros), select_v2(above, grad, zeros)
    return [gx, unbroadcast(glo, lo), unbroadcast(ghi, hi)]


_CLIP_BY_VALUE = OpDef(
    "ClipByValue",
    inputs=["t: T", "clip_value_min: T", "clip_value_max: T"],
    types={"T": REALS},
    shape=_clip_shape,
    grad=_clip_grad,
    flops=lambda i, o, a: per_output_element(i, o, a, 2),
)


@memoizable
@public
def clip_by_value(
    t: TensorLike,
    clip_value_min: TensorLike,
    clip_value_max: TensorLike,
    name: str | None = None,
) -> Tensor:
    """``t`` clipped to ``[clip_value_min, clip_value_max]``: ``max(min(t, max), min)``.

    The bounds are scalars or tensors that broadcast to ``t`` without changing its shape. The
    gradient passes to ``t`` where it lies inside the range, bounds included, and to a bound
    where ``t`` is beyond it, as in TensorFlow 1. NaN stays NaN.

    Raises
    ------
    ValueError
        When a bound would broadcast ``t`` to a larger shape.

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.clip_by_value(np.array([-3.0, 0.5, 7.0]), 0.0, 1.0)
    array([0. , 0.5, 1. ])
    """
    from ._op_def import _auto_pack, _shape_of

    x, lo, hi = (
        v._as_tensor() if hasattr(v, "_as_tensor") else _auto_pack(v, None)
        for v in (t, clip_value_min, clip_value_max)
    )
    shapes = [None if v is None else _shape_of(v) for v in (x, lo, hi)]
    if all(s is not None and (len(s) == 0 or s == shapes[0]) for s in shapes[1:]):
        return _CLIP_BY_VALUE(x, lo, hi, name=name)  # type: ignore[no-any-return]
    # Bounds of other shapes: TensorFlow 1's Minimum and Maximum, then its shape check.
    name = _checks.check_name(name, "clip_by_value")
    clipped = maximum(minimum(x, hi), lo, name=name)
    out_shape = _shape_of(clipped)
    if (
        shapes[0] is not None
        and out_shape is not None
        and broadcast_shapes(shapes[0], out_shape) != tuple(shapes[0])
    ):
        raise ValueError(
            f"clip_by_value: the bounds would broadcast t of shape {list(shapes[0])} to "
            f"{list(out_shape)}"
        )
    return clipped


def _operands(x: TensorLike, y: TensorLike) -> tuple[Any, Any]:
    """Both operands as tensors (eager: arrays); a tensor's dtype is the hint for the other."""
    from ._op_def import _like, _operand_dtype

    dy = _operand_dtype(y)
    if dy is not None and _operand_dtype(x) is None:
        return _like(x, dy), convert_to_tensor(y)
    a = convert_to_tensor(x)
    return a, (_like(y, _dtype_of(a)) if _operand_dtype(y) is None else convert_to_tensor(y))


def _dtype_of(t: Any) -> DType:
    from ._op_def import _dtype_of as dtype_of

    return dtype_of(t)


# -- element-wise unary ops ----------------------------------------------------------------------


def _unary_op(type_: str, types: frozenset[DType], grad: Any, flops: int = 1) -> OpDef:
    return OpDef(
        type_,
        inputs=["x: T"],
        outputs=["y: T"],
        types={"T": types},
        grad=grad,
        flops=lambda i, o, a: per_output_element(i, o, a, flops),
    )


_NEG = _unary_op("Neg", NUMBERS, lambda op_, g: [negative(g)])
_EXP = _unary_op("Exp", FLOATS, lambda op_, g: [multiply(g, op_.outputs[0])])


def _tanh_grad(op_: Operation, grad: Tensor) -> list[Any]:
    y = op_.outputs[0]
    return [multiply(grad, subtract(1, multiply(y, y)))]


def _sigmoid_grad(op_: Operation, grad: Tensor) -> list[Any]:
    y = op_.outputs[0]
    return [multiply(grad, multiply(y, subtract(1, y)))]


_TANH = _unary_op("Tanh", FLOATS, _tanh_grad)
_SIGMOID = _unary_op("Sigmoid", FLOATS, _sigmoid_grad)


@memoizable
@public
def negative(x: TensorLike, name: str | None = None) -> Tensor:
    """``-x``."""
    return _NEG(x, name=name)  # type: ignore[no-any-return]


neg = negative


@memoizable
@public
def exp(x: TensorLike, name: str | None = None) -> Tensor:
    """``e ** x`` (floating dtypes)."""
    return _EXP(x, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def tanh(x: TensorLike, name: str | None = None) -> Tensor:
    """Hyperbolic tangent (floating dtypes)."""
    return _TANH(x, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / (1 + e ** -x)`` (floating dtypes; no overflow for large ``|x|``)."""
    return _SIGMOID(x, name=name)  # type: ignore[no-any-return]


# -- add_n ---------------------------------------------------------------------------------------


def _add_n_shape(ctx: ShapeContext) -> Shape:
    out = ctx.shape(0)
    for i in builtins.range(1, len(ctx.shapes)):
        s = ctx.shape(i)
        if out is None:
            out = s
            continue
        if s is None:
            continue
        if len(s) != len(out) or any(
            a is not None and b is not None and a != b for a, b in zip(out, s, strict=True)
        ):
            raise ctx.error("Shapes must be equal rank, and all inputs must have the same shape")
        out = tuple(a if a is not None else b for a, b in zip(out, s, strict=True))
    return out


@op(
    "AddN",
    inputs=["inputs: N * T"],
    outputs=["sum: T"],
    attrs={"N": Attr("int", None, minimum=1)},
    types={"T": NUMBERS},
    shape=_add_n_shape,
    grad=lambda op_, grad: [grad] * len(op_.inputs),
    flops=lambda i, o, a: (len(i) - 1) * math.prod(o[0]) if o else None,
)
def add_n(inputs: Sequence[TensorLike], name: str | None = None) -> Tensor:
    """Sum of same-shape, same-dtype tensors, added in order.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.add_n([ow.constant([1.0]), ow.constant([2.0])]).shape
    TensorShape([Dimension(1)])
    """
    if isinstance(inputs, (Tensor, np.ndarray)) or not inputs:
        raise ValueError("inputs must be a non-empty list of tensors")
    return {"inputs": list(inputs), "name": name}  # type: ignore[return-value]


# -- reductions ----------------------------------------------------------------------------------


def _reduction_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    keep = ctx.attrs["keep_dims"]
    axes_v = ctx.value(1)
    if s is None:
        return None
    rank_ = len(s)
    if axes_v is None:
        if keep:
            return (None,) * rank_
        n = ctx.shape(1)
        if n is not None and len(n) == 1 and n[0] is not None:
            return (None,) * builtins.max(rank_ - n[0], 0)
        return None
    axes = [int(a) for a in axes_v.reshape(-1)]
    for a in axes:
        if not -rank_ <= a < rank_:
            raise ctx.error(f"Invalid reduction dimension {a} for input with {rank_} dimensions")
    norm = {a % rank_ for a in axes} if rank_ else set()
    if len(norm) != len(axes):
        raise ctx.error(f"Invalid reduction arguments: Axes contains duplicate dimension: {axes}")
    if keep:
        return tuple(1 if i in norm else d for i, d in enumerate(s))
    return tuple(d for i, d in enumerate(s) if i not in norm)


def _reduction_args(
    fn: str,
    input_tensor: TensorLike,
    axis: Any,
    keepdims: Any,
    name: str | None,
    reduction_indices: Any,
    keep_dims: Any,
) -> dict[str, Any]:
    """TensorFlow 1's reduction arguments: ``axis`` or its old name ``reduction_indices``,
    ``keepdims`` or its old name ``keep_dims``; ``axis=None`` reduces every axis."""
    if axis is not None and reduction_indices is not None:
        raise ValueError(f"{fn}: cannot specify both 'axis' and 'reduction_indices'")
    if keepdims is not None and keep_dims is not None:
        raise ValueError(f"{fn}: cannot specify both 'keepdims' and 'keep_dims'")
    axis = axis if axis is not None else reduction_indices
    keep = keepdims if keepdims is not None else keep_dims
    keep = False if keep is None else _checks.check_bool(keep, "keepdims", op=fn)
    x = convert_to_tensor(input_tensor)
    if axis is None:
        r = np.ndim(x) if executing_eagerly() else (None if x._shape is None else len(x._shape))
        axis = list(builtins.range(r)) if r is not None else range(0, rank_of(x), 1)
    elif not isinstance(axis, (Tensor, np.ndarray)):
        axis = _checks.check_int_list(axis, "axis", op=fn)  # the range is checked by the op
    return {"input": x, "reduction_indices": axis, "keep_dims": keep, "name": name}


def rank_of(x: Tensor) -> Tensor:
    from .array_ops import rank

    return rank(x)


def _reduction(types: frozenset[DType] | None, grad: Any = None) -> dict[str, Any]:
    """The OpDef fields every reduction shares; ``types=None`` is a bool-only reduction (Any,
    All), ``grad=None`` one without a gradient."""
    spec = {
        "inputs": ["input: T" if types is not None else "input: bool", "reduction_indices: Tidx"],
        "outputs": ["output: T" if types is not None else "output: bool"],
        "attrs": {"keep_dims": Attr("bool", False)},
        "types": {"Tidx": INDEX} | ({"T": types} if types is not None else {}),
        "shape": _reduction_shape,
        "flops": per_input_element,
    }
    if grad is None:
        spec["not_differentiable"] = True
    else:
        spec["grad"] = grad
    return spec


def _sum_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [_grad_util.broadcast_to_input(op_, grad), None]


def _mean_grad(op_: Operation, grad: Tensor) -> list[Any]:
    g = _grad_util.broadcast_to_input(op_, grad)
    return [realdiv(g, cast(_grad_util.reduction_count(op_), g.dtype)), None]


def _max_min_reduce_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [_grad_util.max_min_reduce_grad(op_, grad), None]


@memoizable
@op("Sum", **_reduction(NUMBERS, _sum_grad))
def reduce_sum(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Sum over ``axis`` (every axis when None); the same bits for any thread count.

    ``reduction_indices`` and ``keep_dims`` are TensorFlow 1's older names of ``axis`` and
    ``keepdims``. ``axis`` may be an int, a list of ints or an integer tensor.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.reduce_sum([[1, 2], [3, 4]], axis=1)))
    [3 7]
    """
    return _reduction_args(  # type: ignore[return-value]
        "reduce_sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


@memoizable
@op("Mean", **_reduction(NUMBERS, _mean_grad))
def reduce_mean(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Mean over ``axis`` (integer means truncate toward zero, as in TensorFlow)."""
    return _reduction_args(  # type: ignore[return-value]
        "reduce_mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


@memoizable
@op("Max", **_reduction(REALS | {bool_}, _max_min_reduce_grad))
def reduce_max(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Maximum over ``axis``; NaN propagates."""
    return _reduction_args(  # type: ignore[return-value]
        "reduce_max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


@memoizable
@op("Min", **_reduction(REALS | {bool_}, _max_min_reduce_grad))
def reduce_min(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Minimum over ``axis``; NaN propagates."""
    return _reduction_args(  # type: ignore[return-value]
        "reduce_min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


# -- matmul --------------------------------------------------------------------------------------


def _matmul_shape(ctx: ShapeContext) -> Shape:
    sa, sb = ctx.shape(0), ctx.shape(1)
    ta = ctx.attrs.get("transpose_a", ctx.attrs.get("adj_x", False))
    tb = ctx.attrs.get("transpose_b", ctx.attrs.get("adj_y", False))
    batch_ok = ctx.op.type != "MatMul"
    if sa is None or sb is None:
        if not batch_ok:
            return (None, None)
        return None
    if (not batch_ok and (len(sa) != 2 or len(sb) != 2)) or len(sa) < 2 or len(sb) < 2:
        raise ctx.error(f"Shape must be rank {'2' if not batch_ok else '>= 2'}")
    m, ka = (sa[-1], sa[-2]) if ta else (sa[-2], sa[-1])
    kb, n = (sb[-1], sb[-2]) if tb else (sb[-2], sb[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ctx.error(f"Dimensions must be equal, but are {ka} and {kb}")
    batch = broadcast_shapes(sa[:-2], sb[:-2], ctx)
    assert batch is not None
    return (*batch, m, n)


def _matmul_flops(inputs: Shapes, outputs: Shapes, attrs: Mapping[str, Any]) -> int | None:
    if len(inputs) != 2 or len(inputs[0]) < 2 or not outputs:
        return None
    a = inputs[0]
    k = a[-2] if attrs.get("transpose_a") or attrs.get("adj_x") else a[-1]
    return 2 * math.prod(outputs[0]) * k


def _matmul_grad(op_: Operation, grad: Tensor) -> list[Any]:
    a, b = op_.inputs
    ta, tb = op_.attrs["transpose_a"], op_.attrs["transpose_b"]
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [
        matmul(b, grad, transpose_a=True, transpose_b=True),
        matmul(grad, a, transpose_a=True, transpose_b=True),
    ]


def _batch_matmul_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, y = op_.inputs
    ax, ay = op_.attrs["adj_x"], op_.attrs["adj_y"]
    if not ax and not ay:
        gx, gy = matmul(grad, y, adjoint_b=True), matmul(x, grad, adjoint_a=True)
    elif not ax and ay:
        gx, gy = matmul(grad, y), matmul(grad, x, adjoint_a=True)
    elif ax and not ay:
        gx, gy = matmul(y, grad, adjoint_b=True), matmul(x, grad)
    else:
        gx = matmul(y, grad, adjoint_a=True, adjoint_b=True)
        gy = matmul(grad, x, adjoint_a=True, adjoint_b=True)
    # Batch dimensions that were broadcast are summed back.
    return [unbroadcast(gx, x), unbroadcast(gy, y)]


_MATMUL = OpDef(
    "MatMul",
    inputs=["a: T", "b: T"],
    outputs=["product: T"],
    attrs={"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False)},
    types={"T": FLOATS | INDEX},
    shape=_matmul_shape,
    grad=_matmul_grad,
    flops=_matmul_flops,
)
_BATCH_MATMUL = OpDef(
    "BatchMatMulV2",
    inputs=["x: T", "y: T"],
    outputs=["output: T"],
    attrs={"adj_x": Attr("bool", False), "adj_y": Attr("bool", False)},
    types={"T": FLOATS | INDEX},
    shape=_matmul_shape,
    grad=_batch_matmul_grad,
    flops=_matmul_flops,
)


@public
def matmul(
    a: TensorLike,
    b: TensorLike,
    transpose_a: bool = False,
    transpose_b: bool = False,
    adjoint_a: bool = False,
    adjoint_b: bool = False,
    a_is_sparse: bool = False,
    b_is_sparse: bool = False,
    name: str | None = None,
) -> Tensor:
    """Matrix product of the two innermost dims (leading dims broadcast), optionally transposed.

    Two matrices build a ``MatMul``; higher ranks a ``BatchMatMulV2``, as in TensorFlow. The
    result is the same for any thread count (threads split rows of the result, never the inner
    dimension). ``adjoint_*`` equal ``transpose_*`` for real types.

    Raises
    ------
    ValueError
        When the inner dimensions differ or the batch dimensions do not broadcast, naming the
        op and both full input shapes (``... with input shapes: [5,2,3], [4,3,6].``); when both
        ``transpose_a`` and ``adjoint_a`` (or both ``_b`` flags) are set, as in TensorFlow 1.
    TypeError
        For mismatched dtypes, or dtypes other than float16/32/64, int32 and int64.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     y = ow.matmul(ow.constant(np.ones((2, 3))), ow.constant(np.ones((4, 3))),
    ...                   transpose_b=True)
    >>> y.shape
    TensorShape([Dimension(2), Dimension(4)])
    """
    flags = [
        _checks.check_bool(v, k, op="MatMul")
        for k, v in (
            ("transpose_a", transpose_a),
            ("adjoint_a", adjoint_a),
            ("transpose_b", transpose_b),
            ("adjoint_b", adjoint_b),
        )
    ]
    if flags[0] and flags[1]:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if flags[2] and flags[3]:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    ta, tb = flags[0] or flags[1], flags[2] or flags[3]
    x, y = _operands(a, b)
    rx, ry = _rank_of(x), _rank_of(y)
    if rx == 2 and ry == 2:
        return _MATMUL(x, y, transpose_a=ta, transpose_b=tb, name=name)  # type: ignore[no-any-return]
    return _BATCH_MATMUL(x, y, adj_x=ta, adj_y=tb, name=name or "MatMul")  # type: ignore[no-any-return]


def _rank_of(t: Any) -> int | None:
    if isinstance(t, Tensor):
        return None if t._shape is None else len(t._shape)
    return int(np.ndim(t))


# -- range and permutations ----------------------------------------------------------------------


def _range_shape(ctx: ShapeContext) -> Shape:
    vals = [ctx.value(i) for i in builtins.range(3)]
    if any(v is None for v in vals):
        return (None,)
    start, limit, delta = (v.item() for v in vals)  # type: ignore[union-attr]
    if delta == 0:
        raise ctx.error("Requires delta != 0")
    n = builtins.max(0, math.ceil((limit - start) / delta))
    return (n,)


@op(
    "Range",
    inputs=["start: Tidx", "limit: Tidx", "delta: Tidx"],
    outputs=["output: Tidx"],
    types={"Tidx": frozenset({int32, float32, float64}) | INDEX},
    shape=_range_shape,
    not_differentiable=True,
    default_name="range",
)
def range_op(
    start: TensorLike, limit: TensorLike, delta: TensorLike, name: str | None = None
) -> Tensor:
    """The Range op: ``[start, start + delta, ...)`` up to ``limit`` (exclusive)."""


@public
def range(
    start: TensorLike,
    limit: TensorLike = None,
    delta: TensorLike = 1,
    dtype: Any = None,
    name: str | None = "range",
) -> Tensor:
    """``[start, start + delta, ...)`` up to ``limit`` (exclusive); ``range(n)`` is ``0..n-1``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.range(1, 10, 3)))
    [1 4 7]
    """
    if limit is None:
        start, limit = 0, start
    from ..dtypes import as_dtype, int64
    from ._op_def import _operand_dtype

    # The widest dtype among the arguments (int32 < int64 < float32 < float64), as TensorFlow.
    order = [int32, int64, float32, float64]
    given = [_operand_dtype(v) for v in (start, limit, delta)]
    if dtype is not None:
        target = as_dtype(dtype)
    elif any(d is not None for d in given):
        target = builtins.max((d for d in given if d is not None), key=order.index)
    else:
        floats = any(isinstance(v, (float, np.floating)) for v in (start, limit, delta))
        target = float32 if floats else int32
    args = [
        (cast(v, target) if isinstance(v, Tensor) else np.asarray(v).astype(target.as_numpy_dtype))
        for v in (start, limit, delta)
    ]
    return range_op(args[0], args[1], args[2], name=name)


@op(
    "InvertPermutation",
    inputs=["x: T"],
    types={"T": INDEX},
    not_differentiable=True,
)
def invert_permutation(x: TensorLike, name: str | None = None) -> Tensor:
    """The inverse of the permutation ``x``: ``y[x[i]] = i``."""


# -- casts by name (TensorFlow 1) ----------------------------------------------------------------


@public
def to_float(x: TensorLike, name: str | None = "ToFloat") -> Tensor:
    """``cast(x, float32)``."""
    return cast(x, float32, name=name)


@public
def to_double(x: TensorLike, name: str | None = "ToDouble") -> Tensor:
    """``cast(x, float64)``."""
    return cast(x, float64, name=name)


@public
def to_int32(x: TensorLike, name: str | None = "ToInt32") -> Tensor:
    """``cast(x, int32)``."""
    return cast(x, int32, name=name)


@public
def to_int64(x: TensorLike, name: str | None = "ToInt64") -> Tensor:
    """``cast(x, int64)``."""
    from ..dtypes import int64

    return cast(x, int64, name=name)


# -- comparisons used by gradients (the full set is defined with the other element-wise ops) ----

_GREATER_EQUAL = OpDef(
    "GreaterEqual",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    types={"T": REALS},
    shape=broadcast_shape,
    not_differentiable=True,
)
_EQUAL = OpDef(
    "Equal",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    shape=broadcast_shape,
    not_differentiable=True,
)
_LESS_EQUAL = OpDef(
    "LessEqual",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    types={"T": REALS},
    shape=broadcast_shape,
    not_differentiable=True,
)


_NOT_EQUAL = OpDef(
    "NotEqual",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    shape=broadcast_shape,
    not_differentiable=True,
)
_LESS = OpDef(
    "Less",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    types={"T": REALS},
    shape=broadcast_shape,
    not_differentiable=True,
)
_GREATER = OpDef(
    "Greater",
    inputs=["x: T", "y: T"],
    outputs=["z: bool"],
    types={"T": REALS},
    shape=broadcast_shape,
    not_differentiable=True,
)


@memoizable
@public
def not_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x != y`` element-wise, with broadcasting (a bool tensor; NaN differs from everything).

    The ``!=`` operator on tensors stays Python's identity comparison, as in TensorFlow 1
    (tensors are dictionary keys).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.not_equal(np.array([1, 2]), np.array([1, 3]))
    array([False,  True])
    """
    return _NOT_EQUAL(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def less(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x < y`` element-wise, with broadcasting (a bool tensor; the ``<`` operator).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.less(np.array([1.0, 2.0]), 1.5)
    array([ True, False])
    """
    return _LESS(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def greater(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x > y`` element-wise, with broadcasting (a bool tensor; the ``>`` operator).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.greater(np.array([1.0, 2.0]), 1.5)
    array([False,  True])
    """
    return _GREATER(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def greater_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x >= y`` element-wise, with broadcasting (a bool tensor)."""
    return _GREATER_EQUAL(x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x == y`` element-wise, with broadcasting (a bool tensor; strings compare as bytes)."""
    return _EQUAL(x, y, name=name)  # type: ignore[no-any-return]


def _select_v2_shape(ctx: ShapeContext) -> Shape:
    return broadcast_shapes(broadcast_shapes(ctx.shape(0), ctx.shape(1), ctx), ctx.shape(2), ctx)


def _select_v2_grad(op_: Operation, grad: Tensor) -> list[Any]:
    c, x, y = op_.inputs
    zeros = zeros_like_op(grad)
    gx, gy = select_v2(c, grad, zeros), select_v2(c, zeros, grad)
    return [None, unbroadcast(gx, x), unbroadcast(gy, y)]


_SELECT_V2 = OpDef(
    "SelectV2",
    inputs=["condition: bool", "t: T", "e: T"],
    shape=_select_v2_shape,
    grad=_select_v2_grad,
)


@memoizable
@public
def select_v2(
    condition: TensorLike, x: TensorLike, y: TensorLike, name: str | None = None
) -> Tensor:
    """``x`` where ``condition`` else ``y``, all three broadcast together."""
    return _SELECT_V2(condition, x, y, name=name)  # type: ignore[no-any-return]


@memoizable
@public
def less_equal(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x <= y`` element-wise, with broadcasting (a bool tensor)."""
    return _LESS_EQUAL(x, y, name=name)  # type: ignore[no-any-return]


# -- Python operators ----------------------------------------------------------------------------

register_operator("__add__", lambda a, b: add(a, b, name="add"))
register_operator("__sub__", lambda a, b: subtract(a, b, name="sub"))
register_operator("__mul__", lambda a, b: multiply(a, b, name="mul"))
register_operator("__truediv__", lambda a, b: truediv(a, b, name="truediv"))
register_operator("__floordiv__", lambda a, b: floordiv(a, b, name="floordiv"))
register_operator("__matmul__", lambda a, b: matmul(a, b, name="MatMul"))
register_operator("__neg__", lambda a: negative(a, name="Neg"))
register_operator("__ge__", lambda a, b: greater_equal(a, b, name="GreaterEqual"))
register_operator("__le__", lambda a, b: less_equal(a, b, name="LessEqual"))
register_operator("__lt__", lambda a, b: less(a, b, name="Less"))
register_operator("__gt__", lambda a, b: greater(a, b, name="Greater"))
register_operator("__mod__", lambda a, b: floormod(a, b, name="mod"))
register_operator("__pow__", lambda a, b: pow(a, b, name="pow"))


# -- the other math families (opweave.* and opweave.compat.v1 take their names from here) ------

from . import logic_ops as _logic_ops  # noqa: E402
from . import math_reduce as _math_reduce  # noqa: E402
from . import math_unary as _math_unary  # noqa: E402
from .logic_ops import *  # noqa: E402, F403
from .math_reduce import *  # noqa: E402, F403
from .math_unary import *  # noqa: E402, F403

__all__ += _math_unary.__all__
__all__ += _logic_ops.__all__
__all__ += _math_reduce.__all__
