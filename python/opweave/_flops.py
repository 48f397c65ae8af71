"""Floating-point operation counts of opweave's ops, from the shapes a run saw.

Used for the ``flops`` of :class:`opweave.config.NodeExecStats` and the timeline's slice
arguments. Each op's count is part of its definition (``OpDef.flops``): ``2*m*n*k``
multiply-adds for a matmul (per batch entry), one per output element for element-wise ops, one per
input element for reductions, ``n - 1`` additions per element for ``add_n``. Ops that move data
only (reshape, transpose, cast, identity, constants) and Python functions have no count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .ops._op_def import REGISTRY


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
    >>> op_flops("_FusedMatMul", {"fused_ops": ["BiasAdd", "Relu"]}, [(4, 3), (3, 5), (5,)],
    ...          [(4, 5)])
    160
    >>> op_flops("_FusedConv2D", {"fused_ops": ["Relu"]}, [(1, 4, 4, 2), (3, 3, 2, 5)],
    ...          [(1, 4, 4, 5)])
    2960
    """
    fused = {"_FusedMatMul": "MatMul", "_FusedConv2D": "Conv2D"}.get(op)
    if fused is not None:
        # The graph optimizer's fused ops (no OpDef): the product's count plus one per output
        # element for each fused op, as the nodes it replaced counted.
        product = op_flops(fused, attrs, input_shapes[:2], output_shapes)
        if product is None:
            return None
        return product + len(attrs.get("fused_ops", ())) * _numel(output_shapes[0])
    definition = REGISTRY.get(op)
    if definition is None or definition.flops is None or not output_shapes:
        return None
    return definition.flops(input_shapes, output_shapes, attrs)


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
