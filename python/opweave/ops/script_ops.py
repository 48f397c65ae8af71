"""Ops that call Python: ``py_function`` (and TensorFlow 1's ``py_func``).

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     y = ow.py_function(lambda v: v * 2, [ow.constant([1.0])], ow.float32)
...     with ow.Session() as sess:
...         print(sess.run(y))
[2.]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from ..dtypes import DType, as_dtype, implicit_array
from ..framework import Tensor, get_default_graph
from . import _checks
from ._op_def import OpDef, convert_to_tensor, executing_eagerly

__all__ = ["py_func", "py_function"]

TensorLike = Any

OpDef(
    "PyFunc",
    inputs=["input: list"],
    outputs=["output: list"],
    shape=lambda ctx: [None] * len(ctx.attrs.get("Tout") or []),
    stateful=True,
)


@overload
def py_function(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: DType | str | type,
    name: str | None = None,
) -> Tensor: ...


@overload
def py_function(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: list[Any] | tuple[Any, ...],
    name: str | None = None,
) -> list[Tensor]: ...


def py_function(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: Any | Sequence[Any],
    name: str | None = None,
) -> Tensor | list[Tensor]:
    """An op that calls a Python function on NumPy arrays.

    The function receives read-only NumPy arrays (one per input) and returns one value per entry
    of ``Tout`` (a single value when ``Tout`` is a single dtype). It runs on an inter-op thread
    and holds the GIL only while it runs. An exception it raises reaches the ``Session.run``
    caller with its original type and traceback.

    Parameters
    ----------
    func : callable
    inp : sequence of Tensor or array_like
    Tout : DType or sequence of DType
    name : str, optional

    Returns
    -------
    Tensor or list of Tensor
        One tensor when ``Tout`` is a single dtype, else a list (shapes unknown).

    Notes
    -----
    The function may call ``Session.run`` (of any session) itself: that nested run executes in
    the py_function's own thread, so it never waits for the inter-op pool and cannot deadlock,
    whatever the pool size. A nested run started from a *helper thread* that the function starts
    and then waits for (``Thread.join``, ``Future.result``) is an ordinary run: its ops queue on
    the inter-op pool, and when every worker of that pool is busy -- always with
    ``inter_op_parallelism_threads=1``, since one worker is blocked in this very function -- it
    hangs, as in TensorFlow. Deadlines do not help: ``timeout_in_ms`` and
    ``operation_timeout_in_ms`` cancel the ops not yet started, but a run returns only after its
    running kernels have returned and its queued ops have left the queue, and nothing interrupts
    a blocked kernel. From a helper thread, run the nested call in that thread with
    ``options=RunOptions(inter_op_thread_pool=-1)``, or use a session whose pool has more threads
    than there can be blocked py_functions.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     y = ow.py_function(lambda v: v * 2, [ow.constant([1.0])], ow.float32)
    ...     with ow.Session() as sess:
    ...         print(sess.run(y))
    [2.]
    """
    if not callable(func):
        raise TypeError(f"py_function: func must be callable, got {func!r}")
    if executing_eagerly():
        raise TypeError("py_function runs only in a Session; call the function directly instead")
    single = not isinstance(Tout, (list, tuple))
    touts = [as_dtype(Tout)] if single else [as_dtype(d) for d in Tout]
    if isinstance(inp, (Tensor, str, bytes)) or not hasattr(inp, "__iter__"):
        raise TypeError(f"py_function: inp must be a list of tensors, got {inp!r}")
    inputs = [convert_to_tensor(i) for i in inp]

    def call(*arrays: np.ndarray) -> list[np.ndarray]:
        result = func(*arrays)
        values = [result] if single else ([] if result is None else list(result))
        if len(values) != len(touts):
            raise ValueError(
                f"py_function {getattr(func, '__name__', func)!r} returned {len(values)} values; "
                f"Tout has {len(touts)}"
            )
        arrays_out = []
        for i, (v, d) in enumerate(zip(values, touts, strict=True)):
            try:
                arrays_out.append(implicit_array(v, d))
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(
                    f"py_function {getattr(func, '__name__', func)!r} returned a value for "
                    f"output {i} that is not {d.name}: {e}"
                ) from None
        return arrays_out

    op = get_default_graph()._create_op(
        "PyFunc",
        inputs,
        {"func": call, "Tout": touts},
        [(d, None) for d in touts],
        _checks.check_name(name, "EagerPyFunc"),
        stateful=True,
    )
    return op.outputs[0] if single else list(op.outputs)


def py_func(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: Any,
    stateful: bool = True,
    name: str | None = None,
) -> Any:
    """TensorFlow 1's ``tf.py_func``: :func:`py_function` under its older name (``stateful`` is
    accepted; opweave never folds or merges Python calls)."""
    return py_function(func, inp, Tout, name=name or "PyFunc")
