"""``opweave.random``: TensorFlow 1's ``tf.random`` namespace.

The same functions as the top-level names (``random.normal`` is :func:`opweave.random_normal`,
``random.shuffle`` :func:`opweave.random_shuffle`, ...), plus ``categorical``.

>>> import opweave as ow
>>> ow.random.normal is ow.random_normal
True
"""

from __future__ import annotations

from .ops.random_ops import (
    categorical,
    get_seed,
    multinomial,
    random_shuffle,
    set_random_seed,
    truncated_normal,
)
from .ops.random_ops import random_normal as normal
from .ops.random_ops import random_uniform as uniform

shuffle = random_shuffle

__all__ = [
    "categorical",
    "get_seed",
    "multinomial",
    "normal",
    "set_random_seed",
    "shuffle",
    "truncated_normal",
    "uniform",
]
