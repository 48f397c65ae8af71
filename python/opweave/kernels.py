"""Kernels on NumPy arrays: every op of opweave, computed eagerly.

``opweave.kernels.<name>`` is the op function ``opweave.<name>`` (or ``opweave.nn.<name>``) run
on arrays instead of building a graph: the same argument checks and shape inference, then the
same C++ kernel the graph runs, on the global intra-op pool (see ``opweave.set_num_threads``),
with the GIL released while it computes (kept by a call like an earlier one whose arrays hold a
few thousand elements in all: releasing it would take longer). Results never depend on the number
of threads.

As in TensorFlow, both operands of a binary op must have the same dtype (no promotion): a Python
scalar takes the other operand's dtype when it converts without loss of kind (an int or bool for
an integer array, an int, float or bool for a float array); a float with an integer array, or an
int outside the array dtype's range, is a ``TypeError`` (NumPy would promote or wrap).

:func:`matmul` keeps NumPy's ``matmul`` semantics (1-D operands, ``out=``).

>>> import numpy as np
>>> from opweave import kernels
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> kernels.matmul(a, a.T)
array([[ 5., 14.],
       [14., 50.]], dtype=float32)
>>> kernels.reduce_sum(a, axis=0)
array([3., 5., 7.], dtype=float32)
>>> kernels.relu(np.array([-1.0, 2.0]))
array([0., 2.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _opweave_core as _core
from ._core_errors import call_core
from .ops import _checks
from .ops._op_def import PUBLIC, eager_function

__all__ = ["matmul"]

ArrayLike = npt.ArrayLike
_FLOATS = (np.float32, np.float64)


def _array(x: Any, op: str, name: str) -> np.ndarray[Any, Any]:
    arr = np.asarray(x)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous) and any(
        s % arr.itemsize for s in arr.strides
    ):
        arr = np.ascontiguousarray(arr)
    return arr


def matmul(
    a: ArrayLike,
    b: ArrayLike,
    out: np.ndarray[Any, Any] | None = None,
    *,
    transpose_a: bool = False,
    transpose_b: bool = False,
    _num_threads: int | None = None,
) -> np.ndarray[Any, Any]:
    """Matrix product with NumPy's ``matmul`` semantics, computed by opweave's blocked GEMM.

    Parameters
    ----------
    a, b : array_like
        float32 or float64 arrays of the same dtype, rank >= 1. Leading (batch) dimensions
        broadcast; a 1-D operand is promoted to a matrix and the added dimension removed. Any
        strides are accepted (C or Fortran order, views, negative strides) without a copy.
    out : numpy.ndarray, optional
        C-contiguous, writeable array of the result's shape and dtype to write into. It must not
        overlap ``a`` or ``b``.
    transpose_a, transpose_b : bool, optional
        Use the transpose of the two innermost dimensions of ``a`` / ``b`` (ignored for 1-D).

    Returns
    -------
    numpy.ndarray
        The product (``out`` when given). Bit-identical for any number of threads.

    Raises
    ------
    TypeError
        Unsupported or mismatched dtypes, or ``out`` is not an ndarray.
    ValueError
        Shapes that do not multiply or broadcast, or an unsuitable ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import matmul
    >>> a = np.ones((2, 3, 4))
    >>> b = np.ones((4, 5))
    >>> matmul(a, b).shape
    (2, 3, 5)
    >>> matmul(np.eye(2), np.eye(2), transpose_b=True)
    array([[1., 0.],
           [0., 1.]])
    """
    aa = _array(a, "matmul", "a")
    bb = _array(b, "matmul", "b")
    if aa.dtype != bb.dtype or aa.dtype.type not in _FLOATS:
        raise TypeError(
            f"matmul: needs two float32 or two float64 arrays, got {aa.dtype} {aa.shape} and "
            f"{bb.dtype} {bb.shape}"
        )
    if aa.ndim == 0 or bb.ndim == 0:
        raise ValueError(f"matmul: operands must have rank >= 1, got {aa.shape} and {bb.shape}")
    ta = _checks.check_bool(transpose_a, "transpose_a", op="matmul") and aa.ndim > 1
    tb = _checks.check_bool(transpose_b, "transpose_b", op="matmul") and bb.ndim > 1
    a_shape = aa.shape if aa.ndim > 1 else (1, *aa.shape)
    b_shape = bb.shape if bb.ndim > 1 else (*bb.shape, 1)
    m, ka = (a_shape[-1], a_shape[-2]) if ta else (a_shape[-2], a_shape[-1])
    kb, n = (b_shape[-1], b_shape[-2]) if tb else (b_shape[-2], b_shape[-1])
    if ka != kb:
        raise ValueError(
            f"matmul: inner dimensions differ ({ka} vs {kb}): a {aa.shape}"
            f"{' (transposed)' if ta else ''}, b {bb.shape}{' (transposed)' if tb else ''}"
        )
    if len(a_shape) == 2 and len(b_shape) == 2:
        batch: tuple[int, ...] = ()  # the common case: np.broadcast_shapes costs ~2 us per call
    else:
        try:
            batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
        except ValueError:
            raise ValueError(
                f"matmul: batch dimensions do not broadcast: a {aa.shape}, b {bb.shape}"
            ) from None
    result_shape = (*batch, *((m,) if aa.ndim > 1 else ()), *((n,) if bb.ndim > 1 else ()))
    threads = (
        0
        if _num_threads is None
        else _checks.check_int(_num_threads, "_num_threads", minimum=1, maximum=4096)
    )
    if out is None:
        out = np.empty(result_shape, dtype=aa.dtype)
    else:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"matmul: out must be a numpy.ndarray, got {type(out).__name__}")
        if out.dtype != aa.dtype or out.shape != result_shape:
            raise ValueError(
                f"matmul: out must have dtype {aa.dtype} and shape {result_shape}, got "
                f"{out.dtype} {out.shape}"
            )
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("matmul: out must be a C-contiguous, writeable array")
        if np.may_share_memory(out, aa) or np.may_share_memory(out, bb):
            raise ValueError("matmul: out must not overlap the inputs")
    call_core(_core.matmul_into, aa, bb, ta, tb, out, threads)
    return out


_cache: dict[str, Callable[..., Any]] = {}


def __getattr__(name: str) -> Callable[..., Any]:
    """``opweave.kernels.<name>``: the public op function ``name`` run eagerly on arrays."""
    fn = _cache.get(name)
    if fn is None:
        public = PUBLIC.get(name)
        if public is None:
            # An alias (sub for subtract, ...): the same function under another name.
            from . import nn, ops

            candidate = getattr(ops, name, None) or getattr(nn, name, None)
            if any(candidate is f for f in PUBLIC.values()):
                public = candidate
        if public is None:
            raise AttributeError(f"module 'opweave.kernels' has no attribute {name!r}")
        fn = _cache[name] = eager_function(public, name)
        # A module attribute from now on, so later lookups skip this function (~0.4 us a call).
        # For abs, pow, range, round and slice too: this module's own code uses none of those
        # builtins by its bare name (tests/test_kernels_eager_memo.py checks).
        globals()[name] = fn
    return fn


def __dir__() -> list[str]:
    return sorted(set(PUBLIC) | set(__all__))
