"""``opweave.nn``: neural-network ops, TensorFlow's ``tf.nn``.

>>> import opweave as ow
>>> ow.nn.relu is ow.relu
True
"""

from __future__ import annotations

from .ops.nn_ops import *  # noqa: F403
from .ops.nn_ops import __all__
from .ops.random_ops import dropout

__all__ = [*__all__, "dropout"]
