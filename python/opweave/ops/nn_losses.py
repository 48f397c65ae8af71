"""The softmax family and the losses (``opweave.nn``): softmax, log_softmax, the softmax,
sparse-softmax and sigmoid cross-entropies, weighted_cross_entropy_with_logits and l2_loss.

Softmax, log-softmax and the cross-entropies are each one numerically stable kernel (shifted by
the row maximum, through the log-sum-exp; the sigmoid cross-entropy as
``max(x, 0) - x * z + log1p(exp(-|x|))``), so logits of any finite size give finite results. The
rows are split over the intra-op pool, one thread per row: the same bits for any thread count.

>>> import opweave as ow
>>> with ow.Graph().as_default(), ow.Session() as s:
...     print(s.run(ow.nn.softmax([[1e4, 1e4]])))
[[0.5 0.5]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import FLOATS, INDEX
from ..errors import InvalidArgumentError
from ..framework import Operation, Shape, Tensor, name_scope
from . import _checks
from ._op_def import (
    OpDef,
    ShapeContext,
    convert_to_tensor,
    executing_eagerly,
    memoizable,
    op,
    public,
)
from .array_ops import cast, concat, expand_dims, rank, reshape, shape, stop_gradient, transpose
from .math_ops import (
    add,
    exp,
    multiply,
    negative,
    per_output_element,
    reduce_sum,
    sigmoid,
    subtract,
)
from .nn_ops import merge_shapes, merged_shape, softplus

__all__ = [
    "l2_loss",
    "log_softmax",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    "weighted_cross_entropy_with_logits",
]

TensorLike = Any


def _dtype_of(t: Any) -> Any:
    from ._op_def import _dtype_of as dtype_of

    return dtype_of(t)


def _static_shape(t: Any) -> Shape:
    """The shape known before the run (eager: the array's)."""
    if executing_eagerly():
        return tuple(np.shape(t))
    return t._shape  # type: ignore[no-any-return]


def _axis_lookup(axis: Any, dim: Any, default: Any) -> Any:
    """TensorFlow's ``deprecated_argument_lookup("axis", axis, "dim", dim)``."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    return default if axis is None and dim is None else axis if axis is not None else dim


def _is_zeros(t: Any) -> bool:
    """Whether ``t`` is the zeros ``gradients`` passes for an output nobody differentiates."""
    return isinstance(t, Tensor) and t.op.type == "ZerosLike"


# -- softmax / log_softmax -----------------------------------------------------------------------


def _rank_at_least_1(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    if s is not None and len(s) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    return s


def _softmax_grad(op_: Operation, grad: Tensor) -> list[Any]:
    # TensorFlow's: (grad - sum(grad * softmax)) * softmax, composed, so it differentiates again.
    y = op_.outputs[0]
    return [multiply(subtract(grad, reduce_sum(multiply(grad, y), -1, keepdims=True)), y)]


def _log_softmax_grad(op_: Operation, grad: Tensor) -> list[Any]:
    p = exp(op_.outputs[0])
    return [subtract(grad, multiply(reduce_sum(grad, -1, keepdims=True), p))]


_SOFTMAX = OpDef(
    "Softmax",
    inputs=["logits: T"],
    outputs=["softmax: T"],
    types={"T": FLOATS},
    shape=_rank_at_least_1,
    grad=_softmax_grad,
    flops=lambda i, o, a: per_output_element(i, o, a, 5),
)
_LOG_SOFTMAX = OpDef(
    "LogSoftmax",
    inputs=["logits: T"],
    outputs=["logsoftmax: T"],
    types={"T": FLOATS},
    shape=_rank_at_least_1,
    grad=_log_softmax_grad,
    flops=lambda i, o, a: per_output_element(i, o, a, 5),
)


def _swap_with_last(x: Any, axis: int, rank_: int, name: str | None = None) -> Any:
    perm = list(np.arange(rank_))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return transpose(x, perm, name=name)


def _softmax_along(op_def: OpDef, fn: str, logits: Any, axis: Any, name: str | None) -> Any:
    """TensorFlow's ``_wrap_2d_function``: the op on the last dimension, another ``axis`` swapped
    with the last one around it (``axis`` must then be in range of a known rank)."""
    axis = _checks.check_int(-1 if axis is None else axis, "axis", op=fn)
    name = _checks.check_name(name, op_def.type)
    x = convert_to_tensor(logits)
    s = _static_shape(x)
    if axis == -1 or (s is not None and axis == len(s) - 1):
        return op_def(x, name=name)
    if s is None:
        raise ValueError(f"{fn}: axis={axis} needs a known rank (only the last axis, -1, does not)")
    rank_ = len(s)
    if not -rank_ <= axis < rank_:
        raise InvalidArgumentError(
            None,
            None,
            f"Dimension ({axis}) must be in the range [{-rank_}, {rank_}) where {rank_} is the "
            "number of dimensions in the input.",
        )
    swapped = _swap_with_last(x, axis % rank_, rank_)
    return _swap_with_last(op_def(swapped), axis % rank_, rank_, name=name)


@memoizable
@public
def softmax(
    logits: TensorLike, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """``exp(logits) / sum(exp(logits), axis)``, shifted by the maximum so nothing overflows.

    Parameters
    ----------
    logits : Tensor
        float16, float32 or float64, rank >= 1.
    axis : int, optional
        The dimension to normalise (default: the last). ``dim`` is its TensorFlow 1 name.

    Raises
    ------
    opweave.errors.InvalidArgumentError
        For an ``axis`` outside ``[-rank, rank)``, as TensorFlow.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.softmax([[0.0, 0.0], [1000.0, 0.0]])))
    [[0.5 0.5]
     [1.  0. ]]
    """
    return _softmax_along(_SOFTMAX, "softmax", logits, _axis_lookup(axis, dim, None), name)  # type: ignore[no-any-return]


@memoizable
@public
def log_softmax(
    logits: TensorLike, axis: int | None = None, name: str | None = None, dim: int | None = None
) -> Tensor:
    """``logits - log(sum(exp(logits), axis))``, through the shifted log-sum-exp: finite for
    every finite input (``log(softmax(x))`` would give ``-inf`` where softmax underflows).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.log_softmax([[0.0, -1000.0]])))
    [[    0. -1000.]]
    """
    return _softmax_along(  # type: ignore[no-any-return]
        _LOG_SOFTMAX, "log_softmax", logits, _axis_lookup(axis, dim, None), name
    )


# -- softmax cross-entropy -----------------------------------------------------------------------


def _second_order(loss_grad: Any, backprop: Tensor, grad_grad: Any, logits: Tensor) -> Any:
    """The logits' gradient of a softmax cross-entropy: ``grad_loss * backprop``, plus, when the
    backprop output is itself differentiated, the softmax's derivative applied to that gradient
    (TensorFlow's second derivative)."""
    grad = multiply(expand_dims(loss_grad, -1), backprop)
    if grad_grad is not None and not _is_zeros(grad_grad):
        p = _SOFTMAX(logits)
        inner = reduce_sum(multiply(grad_grad, p), -1, keepdims=True)
        grad = add(grad, multiply(subtract(grad_grad, inner), p))
    return grad


def _xent_grad(op_: Operation, grad_loss: Tensor, grad_grad: Tensor | None) -> list[Any]:
    logits = op_.inputs[0]
    labels_grad = multiply(expand_dims(grad_loss, -1), negative(_LOG_SOFTMAX(logits)))
    if grad_grad is not None and not _is_zeros(grad_grad):
        # backprop = softmax(logits) - labels also depends on the labels (TensorFlow's gradient
        # leaves this term out, which makes its mixed second derivative wrong).
        labels_grad = subtract(labels_grad, grad_grad)
    return [_second_order(grad_loss, op_.outputs[1], grad_grad, logits), labels_grad]


def _xent_shape(ctx: ShapeContext) -> list[Shape]:
    a, b = ctx.shape(0), ctx.shape(1)
    for s in (a, b):
        if s is not None and len(s) != 2:
            raise ctx.error(f"Shape must be rank 2 but is rank {len(s)}")
    m = merge_shapes(ctx, a, b)
    if m is None:
        return [(None,), (None, None)]
    return [(m[0],), m]


_XENT = OpDef(
    "SoftmaxCrossEntropyWithLogits",
    inputs=["features: T", "labels: T"],
    outputs=["loss: T", "backprop: T"],
    types={"T": FLOATS},
    shape=_xent_shape,
    grad=_xent_grad,
    flops=lambda i, o, a: 8 * math.prod(i[0]) if i else None,
)


def _ensure_xent_args(fn: str, sentinel: Any, labels: Any, logits: Any) -> None:
    """TensorFlow 1's check that labels and logits were passed by name."""
    if sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _move_axis_to_end(x: Any, axis: int, rank_: int) -> Any:
    perm = [d for d in np.arange(rank_) if d != axis] + [axis]
    return transpose(x, perm)


def _flatten_outer_dims(x: Any) -> Any:
    """``x`` as a matrix ``[-1, last dimension]`` (a static shape where one is known)."""
    s = _static_shape(x)
    if s is not None and len(s) == 2:
        return x
    if s is not None and s[-1] is not None:
        return reshape(x, [-1, s[-1]])
    last = shape(x)[-1:] if s is not None else _last_dim(x)
    return reshape(x, concat([np.array([-1], np.int32), last], 0))


def _last_dim(x: Any) -> Any:
    """``shape(x)[-1:]`` for a tensor of unknown rank."""
    from .array_ops import slice as slice_

    r = rank(x)
    return slice_(shape(x), expand_dims(subtract(r, 1), 0), np.array([1], np.int32))


def _outer_shape(x: Any) -> Any:
    """``shape(x)[:-1]``: static when known, else computed."""
    s = _static_shape(x)
    if s is not None and None not in s[:-1]:
        return np.array(s[:-1], np.int32)
    if s is not None:
        return shape(x)[:-1]
    from .array_ops import slice as slice_

    return slice_(shape(x), np.array([0], np.int32), expand_dims(subtract(rank(x), 1), 0))


@public
def softmax_cross_entropy_with_logits_v2(
    labels: TensorLike,
    logits: TensorLike,
    axis: int | None = None,
    name: str | None = None,
    dim: int | None = None,
) -> Tensor:
    """The cross-entropy ``-sum(labels * log(softmax(logits)), axis)`` of each row, in one stable
    kernel; the gradient flows to both ``logits`` and ``labels``.

    Parameters
    ----------
    labels : Tensor
        A probability distribution along ``axis`` for each row (any real values are accepted and
        used as given), cast to ``logits``' dtype; same shape as ``logits``.
    logits : Tensor
        Unscaled log-probabilities, float16/32/64, rank >= 1.
    axis : int, optional
        The class dimension (default: the last); ``dim`` is its older name.

    Returns
    -------
    Tensor
        ``logits``' shape without ``axis``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.softmax_cross_entropy_with_logits_v2(
    ...         labels=[[0.0, 1.0]], logits=[[1e4, -1e4]])))
    [20000.]
    """
    axis = _checks.check_int(
        _axis_lookup(axis, dim, -1), "axis", op="softmax_cross_entropy_with_logits"
    )
    name = _checks.check_name(name, "softmax_cross_entropy_with_logits")
    x = convert_to_tensor(logits)
    z = convert_to_tensor(labels)
    if _dtype_of(z) is not _dtype_of(x):
        z = cast(z, _dtype_of(x))
    s = _static_shape(x)
    if s is not None and len(s) == 0:
        raise ValueError(f"{name}: logits cannot be scalars - received shape ()")
    if axis != -1 and not (s is not None and axis == len(s) - 1):
        if s is None:
            raise ValueError(
                f"{name}: axis={axis} needs logits of known rank (only the last axis, -1, does not)"
            )
        if not -len(s) <= axis < len(s):
            raise ValueError(f"{name}: axis {axis} is out of range for logits of rank {len(s)}")
        x = _move_axis_to_end(x, axis % len(s), len(s))
        z = _move_axis_to_end(z, axis % len(s), len(s))
        s = _static_shape(x)
    if s is not None and len(s) == 2:
        return _XENT(x, z, name=name).loss  # type: ignore[no-any-return]
    cost = _XENT(_flatten_outer_dims(x), _flatten_outer_dims(z)).loss
    out = reshape(cost, _outer_shape(x), name=name)
    if s is not None and not executing_eagerly():
        out.set_shape(s[:-1])
    return out


@public
def softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: TensorLike = None,
    logits: TensorLike = None,
    dim: int = -1,
    name: str | None = None,
    axis: int | None = None,
) -> Tensor:
    """TensorFlow 1's softmax cross-entropy: :func:`softmax_cross_entropy_with_logits_v2` with
    ``labels`` behind ``stop_gradient``, so no gradient reaches the labels.

    ``labels`` and ``logits`` must be passed by name (a positional argument is TensorFlow's
    ValueError); ``dim`` (default -1) or ``axis`` is the class dimension.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.nn.softmax_cross_entropy_with_logits([[0.0, 1.0]], [[1.0, 2.0]])
    Traceback (most recent call last):
    ...
    ValueError: Only call `softmax_cross_entropy_with_logits` with named arguments (labels=...
    """
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    axis = _axis_lookup(axis, None if dim == -1 else dim, -1)
    # TensorFlow 1's names: the labels' stop_gradient inside a scope named
    # softmax_cross_entropy_with_logits_sg, and the loss named after the scope.
    with name_scope(_checks.check_name(name, "softmax_cross_entropy_with_logits_sg")) as scope:
        z = stop_gradient(labels, name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(labels=z, logits=logits, axis=axis, name=scope)


# -- sparse softmax cross-entropy ----------------------------------------------------------------


def _sparse_xent_grad(op_: Operation, grad_loss: Tensor, grad_grad: Tensor | None) -> list[Any]:
    return [_second_order(grad_loss, op_.outputs[1], grad_grad, op_.inputs[0]), None]


def _sparse_xent_shape(ctx: ShapeContext) -> list[Shape]:
    a, b = ctx.shape(0), ctx.shape(1)
    if a is not None and len(a) != 2:
        raise ctx.error(f"Shape must be rank 2 but is rank {len(a)}")
    if b is not None and len(b) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(b)}")
    batch = merge_shapes(ctx, None if a is None else a[:1], b)
    n = None if a is None else a[1]
    rows = None if batch is None else batch[0]
    return [(rows,), (rows, n)]


