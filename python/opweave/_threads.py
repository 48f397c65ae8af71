"""PyTorch-style thread controls: ``set_num_threads``, ``get_num_threads``, the inter-op pair, and
the ``threads`` context manager.

The argument checks and messages are PyTorch's, so code written for ``torch.set_num_threads``
behaves the same. One difference, on purpose: PyTorch refuses to change the number of inter-op
threads once parallel work has started; opweave resizes either pool at any time between runs.

The exceptions raised for bad arguments are both what Python code expects and what PyTorch code
catches: a wrong type raises :class:`ThreadCountTypeError` (a ``TypeError`` and a
``RuntimeError``), a non-positive count raises :class:`ThreadCountValueError` (a ``ValueError``
and a ``RuntimeError``; PyTorch raises ``RuntimeError`` for both).
"""

from __future__ import annotations

import contextlib
import numbers
import operator

from . import _runtime

__all__ = [
    "ThreadCountTypeError",
    "ThreadCountValueError",
    "get_num_interop_threads",
    "get_num_threads",
    "set_num_interop_threads",
    "set_num_threads",
    "threads",
]


class ThreadCountTypeError(TypeError, RuntimeError):
    """A thread count that is not an integer (``bool`` counts as not an integer)."""


class ThreadCountValueError(ValueError, RuntimeError):
    """A thread count out of range (not positive, or above opweave's limit of 4096)."""


