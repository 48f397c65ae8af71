"""Random graphs and a NumPy reference evaluator, shared by the soak and property tests.

A graph spec is a list of nodes in topological order; node ``i`` may read only nodes ``< i``.
Nodes 0 and 1 are float64 placeholders of shape ``(n, n)``. Every op keeps values in [-1, 1]
(binary ops average, matmul goes through tanh), so 500-node chains neither overflow nor lose
all precision, and float64 results match NumPy to ~1e-12.

The ``OPTIMIZABLE`` ops are patterns the graph optimizer rewrites (constants to fold, ``x * 1``,
``x + 0``, ``x + c`` chains to re-associate, double negations and transposes, a reshape of a
reshape, the same ``tanh`` twice, an identity with a control dependency); ``addc`` moves values
by only 1/64, so the 30-node graphs of the property tests stay near [-1, 1].
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np
import opweave as ow
from op_testing import OpCase


class InjectedFailure(RuntimeError):
    """Raised on purpose by a ``fail`` node."""


UNARY = ["neg", "tanh", "sigmoid", "relu", "identity", "rowmean", "py", "fail", "sleep"]
BINARY = ["add", "sub", "mul", "max", "matmul"]
# Patterns for the graph optimizer: "const" reads nothing, "ctl" reads its first input and waits
# for its second (a control dependency), the others read one input.
OPTIMIZABLE = [
    "const",
    "mul1",
    "add0",
    "addc",
    "negneg",
    "transpose2",
    "reshape2",
    "dup",
    "ctl",
]
ARITY = {"const": 0, "ctl": 2, **dict.fromkeys(BINARY, 2)}
SLEEP_S = 0.02


@dataclasses.dataclass(frozen=True, eq=False)
class RowCall:
    """One op row (tests/op_testing.py) called on fixed inputs, for a ``row`` node.

    A row node runs its op on these inputs and adds ``tanh(mean(output))`` of each output to half
    its graph input: the op runs inside random graphs (scheduled, inlined, in caller-thread mode,
    beside failures) and the NumPy reference evaluates it with the row's own reference function.
    The inputs are fixed rather than derived from the graph's values, so an op whose result jumps
    (floor, argmax, comparisons) cannot flip on the last-bit differences upstream values have.
    """

    case: OpCase
    arrays: tuple[np.ndarray, ...]
    kwargs: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Node:
    op: str  # "input", "row", or one of UNARY or BINARY
    inputs: tuple[int, ...] = ()
    row: RowCall | None = None  # for "row" nodes


@dataclasses.dataclass(frozen=True)
class Spec:
    n: int  # every tensor is (n, n) float64
    nodes: tuple[Node, ...]
    fetches: tuple[int, ...]


def random_spec(
    rng: random.Random,
    max_nodes: int = 500,
    sizes: tuple[int, ...] = (1, 3, 8, 32, 64),
    fail_rate: float = 0.002,
    sleep_rate: float = 0.0,
    py_rate: float = 0.02,
) -> Spec:
    """A random DAG of 1..max_nodes ops (plus the two inputs) and 1..4 fetched nodes."""
    n = rng.choice(sizes)
    count = rng.randint(1, max_nodes)
    nodes = [Node("input"), Node("input")]
    cheap_unary = ["neg", "tanh", "sigmoid", "relu", "identity", "rowmean"]
    for _ in range(count):
        i = len(nodes)

        # Mostly recent inputs (deep chains), sometimes any earlier node (wide fan-in/out).
        def pick(i: int = i) -> int:
            return rng.randrange(i) if rng.random() < 0.3 else rng.randrange(max(0, i - 8), i)

        r = rng.random()
        if r < fail_rate:
            nodes.append(Node("fail", (pick(),)))
        elif r < fail_rate + sleep_rate:
            nodes.append(Node("sleep", (pick(),)))
        elif r < fail_rate + sleep_rate + py_rate:
            nodes.append(Node("py", (pick(),)))
        elif rng.random() < 0.5:
            nodes.append(Node(rng.choice(cheap_unary), (pick(),)))
        else:
            op = rng.choice(BINARY) if n <= 32 or rng.random() < 0.5 else "add"
            nodes.append(Node(op, (pick(), pick())))
    last = len(nodes) - 1
    fetches = {last} | {rng.randrange(len(nodes)) for _ in range(rng.randint(0, 3))}
    return Spec(n, tuple(nodes), tuple(sorted(fetches)))


def _py_scale(v: np.ndarray) -> np.ndarray:
    return v * 0.5 + 0.25


def _py_fail(v: np.ndarray) -> np.ndarray:
    raise InjectedFailure("injected failure")


def _py_sleep(v: np.ndarray) -> np.ndarray:
    time.sleep(SLEEP_S)
    return v


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-v))


def needed(spec: Spec, fed: Collection[int] = ()) -> set[int]:
    """The nodes a run of ``spec.fetches`` executes: everything upstream of a fetch, but nothing
    upstream of a fed node (a fed node itself does not run either)."""
    seen: set[int] = set()
    stack = list(spec.fetches)
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        if i not in fed:
            stack.extend(spec.nodes[i].inputs)
    return seen


def const_value(spec: Spec, i: int) -> np.ndarray:
    """The value of node ``i`` when it is a ``const``: fixed by its index."""
    return np.random.default_rng(i).uniform(-1, 1, (spec.n, spec.n))


def addc_value(i: int) -> float:
    """What node ``i`` adds when it is an ``addc``: +-1/64 by the parity of its index."""
    return 1 / 64 if i % 2 == 0 else -1 / 64


def _apply(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if op in ("mul1", "add0", "negneg", "transpose2", "reshape2", "ctl"):
        return a  # x * 1, x + 0, -(-x), ... are x; ctl only waits for b
    if op == "dup":
        return (np.tanh(a) + np.tanh(a)) * 0.5
    if op == "neg":
        return -a
    if op == "tanh":
        return np.tanh(a)
    if op == "sigmoid":
        return _sigmoid(a)
    if op == "relu":
        return np.maximum(a, 0.0)
    if op in ("identity", "sleep"):
        return a
    if op == "rowmean":
        return (a + np.mean(a, axis=1, keepdims=True)) * 0.5
    if op == "py":
        return _py_scale(a)
    if op == "add":
        return (a + b) * 0.5
    if op == "sub":
        return (a - b) * 0.5
    if op == "mul":
        return a * b
    if op == "max":
        return np.maximum(a, b)
    if op == "matmul":
        return np.tanh(a @ b)
    raise AssertionError(op)


def row_outputs_summary(outputs: Any) -> float:
    """NumPy's side of a row node: the sum over the op's outputs of ``tanh(mean(output))``."""
    parts = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    return float(sum(np.tanh(np.mean(np.asarray(o).astype(np.float64))) for o in parts))


def _row_value(row: RowCall, a: np.ndarray) -> np.ndarray:
    return a * 0.5 + row_outputs_summary(row.case.ref(*row.arrays, **row.kwargs))


def evaluate(
    spec: Spec,
    feeds: tuple[np.ndarray, np.ndarray],
    overrides: Mapping[int, np.ndarray] | None = None,
) -> list[np.ndarray]:
    """NumPy values of the fetches; raises InjectedFailure when a ``fail`` node is needed.

    ``overrides`` maps node index -> value fed for that node's output (any node may be fed).
    """
    overrides = dict(overrides or {})
    todo = needed(spec, overrides)
    values: dict[int, np.ndarray] = {0: feeds[0], 1: feeds[1], **overrides}
    for i in sorted(todo):
        node = spec.nodes[i]
        if node.op == "input" or i in overrides:
            continue
        if node.op == "const":
            values[i] = const_value(spec, i)
            continue
        if node.op == "addc":
            values[i] = values[node.inputs[0]] + addc_value(i)
            continue
        a = values[node.inputs[0]]
        b = values[node.inputs[1]] if len(node.inputs) > 1 else a
        if node.op == "fail":
            raise InjectedFailure("injected failure")
        if node.row is not None:
            values[i] = _row_value(node.row, a)
            continue
        values[i] = _apply(node.op, a, b)
    return [values[i] for i in spec.fetches]


@dataclasses.dataclass
class Built:
    graph: ow.Graph
    inputs: tuple[ow.Tensor, ow.Tensor]
    fetches: list[ow.Tensor]
    tensors: list[ow.Tensor]  # node index -> its output


def build(spec: Spec) -> Built:
    """The opweave graph of ``spec``."""
    g = ow.Graph()
    t: list[ow.Tensor] = []
    with g.as_default():
        for i, node in enumerate(spec.nodes):
            if node.op == "input":
                t.append(ow.placeholder(ow.float64, shape=(spec.n, spec.n)))
                continue
            if node.op == "const":
                t.append(ow.constant(const_value(spec, i)))
                continue
            a = t[node.inputs[0]]
            b = t[node.inputs[1]] if len(node.inputs) > 1 else a
            op = node.op
            if node.row is not None:
                t.append(_build_row(node.row, a))
                continue
            if op == "neg":
                out = -a
            elif op == "tanh":
                out = ow.tanh(a)
            elif op == "sigmoid":
                out = ow.sigmoid(a)
            elif op == "relu":
                out = ow.relu(a)
            elif op == "identity":
                out = ow.identity(a)
            elif op == "rowmean":
                out = (a + ow.reduce_mean(a, axis=1, keepdims=True)) * 0.5
            elif op in ("py", "fail", "sleep"):
                fn = {"py": _py_scale, "fail": _py_fail, "sleep": _py_sleep}[op]
                out = ow.py_function(fn, [a], ow.float64, name=op)
            elif op == "add":
                out = (a + b) * 0.5
            elif op == "sub":
                out = (a - b) * 0.5
            elif op == "mul":
                out = a * b
            elif op == "max":
                out = ow.maximum(a, b)
            elif op == "matmul":
                out = ow.tanh(ow.matmul(a, b))
            elif op == "mul1":
                out = a * 1.0
            elif op == "add0":
                out = a + 0.0
            elif op == "addc":
                out = a + addc_value(i)
            elif op == "negneg":
                out = ow.negative(ow.negative(a))
            elif op == "transpose2":
                out = ow.transpose(ow.transpose(a))
            elif op == "reshape2":
                out = ow.reshape(ow.reshape(a, [-1]), [spec.n, spec.n])
            elif op == "dup":
                out = (ow.tanh(a) + ow.tanh(a)) * 0.5
            elif op == "ctl":
                with g.control_dependencies([b.op]):
                    out = ow.identity(a)
            else:  # pragma: no cover
                raise AssertionError(op)
            t.append(out)
    return Built(g, (t[0], t[1]), [t[i] for i in spec.fetches], t)


def _build_row(row: RowCall, a: ow.Tensor) -> ow.Tensor:
    inputs = [ow.constant(x) for x in row.arrays]
    result = row.case.fn(*inputs, **row.kwargs)
    parts = result if isinstance(result, (list, tuple)) else [result]
    summary = ow.add_n([ow.tanh(ow.reduce_mean(ow.cast(o, ow.float64))) for o in parts])
    return a * 0.5 + summary


def random_feeds(spec: Spec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return (
        rng.uniform(-1, 1, (spec.n, spec.n)),
        rng.uniform(-1, 1, (spec.n, spec.n)),
    )


def check(
    spec: Spec,
    got: Any,
    feeds: tuple[np.ndarray, np.ndarray],
    overrides: Mapping[int, np.ndarray] | None = None,
) -> None:
    """Assert that ``got`` (a list of fetched arrays) matches the reference."""
    want = evaluate(spec, feeds, overrides)
    assert len(got) == len(want)
    for g_, w_ in zip(got, want, strict=True):
        assert g_.shape == w_.shape
        assert g_.dtype == w_.dtype
        np.testing.assert_allclose(g_, w_, rtol=1e-9, atol=1e-12)
