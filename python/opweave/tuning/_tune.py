"""``tune()``: run a model under a grid of (intra, inter) settings, each in a fresh process."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from .. import _runtime
from . import _grid
from ._result import TOLERANCE, TuneResult
from ._row import TuneRow

__all__ = ["available_cpus", "default_grid", "grid_cells", "tune"]


def available_cpus() -> int:
    """The CPUs this process may run on (affinity mask and cgroup quota), as opweave counts them."""
    return int(_runtime.runtime_info()["available_cpus"])


def default_grid(cpus: int | None = None) -> list[int]:
    """The thread counts tried by default, for both settings.

    Every count from 1 to ``cpus`` on up to 4 CPUs, else the powers of two below ``cpus`` and
    ``cpus`` itself; 2 is always in, even on one CPU (two ops at once can overlap waiting).

    Examples
    --------
    >>> default_grid(2)
    [1, 2]
    >>> default_grid(4)
    [1, 2, 3, 4]
    >>> default_grid(12)
    [1, 2, 4, 8, 12]
    """
    n = available_cpus() if cpus is None else max(1, cpus)
    values = {1, 2, n}
    if n <= 4:
        values.update(range(1, n + 1))
    else:
        values.update(2**k for k in range(n.bit_length()) if 2**k <= n)
    return sorted(values)


def _thread_values(name: str, values: int | Sequence[int] | None, *, low: int | None) -> list[int]:
    if values is None:
        return default_grid()
    items: Sequence[object] = [values] if isinstance(values, int) else values
    out: list[int] = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} values must be ints, got {v!r}")
        if low is not None and v < low:
            raise ValueError(f"{name} values must be >= {low} (0: the system picks), got {v}")
        if v not in out:
            out.append(v)
    if not out:
        raise ValueError(f"{name} needs at least one value")
    return out


def grid_cells(intra: Sequence[int], inter: Sequence[int]) -> list[tuple[int, int]]:
    """Every ``(intra, inter)`` pair, ``(1, 1)`` first (added if absent: it is the reference)."""
    cells = [(i, j) for i in intra for j in inter]
    return [(1, 1), *[c for c in cells if c != (1, 1)]]


def tune(
    model: str | os.PathLike[str] | Callable[..., object],
    intra: int | Sequence[int] | None = None,
    inter: int | Sequence[int] | None = None,
    *,
    runs: int = 10,
    warmup: int = 2,
    timeout: float = 120.0,
    model_kwargs: Mapping[str, Any] | None = None,
    tolerance: float = TOLERANCE,
    progress: bool | TextIO = True,
) -> TuneResult:
    """Time ``model`` under every (intra, inter) setting of a grid and recommend one.

    Each setting runs in a fresh Python process (the first Session of a process sizes the global
    pools), one after the other: the pools are sized, the model is built, run ``warmup`` times,
    then timed over ``runs`` runs of ``Session.run``. The fetched values of the last run are
    compared with those of ``(1, 1)``: they must be bit-identical.

    Parameters
    ----------
    model : str, path or function
        A built-in model (``"mlp"``, ``"wide"``, ``"chain"``: :data:`opweave.models.BUILTIN`),
        the path of a ``.py`` file or the name of an importable module that defines ``build()``,
        or a module-level build function. ``build()`` returns ``(graph, fetches, feed_dict)``
        or an :class:`opweave.models.Model`.
    intra, inter : int or sequence of int, optional
        Values of ``intra_op_parallelism_threads`` (>= 0) and ``inter_op_parallelism_threads``
        (negative: every op in the caller's thread) to try. Default: :func:`default_grid`.
        ``(1, 1)`` is always run: it is the reference for speedups and values.
    runs, warmup : int
        Timed runs (>= 1) and untimed warm-up runs (>= 0) per setting.
    timeout : float
        Seconds one setting's process may take in total; a slower one is killed and reported.
    model_kwargs : mapping, optional
        Keyword arguments for the build function (JSON-serializable), e.g.
        ``{"width": 256}`` for ``"mlp"``; :data:`opweave.models.SMALL` has small sizes.
    tolerance : float
        A setting at most this much slower than the fastest counts as just as fast.
    progress : bool or file
        Show progress on stderr (True), on the given stream, or not at all (False).

    Returns
    -------
    TuneResult
        ``print(result)`` shows the table; ``result.config_line()`` the line to paste.

    Raises
    ------
    TuneError
        The model cannot be found, loaded or built (an unknown name, no ``build``, ``build()``
        returning something else, or raising).
    TypeError, ValueError
        Bad grid values, ``runs``, ``warmup`` or ``timeout``.

    Examples
    --------
    >>> import opweave
    >>> result = opweave.tune("mlp", intra=[1, 2], inter=[1, 2], runs=5)  # doctest: +SKIP
    >>> print(result)  # doctest: +SKIP
    mlp: MLP: 4 towers x 2 dense layers (256x512 @ 512x512, float32) joined by add_n
    ...
    recommended: intra=1 inter=2 (inter=2: 1.71x faster than inter=1; ...)
    paste      : opweave.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=2)
    >>> config = result.to_config()  # doctest: +SKIP

    A model of your own, in a file or module:

    >>> # my_model.py
    >>> def build():  # doctest: +SKIP
    ...     g = opweave.Graph()
    ...     with g.as_default():
    ...         x = opweave.placeholder(opweave.float32, shape=(512, 512))
    ...         y = opweave.reduce_sum(opweave.matmul(x, x))
    ...     return g, y, {x: np.ones((512, 512), np.float32)}
    >>> opweave.tune("my_model.py", runs=5)  # doctest: +SKIP
    """
    target = _grid.resolve_target(model, model_kwargs)
    intra_values = _thread_values("intra", intra, low=0)
    inter_values = _thread_values("inter", inter, low=None)  # negative: the caller's thread
    for name, value, low in (("runs", runs, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")
    if progress is True:
        bar: _grid.Progress | None = _grid.Progress(sys.stderr)
    elif progress is False:
        bar = None
    else:
        bar = _grid.Progress(progress)
    cells = grid_cells(intra_values, inter_values)
    runs_done = _grid.run_grid(
        target, cells, runs=runs, warmup=warmup, timeout=timeout, progress=bar
    )
    description = next((c.description for c in runs_done if c.description), "")
    rows = tuple(
        TuneRow(c.intra, c.inter, c.times, c.error, c.check, c.mismatch, c.seen) for c in runs_done
    )
    return TuneResult(
        target.label or target.ref,
        description,
        rows,
        runs=runs,
        warmup=warmup,
        cpus=available_cpus(),
        tolerance=tolerance,
    )
