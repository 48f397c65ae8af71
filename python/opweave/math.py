"""``opweave.math``: TensorFlow's ``tf.math`` namespace, the same functions as at the top level
(every element-wise unary op of ``ops/math_unary.py`` by its ``__all__``, so a new one needs no
entry here, except ``inv``: TensorFlow's ``Inv`` has no ``tf.math`` name).

>>> import opweave as ow
>>> ow.math.sqrt is ow.sqrt
True
"""

from __future__ import annotations

from .ops import math_unary as _math_unary
from .ops.math_ops import (
    add,
    add_n,
    argmax,
    argmin,
    cumprod,
    cumsum,
    divide,
    equal,
    exp,
    floordiv,
    floormod,
    greater,
    greater_equal,
    invert_permutation,
    less,
    less_equal,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    pow,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    sigmoid,
    squared_difference,
    subtract,
    tanh,
    truediv,
)
from .ops.math_unary import *  # noqa: F403  (the element-wise unary ops)

__all__ = [
    "add",
    "add_n",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "divide",
    "equal",
    "exp",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "invert_permutation",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "not_equal",
    "pow",
    "reduce_all",
    "reduce_any",
    "reduce_logsumexp",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "sigmoid",
    "squared_difference",
    "subtract",
    "tanh",
    "truediv",
]
__all__ += [name for name in _math_unary.__all__ if name != "inv"]
del inv  # noqa: F821  (from the star import above)
