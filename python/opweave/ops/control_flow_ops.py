"""Ops that order work rather than compute: ``no_op``, ``group``, ``tuple``.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     g = ow.group(ow.constant(1.0), ow.constant(2.0))
>>> len(g.control_inputs)
2
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from ..framework import Graph, Operation, Tensor, get_default_graph
from . import _checks
from ._op_def import OpDef

__all__ = ["group", "no_op", "tuple"]

_NO_OP = OpDef("NoOp", outputs=[], shape=lambda ctx: [], not_differentiable=True)


def no_op(name: str | None = None) -> Operation:
    """An op that does nothing; with control inputs it joins them."""
    return _NO_OP(name=name)  # type: ignore[no-any-return]


def _graph_element_op(x: Any, graph: Graph, where: str) -> Operation:
    """The op behind ``x`` (an Operation, a Tensor or a Variable), checked to be of ``graph``."""
    if hasattr(x, "_as_tensor"):
        x = x._as_tensor()
    op_ = x.op if isinstance(x, Tensor) else x
    if not isinstance(op_, Operation):
        raise TypeError(f"{where} takes Operations and Tensors, got {x!r}")
    if op_.graph is not graph:
        raise ValueError(
            f"{where}: {op_.name!r} is from a different graph ({op_.graph!r}) than the graph "
            f"it is added to ({graph!r})"
        )
    return op_


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that finishes after all ``inputs`` (run it as a target).

    Every input must belong to the default graph: an op of another graph is a ValueError that
    names both graphs.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     g = ow.group([ow.constant(1.0)], ow.constant(2.0))
    >>> [c.name for c in g.control_inputs]
    ['Const', 'Const_1']
    """
    g = get_default_graph()
    deps: list[Operation] = []
    for i in inputs:
        for item in i if isinstance(i, (list, builtins.tuple, set)) else [i]:
            op_ = _graph_element_op(item, g, "group")
            if op_ not in deps:
                deps.append(op_)
    name = _checks.check_name(name, "group_deps")
    # As for every op, a name ending in "/" is a scope's full name, used as is.
    full = name[:-1] if name.endswith("/") else None
    return g._create_op("NoOp", [], {}, [], name, control_inputs=deps, unique_name=full)


def tuple_(
    tensors: Sequence[Any], name: str | None = None, control_inputs: Any = None
) -> list[Any]:
    """``tensors``, each passed through an identity that waits for all of them (and for
    ``control_inputs``): a value of the result is only available once every one is."""
    from .array_ops import identity

    g = get_default_graph()
    items = [t for t in tensors if t is not None]
    gate = group(*items, *(control_inputs or []), name=name or "tuple")
    with g.control_dependencies([gate]):
        return [None if t is None else identity(t) for t in tensors]


tuple = tuple_  # TensorFlow's name; defined as tuple_ so the builtin stays usable above
