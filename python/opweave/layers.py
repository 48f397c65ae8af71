"""``opweave.layers``: TensorFlow 1's ``tf.layers`` helpers that are plain reshapes.

:func:`flatten` is TensorFlow's ``tf.layers.flatten``: the batch dimension kept, the rest
flattened, its size known statically whenever the inner dimensions are (a convolution stack's
usual ``tf.reshape(h, [-1, 7 * 7 * 64])`` idiom works as well).

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     h = ow.placeholder(ow.float32, (None, 7, 7, 64))
...     ow.layers.flatten(h).shape
TensorShape([Dimension(None), Dimension(3136)])
"""

from __future__ import annotations

import math
from typing import Any

from .framework import Tensor
from .ops import _checks
from .ops._op_def import convert_to_tensor, public
from .ops.array_ops import expand_dims, reshape, shape, stack, transpose

__all__ = ["flatten"]


@public
def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """``inputs`` reshaped to ``[batch, -1]`` (a 1-D input becomes ``[batch, 1]``).

    ``data_format="channels_first"`` moves the channels last before flattening, as TensorFlow
    does, so the order of the flattened values does not depend on the layout.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.flatten(np.zeros((2, 3, 4))).shape
    (2, 12)
    """
    fmt = _checks.check_string(
        data_format, "data_format", op="flatten", allowed=("channels_last", "channels_first")
    )
    x = convert_to_tensor(inputs)
    dims = _static_shape(x)
    if dims is not None and len(dims) == 1:
        return expand_dims(x, 1, name=name)
    if fmt == "channels_first" and dims is not None and len(dims) > 2:
        x = transpose(x, [0, *range(2, len(dims)), 1])
        dims = [dims[0], *dims[2:], dims[1]]
    inner = [] if dims is None else [d for d in dims[1:] if d is not None]
    if dims is not None and len(inner) == len(dims) - 1 and math.prod(inner) > 0:
        return reshape(x, [-1, math.prod(inner)], name=name)
    return reshape(x, stack([shape(x)[0], -1]), name=name)


def _static_shape(x: Any) -> list[int | None] | None:
    if isinstance(x, Tensor):
        return None if x._shape is None else list(x._shape)
    return [int(d) for d in x.shape]
