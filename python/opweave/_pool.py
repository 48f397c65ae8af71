"""The two process-wide thread pools, seen from Python.

``parallel_info()`` explains the pool sizes and where they came from; :func:`pool_stats` and
:func:`reset_pool_stats` expose the work-stealing counters (for tests and the demo). The sizes
are set through the public thread controls only (``opweave.set_num_threads`` & co., see
``_threads.py``), and everything here reads the pools through ``_runtime.py``, so there is one
code path and one record of what was set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _opweave_core as _core
from . import _runtime
from ._memory import buffer_cache_info

PoolName = Literal["intra", "inter"]

__all__ = [
    "PoolName",
    "PoolStats",
    "parallel_info",
    "parallel_sin_sum",
    "pool_stats",
    "reset_pool_stats",
]


@dataclass(frozen=True)
class PoolStats:
    """Counters of one pool since it was created or last reset.

    Attributes
    ----------
    tasks_run : int
        Tasks completed by workers and by threads that helped while waiting.
    steals : int
        Tasks taken from another worker's deque.
    parks : int
        Times an idle worker went to sleep after spinning.
    wakeups : int
        Times a sleeping worker was woken.
    injected : int
        Tasks submitted from threads outside the pool.
    moves : int
        Times a woken worker found itself on the CPU of the thread that woke it and moved to
        another CPU (Linux often wakes a thread there; the two would then share one CPU while
        another idles). Pools pinned with ``OPWEAVE_AFFINITY`` never move.
    """

    tasks_run: int
    steals: int
    parks: int
    wakeups: int
    injected: int
    moves: int


def _check_pool(pool: str) -> None:
    if pool not in ("intra", "inter"):
        raise ValueError(f"pool must be 'intra' or 'inter', got {pool!r}")


def pool_stats(pool: PoolName = "intra") -> PoolStats:
    """Return the counters of a global pool (creating the pool if it does not exist yet).

    Parameters
    ----------
    pool : {"intra", "inter"}
        The intra-op pool (threads inside one op) or the inter-op pool (ops at once).

    Returns
    -------
    PoolStats
        Exact once the pool is quiet; approximate while tasks run.
    """
    _check_pool(pool)
    return PoolStats(**_runtime.pool_stats(pool))


def reset_pool_stats(pool: PoolName = "intra") -> None:
    """Set every counter of a global pool back to zero.

    Parameters
    ----------
    pool : {"intra", "inter"}
        Which pool.
    """
    _check_pool(pool)
    _runtime.reset_pool_stats(pool)


def parallel_info() -> str:
    """Describe the thread pools: sizes, why each size was chosen, CPUs and kernel ISA.

    Returns
    -------
    str
        Several ``key : value`` lines, for humans (PyTorch's ``torch.__config__.parallel_info``
        plays the same role).

    Examples
    --------
    >>> import opweave
    >>> print(opweave.parallel_info())  # doctest: +SKIP
    opweave 0.1.0
    intra-op parallelism : 2 threads per op (caller + 1 workers) [OMP_NUM_THREADS=2]
    ...
    """
    from ._version import __version__

    info = _runtime.runtime_info()
    intra = info["intra_op_parallelism"]
    quota = info["cgroup_quota_cpus"]
    quota_text = f"{quota:.2f} CPUs" if quota > 0 else "none"
    if quota <= 0 and info["cgroup_error"]:
        quota_text += f": {info['cgroup_error']}"

    def created(key: str) -> str:
        return "" if info[key] else ", not created yet"

    lines = [
        f"opweave {__version__}",
        f"intra-op parallelism : {intra} threads per op (caller + {intra - 1} workers"
        f"{created('intra_pool_created')}) [{info['intra_source']}]",
        f"inter-op parallelism : {info['inter_op_parallelism']} ops at once "
        f"({info['inter_op_parallelism']} workers{created('inter_pool_created')}) "
        f"[{info['inter_source']}]",
        f"CPUs                 : {info['available_cpus']} available (online "
        f"{info['online_cpus']}, affinity mask {info['affinity_cpus']}, cgroup quota "
        f"{quota_text})",
        f"kernel ISA           : {info['isa']}",
        f"spin before parking  : {info['spin_time_us']} us [{info['spin_time_source']}]",
        f"worker affinity      : {info['affinity']} [{info['affinity_source']}]"
        + _global_pool_cpus(info),
        _buffer_cache_line(),
        "size precedence      : set_num_threads / first Session's ConfigProto > "
        "OPWEAVE_NUM_INTRAOP_THREADS / OPWEAVE_NUM_INTEROP_THREADS > OMP_NUM_THREADS (intra) > "
        "available CPUs",
    ]
    # Named and per-session pools: whoever creates one registers it with the rule that sized it.
    for pool in _runtime.describe_pools():
        lines.append(
            f"{pool['kind']:<21}: '{pool['label']}' {pool['workers']} workers [{pool['source']}]"
            + (f" on {_cpus_text(pool['cpus'])}" if pool["cpus"] else "")
        )
    return "\n".join(lines)


def _buffer_cache_line() -> str:
    """'tensor buffer cache  : 4.5 MiB held for reuse (cap 256 MiB) [default]'."""
    cache = buffer_cache_info()
    mib = 1 << 20
    if cache.cap_bytes == 0:
        return f"tensor buffer cache  : off [{cache.cap_source}]"
    return (
        f"tensor buffer cache  : {cache.held_bytes / mib:.1f} MiB held for reuse (cap "
        f"{cache.cap_bytes // mib} MiB) [{cache.cap_source}]"
    )


def _cpus_text(cpus: list[int]) -> str:
    """'CPU 3' or 'CPUs 0,1' (one per worker, in worker order)."""
    return f"CPU{'s' if len(cpus) > 1 else ''} {','.join(str(c) for c in cpus)}"


def _global_pool_cpus(info: dict[str, Any]) -> str:
    """Where the existing global pools' workers are pinned, e.g. '; inter-op on CPU 0, ...'."""
    parts = []
    pools: tuple[tuple[str, _runtime.Pool, str], ...] = (
        ("inter-op", "inter", "inter_pool_created"),
        ("intra-op", "intra", "intra_pool_created"),
    )
    for name, pool, key in pools:
        cpus = _runtime.worker_cpus(pool) if info[key] else []
        if cpus:
            parts.append(f"{name} on {_cpus_text(cpus)}")
    return "; " + ", ".join(parts) if parts else ""


def parallel_sin_sum(x: npt.ArrayLike, repeats: int = 8) -> float:
    """Sum ``sin(x[i] + k)`` over every element and ``k < repeats`` on the intra-op pool.

    A demo workload: a fixed-block parallel reduction run with the GIL released, so the result is
    bit-identical for any number of threads while the time is not.

    Parameters
    ----------
    x : array_like
        Converted to a contiguous float64 array (no copy if it already is one).
    repeats : int
        Work per element, about ``20 ns * repeats``.

    Returns
    -------
    float
        The sum.
    """
    if repeats < 0:
        raise ValueError(f"repeats must be >= 0, got {repeats}")
    arr = np.ascontiguousarray(x, dtype=np.float64)
    return float(_core.parallel_sin_sum(arr, int(repeats)))
