"""``gradients``: reverse-mode differentiation of a graph, by walking it back from the outputs.

Each op's gradient function (in its definition, :class:`opweave.ops.OpDef`) turns the gradients
of its outputs into gradients of its inputs; the result is more graph, run by the same executor,
so the backward pass gets inter-op parallelism like any other graph: the gradients of independent
weights are independent branches.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     x = ow.constant([1.0, 2.0])
...     y = ow.reduce_sum(x * x)
...     (dx,) = ow.gradients(y, [x])
...     with ow.Session() as s:
...         print(s.run(dx))
[2. 4.]
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from ..framework import Operation, Tensor, get_default_graph
from ._op_def import REGISTRY, convert_to_tensor

__all__ = ["gradients"]


def _as_tensor(x: Any) -> Tensor:
    if hasattr(x, "_as_tensor"):
        x = x._as_tensor()
    if not isinstance(x, Tensor):
        raise TypeError(f"gradients takes Tensors (or Variables), got {x!r}")
    return x


def _as_source(x: Any) -> Tensor:
    """An x (or a stop_gradients entry): a Variable stands for its ref, where the gradients of
    all its reads meet (``v.value()``, ``v.read_value()``, ``v`` used as a tensor)."""
    if hasattr(x, "_ref"):
        x = x._ref()
    return _as_tensor(x)


def _differentiable(t: Tensor) -> bool:
    """Gradients flow only through floating tensors (not integer, bool or string ones)."""
    return t.dtype.is_floating


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    name: str = "gradients",
    colocate_gradients_with_ops: bool = False,
    gate_gradients: bool = False,
    aggregation_method: Any = None,
    stop_gradients: Any = None,
) -> list[Tensor | None]:
    """The symbolic gradients of ``sum(ys)`` with respect to each of ``xs``.

    Parameters
    ----------
    ys : Tensor or list of Tensor
    xs : Tensor, Variable, or list of them
    grad_ys : Tensor or list, optional
        The gradient of each y (default: ones of y's shape).
    name : str
        The name scope of the gradient ops.
    stop_gradients : Tensor or list, optional
        Tensors treated as constants: no gradient flows through them.
    colocate_gradients_with_ops, gate_gradients, aggregation_method
        Accepted for TensorFlow compatibility; opweave has one device and sums with ``add_n``.

    Returns
    -------
    list of (Tensor or None)
        One per x; None where y does not depend on x (or only through integer tensors,
        ``stop_gradient`` or ``stop_gradients``). Gradients over several paths are summed;
        broadcasting is undone by summing over the broadcast axes.

    Raises
    ------
    LookupError
        When an op on a path from x to y has no gradient, naming the op and its type.
    """
    ys_l = [_as_tensor(y) for y in _as_list(ys)]
    xs_l = [_as_source(x) for x in _as_list(xs)]
    g = get_default_graph()
    for t in ys_l + xs_l:
        if t.graph is not g:
            raise ValueError(
                f"gradients: {t.name!r} is from a different graph than the default graph"
            )
    stops = (
        {id(_as_source(t)) for t in _as_list(stop_gradients)}
        if stop_gradients is not None
        else set()
    )
    gys = _as_list(grad_ys) if grad_ys is not None else [None] * len(ys_l)
    if len(gys) != len(ys_l):
        raise ValueError(f"grad_ys has {len(gys)} entries for {len(ys_l)} ys")

    # Ops on some path from an x to a y: reachable forward from the xs and backward from the ys.
    consumers: dict[int, list[Operation]] = collections.defaultdict(list)
    for o in g.get_operations():
        for t in o.inputs:
            consumers[id(t.op)].append(o)
    forward: set[int] = set()
    stack = [x.op for x in xs_l]
    while stack:
        o = stack.pop()
        if id(o) in forward:
            continue
        forward.add(id(o))
        stack.extend(consumers[id(o)])
    between: dict[int, Operation] = {}
    stack = [y.op for y in ys_l]
    while stack:
        o = stack.pop()
        if id(o) in between or id(o) not in forward:
            continue
        between[id(o)] = o
        stack.extend(t.op for t in o.inputs)

    # How many consumers in `between` each op waits for before its gradient is complete.
    pending: dict[int, int] = collections.Counter()
    for o in between.values():
        for t in o.inputs:
            if id(t.op) in between:
                pending[id(t.op)] += 1

    grads: dict[int, list[Tensor]] = collections.defaultdict(list)  # by id(tensor)
    tensors: dict[int, Tensor] = {}
    with g.name_scope(name):
        for y, gy in zip(ys_l, gys, strict=True):
            if gy is None:
                from .array_ops import ones_like

                gy = ones_like(y, name=f"grad_ys_{ys_l.index(y)}")
            else:
                gy = convert_to_tensor(gy, dtype=y.dtype)
            grads[id(y)].append(gy)
            tensors[id(y)] = y
        ready = collections.deque(
            o for o in {id(y.op): y.op for y in ys_l}.values() if pending[id(o)] == 0
        )
        done: set[int] = set()
        while ready:
            o = ready.popleft()
            if id(o) in done:
                continue
            done.add(id(o))
            out_grads = [_aggregate(grads.get(id(t), [])) for t in o.outputs]
            in_grads: list[Any] = [None] * len(o.inputs)
            if any(gr is not None for gr in out_grads) and not all(
                id(t) in stops for t in o.outputs
            ):
                in_grads = _op_gradients(o, out_grads, xs_l)
            for t, gr in zip(o.inputs, in_grads, strict=True):
                if gr is not None and _differentiable(t) and id(t) not in stops:
                    grads[id(t)].append(_as_tensor(gr) if not isinstance(gr, Tensor) else gr)
                    tensors[id(t)] = t
                if id(t.op) in between:
                    pending[id(t.op)] -= 1
                    if pending[id(t.op)] == 0:
                        ready.append(t.op)
        return [_aggregate(grads.get(id(x), [])) if id(x) not in stops else None for x in xs_l]


def _aggregate(parts: Sequence[Tensor]) -> Tensor | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    from .math_ops import add_n

    return add_n(list(parts))


def _op_gradients(o: Operation, out_grads: list[Tensor | None], xs: list[Tensor]) -> list[Any]:
    """The gradients of ``o``'s inputs, from its definition's gradient function."""
    d = REGISTRY.get(o.type)
    if d is not None and d.not_differentiable:
        return [None] * len(o.inputs)
    if d is None or d.grad is None:
        raise LookupError(f"No gradient defined for operation '{o.name}' (op type: {o.type})")
    if any(gr is None for gr in out_grads):
        from .array_ops import zeros_like

        out_grads = [
            zeros_like(t) if gr is None and _differentiable(t) else gr
            for t, gr in zip(o.outputs, out_grads, strict=True)
        ]
    with o.graph.name_scope(o.name + "_grad"):
        result = list(d.grad(o, *out_grads))
    if len(result) != len(o.inputs):
        raise ValueError(
            f"gradient of {o.type} returned {len(result)} values for {len(o.inputs)} inputs"
        )
    return result
