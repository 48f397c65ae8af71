"""Dask integration: a WorkerPlugin that sizes opweave's pools to each worker's share of CPUs.

A Dask worker runs ``nthreads`` tasks at once and is given that many CPU slots; by default
opweave in every worker process would size its pools to all the CPUs the process may use, and
``n_workers`` processes would oversubscribe the machine. The plugin sizes both global pools of
each worker to the worker's share (its ``nthreads``, or ``cpus=`` if given) when the worker
starts, and hands them back to the system when the plugin is removed. Tasks running at once in
one worker share its pools, so the threads they use together stay close to that share.

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
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from .. import _runtime
from .._threads import check_thread_count

__all__ = ["OpweaveWorkerPlugin", "worker_cpu_share"]


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
