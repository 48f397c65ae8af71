"""Neural-network ops: activations, losses, normalization (``opweave.nn``).

>>> import opweave as ow
>>> with ow.Graph().as_default(), ow.Session() as s:
...     print(s.run(ow.nn.relu([-1.0, 2.0])))
[0. 2.]
"""

from __future__ import annotations

from typing import Any

from ..dtypes import REALS
from ..framework import Operation, Tensor
from ._op_def import OpDef, broadcast_shape, op
from .math_ops import per_output_element, sigmoid, tanh

__all__ = ["relu", "sigmoid", "tanh"]

TensorLike = Any


_RELU_GRAD = OpDef(
    "ReluGrad",
    inputs=["gradients: T", "features: T"],
    outputs=["backprops: T"],
    types={"T": REALS},
    shape=broadcast_shape,
    flops=per_output_element,
)


def _relu_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [_RELU_GRAD(grad, op_.outputs[0])]


@op(
    "Relu",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": REALS},
    grad=_relu_grad,
    flops=per_output_element,
)
def relu(features: TensorLike, name: str | None = None) -> Tensor:
    """Rectified linear: ``max(features, 0)``; NaN stays NaN.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.nn.relu(ow.placeholder(ow.float32, (None, 4))).shape
    TensorShape([Dimension(None), Dimension(4)])
    """
