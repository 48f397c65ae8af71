"""Private adapter between opweave's Python thread controls and the C++ runtime's global pools.

Every public thread control (``opweave.set_num_threads``, ``opweave.config.threading``,
``opweave.threads``, the threadpoolctl controller and the integrations) goes through this module,
so the rules live in one place:

- ``intra_threads()`` / ``inter_threads()``: the sizes in effect (intra counts the caller).
- ``intra_source()`` / ``inter_source()``: which rule of the precedence order chose them.
- ``set_intra_threads(n, source)`` / ``set_inter_threads(n, source)``: an explicit size
  (``n > 0``), or ``n == 0`` for "the system picks" (environment variables, then the CPUs this
  process may use). The pool is resized if it exists.
- ``explicit_intra()`` / ``explicit_inter()``: what an opweave Python call set, 0 when unset
  (TensorFlow's ``get_*_op_parallelism_threads`` semantics).
- ``snapshot()`` / ``restore()``: save and put back the whole state, provenance included, for
  context managers (``opweave.threads``, ``threadpoolctl.threadpool_limits``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import _opweave_core as _core
from ._core_errors import call_core

Pool = Literal["intra", "inter"]

# No Python lock here: the C++ runtime keeps each pool's whole setting (size, rule, what a call
# requested) and changes it in one step, and a resize waits for the pool's work, which may be a
# py_function calling these very functions; a lock held across that wait would never be released.

MAX_THREADS = 4096  # opweave::kMaxThreads


def intra_threads() -> int:
    """Threads one op may compute on at once, the caller included."""
    return int(_core.intra_op_parallelism())


def inter_threads() -> int:
    """Ops that may run at once on the global inter-op pool."""
    return int(_core.inter_op_parallelism())


def intra_source() -> str:
    """Which rule chose the intra-op size, e.g. ``"OMP_NUM_THREADS=4"``."""
    return str(_core.intra_op_parallelism_source())


def inter_source() -> str:
    """Which rule chose the inter-op size."""
    return str(_core.inter_op_parallelism_source())


def explicit_intra() -> int:
    """The intra-op size an opweave Python call set, 0 when unset."""
    return snapshot("intra").explicit


def explicit_inter() -> int:
    """The inter-op size an opweave Python call set, 0 when unset."""
    return snapshot("inter").explicit


def set_intra_threads(n: int, source: str) -> None:
    """Size the intra-op pool explicitly (``n > 0``) or hand it back to the system (``n == 0``).

    Raises
    ------
    opweave.errors.FailedPreconditionError
        Called from inside the pool's own work, where the resize would wait for itself.
    """
    call_core(_core.set_intra_op_parallelism, n, source)


def set_inter_threads(n: int, source: str) -> None:
    """Size the inter-op pool explicitly (``n > 0``) or hand it back to the system (``n == 0``).

    Raises
    ------
    opweave.errors.FailedPreconditionError
        Called from inside the pool's own work (a py_function on the global inter-op pool).
    """
    call_core(_core.set_inter_op_parallelism, n, source)


@dataclass(frozen=True)
class PoolState:
    """One pool's whole setting, as saved by :func:`snapshot`.

    Attributes
    ----------
    size : int
        The size in effect.
    source : str
        The rule that chose it.
    explicit : int
        The size an opweave Python call set, 0 when none did (TensorFlow's getter).
    fixed : bool
        The first rule of the precedence order chose it (a call, or the first Session's
        ConfigProto): environment variables and a later first Session no longer apply.
    """

    size: int
    source: str
    explicit: int
    fixed: bool


def snapshot(pool: Pool) -> PoolState:
    """Save one pool's setting, read in one step, so :func:`restore` can put it back exactly."""
    size, source, fixed, requested = _core.parallelism_setting(pool)
    return PoolState(int(size), str(source), int(requested), bool(fixed))


def restore(pool: Pool, state: PoolState) -> None:
    """Put back a setting saved by :func:`snapshot`: size, provenance and what was requested.

    One step in the C++ runtime: a restore racing with a setter on another thread leaves the
    whole setting of one or the other, never a mix (whichever comes last wins, as for two setters).
    """
    call_core(
        _core.restore_parallelism, pool, state.size, state.source, state.fixed, state.explicit
    )
