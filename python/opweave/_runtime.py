"""Private adapter between opweave's Python thread and pool controls and the C++ pools.

Every call from Python into the core about threads and pools goes through this module (the
public thread controls ``opweave.set_num_threads``, ``opweave.config.threading``,
``opweave.threads``, the threadpoolctl controller and the integrations; ``Session``'s pools;
``parallel_info()``), so the rules live in one place:

- ``intra_threads()`` / ``inter_threads()``: the sizes in effect (intra counts the caller).
- ``intra_source()`` / ``inter_source()``: which rule of the precedence order chose them.
- ``set_intra_threads(n, source)`` / ``set_inter_threads(n, source)``: an explicit size
  (``n > 0``), or ``n == 0`` for "the system picks" (environment variables, then the CPUs this
  process may use). The pool is resized if it exists.
- ``explicit_intra()`` / ``explicit_inter()``: what an opweave Python call set, 0 when unset
  (TensorFlow's ``get_*_op_parallelism_threads`` semantics).
- ``snapshot()`` / ``restore()``: save and put back the whole state, provenance included, for
  context managers (``opweave.threads``, ``threadpoolctl.threadpool_limits``).
- :class:`SessionPools`: the inter-op pools one Session runs on; making the first one applies
  the rule "the first Session's ConfigProto sizes the global pools" (with a
  :class:`~opweave.config.PoolConfigWarning` when a later one disagrees).
- ``runtime_info()``, ``describe_pools()``, ``worker_cpus()``, ``pool_stats()``,
  ``reset_pool_stats()``: what ``parallel_info()`` and the pool counters read.

Errors of the core come out as :mod:`opweave.errors` classes (``_core_errors``).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from . import _opweave_core as _core
from . import errors
from ._core_errors import call_core
from .config._protos import ConfigProto, PoolConfigWarning

Pool = Literal["intra", "inter"]

# How many forks lie between the interpreter's start and this process (0 in the process that
# imported opweave). SessionPools compares it on every run instead of calling os.getpid(), a
# system call that costs a tenth of a small run's fixed cost.
_fork_generation = 0


def _count_fork() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_count_fork)

# No Python lock here: the C++ runtime keeps each pool's whole setting (size, rule, what a call
# requested) and changes it in one step, and a resize waits for the pool's work, which may be a
# py_function calling these very functions; a lock held across that wait would never be released.

MAX_THREADS = 4096  # opweave::kMaxThreads


# -- sizes of the global pools ------------------------------------------------------------------
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


# -- what parallel_info() and the pool counters read ---------------------------------------------
def runtime_info() -> dict[str, Any]:
    """Sizes, sources, spin time, affinity and CPUs of the global pools, in one snapshot."""
    return _core.runtime_info()


def describe_pools() -> list[dict[str, Any]]:
    """The named and per-session pools alive now, each with the rule that sized it."""
    return _core.describe_pools()


def worker_cpus(pool: Pool) -> list[int]:
    """The CPU each worker of a global pool is pinned to (``OPWEAVE_AFFINITY``); [] unpinned."""
    return _core.pool_worker_cpus(pool)


def pool_stats(pool: Pool) -> dict[str, int]:
    """A global pool's work-stealing counters (creating the pool if it does not exist yet)."""
    return _core.pool_stats(pool)


def reset_pool_stats(pool: Pool) -> None:
    """Zero a global pool's counters."""
    _core.reset_pool_stats(pool)


# -- a Session's pools --------------------------------------------------------------------------
def _apply_first_session_rule(config: ConfigProto, uses_global_inter: bool) -> tuple[int, str]:
    """Size the global pools from ``config`` if this is the first Session (TensorFlow's rule).

    Warns (``PoolConfigWarning``) when a size or spin time ``config`` asks for cannot take effect
    because something else set it first. Returns the inter-op size in effect and its source.
    """
    intra, inter = config.intra_op_parallelism_threads, config.inter_op_parallelism_threads
    # The spin time follows the same rule; it must be set before the global pools are created
    # just below.
    spin = config.experimental.spin_time_us
    if spin is not None and not call_core(
        _core.configure_spin_time_if_unset,
        spin,
        f"the first Session's ConfigProto.experimental.spin_time_us={spin}",
    ):
        in_effect = runtime_info()
        if in_effect["spin_time_us"] != spin:
            warnings.warn(
                f"ConfigProto.experimental.spin_time_us={spin} does not take effect: the "
                f"global pools spin {in_effect['spin_time_us']} us, as set by "
                f"{in_effect['spin_time_source']}.",
                PoolConfigWarning,
                stacklevel=4,  # the line that made the Session, via SessionPools
            )
    eff = call_core(
        _core.configure_parallelism_if_unset,
        intra,
        inter if uses_global_inter else -1,
        "the first Session's ConfigProto",
    )
    if intra and eff["intra"] != intra:
        warnings.warn(
            f"ConfigProto(intra_op_parallelism_threads={intra}) does not take effect: the "
            f"global intra-op pool already runs one op on {eff['intra']} threads, as sized by "
            f"{eff['intra_source']}. Resize it with opweave.set_num_threads({intra}) between "
            "runs.",
            PoolConfigWarning,
            stacklevel=4,  # the line that made the Session, via SessionPools
        )
    return int(eff["inter"]), str(eff["inter_source"])


