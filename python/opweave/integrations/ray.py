"""Ray integration: size opweave's pools to the CPUs Ray assigned to the current task or actor.

Ray schedules a task with ``num_cpus=k`` onto a worker process that may see every CPU of the
node; opweave's default would use all of them. Call :func:`configure` at the top of the task
(or in an actor's ``__init__``) and opweave uses the task's ``k`` CPUs instead.

Ray also sets ``OMP_NUM_THREADS`` in its workers (to the ``num_cpus`` of the task that started
the worker process), which opweave would otherwise read for its intra-op pool; an explicit
``configure()`` takes precedence over it, and stays right when Ray reuses a worker process for a
task with another ``num_cpus``.

Recipe
------
>>> import ray, opweave                                   # doctest: +SKIP
>>> import opweave.integrations.ray                       # doctest: +SKIP
>>> @ray.remote(num_cpus=2)                               # doctest: +SKIP
... def task(x):
...     opweave.integrations.ray.configure()              # intra = inter = 2
...     with opweave.Session() as sess:
...         return sess.run(...)

Batch inference over a ``ray.data`` Dataset, one Session per actor, its pools sized to the
actor's ``num_cpus`` (the graph travels to each actor once, as GraphDef bytes):

>>> from opweave.integrations.ray import GraphPredictor    # doctest: +SKIP
>>> ds = ray.data.from_numpy(x)                           # column "data"   # doctest: +SKIP
>>> out = ds.map_batches(                                 # doctest: +SKIP
...     GraphPredictor,
...     fn_constructor_kwargs={"graph": graph, "fetches": {"logits": "logits:0"},
...                            "feeds": {"x:0": "data"}},
...     compute=ray.data.ActorPoolStrategy(size=2),
...     num_cpus=1, batch_size=256, batch_format="numpy",
... )
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import ray

from .. import _runtime
from .._threads import check_thread_count
from ..config import ConfigProto
from ._graphs import GraphPayload, runner_for, tensor_in

__all__ = ["GraphPredictor", "assigned_cpus", "configure"]


def assigned_cpus() -> float:
    """The CPUs Ray assigned to the calling task or actor (0.0 when none were).

    Raises
    ------
    RuntimeError
        When called outside a Ray task or actor (in the driver, or before ``ray.init``).
    """
    if not ray.is_initialized():
        raise RuntimeError(
            "opweave.integrations.ray.configure() reads the calling task's CPU allocation: call "
            "it inside a Ray task or actor (ray.init() has not been called in this process)"
        )
    context: Any = ray.get_runtime_context()
    if context.worker.mode != ray.WORKER_MODE:
        raise RuntimeError(
            "opweave.integrations.ray.configure() reads the calling task's CPU allocation: call "
            "it inside a Ray task or actor, not in the driver"
        )
    return float(context.get_assigned_resources().get("CPU", 0.0))


def configure(intra: int | None = None, inter: int | None = None) -> tuple[int, int]:
    """Size opweave's global pools to the CPUs Ray assigned to the calling task or actor.

    ``k`` assigned CPUs (rounded down; at least 1, since an actor holds no CPU by default but
    still runs on one) give ``intra = inter = k`` unless given explicitly.

    Parameters
    ----------
    intra : int, optional
        Threads per op, caller included. Default: the assigned CPUs.
    inter : int, optional
        Ops at once. Default: the assigned CPUs.

    Returns
    -------
    tuple of int
        ``(intra, inter)`` now in effect.

    Raises
    ------
    RuntimeError
        Outside a Ray task or actor.

    Examples
    --------
    >>> @ray.remote(num_cpus=2)                            # doctest: +SKIP
    ... def sizes():
    ...     return opweave.integrations.ray.configure()
    >>> ray.get(sizes.remote())                             # doctest: +SKIP
    (2, 2)
    """
    intra_n = None if intra is None else check_thread_count("configure", intra)
    inter_n = None if inter is None else check_thread_count("configure", inter)
    cpus = assigned_cpus()
    share = max(1, math.floor(cpus))
    why = f"opweave.integrations.ray.configure (assigned CPU={cpus:g})"
    _runtime.set_intra_threads(intra_n or share, why)
    _runtime.set_inter_threads(inter_n or share, why)
    return _runtime.intra_threads(), _runtime.inter_threads()


def _in_ray_worker() -> bool:
    if not ray.is_initialized():
        return False
    context: Any = ray.get_runtime_context()
    return bool(context.worker.mode == ray.WORKER_MODE)


class GraphPredictor:
    """Runs a graph on batches: the callable class for ``ray.data.Dataset.map_batches``.

    Each actor builds the graph and its Session once, in ``__init__``, and sizes opweave's pools
    to the CPUs Ray gave it (:func:`configure`: ``num_cpus`` of ``map_batches``); every batch is
    then one ``Session.run``. Works as well with plain actors (``ray.remote(GraphPredictor)``)
    and, outside Ray, as a function on dicts of arrays (the pools are left alone there).

    Parameters
    ----------
    graph : Graph, GraphDef or bytes
        Travels to each actor once (a Graph pickles as its GraphDef bytes).
    fetches : mapping or sequence
        Output column -> tensor name (``{"logits": "logits:0"}``); a list of tensor names uses
        each op's name as the column.
    feeds : mapping
        Tensor name -> batch column, or list of columns stacked as ``(n, len(columns))``.
    config : ConfigProto, optional
        The Session's config (default: the global pools, sized to the actor's CPUs).
    intra, inter : int, optional
        Pool sizes instead of the actor's CPUs (see :func:`configure`).

    Examples
    --------
    >>> import numpy as np, opweave as ow
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
    ...     _ = ow.reduce_sum(x, axis=1, name="total")
    >>> predict = GraphPredictor(g, {"total": "total:0"}, {"x": "data"})
    >>> predict({"data": np.ones((3, 2), np.float32)})
    {'total': array([2., 2., 2.], dtype=float32)}
    """

    def __init__(
        self,
        graph: Any,
        fetches: Mapping[str, Any] | Sequence[str],
        feeds: Mapping[str, Any],
        *,
        config: ConfigProto | None = None,
        intra: int | None = None,
        inter: int | None = None,
    ) -> None:
        if _in_ray_worker():
            configure(intra, inter)  # before the Session: the first one sizes nothing then
        self._runner = runner_for(GraphPayload.from_graph(graph), config)
        graph_ = self._runner.graph
        if isinstance(fetches, Mapping):
            pairs = list(fetches.items())
        else:
            pairs = [(tensor_in(graph_, f, "fetch").op.name, f) for f in fetches]
        self._columns = [column for column, _ in pairs]
        self._fetches = [tensor_in(graph_, f, "fetch").name for _, f in pairs]
        self._feeds: dict[str, Any] = {}
        for name, column in feeds.items():
            t = tensor_in(graph_, name, "feed")
            if not (
                isinstance(column, str)
                or (isinstance(column, (list, tuple)) and all(isinstance(c, str) for c in column))
            ):
                raise TypeError(
                    f"feed {name!r} must name a column or a list of columns, got {column!r}"
                )
            self._feeds[t.name] = column
        self._batches = 0

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The fetched columns for one batch (a dict of column arrays: ``batch_format="numpy"``)."""
        where = f"opweave GraphPredictor, batch {self._batches} of this actor"
        self._batches += 1
        feeds: dict[str, Any] = {}
        for name, column in self._feeds.items():
            wanted = [column] if isinstance(column, str) else list(column)
            missing = [c for c in wanted if c not in batch]
            if missing:
                raise ValueError(
                    f"{where}: columns {missing} are not in the batch (its columns: "
                    f"{', '.join(map(str, batch))})"
                )
            if isinstance(column, str):
                feeds[name] = np.asarray(batch[column])
            else:
                feeds[name] = np.stack([np.asarray(batch[c]) for c in column], axis=1)
        values = self._runner.run(feeds, self._fetches, where=f"{where}: ")
        return {c: np.asarray(v) for c, v in zip(self._columns, values, strict=True)}