_SPARSE_XENT = OpDef(
    "SparseSoftmaxCrossEntropyWithLogits",
    inputs=["features: T", "labels: Tlabels"],
    outputs=["loss: T", "backprop: T"],
    types={"T": FLOATS, "Tlabels": INDEX},
    shape=_sparse_xent_shape,
    grad=_sparse_xent_grad,
    flops=lambda i, o, a: 6 * math.prod(i[0]) if i else None,
)


@public
def sparse_softmax_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: TensorLike = None,
    logits: TensorLike = None,
    name: str | None = None,
) -> Tensor:
    """The softmax cross-entropy of each row against the class index ``labels`` names:
    ``log(sum(exp(logits))) - logits[label]``, in one stable kernel.

    Parameters
    ----------
    labels : Tensor
        int32 or int64 class indices, ``logits``' shape without the last dimension; each must be
        in ``[0, classes)``: one outside is an InvalidArgumentError naming it.
    logits : Tensor
        float16/32/64 of rank >= 1, the classes last.

    ``labels`` and ``logits`` must be passed by name. The gradient flows to ``logits`` (the
    labels are integers).

    Raises
    ------
    ValueError
        For a scalar ``logits``, or ``labels`` whose rank or shape does not fit (TensorFlow's
        messages).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.sparse_softmax_cross_entropy_with_logits(
    ...         labels=[0], logits=[[0.0, 0.0]])))
    [0.6931472]
    """
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    name = _checks.check_name(name, "SparseSoftmaxCrossEntropyWithLogits")
    x = convert_to_tensor(logits)
    y = convert_to_tensor(labels)
    xs, ys = _static_shape(x), _static_shape(y)
    if xs is not None and len(xs) == 0:
        raise ValueError(f"Logits cannot be scalars - received shape {_fmt(xs)}.")
    if xs is not None and ys is not None and len(ys) != len(xs) - 1:
        raise ValueError(
            f"Rank mismatch: Rank of labels (received {len(ys)}) should equal rank of logits "
            f"minus 1 (received {len(xs)})."
        )
    if (
        xs is not None
        and ys is not None
        and None not in ys
        and None not in xs[:-1]
        and tuple(ys) != tuple(xs[:-1])
    ):
        raise ValueError(
            f"Shape mismatch: The shape of labels (received {_fmt(ys)}) should equal the shape "
            f"of logits except for the last dimension (received {_fmt(xs)})."
        )
    if xs is not None and len(xs) == 2:
        return _SPARSE_XENT(x, y, name=name).loss  # type: ignore[no-any-return]
    labels_shape = np.array(ys, np.int32) if ys is not None and None not in ys else shape(y)
    cost = _SPARSE_XENT(_flatten_outer_dims(x), reshape(y, [-1])).loss
    out = reshape(cost, labels_shape, name=name)
    if ys is not None and not executing_eagerly():
        out.set_shape(ys)
    return out


