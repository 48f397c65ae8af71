"""More reductions and scans: reduce_prod, reduce_any, reduce_all, reduce_logsumexp, argmax /
argmin (and TensorFlow 1's arg_max / arg_min), cumsum and cumprod.

The reductions take TensorFlow 1's arguments as :func:`opweave.reduce_sum` does (``axis`` or
``reduction_indices``, ``keepdims`` or ``keep_dims``); every kernel gives the same bits for any
thread count.

>>> import numpy as np
>>> import opweave as ow
>>> ow.kernels.argmax(np.array([[1, 5, 5], [7, 2, 7]]), axis=1)
array([1, 0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import INDEX, REALS, DType, as_dtype, bool_, int16, int32, int64
from ..framework import Operation, Shape, Tensor
from . import _checks, _grad_util
from ._op_def import (
    Attr,
    ShapeContext,
    constant_value,
    executing_eagerly,
    memoizable,
    op,
    public,
)
from .math_ops import (
    TensorLike,
    _reduction,
    _reduction_args,
    add,
    exp,
    multiply,
    per_input_element,
    reduce_max,
    reduce_sum,
    select_v2,
    subtract,
)

__all__: list[str] = [
    "arg_max",
    "arg_min",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "reduce_all",
    "reduce_any",
    "reduce_logsumexp",
    "reduce_prod",
]


# -- reduce_prod, reduce_any, reduce_all ---------------------------------------------------------


def _prod_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """TensorFlow's: the product of all the other elements of each reduced slice, from exclusive
    cumulative products from both ends (right where the input has zeros)."""
    from .array_ops import gather, reshape, shape, transpose

    x, axes = op_.inputs
    g = _grad_util.broadcast_to_input(op_, grad)
    s, axes_v = x._shape, constant_value(axes)
    if s is not None and axes_v is not None:
        rank = len(s)
        reduced = sorted({int(a) % rank for a in axes_v.reshape(-1)}) if rank else []
        if not reduced:
            return [g, None]
        if len(reduced) == 1:  # one axis: the cumulative products run along it directly
            a = reduced[0]
            left = cumprod(x, a, exclusive=True)
            right = cumprod(x, a, exclusive=True, reverse=True)
            return [multiply(g, multiply(left, right)), None]
        other = [i for i in range(rank) if i not in reduced]
        perm: Any = np.array(reduced + other, np.int32)
        inverse: Any = np.argsort(perm).astype(np.int32)
        if all(d is not None for d in s):
            reduced_num: Any = math.prod(s[i] for i in reduced)
        else:
            reduced_num = reduce_prod(gather(shape(x), np.array(reduced, np.int32)))
    else:
        perm, inverse, reduced_t = _dynamic_perm(x, axes)
        reduced_num = reduce_prod(gather(shape(x), reduced_t))
    permuted = transpose(x, perm)
    permuted_shape = shape(permuted)
    flat = reshape(permuted, [reduced_num, -1])
    left = cumprod(flat, 0, exclusive=True)
    right = cumprod(flat, 0, exclusive=True, reverse=True)
    y = reshape(multiply(left, right), permuted_shape)
    return [reshape(multiply(g, transpose(y, inverse)), shape(x)), None]


def _dynamic_perm(x: Tensor, axes: Tensor) -> tuple[Any, Any, Any]:
    """The permutation putting the reduced axes first, its inverse, and the reduced axes, for a
    rank or axes known only at run time (TensorFlow's graph, without its ListDiff op)."""
    from .array_ops import cast, concat, expand_dims, gather, rank, reshape
    from .logic_ops import where
    from .math_ops import equal, floormod, invert_permutation
    from .math_ops import range as range_
    from .math_unary import logical_not

    r = rank(x)
    reduced = floormod(add(cast(reshape(axes, [-1]), int32), r), r)
    idx = range_(0, r)
    is_reduced = reduce_any(equal(expand_dims(idx, 1), expand_dims(reduced, 0)), axis=1)
    other = gather(idx, reshape(cast(where(logical_not(is_reduced)), int32), [-1]))
    perm = concat([reduced, other], 0)
    return perm, invert_permutation(perm), reduced


@memoizable
@op("Prod", **_reduction(REALS, _prod_grad))
def reduce_prod(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Product over ``axis`` (every axis when None); 1 over an empty axis; integers wrap.

    The gradient is TensorFlow's: each element gets the product of the others in its slice,
    computed without dividing, so zeros in the input are handled.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.reduce_prod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0)
    array([3., 8.])
    """
    return _reduction_args(  # type: ignore[return-value]
        "reduce_prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


@memoizable
@op("Any", **_reduction(None))
def reduce_any(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Logical or over ``axis`` of a bool tensor (False over an empty axis).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.reduce_any(np.array([[True, False], [False, False]]), axis=1)
    array([ True, False])
    """
    return _reduction_args(  # type: ignore[return-value]
        "reduce_any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


@memoizable
@op("All", **_reduction(None))
def reduce_all(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """Logical and over ``axis`` of a bool tensor (True over an empty axis).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.reduce_all(np.array([[True, False], [True, True]]), axis=1)
    array([False,  True])
    """
    return _reduction_args(  # type: ignore[return-value]
        "reduce_all", input_tensor, axis, keepdims, name, reduction_indices, keep_dims
    )


@public
def reduce_logsumexp(
    input_tensor: TensorLike,
    axis: Any = None,
    keepdims: bool | None = None,
    name: str | None = None,
    reduction_indices: Any = None,
    keep_dims: bool | None = None,
) -> Tensor:
    """``log(sum(exp(input_tensor)))`` over ``axis``, without overflow: TensorFlow's graph.

    The maximum of each slice is subtracted before the exponentials and added back after the log
    (where it is finite: a slice of -inf gives -inf, one holding +inf gives +inf, an empty slice
    -inf, NaN propagates). The gradient flows through the exponentials (softmax), not through
    the shift, as in TensorFlow.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.reduce_logsumexp(np.array([[0.0, 0.0], [10.0, 10.0]]), axis=1)
    array([ 0.69314718, 10.69314718])
    """
    from ..framework import get_default_graph
    from .array_ops import reshape, shape, stop_gradient, zeros_like
    from .math_unary import is_finite, log

    if axis is not None and reduction_indices is not None:
        raise ValueError("reduce_logsumexp: cannot specify both 'axis' and 'reduction_indices'")
    if keepdims is not None and keep_dims is not None:
        raise ValueError("reduce_logsumexp: cannot specify both 'keepdims' and 'keep_dims'")
    axis = axis if axis is not None else reduction_indices
    keep = keepdims if keepdims is not None else keep_dims
    keep = False if keep is None else _checks.check_bool(keep, "keepdims", op="reduce_logsumexp")

    def build(x: Any) -> Tensor:
        raw_max = reduce_max(x, axis, keepdims=True)
        if isinstance(raw_max, np.ndarray) and raw_max.dtype.kind == "f":
            # Eager: the shift is exact NumPy work (a select and a reshape, no rounding), the
            # values the ops below give, without an eager call for each of five small ops.
            shift = np.where(np.isfinite(raw_max), raw_max, np.zeros_like(raw_max))
            total = log(reduce_sum(exp(subtract(x, shift)), axis, keepdims=keep))
            return add(total, shift if keep else shift.reshape(np.shape(total)))
        my_max = stop_gradient(select_v2(is_finite(raw_max), raw_max, zeros_like(raw_max)))
        result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=keep))
        if not keep:
            my_max = reshape(my_max, shape(result))
        return add(result, my_max)

    if executing_eagerly():
        return build(input_tensor)
    name = _checks.check_name(name, "ReduceLogSumExp")
    with get_default_graph().name_scope(name):
        from ._op_def import convert_to_tensor

        return build(convert_to_tensor(input_tensor))


# -- argmax / argmin -----------------------------------------------------------------------------


def _arg_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    ds = ctx.shape(1)
    if ds is not None and len(ds) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(ds)}")
    d = ctx.value(1)
    if s is None:
        return None
    rank = len(s)
    if d is None:
        return (None,) * max(rank - 1, 0)
    a = int(d)
    if not -rank <= a < rank:
        raise ctx.error(f"Expected dimension in the range [{-rank}, {rank}), but got {a}")
    a %= rank
    return s[:a] + s[a + 1 :]


