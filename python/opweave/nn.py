"""``opweave.nn``: neural-network ops, TensorFlow's ``tf.nn``.

>>> import opweave as ow
>>> ow.nn.relu is ow.relu
True
"""

from __future__ import annotations

from .ops import nn_conv, nn_losses, nn_ops
from .ops.nn_conv import *  # noqa: F403
from .ops.nn_losses import *  # noqa: F403
from .ops.nn_ops import *  # noqa: F403
from .ops.random_ops import dropout

__all__ = [*nn_ops.__all__, *nn_losses.__all__, "dropout", *nn_conv.__all__]
