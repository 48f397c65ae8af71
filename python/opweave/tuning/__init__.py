"""The tuner: time one graph under a grid of (intra, inter) settings and recommend a ConfigProto.

``opweave.tune(model)`` (and ``python -m opweave tune MODEL``) runs the model under every
``(intra_op_parallelism_threads, inter_op_parallelism_threads)`` pair of the grid, each in a
fresh process (the first Session of a process sizes the global pools), and returns a
:class:`TuneResult`: the run times of every setting, whether its fetched values equal those of
``(1, 1)`` (the kernels are deterministic for any thread count, so a difference is a bug), the
fastest setting, and the recommended one: the fewest threads whose median time is within noise
of the fastest, with the reason in one line.

The model is what a fresh process can rebuild: a built-in model's name (``"mlp"``, ``"wide"``,
``"chain"``, see :mod:`opweave.models`), the path of a ``.py`` file or the name of an importable
module that defines ``build()``, or a module-level ``build`` function. ``build()`` returns
``(graph, fetches, feed_dict)`` or an :class:`opweave.models.Model`.

>>> import opweave
>>> result = opweave.tune("mlp", intra=[1, 2], inter=[1, 2])  # doctest: +SKIP
>>> print(result)  # doctest: +SKIP
>>> result.config_line()  # doctest: +SKIP
'opweave.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)'
"""

from __future__ import annotations

from ._grid import ModelError as TuneError
from ._result import TOLERANCE as TOLERANCE
from ._result import TuneResult, recommend
from ._row import TuneRow
from ._tune import available_cpus as available_cpus
from ._tune import default_grid, tune
from ._tune import grid_cells as grid_cells

__all__ = ["TuneError", "TuneResult", "TuneRow", "default_grid", "recommend", "tune"]
