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
"""

from __future__ import annotations

import math
from typing import Any

import ray

from .. import _runtime
from .._threads import check_thread_count

__all__ = ["assigned_cpus", "configure"]


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
