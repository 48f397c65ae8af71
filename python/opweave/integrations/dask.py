"""Dask integration: pools sized to each worker's share of CPUs, and graphs run over the blocks
of Dask arrays and the partitions of Dask DataFrames.

A Dask worker runs ``nthreads`` tasks at once and is given that many CPU slots; by default
opweave in every worker process would size its pools to all the CPUs the process may use, and
``n_workers`` processes would oversubscribe the machine. :class:`OpweaveWorkerPlugin` sizes both
global pools of each worker to the worker's share (its ``nthreads``, or ``cpus=`` if given) when
the worker starts, and hands them back to the system when the plugin is removed. Tasks running at
once in one worker share its pools, so the threads they use together stay close to that share.

:func:`map_blocks` and :func:`map_partitions` run a graph (or a GraphDef) on every block or
partition. The graph travels to each worker process once (GraphDef bytes, scattered to every
worker, or one key of the task graph without a distributed client); each worker builds one
Session per graph, the first time one of its tasks needs it, and every later task reuses it.

Recipe
------
>>> from dask.distributed import Client, LocalCluster              # doctest: +SKIP
>>> from opweave.integrations.dask import OpweaveWorkerPlugin      # doctest: +SKIP
>>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
>>> client.register_plugin(OpweaveWorkerPlugin())                  # doctest: +SKIP
>>> client.run(lambda: __import__("opweave").get_num_threads())    # doctest: +SKIP
{'tcp://127.0.0.1:40331': 1, 'tcp://127.0.0.1:41263': 1}

The sizes and where they came from show in ``opweave.parallel_info()`` inside a task
(``"opweave.integrations.dask (worker nthreads=1)"``).

Batch inference over a Dask array, one Session per graph and worker:

>>> import dask.array as da                                         # doctest: +SKIP
>>> from opweave.integrations.dask import map_blocks                # doctest: +SKIP
>>> x = da.random.random((65536, 784), chunks=(256, 784)).astype("float32")  # doctest: +SKIP
>>> logits = map_blocks(graph, "logits:0", {"x:0": x})              # doctest: +SKIP
>>> logits.compute().shape                                          # doctest: +SKIP
(65536, 10)
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from distributed.diagnostics.plugin import WorkerPlugin

from .. import _runtime
from .._threads import check_thread_count
from ..config import ConfigProto
from ..framework import Graph, Tensor
from ._graphs import GraphPayload, checked_feed, runner_for, tensor_in

__all__ = ["OpweaveWorkerPlugin", "map_blocks", "map_partitions", "worker_cpu_share"]


def worker_cpu_share(worker: Any) -> int:
    """The number of CPUs a Dask worker is given: its ``nthreads`` (task slots), at least 1.

    Parameters
    ----------
    worker : distributed.Worker
        The worker, as passed to ``WorkerPlugin.setup``.

    Returns
    -------
    int
        The worker's share of CPUs.
    """
    state = getattr(worker, "state", None)
    nthreads = getattr(state, "nthreads", None) or getattr(worker, "nthreads", None)
    return max(1, int(nthreads or 1))


class OpweaveWorkerPlugin(WorkerPlugin):
    """Sizes opweave's intra-op and inter-op pools to each Dask worker's share of CPUs.

    Parameters
    ----------
    intra : int, optional
        Threads per op, caller included. Default: the worker's share.
    inter : int, optional
        Ops at once. Default: the worker's share.
    cpus : int, optional
        The share to use instead of the worker's ``nthreads`` (e.g. when each task itself is
        meant to use several CPUs: ``LocalCluster(n_workers=2, threads_per_worker=1)`` on 8 CPUs
        with ``cpus=4``).

    Examples
    --------
    >>> from opweave.integrations.dask import OpweaveWorkerPlugin
    >>> plugin = OpweaveWorkerPlugin(inter=1)
    >>> plugin.name
    'opweave-threads'
    """

    name = "opweave-threads"

    def __init__(
        self, intra: int | None = None, inter: int | None = None, cpus: int | None = None
    ) -> None:
        self.intra = None if intra is None else check_thread_count("OpweaveWorkerPlugin", intra)
        self.inter = None if inter is None else check_thread_count("OpweaveWorkerPlugin", inter)
        self.cpus = None if cpus is None else check_thread_count("OpweaveWorkerPlugin", cpus)
        self._saved: tuple[_runtime.PoolState, _runtime.PoolState] | None = None

    def setup(self, worker: Any) -> None:
        """Size the pools of the worker's process (runs in the worker when it starts)."""
        share = self.cpus if self.cpus is not None else worker_cpu_share(worker)
        why = f"cpus={share}" if self.cpus is not None else f"worker nthreads={share}"
        self._saved = (_runtime.snapshot("intra"), _runtime.snapshot("inter"))
        intra = self.intra or share
        inter = self.inter or share
        _runtime.set_intra_threads(intra, f"opweave.integrations.dask ({why})")
        _runtime.set_inter_threads(inter, f"opweave.integrations.dask ({why})")

    def teardown(self, worker: Any) -> None:
        """Put back the sizes the worker had before :meth:`setup`."""
        if self._saved is not None:
            _runtime.restore("intra", self._saved[0])
            _runtime.restore("inter", self._saved[1])
            self._saved = None


