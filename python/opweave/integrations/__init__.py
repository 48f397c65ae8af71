"""Size opweave's pools from frameworks that already run many workers (Dask, Ray).

Each worker process of such a framework gets a share of the machine's CPUs; opweave's default
("the CPUs this process may use") would let every worker use all of them. These helpers size the
pools to the worker's share instead:

- :mod:`opweave.integrations.dask`: ``client.register_plugin(OpweaveWorkerPlugin())``;
- :mod:`opweave.integrations.ray`: call ``opweave.integrations.ray.configure()`` at the top of a
  task or actor method.

Both also run a graph over many inputs with one Session per graph and worker process, the graph
sent once as GraphDef bytes: ``dask.map_blocks`` / ``dask.map_partitions`` over the blocks of
Dask arrays and DataFrames, and ``ray.GraphPredictor`` for ``ray.data.Dataset.map_batches``.

Neither framework is a dependency of opweave; import the submodule only where it is installed
(``pip install "opweave[integrations]"``).
"""

from __future__ import annotations

__all__ = ["dask", "ray"]