class SessionPools(Sequence[_core.InterPool]):
    """The inter-op pools one Session runs on, made from its ConfigProto, in the order
    ``RunOptions.inter_op_thread_pool`` numbers them.

    Making one applies the first-Session rule to the global pools. Then, by the config:
    ``session_inter_op_thread_pool`` entries (named ones are process-global and shared by name,
    unnamed ones the session's own), else none for ``inter_op_parallelism_threads < 0`` (every op
    runs in the caller's thread), else a pool of its own for ``use_per_session_threads``, else the
    global inter-op pool.

    Parameters
    ----------
    config : ConfigProto
        The session's config (already checked).

    Raises
    ------
    opweave.errors.InvalidArgumentError
        A named pool exists with another size.
    """

    def __init__(self, config: ConfigProto) -> None:
        self._pools: list[_core.InterPool] = []
        # How to re-create each pool in a forked child, whose copies have no threads.
        self._factories: list[Callable[[], _core.InterPool]] = []
        self._fork_generation = _fork_generation
        inter = config.inter_op_parallelism_threads
        uses_global_inter = not (
            config.session_inter_op_thread_pool or inter < 0 or config.use_per_session_threads
        )
        eff_inter, src_inter = _apply_first_session_rule(config, uses_global_inter)
        if config.session_inter_op_thread_pool:
            for i, p in enumerate(config.session_inter_op_thread_pool):
                if p.global_name:
                    self._add(
                        functools.partial(_core.named_inter_pool, p.global_name, p.num_threads)
                    )
                else:
                    self._add(
                        functools.partial(
                            _core.new_inter_pool, p.num_threads, f"session inter-op {i}"
                        )
                    )
        elif inter < 0:
            pass  # every op runs in the caller's thread
        elif config.use_per_session_threads:
            self._add(functools.partial(_core.new_inter_pool, inter, "session inter-op"))
        else:
            self._add(_core.global_inter_pool)
            if inter and eff_inter != inter and eff_inter >= 0:
                warnings.warn(
                    f"ConfigProto(inter_op_parallelism_threads={inter}) does not take effect: "
                    f"the global inter-op pool already runs {eff_inter} ops at once, as sized "
                    f"by {src_inter}. Resize it with opweave.set_num_interop_threads({inter}) "
                    "between runs, or set use_per_session_threads=True.",
                    PoolConfigWarning,
                    stacklevel=3,  # the line that made the Session, via Session.__init__
                )

    @overload
    def __getitem__(self, index: int) -> _core.InterPool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[_core.InterPool]: ...
    def __getitem__(self, index: int | slice) -> _core.InterPool | Sequence[_core.InterPool]:
        return self._pools[index]

    def __len__(self) -> int:
        return len(self._pools)

    def _add(self, factory: Callable[[], _core.InterPool]) -> None:
        self._pools.append(call_core(factory))
        self._factories.append(factory)

    def _rebuild_after_fork(self) -> None:
        # In a forked child the session's pools have no threads (the C++ side leaks them instead
        # of joining). Named pools were forgotten by the child's fork handler, the global pools
        # are rebuilt lazily by global_pools.h: calling the factories again gives live pools of
        # the same sizes. Racing threads may both rebuild; the loser's pools just go.
        self._pools = [call_core(factory) for factory in self._factories]
        self._fork_generation = _fork_generation

    def for_run(self, index: int) -> _core.InterPool | None:
        """The pool ``RunOptions.inter_op_thread_pool == index`` picks; None: the caller's thread.

        Raises
        ------
        opweave.errors.InvalidArgumentError
            ``index`` names no pool of this session.
        """
        if self._fork_generation != _fork_generation:  # made before a fork: this is the child
            self._rebuild_after_fork()
        if index == -1:
            return None
        if not self._pools:
            if index == 0:
                return None
        elif 0 <= index < len(self._pools):
            return self._pools[index]
        raise errors.InvalidArgumentError(None, None, f"Invalid inter_op_thread_pool: {index}")

    def close(self) -> None:
        """Drop the session's references: its own pools go once no run uses them."""
        self._pools = []