def _fmt(s: Shape) -> str:
    from ..tensor_shape import TensorShape

    return str(TensorShape(s))


# -- sigmoid and weighted cross-entropy ----------------------------------------------------------


def _sigmoid_xent_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, z = op_.inputs
    return [multiply(grad, subtract(sigmoid(x), z)), multiply(grad, negative(x))]


_SIGMOID_XENT = OpDef(
    "SigmoidCrossEntropyWithLogits",
    inputs=["logits: T", "labels: T"],
    outputs=["loss: T"],
    types={"T": FLOATS},
    shape=merged_shape,
    grad=_sigmoid_xent_grad,
    flops=lambda i, o, a: per_output_element(i, o, a, 40),
    default_name="logistic_loss",
)


@public
def sigmoid_cross_entropy_with_logits(
    _sentinel: Any = None,
    labels: TensorLike = None,
    logits: TensorLike = None,
    name: str | None = None,
) -> Tensor:
    """The element-wise logistic loss ``-z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x))`` for
    ``x = logits``, ``z = labels``, computed as ``max(x, 0) - x * z + log1p(exp(-|x|))`` in one
    kernel (no overflow, no ``log(0)``).

    ``labels`` and ``logits`` must be passed by name and have the same shape and dtype. The
    gradient flows to both.

    Raises
    ------
    ValueError
        "logits and labels must have the same shape ((2, 3) vs (2, 4))" and TensorFlow's other
        messages.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.sigmoid_cross_entropy_with_logits(
    ...         labels=[1.0, 0.0], logits=[1e4, 1e4])))
    [    0. 10000.]
    """
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    name = _checks.check_name(name, "logistic_loss")
    from ._op_def import _like, _operand_dtype

    x = convert_to_tensor(logits)
    z = (
        convert_to_tensor(labels)
        if _operand_dtype(labels) is not None
        else _like(labels, _dtype_of(x))
    )
    xs, zs = _static_shape(x), _static_shape(z)
    if xs is not None and zs is not None:
        compatible = len(xs) == len(zs) and all(
            a is None or b is None or a == b for a, b in zip(xs, zs, strict=True)
        )
        if not compatible:
            raise ValueError(
                f"logits and labels must have the same shape ({_fmt(xs)} vs {_fmt(zs)})"
            )
    return _SIGMOID_XENT(x, z, name=name)  # type: ignore[no-any-return]


