"""Pieces shared by the gradient functions of several ops: reshaping a reduction's gradient back
to its input's shape, counting reduced elements, routing a max/min gradient to the winners."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import INDEX
from ..framework import Operation, Shape, Tensor
from ._op_def import OpDef, ShapeContext, constant_value

__all__ = ["broadcast_to_input", "max_min_reduce_grad", "reduced_shape", "reduction_count"]


def _reduced_shape_shape(ctx: ShapeContext) -> Shape:
    return ctx.shape(0)


_REDUCED_SHAPE = OpDef(
    "ReducedShape",
    inputs=["input_shape: T", "axes: T"],
    types={"T": INDEX},
    shape=_reduced_shape_shape,
    not_differentiable=True,
)


def reduced_shape(x: Tensor, axes: Tensor) -> Any:
    """The shape of ``x`` with the ``axes`` set to 1: static when known, else computed."""
    from .array_ops import shape
    from .math_ops import add, multiply

    s, a = x._shape, constant_value(axes)
    if s is not None and a is not None:
        rank = len(s)
        norm = {int(v) % rank for v in a.reshape(-1)} if rank else set()
        dims = [1 if i in norm else d for i, d in enumerate(s)]
        if None not in dims:
            return np.array(dims, dtype=np.int32)
        # A known rank and constant axes (a batch of unknown size): shape(x) * kept + reduced,
        # ops TensorFlow has too, so that a training graph exported to TensorFlow imports there.
        kept = np.array([0 if i in norm else 1 for i in range(rank)], dtype=np.int32)
        return add(multiply(shape(x), kept), 1 - kept)
    return _REDUCED_SHAPE(shape(x), axes)


def broadcast_to_input(op_: Operation, grad: Tensor) -> Tensor:
    """A reduction's gradient reshaped (reduced axes as 1) and broadcast to its input's shape."""
    from .array_ops import broadcast_to, reshape, shape

    x, axes = op_.inputs
    if not op_.attrs.get("keep_dims", False):
        grad = reshape(grad, reduced_shape(x, axes))
    if x._shape is not None and grad._shape == x._shape and None not in x._shape:
        return grad
    return broadcast_to(grad, shape(x))


def reduction_count(op_: Operation) -> Any:
    """How many input elements each output element of a reduction combines."""
    from .array_ops import size
    from .math_ops import floordiv, maximum

    x, y = op_.inputs[0], op_.outputs[0]
    if x._shape is not None and y._shape is not None and None not in x._shape + y._shape:
        n_in = math.prod(d for d in x._shape if d is not None)
        n_out = math.prod(d for d in y._shape if d is not None)
        return np.array(n_in // max(n_out, 1), dtype=np.int32)
    return floordiv(size(x), maximum(size(y), 1))


def max_min_reduce_grad(op_: Operation, grad: Tensor) -> Tensor:
    """Max / Min: the gradient is shared equally by the elements equal to the result."""
    from .array_ops import broadcast_to, cast, reshape, shape
    from .math_ops import equal, multiply, realdiv, reduce_sum

    x, axes = op_.inputs
    y = op_.outputs[0]
    keep = op_.attrs.get("keep_dims", False)
    if not keep:
        rs = reduced_shape(x, axes)
        y = reshape(y, rs)
        grad = reshape(grad, rs)
    indicators = cast(equal(broadcast_to(y, shape(x)), x), grad.dtype)
    count = reduce_sum(indicators, axes, keepdims=True)
    return multiply(realdiv(indicators, count), grad)