def _arg_flops(inputs: Sequence[Sequence[int]], outputs: Any, attrs: Mapping[str, Any]) -> Any:
    return math.prod(inputs[0]) if inputs else None


def _arg(out_types: frozenset[DType]) -> dict[str, Any]:
    return {
        "inputs": ["input: T", "dimension: Tidx"],
        "outputs": ["output: output_type"],
        "attrs": {"output_type": Attr("type", int64)},
        "types": {"T": REALS | {bool_}, "Tidx": INDEX, "output_type": out_types},
        "shape": _arg_shape,
        "flops": _arg_flops,
        "not_differentiable": True,
    }


def _arg_args(
    fn: str,
    input: TensorLike,
    axis: Any,
    name: str | None,
    dimension: Any,
    output_type: Any,
    allowed: frozenset[DType],
) -> dict[str, Any]:
    """TensorFlow 1's argmax arguments: ``axis`` or its old name ``dimension`` (default 0)."""
    if axis is not None and dimension is not None:
        raise ValueError(f"{fn}: cannot specify both 'axis' and 'dimension'")
    axis = axis if axis is not None else dimension
    if axis is None:
        axis = 0
    if not isinstance(axis, (Tensor, np.ndarray)):
        axis = _checks.check_int(axis, "axis", op=fn)
    out = as_dtype(output_type)
    if out not in allowed:
        names = ", ".join(d.name for d in (int16, int32, int64) if d in allowed)
        raise TypeError(
            f"Value passed to parameter 'output_type' has DataType {out.name} not in list of "
            f"allowed values: {names}"
        )
    return {"input": input, "dimension": axis, "output_type": out, "name": name}