@public
def weighted_cross_entropy_with_logits(
    labels: TensorLike = None,
    logits: TensorLike = None,
    pos_weight: TensorLike = None,
    name: str | None = None,
    targets: TensorLike = None,
) -> Tensor:
    """The logistic loss with the positive term weighted by ``pos_weight``:
    ``(1 - z) x + (1 + (pos_weight - 1) z) * log(1 + exp(-x))``, the last factor as the stable
    ``softplus(-x)``. ``targets`` is TensorFlow 1's older name of ``labels``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.weighted_cross_entropy_with_logits(
    ...         labels=[1.0], logits=[0.0], pos_weight=2.0)))
    [1.3862944]
    """
    if labels is not None and targets is not None:
        raise ValueError("Cannot specify both 'labels' and 'targets'")
    z = labels if labels is not None else targets
    if z is None or logits is None or pos_weight is None:
        raise ValueError("labels, logits and pos_weight must all be provided")
    name = _checks.check_name(name, "logistic_loss")
    from ._op_def import _like, _operand_dtype

    x = convert_to_tensor(logits)
    dt = _dtype_of(x)
    z = convert_to_tensor(z) if _operand_dtype(z) is not None else _like(z, dt)
    w = (
        convert_to_tensor(pos_weight)
        if _operand_dtype(pos_weight) is not None
        else _like(pos_weight, dt)
    )
    log_weight = add(1.0, multiply(subtract(w, 1.0), z))
    return add(
        multiply(subtract(1.0, z), x), multiply(log_weight, softplus(negative(x))), name=name
    )


# -- l2_loss -------------------------------------------------------------------------------------


@op(
    "L2Loss",
    inputs=["t: T"],
    outputs=["output: T"],
    types={"T": FLOATS},
    shape=lambda ctx: (),
    grad=lambda op_, grad: [multiply(op_.inputs[0], grad)],
    flops=lambda i, o, a: 2 * math.prod(i[0]) if i else None,
)
def l2_loss(t: TensorLike, name: str | None = None) -> Tensor:
    """``sum(t ** 2) / 2``: half the squared L2 norm, a scalar (the same bits for any thread
    count: fixed blocks, a fixed combining tree).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.l2_loss([3.0, 4.0])))
    12.5
    """
