"""``tf.config.threading`` for opweave: the intra-op and inter-op pool sizes, TensorFlow's way.

The four functions keep TensorFlow's meanings: ``0`` means "the system picks", and the getters
return what was *set* (0 when nothing was), not the size in effect; use
:func:`opweave.get_num_threads` / :func:`opweave.get_num_interop_threads` for that.

One difference, on purpose: TensorFlow raises ``RuntimeError("Intra op parallelism cannot be
modified after initialization.")`` once its runtime has started. opweave resizes the pool
instead, safely, between runs (nothing may be running on the pool at the moment of the call).

These functions, ``opweave.set_num_threads``, ``threadpoolctl`` and the environment variables all
act on the same two pools. Precedence, first match wins: an explicit call (this module,
``opweave.set_num_threads``, ...; or else the first Session's ConfigProto) >
``OPWEAVE_NUM_INTRAOP_THREADS`` / ``OPWEAVE_NUM_INTEROP_THREADS`` > ``OMP_NUM_THREADS`` (intra
only) > the CPUs this process may use (affinity mask and cgroup CPU quota).
"""

from __future__ import annotations

from .. import _runtime
from .._threads import check_thread_count

__all__ = [
    "get_inter_op_parallelism_threads",
    "get_intra_op_parallelism_threads",
    "set_inter_op_parallelism_threads",
    "set_intra_op_parallelism_threads",
]


def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Set the number of threads used within an individual op for parallelism.

    Matrix multiplication and reductions split their work over at most ``num_threads`` threads,
    the calling thread included. A value of 0 means the system picks an appropriate number
    (``OPWEAVE_NUM_INTRAOP_THREADS``, then ``OMP_NUM_THREADS``, then the CPUs this process may
    use).

    Unlike TensorFlow, which raises "Intra op parallelism cannot be modified after
    initialization.", this may be called at any time: the pool is resized between runs.

    Parameters
    ----------
    num_threads : int
        Number of parallel threads, 0 (system picks) to 4096.

    Raises
    ------
    TypeError
        ``num_threads`` is not an int (``bool`` included).
    ValueError
        ``num_threads`` is negative or above 4096.

    Examples
    --------
    >>> import opweave
    >>> opweave.config.threading.set_intra_op_parallelism_threads(2)
    >>> opweave.config.threading.get_intra_op_parallelism_threads()
    2
    >>> opweave.get_num_threads()
    2
    >>> opweave.config.threading.set_intra_op_parallelism_threads(0)  # the system picks again
    >>> opweave.config.threading.get_intra_op_parallelism_threads()
    0
    """
    n = check_thread_count("set_intra_op_parallelism_threads", num_threads, allow_zero=True)
    _runtime.set_intra_threads(n, f"opweave.config.threading.set_intra_op_parallelism_threads({n})")


def get_intra_op_parallelism_threads() -> int:
    """Get the number of threads used within an individual op, as set; 0 when unset.

    As in TensorFlow this returns what was set (by this module, ``opweave.set_num_threads``,
    ``opweave.threads`` or ``threadpoolctl``), not the size chosen by the system; 0 means
    "the system picks". :func:`opweave.get_num_threads` returns the size in effect.

    Returns
    -------
    int
        Number of parallel threads set, or 0.

    Examples
    --------
    >>> import opweave
    >>> with opweave.threads(intra=3):
    ...     opweave.config.threading.get_intra_op_parallelism_threads()
    3
    """
    return _runtime.explicit_intra()


def set_inter_op_parallelism_threads(num_threads: int) -> None:
    """Set the number of threads used for parallelism between independent operations.

    At most ``num_threads`` ops of a graph run at once on the global inter-op pool. A value of 0
    means the system picks (``OPWEAVE_NUM_INTEROP_THREADS``, then the CPUs this process may
    use). Running every op in the caller's thread (a negative value in TensorFlow's
    ``ConfigProto``) is a per-session setting: use ``ConfigProto(inter_op_parallelism_threads=-1)``.

    Unlike TensorFlow, this may be called at any time: the pool is resized between runs.

    Parameters
    ----------
    num_threads : int
        Number of parallel threads, 0 (system picks) to 4096.

    Raises
    ------
    TypeError
        ``num_threads`` is not an int (``bool`` included).
    ValueError
        ``num_threads`` is negative or above 4096.

    Examples
    --------
    >>> import opweave
    >>> opweave.config.threading.set_inter_op_parallelism_threads(2)
    >>> opweave.config.threading.get_inter_op_parallelism_threads()
    2
    >>> opweave.config.threading.set_inter_op_parallelism_threads(0)
    """
    n = check_thread_count("set_inter_op_parallelism_threads", num_threads, allow_zero=True)
    _runtime.set_inter_threads(n, f"opweave.config.threading.set_inter_op_parallelism_threads({n})")


def get_inter_op_parallelism_threads() -> int:
    """Get the number of threads used between independent operations, as set; 0 when unset.

    Returns
    -------
    int
        Number of parallel threads set, or 0. :func:`opweave.get_num_interop_threads` returns
        the size in effect.

    Examples
    --------
    >>> import opweave
    >>> opweave.config.threading.get_inter_op_parallelism_threads()  # doctest: +SKIP
    0
    """
    return _runtime.explicit_inter()