_ARGMAX_TYPES = frozenset({int16, int32, int64})
_ARGMIN_TYPES = frozenset({int32, int64})


@memoizable
@op("ArgMax", **_arg(_ARGMAX_TYPES))
def argmax(
    input: TensorLike,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = int64,
) -> Tensor:
    """The index of the largest value along ``axis`` (default 0; ``dimension`` is its old name).

    The first index wins a tie. As TensorFlow's CPU kernel, NaN never wins and a slice in which
    nothing is larger than the lowest value (all NaN, all -inf) gives 0. ``output_type`` is
    int64 (default), int32 or int16.

    Raises
    ------
    ValueError
        For an axis out of range (at build time when it is known), or both ``axis`` and
        ``dimension``.

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.argmax(np.array([3.0, np.nan, 3.0, 1.0]))
    array(0)
    """
    return _arg_args(  # type: ignore[return-value]
        "argmax", input, axis, name, dimension, output_type, _ARGMAX_TYPES
    )


@memoizable
@op("ArgMin", **_arg(_ARGMIN_TYPES))
def argmin(
    input: TensorLike,
    axis: Any = None,
    name: str | None = None,
    dimension: Any = None,
    output_type: Any = int64,
) -> Tensor:
    """The index of the smallest value along ``axis`` (default 0; ``dimension`` is its old name).

    The first index wins a tie; NaN never wins, as in :func:`argmax`. ``output_type`` is int64
    (default) or int32.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.argmin(np.array([[4, 1], [0, 1]]), axis=0)
    array([1, 0])
    """
    return _arg_args(  # type: ignore[return-value]
        "argmin", input, axis, name, dimension, output_type, _ARGMIN_TYPES
    )


@public
def arg_max(
    input: TensorLike, dimension: Any, output_type: Any = int64, name: str | None = None
) -> Tensor:
    """TensorFlow 1's ``arg_max``: :func:`argmax` along ``dimension``."""
    return argmax(input, axis=dimension, output_type=output_type, name=name)


@public
def arg_min(
    input: TensorLike, dimension: Any, output_type: Any = int64, name: str | None = None
) -> Tensor:
    """TensorFlow 1's ``arg_min``: :func:`argmin` along ``dimension``."""
    return argmin(input, axis=dimension, output_type=output_type, name=name)


# -- cumsum / cumprod ----------------------------------------------------------------------------


def _scan_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    ds = ctx.shape(1)
    if ds is not None and len(ds) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(ds)}")
    d = ctx.value(1)
    if s is not None and d is not None:
        rank = len(s)
        if not -rank <= int(d) < rank:
            raise ctx.error(
                f"ScanOp: Expected scan axis in the range [{-rank}, {rank}), but got {int(d)}"
            )
    return s


def _cumsum_grad(op_: Operation, grad: Tensor) -> list[Any]:
    axis = op_.inputs[1]
    exclusive, reverse = op_.attrs["exclusive"], op_.attrs["reverse"]
    return [cumsum(grad, axis, exclusive=exclusive, reverse=not reverse), None]


def _cumprod_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """TensorFlow 1's: cumsum of prod * grad the other way, divided by x (undefined at 0)."""
    from .math_ops import realdiv

    x, axis = op_.inputs
    exclusive, reverse = op_.attrs["exclusive"], op_.attrs["reverse"]
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(multiply(prod, grad), axis, exclusive=exclusive, reverse=not reverse)
    return [realdiv(out, x), None]


def _scan(grad: Any) -> dict[str, Any]:
    return {
        "inputs": ["x: T", "axis: Tidx"],
        "outputs": ["out: T"],
        "attrs": {"exclusive": Attr("bool", False), "reverse": Attr("bool", False)},
        "types": {"T": REALS, "Tidx": INDEX},
        "shape": _scan_shape,
        "grad": grad,
        "flops": per_input_element,
    }


@op("Cumsum", **_scan(_cumsum_grad))
def cumsum(
    x: TensorLike,
    axis: Any = 0,
    exclusive: bool = False,
    reverse: bool = False,
    name: str | None = None,
) -> Tensor:
    """Cumulative sum along ``axis``: ``exclusive`` leaves each element itself out (the first
    result is 0), ``reverse`` sums from the end. Integers wrap.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.cumsum(np.array([1, 2, 3]), exclusive=True, reverse=True)
    array([5, 3, 0])
    """


@op("Cumprod", **_scan(_cumprod_grad))
def cumprod(
    x: TensorLike,
    axis: Any = 0,
    exclusive: bool = False,
    reverse: bool = False,
    name: str | None = None,
) -> Tensor:
    """Cumulative product along ``axis``: ``exclusive`` leaves each element itself out (the first
    result is 1), ``reverse`` multiplies from the end. Integers wrap.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.cumprod(np.array([1.0, 2.0, 3.0]), exclusive=True)
    array([1., 1., 2.])
    """