# -- graphs over blocks and partitions -------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    """What every task of one map_blocks / map_partitions call needs besides its data (small:
    it goes with each task)."""

    feeds: tuple[str, ...]  # tensor names fed from the blocks / columns, in argument order
    fetches: tuple[str, ...]
    constants: dict[str, Any] = field(default_factory=dict)  # tensor name -> the same array
    config: ConfigProto | None = None
    columns: tuple[Any, ...] = ()  # map_partitions: the column(s) of each feed
    out_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()  # map_partitions


def _local_graph(graph: Any) -> tuple[GraphPayload, Graph]:
    """The payload to ship, and a Graph to check names and dtypes against on the client."""
    from ..graphdef._io import graph_from_bytes

    payload = GraphPayload.from_graph(graph)
    local = graph if isinstance(graph, Graph) else graph_from_bytes(payload.data)
    return payload, local


# Graphs scattered to a cluster, kept referenced here: the cluster keeps a scattered object only
# while a Future of it lives, and a dask collection built later must find it still there.
_scattered: collections.OrderedDict[tuple[int, str], Any] = collections.OrderedDict()
_scattered_lock = threading.Lock()
MAX_SCATTERED_GRAPHS = 8


def _shipped(payload: GraphPayload) -> Any:
    """The payload as one object of the cluster: scattered once per client to every worker when
    a distributed Client exists, else one key of the task graph."""
    try:
        from distributed import default_client

        client = default_client()  # type: ignore[no-untyped-call]
    except (ImportError, ValueError):
        from dask.delayed import delayed

        return delayed(payload, pure=True)
    key = (id(client), payload.digest)
    with _scattered_lock:
        future = _scattered.get(key)
        if future is None or future.client is not client or future.status != "finished":
            # On every worker (broadcast): a scattered object cannot be recomputed, so it must
            # outlive the death of any one worker; restarted and new workers copy it from the
            # others. A random key (hash=False): a key released with an older Future is never
            # reused. A payload lost with every worker at once is scattered again next call.
            future = client.scatter(payload, hash=False, broadcast=True)
            _scattered[key] = future
        _scattered.move_to_end(key)
        while len(_scattered) > MAX_SCATTERED_GRAPHS:
            _scattered.popitem(last=False)
    return future


def _check_declared_dtype(dtype: Any, t: Tensor, feed: Any, what: str) -> None:
    target = np.dtype(t.dtype.as_numpy_dtype)
    try:
        given = np.dtype(dtype)
    except TypeError:  # pandas' own dtypes (strings, categories, nullable ints)
        given = None
    if given is None or (given != target and not np.can_cast(given, target, "same_kind")):
        raise TypeError(
            f"feed {feed!r} ({t.name}, {t.dtype.name}) is given {what} of dtype {dtype}, which "
            f"does not convert to {t.dtype.name} without loss"
        )


def _where(label: str, location: Any) -> str:
    return f"opweave {label}, {location}"


def _run_block(
    *blocks: np.ndarray, payload: GraphPayload, job: _Job, block_info: Any = None
) -> np.ndarray:
    location = (block_info or {}).get(None, {}).get("chunk-location")
    where = _where("map_blocks", f"block {tuple(location) if location else '?'}")
    runner = runner_for(payload, job.config)
    feeds = dict(job.constants)
    for name, block in zip(job.feeds, blocks, strict=True):
        feeds[name] = block
    (out,) = runner.run(feeds, job.fetches, where=f"{where}: ")
    expected = (block_info or {}).get(None, {}).get("chunk-shape")
    if expected is not None and tuple(np.shape(out)) != tuple(expected):
        raise ValueError(
            f"{where}: the graph gave {job.fetches[0]} of shape {list(np.shape(out))} for this "
            f"block, but the output's chunks say {list(expected)}; pass chunks= (and drop_axis= "
            "/ new_axis=) to map_blocks"
        )
    return np.asarray(out)


def map_blocks(
    graph: Any,
    fetch: str | Tensor,
    feeds: Mapping[Any, Any],
    *,
    dtype: Any = None,
    chunks: Any = None,
    drop_axis: Any = None,
    new_axis: Any = None,
    config: ConfigProto | None = None,
    name: str | None = None,
) -> Any:
    """Run ``graph`` on every block of Dask arrays: ``fetch`` evaluated with each block fed.

    Like ``dask.array.map_blocks`` over the arrays in ``feeds``: blocks at the same position are
    fed together, each task computes one output block. The graph is sent to each worker once
    and each worker process runs it in one Session, built by its first task and reused.

    Parameters
    ----------
    graph : Graph, GraphDef or bytes
    fetch : str or Tensor
        The tensor to compute per block (``"logits:0"``; ``"logits"`` means output 0).
    feeds : mapping
        Tensor (name or Tensor) -> a Dask array (fed block by block) or an array or scalar
        (fed whole to every block; sent with every task, so keep it small).
    dtype : numpy dtype, optional
        The output's dtype (default: the fetch's).
    chunks, drop_axis, new_axis : optional
        As in ``dask.array.map_blocks``. By default the output has the first array's chunks
        along axis 0 and the fetch's static shape along the others (batch inference:
        ``(n, 784)`` blocks in, ``(n, 10)`` blocks out).
    config : ConfigProto, optional
        The workers' Session config. Default: the global pools, which
        :class:`OpweaveWorkerPlugin` sizes to each worker's CPUs.
    name : str, optional
        The Dask key prefix.

    Returns
    -------
    dask.array.Array

    Raises
    ------
    ValueError
        On the client: a feed or fetch name that is not in the graph, no Dask array among the
        feeds. When computing: a block the graph fails on, named (``block (3, 0)``).
    TypeError
        On the client: an array whose dtype does not convert to its placeholder's. When
        computing: such a block, named.

    Examples
    --------
    >>> import dask.array as da, numpy as np, opweave as ow
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     x = ow.placeholder(ow.float32, shape=(None, 3), name="x")
    ...     _ = ow.reduce_sum(x * 2.0, axis=1, keepdims=True, name="y")
    >>> blocks = da.from_array(np.ones((6, 3), np.float32), chunks=(2, 3))
    >>> map_blocks(g, "y:0", {"x": blocks}).compute().ravel()
    array([6., 6., 6., 6., 6., 6.], dtype=float32)
    """
    import dask.array as da

    payload, local = _local_graph(graph)
    fetch_t = tensor_in(local, fetch, "fetch")
    arrays: list[Any] = []
    names: list[str] = []
    constants: dict[str, Any] = {}
    for key, value in feeds.items():
        t = tensor_in(local, key, "feed")
        if isinstance(value, da.Array):
            _check_declared_dtype(value.dtype, t, key, "a Dask array")
            names.append(t.name)
            arrays.append(value)
        else:
            constants[t.name] = checked_feed(value, t.dtype, f"feed {key!r}")
    if not arrays:
        raise ValueError("map_blocks needs a Dask array among the feeds (its blocks are the tasks)")
    first = arrays[0]
    static = fetch_t._shape
    if chunks is None and static is not None and len(static) >= 1:
        rest = static[1:]
        if all(d is not None for d in rest) and all(n == 1 for n in first.numblocks[1:]):
            chunks = (first.chunks[0], *((d,) for d in rest))
            if drop_axis is None and new_axis is None:
                if len(static) < first.ndim:
                    drop_axis = list(range(len(static), first.ndim))
                elif len(static) > first.ndim:
                    new_axis = list(range(first.ndim, len(static)))
    job = _Job(tuple(names), (fetch_t.name,), constants, config)
    return da.map_blocks(  # type: ignore[no-untyped-call]
        _run_block,
        *arrays,
        payload=_shipped(payload),
        job=job,
        dtype=np.dtype(dtype) if dtype is not None else np.dtype(fetch_t.dtype.as_numpy_dtype),
        chunks=chunks,
        drop_axis=drop_axis,
        new_axis=new_axis,
        name=name or f"opweave-{payload.digest[:8]}",
    )


def _out_columns(
    local: Graph, fetches: Mapping[str, Any]
) -> list[tuple[str, Tensor, tuple[str, ...]]]:
    """Each fetch with the DataFrame column(s) it fills: a vector one, a matrix of k known
    columns ``name_0 .. name_{k-1}``."""
    out: list[tuple[str, Tensor, tuple[str, ...]]] = []
    for column, fetch in fetches.items():
        t = tensor_in(local, fetch, "fetch")
        shape = t._shape
        if shape is not None and len(shape) == 1:
            out.append((column, t, (column,)))
        elif shape is not None and len(shape) == 2 and shape[1] is not None:
            out.append((column, t, tuple(f"{column}_{i}" for i in range(shape[1]))))
        else:
            raise ValueError(
                f"fetch {column!r} ({t.name}) has shape {t.shape}: a DataFrame column needs a "
                "vector (n,) or a matrix (n, k) of known k"
            )
    return out


def _run_partition(part: Any, payload: GraphPayload, job: _Job, partition_info: Any = None) -> Any:
    import pandas as pd

    number = (partition_info or {}).get("number", "?")
    where = _where("map_partitions", f"partition {number}")
    runner = runner_for(payload, job.config)
    feeds = dict(job.constants)
    for name, cols in zip(job.feeds, job.columns, strict=True):
        feeds[name] = (
            part[list(cols)].to_numpy() if isinstance(cols, tuple) else part[cols].to_numpy()
        )
    values = runner.run(feeds, job.fetches, where=f"{where}: ")
    data: dict[str, Any] = {}
    for value, (fetch, cols) in zip(values, job.out_columns, strict=True):
        arr = np.asarray(value)
        if arr.shape[0] != len(part):
            raise ValueError(
                f"{where}: {fetch} has {arr.shape[0]} rows for a partition of {len(part)}"
            )
        if arr.ndim == 1:
            data[cols[0]] = arr
        else:
            data.update({c: arr[:, i] for i, c in enumerate(cols)})
    return pd.DataFrame(data, index=part.index)


def map_partitions(
    graph: Any,
    fetches: Mapping[str, Any],
    feeds: Mapping[Any, Any],
    df: Any,
    *,
    config: ConfigProto | None = None,
) -> Any:
    """Run ``graph`` on every partition of a Dask DataFrame; a DataFrame of the fetched columns.

    Parameters
    ----------
    graph : Graph, GraphDef or bytes
    fetches : mapping
        Output column name -> tensor. A vector fetch ``(n,)`` is one column; a matrix
        ``(n, k)`` (k known) gives columns ``name_0`` .. ``name_{k-1}``.
    feeds : mapping
        Tensor (name or Tensor) -> a column name (fed as a vector) or a list of column names
        (fed as an ``(n, len(columns))`` matrix, in that order), or an array fed whole to
        every partition.
    df : dask.dataframe.DataFrame
    config : ConfigProto, optional
        The workers' Session config (default: the global pools).

    Returns
    -------
    dask.dataframe.DataFrame
        With ``df``'s index and divisions.

    Raises
    ------
    ValueError, TypeError
        On the client: names not in the graph or columns not in ``df``, columns whose dtype
        does not convert. When computing: a partition the graph fails on, named.

    Examples
    --------
    >>> ddf = dd.from_pandas(frame, npartitions=4)                     # doctest: +SKIP
    >>> scores = map_partitions(g, {"score": "y:0"}, {"x": ["a", "b", "c"]}, ddf)  # doctest: +SKIP
    """
    import pandas as pd

    payload, local = _local_graph(graph)
    names: list[str] = []
    columns: list[Any] = []
    constants: dict[str, Any] = {}
    for key, value in feeds.items():
        t = tensor_in(local, key, "feed")
        if isinstance(value, str) or (
            isinstance(value, (list, tuple)) and all(isinstance(c, str) for c in value)
        ):
            cols = (value,) if isinstance(value, str) else tuple(value)
            missing = [c for c in cols if c not in df.columns]
            if missing:
                raise ValueError(f"feed {key!r}: columns {missing} are not in the DataFrame")
            for c in cols:
                _check_declared_dtype(df.dtypes[c], t, key, f"column {c!r}")
            names.append(t.name)
            columns.append(value if isinstance(value, str) else tuple(value))
        else:
            constants[t.name] = checked_feed(value, t.dtype, f"feed {key!r}")
    outs = _out_columns(local, fetches)
    meta = pd.DataFrame(
        {c: np.empty(0, t.dtype.as_numpy_dtype) for _, t, cols in outs for c in cols},
        index=df._meta.index,
    )
    job = _Job(
        tuple(names),
        tuple(t.name for _, t, _ in outs),
        constants,
        config,
        tuple(columns),
        tuple((t.name, cols) for _, t, cols in outs),
    )
    return df.map_partitions(_run_partition, _shipped(payload), job, meta=meta)
