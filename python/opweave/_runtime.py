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

import os
import threading
from dataclasses import dataclass
from typing import Literal

from . import _opweave_core as _core

Pool = Literal["intra", "inter"]

# The C++ runtime is thread-safe; this lock only keeps the Python-side record of explicit sizes
# consistent with the C++ state when several Python threads change sizes at once.
_lock = threading.RLock()
_explicit: dict[Pool, int] = {"intra": 0, "inter": 0}
# Held by the forking thread across os.fork(), so a child never inherits it locked by a thread
# that does not exist there (the C++ side does the same for its locks, see fork_guard.h).
os.register_at_fork(
    before=_lock.acquire, after_in_parent=_lock.release, after_in_child=_lock.release
)

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
    return _explicit["intra"]


def explicit_inter() -> int:
    """The inter-op size an opweave Python call set, 0 when unset."""
    return _explicit["inter"]


def set_intra_threads(n: int, source: str) -> None:
    """Size the intra-op pool explicitly (``n > 0``) or hand it back to the system (``n == 0``)."""
    with _lock:
        _core.set_intra_op_parallelism(n, source)
        _explicit["intra"] = n


def set_inter_threads(n: int, source: str) -> None:
    """Size the inter-op pool explicitly (``n > 0``) or hand it back to the system (``n == 0``)."""
    with _lock:
        _core.set_inter_op_parallelism(n, source)
        _explicit["inter"] = n


@dataclass(frozen=True)
class PoolState:
    """One pool's size, provenance and explicit setting, as saved by :func:`snapshot`."""

    size: int
    source: str
    explicit: int


def snapshot(pool: Pool) -> PoolState:
    """Save one pool's state so :func:`restore` can put it back exactly."""
    with _lock:
        if pool == "intra":
            return PoolState(intra_threads(), intra_source(), explicit_intra())
        return PoolState(inter_threads(), inter_source(), explicit_inter())


def restore(pool: Pool, state: PoolState) -> None:
    """Put back a state saved by :func:`snapshot`, size and provenance included.

    A state that was not set from Python is first handed back to the system (``n == 0``); if that
    does not reproduce it (the first Session's ConfigProto chose it, say), the saved size is set
    again with its saved provenance, and the Python record stays "unset".
    """
    setter = set_intra_threads if pool == "intra" else set_inter_threads
    with _lock:
        if state.explicit > 0:
            setter(state.explicit, state.source)
            return
        setter(0, state.source)
        now = snapshot(pool)
        if (now.size, now.source) != (state.size, state.source):
            setter(state.size, state.source)
            _explicit[pool] = 0