def check_thread_count(func: str, n: object, *, allow_zero: bool = False) -> int:
    """Validate a thread count the way PyTorch does and return it as an ``int``.

    Parameters
    ----------
    func : str
        The public function's name, used in the messages.
    n : object
        The value the user passed. ``int`` and NumPy integers are accepted; ``bool`` is not.
    allow_zero : bool
        Accept 0 ("the system picks", TensorFlow's meaning).

    Returns
    -------
    int
        ``n`` as a Python ``int``.

    Raises
    ------
    ThreadCountTypeError
        ``n`` is not an integer: "set_num_threads expects an int, but got float".
    ThreadCountValueError
        ``n`` is out of range: "set_num_threads expects a positive integer".

    Examples
    --------
    >>> check_thread_count("set_num_threads", 2)
    2
    >>> check_thread_count("set_num_threads", 2.0)
    Traceback (most recent call last):
    ...
    opweave._threads.ThreadCountTypeError: set_num_threads expects an int, but got float
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ThreadCountTypeError(f"{func} expects an int, but got {type(n).__name__}")
    value = operator.index(n)
    if allow_zero:
        if value < 0:
            raise ThreadCountValueError(
                f"{func} expects a non-negative integer (0 means the system picks), got {value}"
            )
    elif value <= 0:
        raise ThreadCountValueError(f"{func} expects a positive integer")
    if value > _runtime.MAX_THREADS:
        raise ThreadCountValueError(
            f"{func} expects at most {_runtime.MAX_THREADS} threads, got {value}"
        )
    return value


def set_num_threads(n: int) -> None:
    """Set how many threads one op may compute on, the calling thread included.

    Like ``torch.set_num_threads``. It takes precedence over ``OPWEAVE_NUM_INTRAOP_THREADS``,
    ``OMP_NUM_THREADS`` and the CPU count, and may be called at any time: the intra-op pool is
    resized between runs.

    Parameters
    ----------
    n : int
        A positive number of threads (at most 4096). ``n = 1`` runs every op on the caller's
        thread alone.

    Raises
    ------
    ThreadCountTypeError
        ``n`` is not an int (``TypeError``, also a ``RuntimeError`` as in PyTorch).
    ThreadCountValueError
        ``n`` is not positive (``ValueError``, also a ``RuntimeError`` as in PyTorch).
    opweave.errors.FailedPreconditionError
        Called from inside a parallel loop running on the intra-op pool, where the resize would
        wait for itself (a ``py_function`` runs on the inter-op pool and may call this).

    See Also
    --------
    get_num_threads, threads, opweave.config.threading.set_intra_op_parallelism_threads

    Examples
    --------
    >>> import opweave
    >>> opweave.set_num_threads(2)
    >>> opweave.get_num_threads()
    2
    """
    value = check_thread_count("set_num_threads", n)
    _runtime.set_intra_threads(value, f"opweave.set_num_threads({value})")


def get_num_threads() -> int:
    """Return how many threads one op computes on at most, the calling thread included.

    This is the size in effect, whichever rule chose it (an explicit call, an environment
    variable, the first Session's ConfigProto, or the CPUs this process may use); the pool need
    not exist yet.

    Returns
    -------
    int
        The intra-op parallelism, at least 1.

    Examples
    --------
    >>> import opweave
    >>> with opweave.threads(intra=3):
    ...     opweave.get_num_threads()
    3
    """
    return _runtime.intra_threads()


def set_num_interop_threads(n: int) -> None:
    """Set how many ops may run at once on the global inter-op pool.

    Like ``torch.set_num_interop_threads``, with the same argument checks, but allowed at any
    time: where PyTorch raises "cannot set number of interop threads after parallel work has
    started", opweave resizes the pool between runs.

    Parameters
    ----------
    n : int
        A positive number of threads (at most 4096).

    Raises
    ------
    ThreadCountTypeError
        ``n`` is not an int.
    ThreadCountValueError
        ``n`` is not positive.
    opweave.errors.FailedPreconditionError
        Called from inside an op running on the global inter-op pool (a ``py_function``, say),
        where the resize would wait for itself. From another thread, the call waits for the ops
        in flight instead.

    See Also
    --------
    get_num_interop_threads, threads

    Examples
    --------
    >>> import opweave
    >>> opweave.set_num_interop_threads(2)
    >>> opweave.get_num_interop_threads()
    2
    """
    value = check_thread_count("set_num_interop_threads", n)
    _runtime.set_inter_threads(value, f"opweave.set_num_interop_threads({value})")


def get_num_interop_threads() -> int:
    """Return how many ops may run at once on the global inter-op pool (the size in effect).

    Returns
    -------
    int
        The inter-op parallelism, at least 1.

    Examples
    --------
    >>> import opweave
    >>> with opweave.threads(inter=2):
    ...     opweave.get_num_interop_threads()
    2
    """
    return _runtime.inter_threads()


class threads(contextlib.ContextDecorator):
    """Set the pool sizes inside a ``with`` block (or a decorated function) and restore them after.

    Restoring puts back the size *and* the rule that chose it, so after the block
    ``parallel_info()`` and ``get_intra_op_parallelism_threads()`` read as before. Blocks nest.
    Entering or leaving may happen while other threads run ops on the pools (the resize waits
    for them), but not from inside an op running on the pool it resizes (a ``py_function`` on the
    inter-op pool with ``inter=...``): that raises
    :class:`~opweave.errors.FailedPreconditionError`, since the resize would wait for itself.
    The sizes are process-wide: blocks on several threads at once restore in the order they
    exit, so the last block to exit decides the size after them all.

    Parameters
    ----------
    intra : int, optional
        Threads per op, caller included (as :func:`set_num_threads`). ``None`` leaves it.
    inter : int, optional
        Ops at once (as :func:`set_num_interop_threads`). ``None`` leaves it.

    Raises
    ------
    ThreadCountTypeError, ThreadCountValueError
        As :func:`set_num_threads`, when ``threads(...)`` is called, before anything changes.

    Examples
    --------
    >>> import opweave
    >>> before = opweave.get_num_threads()
    >>> with opweave.threads(intra=1, inter=2):
    ...     (opweave.get_num_threads(), opweave.get_num_interop_threads())
    (1, 2)
    >>> opweave.get_num_threads() == before
    True
    >>> @opweave.threads(intra=1)
    ... def single_threaded() -> int:
    ...     return opweave.get_num_threads()
    >>> single_threaded()
    1
    """

    def __init__(self, intra: int | None = None, inter: int | None = None) -> None:
        self._intra = None if intra is None else check_thread_count("threads(intra=...)", intra)
        self._inter = None if inter is None else check_thread_count("threads(inter=...)", inter)
        # One entry per active block (a decorated function may recurse): (intra, inter) states.
        self._saved: list[tuple[_runtime.PoolState, _runtime.PoolState]] = []

    def __enter__(self) -> None:
        saved_intra, saved_inter = _runtime.snapshot("intra"), _runtime.snapshot("inter")
        if self._intra is not None:
            _runtime.set_intra_threads(self._intra, f"opweave.threads(intra={self._intra})")
        if self._inter is not None:
            try:
                _runtime.set_inter_threads(self._inter, f"opweave.threads(inter={self._inter})")
            except BaseException:
                # Refused (e.g. FailedPreconditionError inside the inter-op pool's own work):
                # the block does not run, so nothing of it may stay in effect.
                if self._intra is not None:
                    _runtime.restore("intra", saved_intra)
                raise
        self._saved.append((saved_intra, saved_inter))

    def __exit__(self, *exc_info: object) -> None:
        saved_intra, saved_inter = self._saved.pop()
        if self._inter is not None:
            _runtime.restore("inter", saved_inter)
        if self._intra is not None:
            _runtime.restore("intra", saved_intra)
