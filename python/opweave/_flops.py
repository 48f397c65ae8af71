"""Floating-point operation counts of opweave's ops, from the shapes a run saw.

Used for the ``flops`` of :class:`opweave.config.NodeExecStats` and the timeline's slice
arguments. Counts are the conventional ones: ``2*m*n*k`` multiply-adds for a matmul (per batch
entry), one per output element for element-wise ops (an ``exp`` counts as one), one per input
element for reductions, ``n - 1`` additions per element for ``add_n``. Ops that move data only
(reshape, transpose, cast, identity, constants) and Python functions have no count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

_ELEMENTWISE = frozenset(
    {"Add", "Sub", "Mul", "Div", "Maximum", "Neg", "Relu", "Exp", "Tanh", "Sigmoid"}
)
_REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min"})


def op_flops(
    op: str,
    attrs: Mapping[str, Any],
    input_shapes: Sequence[Sequence[int]],
    output_shapes: Sequence[Sequence[int]],
) -> int | None:
    """FLOPs of one execution of ``op``, or None when opweave has no count for it.

    >>> op_flops("MatMul", {"transpose_a": False}, [(4, 3), (3, 5)], [(4, 5)])
    120
    >>> op_flops("Add", {}, [(2, 3), (3,)], [(2, 3)])
    6
    >>> op_flops("Reshape", {}, [(6,)], [(2, 3)]) is None
    True
    """
    if not output_shapes:
        return None
    out = math.prod(output_shapes[0])
    if op == "MatMul" and len(input_shapes) == 2 and len(input_shapes[0]) >= 2:
        a = input_shapes[0]
        k = a[-2] if attrs.get("transpose_a") else a[-1]
        return 2 * out * k
    if op in _ELEMENTWISE:
        return out
    if op in _REDUCTIONS and input_shapes:
        return math.prod(input_shapes[0])
    if op == "AddN" and input_shapes:
        return (len(input_shapes) - 1) * out
    return None
