"""``opweave.compat.v1``: TensorFlow 1's API, which is opweave's own.

A program written for ``tf.compat.v1`` runs with ``import opweave.compat.v1 as tf``. Every name of
the ``opweave`` package is available here; the TensorFlow 2 switches such programs call first
(``disable_eager_execution``, ``disable_v2_behavior``) are accepted and do nothing, since opweave
always builds graphs.

>>> import opweave.compat.v1 as tf
>>> tf.disable_v2_behavior()
>>> with tf.Graph().as_default():
...     tf.nn.relu(tf.constant([-1.0, 1.0])).op.type
'Relu'
"""

from __future__ import annotations

import builtins
from typing import Any

import opweave as _opweave
from opweave import *  # noqa: F403

__all__ = [
    *_opweave.__all__,
    "disable_eager_execution",
    "disable_v2_behavior",
    "enable_v2_behavior",
    "executing_eagerly_outside_functions",
]


def disable_eager_execution() -> None:
    """Accepted for TensorFlow compatibility: opweave always builds graphs."""


def disable_v2_behavior() -> None:
    """Accepted for TensorFlow compatibility: opweave has TensorFlow 1's behaviour."""


def enable_v2_behavior() -> None:
    """Not supported: opweave implements TensorFlow 1's graph API."""
    raise NotImplementedError(
        "opweave implements TensorFlow 1's graph API (Graph, Session.run); TensorFlow 2's "
        "eager behaviour is not available"
    )


def executing_eagerly_outside_functions() -> builtins.bool:
    """False: opweave builds graphs."""
    return False


def __getattr__(name: str) -> Any:
    """Submodules and names added to ``opweave`` after this module was imported."""
    try:
        return getattr(_opweave, name)
    except AttributeError:
        raise AttributeError(f"module 'opweave.compat.v1' has no attribute {name!r}") from None
