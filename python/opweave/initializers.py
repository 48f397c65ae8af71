"""``opweave.initializers``: TensorFlow 1's ``tf.initializers`` namespace.

The initializer classes of :mod:`opweave.ops.init_ops` under their short names
(``initializers.zeros`` is :class:`~opweave.zeros_initializer`, ``initializers.glorot_uniform``
:class:`~opweave.glorot_uniform_initializer`, ...), the He and LeCun shorthands, and
``global_variables`` / ``local_variables`` / ``variables`` / ``tables_initializer`` (the ops that
initialize variables) when opweave defines ``global_variables_initializer`` and friends.

>>> import opweave as ow
>>> ow.initializers.zeros is ow.zeros_initializer
True
"""

from __future__ import annotations

import importlib
from typing import Any

from .ops import init_ops as _init_ops

constant = _init_ops.constant_initializer
glorot_normal = _init_ops.glorot_normal_initializer
glorot_uniform = _init_ops.glorot_uniform_initializer
he_normal = _init_ops.he_normal
he_uniform = _init_ops.he_uniform
identity = _init_ops.identity_initializer
lecun_normal = _init_ops.lecun_normal
lecun_uniform = _init_ops.lecun_uniform
ones = _init_ops.ones_initializer
orthogonal = _init_ops.orthogonal_initializer
random_normal = _init_ops.random_normal_initializer
random_uniform = _init_ops.random_uniform_initializer
truncated_normal = _init_ops.truncated_normal_initializer
uniform_unit_scaling = _init_ops.uniform_unit_scaling_initializer
variance_scaling = _init_ops.variance_scaling_initializer
zeros = _init_ops.zeros_initializer

__all__ = [
    "constant",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "identity",
    "lecun_normal",
    "lecun_uniform",
    "ones",
    "orthogonal",
    "random_normal",
    "random_uniform",
    "truncated_normal",
    "uniform_unit_scaling",
    "variance_scaling",
    "zeros",
]

# The variable initializers live with the variables; looked up on use, so this module does not
# depend on them.
_VARIABLE_INITIALIZERS = {
    "global_variables": "global_variables_initializer",
    "local_variables": "local_variables_initializer",
    "variables": "variables_initializer",
    "tables_initializer": "tables_initializer",
}


def __getattr__(name: str) -> Any:
    target = _VARIABLE_INITIALIZERS.get(name)
    if target is not None:
        value = getattr(importlib.import_module("opweave"), target, None)
        if value is not None:
            return value
    raise AttributeError(f"module 'opweave.initializers' has no attribute {name!r}")
