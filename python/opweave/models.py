"""Built-in model graphs for the demo, the tuner and the benchmarks.

Each builder returns a :class:`Model`: a fresh :class:`~opweave.Graph`, what to fetch, and a feed
dict of NumPy arrays, ready for ``Session(graph=m.graph).run(m.fetches, m.feed_dict)``. The
shapes are fixed by the arguments and the data by ``seed``, so two processes that build the same
model run the same work (the tuner runs each setting in a fresh process).

Three shapes of work, chosen because the two thread settings act on them differently:

- :func:`mlp_towers`: a few independent towers of dense layers (matmul + bias + relu) joined by
  ``add_n``. Big ops that split well (intra) and independent branches (inter).
- :func:`wide_reductions`: many independent reductions of one input. Medium ops, wide graph:
  inter-op parallelism matters most.
- :func:`tiny_chain`: a long chain of tiny element-wise ops. No parallelism at all: what is left
  is the executor's per-node overhead.

>>> import opweave as ow
>>> m = ow.models.tiny_chain(length=10)
>>> with ow.Session(graph=m.graph) as sess:
...     float(sess.run(m.fetches, m.feed_dict).sum())
5.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import ops
from .dtypes import DType, as_dtype, float32, float64
from .framework import Graph, Tensor, name_scope

__all__ = ["BUILTIN", "SMALL", "Model", "mlp_towers", "tiny_chain", "wide_reductions"]


class Model(NamedTuple):
    """A graph ready to run: ``Session(graph=graph).run(fetches, feed_dict)``.

    Attributes
    ----------
    graph : Graph
    fetches : Tensor
        What to fetch (one tensor: the joined result).
    feed_dict : dict
        Placeholder -> NumPy array.
    description : str
        One line saying what the graph computes, for tables and plots.
    """

    graph: Graph
    fetches: Tensor
    feed_dict: dict[Any, np.ndarray]
    description: str


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _float_dtype(dtype: DType | str | type | np.dtype[Any]) -> DType:
    d = as_dtype(dtype)
    if d not in (float32, float64):
        raise TypeError(f"built-in models compute in float32 or float64, not {d.name}")
    return d


def mlp_towers(
    towers: int = 4,
    layers: int = 2,
    batch: int = 256,
    width: int = 512,
    dtype: DType | str | type | np.dtype[Any] = float32,
    seed: int = 0,
) -> Model:
    """A multi-tower MLP forward pass: ``towers`` independent stacks of dense layers.

    Each tower applies ``layers`` times ``relu(h @ W + b)`` (W: ``width x width``) to the shared
    input ``x`` (``batch x width``); the towers' outputs are joined by ``add_n`` and summed over
    the features. One matmul costs ``2 * batch * width**2`` FLOPs.

    Parameters
    ----------
    towers, layers, batch, width : int
        Positive sizes.
    dtype : float32 or float64
    seed : int
        Seed of the weights and the input.

    Returns
    -------
    Model
        ``fetches`` has shape ``(batch,)``.

    Examples
    --------
    >>> import opweave as ow
    >>> m = ow.models.mlp_towers(towers=2, layers=1, batch=8, width=16)
    >>> with ow.Session(graph=m.graph) as sess:
    ...     sess.run(m.fetches, m.feed_dict).shape
    (8,)
    """
    for name, value in (("towers", towers), ("layers", layers), ("batch", batch), ("width", width)):
        _positive(name, value)
    d = _float_dtype(dtype)
    np_dtype = d.as_numpy_dtype
    rng = np.random.default_rng(seed)
    scale = 1.0 / np.sqrt(width)
    g = Graph()
    with g.as_default():
        x = ops.placeholder(d, shape=(batch, width), name="x")
        outputs = []
        for t in range(towers):
            with name_scope(f"tower_{t}"):
                h = x
                for layer in range(layers):
                    with name_scope(f"dense_{layer}"):
                        w = ops.constant(
                            (rng.standard_normal((width, width)) * scale).astype(np_dtype),
                            name="w",
                        )
                        b = ops.constant(
                            (0.1 * rng.standard_normal(width)).astype(np_dtype), name="b"
                        )
                        h = ops.relu(ops.add(ops.matmul(h, w), b))
                outputs.append(h)
        joined = ops.add_n(outputs, name="join") if towers > 1 else outputs[0]
        y = ops.reduce_sum(joined, axis=1, name="logits_sum")
    feed = {x: rng.standard_normal((batch, width)).astype(np_dtype)}
    return Model(
        g,
        y,
        feed,
        f"MLP: {towers} towers x {layers} dense layers ({batch}x{width} @ {width}x{width}, "
        f"{d.name}) joined by add_n",
    )


def wide_reductions(
    branches: int = 32,
    rows: int = 1024,
    cols: int = 1024,
    dtype: DType | str | type | np.dtype[Any] = float32,
    seed: int = 0,
) -> Model:
    """A wide graph: ``branches`` independent reductions of one ``rows x cols`` input.

    Branch ``i`` computes ``reduce_sum(tanh(x * c_i), axis=i % 2)`` and then its total; the
    totals are joined by ``add_n``. Every branch reads the whole input, so each one is a
    medium-sized op, and all of them may run at once.

    Parameters
    ----------
    branches, rows, cols : int
        Positive sizes.
    dtype : float32 or float64
    seed : int

    Returns
    -------
    Model
        ``fetches`` is a scalar.

    Examples
    --------
    >>> import opweave as ow
    >>> m = ow.models.wide_reductions(branches=3, rows=4, cols=5)
    >>> with ow.Session(graph=m.graph) as sess:
    ...     sess.run(m.fetches, m.feed_dict).shape
    ()
    """
    for name, value in (("branches", branches), ("rows", rows), ("cols", cols)):
        _positive(name, value)
    d = _float_dtype(dtype)
    np_dtype = d.as_numpy_dtype
    rng = np.random.default_rng(seed)
    g = Graph()
    with g.as_default():
        x = ops.placeholder(d, shape=(rows, cols), name="x")
        totals = []
        for i in range(branches):
            with name_scope(f"branch_{i}"):
                scaled = ops.mul(x, ops.constant(1.0 + i / branches, dtype=d, name="c"))
                partial = ops.reduce_sum(ops.tanh(scaled), axis=i % 2)
                totals.append(ops.reduce_sum(partial, name="total"))
        y = ops.add_n(totals, name="join") if branches > 1 else totals[0]
    feed = {x: rng.standard_normal((rows, cols)).astype(np_dtype)}
    return Model(
        g,
        y,
        feed,
        f"wide: {branches} independent tanh + reductions of a {rows}x{cols} {d.name} input",
    )


def tiny_chain(
    length: int = 1000,
    dtype: DType | str | type | np.dtype[Any] = float32,
    size: int = 1,
) -> Model:
    """A chain of ``length`` tiny element-wise ops: ``x + 1, then * 1, then + 1, ...``.

    Nothing can run in parallel and each op does almost no work, so the time per node is the
    executor's own overhead. The ops alternate between ``add`` and ``mul`` by a constant, so a
    graph optimizer could not fold the chain into one op.

    Parameters
    ----------
    length : int
        Number of element-wise ops in the chain.
    dtype : float32 or float64
    size : int
        Elements of the input vector.

    Returns
    -------
    Model
        ``fetches`` has shape ``(size,)``; every element equals ``x + ceil(length / 2)``.

    Examples
    --------
    >>> import opweave as ow
    >>> m = ow.models.tiny_chain(length=5, size=2)
    >>> with ow.Session(graph=m.graph) as sess:
    ...     sess.run(m.fetches, m.feed_dict).tolist()
    [3.0, 3.0]
    """
    _positive("length", length)
    _positive("size", size)
    d = _float_dtype(dtype)
    np_dtype = d.as_numpy_dtype
    g = Graph()
    with g.as_default():
        x = ops.placeholder(d, shape=(size,), name="x")
        one = ops.constant(1.0, dtype=d, name="one")
        y = x
        for i in range(length):
            y = ops.add(y, one, name=f"add_{i}") if i % 2 == 0 else ops.mul(y, one, name=f"mul_{i}")
    feed = {x: np.zeros(size, dtype=np_dtype)}
    return Model(g, y, feed, f"chain: {length} tiny element-wise ops on {size} {d.name} value(s)")


#: The built-in models by name, as ``python -m opweave tune <name>`` knows them.
BUILTIN: dict[str, Callable[..., Model]] = {
    "mlp": mlp_towers,
    "wide": wide_reductions,
    "chain": tiny_chain,
}

#: Keyword arguments that shrink each built-in model to a few milliseconds per run, for tests and
#: smoke runs (``python -m opweave tune mlp --size small``): ``BUILTIN[name](**SMALL[name])``.
SMALL: dict[str, dict[str, int]] = {
    "mlp": {"towers": 2, "layers": 1, "batch": 32, "width": 64},
    "wide": {"branches": 4, "rows": 64, "cols": 64},
    "chain": {"length": 50},
}
