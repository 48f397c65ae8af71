"""Kernels on NumPy arrays: blocked matmul, reductions and element-wise ops.

The same C++ kernels the graph ops run, called directly: they run on the global intra-op pool
(see ``opweave.set_num_threads``) and release the GIL while they compute, so other Python threads
keep running. Results never depend on the number of threads: matmul splits rows of the result,
never the inner dimension, and reductions combine fixed-size blocks in a fixed order.

Unlike NumPy, binary ops do not promote dtypes (as in TensorFlow): both operands must have the same
dtype. A Python scalar takes the dtype of the array operand when it converts without loss of kind
(NumPy's "weak scalar" rule, in the form TensorFlow applies it): an int or bool for an integer
array, an int, float or bool for a float array, a bool for a bool array. A float with an integer
array, a number with a bool array, or an int outside the array dtype's range is a ``TypeError``
(NumPy would promote to float64 / int64, or raise ``OverflowError``); cast the array first.

>>> import numpy as np
>>> from opweave import kernels
>>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> kernels.matmul(a, a.T)
array([[ 5., 14.],
       [14., 50.]], dtype=float32)
>>> kernels.reduce_sum(a, axis=0)
array([3., 5., 7.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _opweave_core as _core
from . import _threads, dtypes, errors

__all__ = [
    "add",
    "add_n",
    "cast",
    "div",
    "exp",
    "matmul",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "relu",
    "sigmoid",
    "sub",
    "tanh",
    "transpose",
]

_SUPPORTED = (np.float32, np.float64, np.int32, np.int64, np.bool_)
_FLOATS = (np.float32, np.float64)

Axis = int | Sequence[int] | None
ArrayLike = npt.ArrayLike


def _array(x: Any, op: str, name: str = "x") -> np.ndarray[Any, Any]:
    """``x`` as an ndarray the core can read (supported dtype, native byte order)."""
    arr = np.asarray(x)
    if arr.dtype.type not in _SUPPORTED:
        raise TypeError(
            f"{op}: {name} has dtype {arr.dtype}, expected one of float32, float64, int32, "
            "int64, bool"
        )
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    # Strides that are not whole elements (rare: views of structured arrays) are copied. Checked
    # only for non-contiguous arrays: this runs on every call.
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous) and any(
        s % arr.itemsize for s in arr.strides
    ):
        arr = np.ascontiguousarray(arr)
    return arr


def _num_threads_arg(num_threads: int | None) -> int:
    """The test hook's thread count: None (the global pool, 0 for the core) or 1..4096; a bool,
    float or other non-integer is a TypeError, an int out of range a ValueError."""
    if num_threads is None:
        return 0
    return _threads.check_thread_count("_num_threads", num_threads)


def _call(fn: Any, *args: Any, **kwargs: Any) -> np.ndarray[Any, Any]:
    """Runs a core kernel, turning its errors into opweave.errors classes."""
    try:
        return fn(*args, **kwargs)  # type: ignore[no-any-return]
    except _core.CoreError as exc:
        code, message = exc.args
        raise errors.error_from_code(code, message) from None


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
    a_shape = aa.shape if aa.ndim > 1 else (1, *aa.shape)
    b_shape = bb.shape if bb.ndim > 1 else (*bb.shape, 1)
    ta = transpose_a and aa.ndim > 1
    tb = transpose_b and bb.ndim > 1
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
    if out is not None:
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
    return _call(_core.matmul, aa, bb, ta, tb, out, _num_threads_arg(_num_threads))


def _is_index(value: Any) -> bool:
    """An int or NumPy integer, but not a bool (NumPy rejects ``axis=True`` too)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _axes(op: str, x: np.ndarray[Any, Any], axis: Axis) -> list[int] | None:
    if axis is None:
        return None
    bad_axis = TypeError(f"{op}: axis must be an int or a sequence of ints, got {axis!r}")
    axes: list[Any]
    if _is_index(axis):
        axes = [axis]
    elif isinstance(axis, (str, bytes)):
        raise bad_axis
    else:
        try:
            axes = list(axis)  # type: ignore[arg-type]  # anything iterable; checked below
        except TypeError:
            raise bad_axis from None
    normalized = []
    for ax in axes:
        if not _is_index(ax):
            raise bad_axis
        if not -x.ndim <= ax < x.ndim:
            raise ValueError(f"{op}: axis {ax} is out of range for an array of shape {x.shape}")
        normalized.append(int(ax) % x.ndim)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{op}: repeated axis in {axis!r}")
    return normalized


def _reduce(
    op: str, x: ArrayLike, axis: Axis, keepdims: bool, num_threads: int | None
) -> np.ndarray[Any, Any]:
    name = f"reduce_{op}"
    arr = _array(x, name)
    axes = _axes(name, arr, axis)
    if arr.dtype == np.bool_ and op in ("sum", "mean"):
        raise TypeError(f"{name}: bool input is not supported (cast it first)")
    reduced = range(arr.ndim) if axes is None else axes
    if op in ("max", "min") and any(arr.shape[i] == 0 for i in reduced):
        raise ValueError(
            f"{name}: cannot reduce an empty axis of an array of shape {arr.shape} (no identity)"
        )
    return _call(_core.reduce, op, arr, axes, bool(keepdims), _num_threads_arg(num_threads))


def reduce_sum(
    x: ArrayLike, axis: Axis = None, keepdims: bool = False, *, _num_threads: int | None = None
) -> np.ndarray[Any, Any]:
    """Sum over ``axis`` (all axes when None), in the input's dtype.

    Parameters
    ----------
    x : array_like
        float32, float64, int32 or int64 array (integers wrap around on overflow).
    axis : int or sequence of int, optional
        Axes to reduce; negative values count from the end; ``()`` reduces nothing.
    keepdims : bool, optional
        Keep reduced axes as size-1 dimensions.

    Returns
    -------
    numpy.ndarray
        Same dtype as ``x``. Pairwise summation in fixed blocks: at least as accurate as NumPy's
        and bit-identical for any number of threads. NaN propagates.

    Raises
    ------
    TypeError
        Unsupported dtype (bool included).
    ValueError
        Axis out of range or repeated.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import reduce_sum
    >>> reduce_sum(np.arange(6.0).reshape(2, 3), axis=1)
    array([ 3., 12.])
    >>> reduce_sum(np.ones((2, 3), dtype=np.int32), keepdims=True)
    array([[6]], dtype=int32)
    """
    return _reduce("sum", x, axis, keepdims, _num_threads)


def reduce_mean(
    x: ArrayLike, axis: Axis = None, keepdims: bool = False, *, _num_threads: int | None = None
) -> np.ndarray[Any, Any]:
    """Mean over ``axis``, in the input's dtype (integer means truncate toward zero).

    Parameters and errors as :func:`reduce_sum`. The mean of an empty float axis is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import reduce_mean
    >>> reduce_mean(np.array([[1.0, 2.0], [3.0, 5.0]]), axis=0)
    array([2. , 3.5])
    >>> reduce_mean(np.array([-3, -1, 0], dtype=np.int32))
    array(-1, dtype=int32)
    """
    return _reduce("mean", x, axis, keepdims, _num_threads)


def reduce_max(
    x: ArrayLike, axis: Axis = None, keepdims: bool = False, *, _num_threads: int | None = None
) -> np.ndarray[Any, Any]:
    """Maximum over ``axis``; NaN propagates as in ``numpy.max``; for bool it is ``any``.

    Parameters
    ----------
    x : array_like
        Array of any supported dtype (float32, float64, int32, int64, bool).
    axis : int or sequence of int, optional
        Axes to reduce (all when None).
    keepdims : bool, optional
        Keep reduced axes as size-1 dimensions.

    Returns
    -------
    numpy.ndarray
        Same dtype as ``x``.

    Raises
    ------
    ValueError
        A reduced axis is empty, or an axis is out of range or repeated.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import reduce_max
    >>> reduce_max(np.array([[1.0, np.nan], [3.0, 2.0]]), axis=1)
    array([nan,  3.])
    """
    return _reduce("max", x, axis, keepdims, _num_threads)


def reduce_min(
    x: ArrayLike, axis: Axis = None, keepdims: bool = False, *, _num_threads: int | None = None
) -> np.ndarray[Any, Any]:
    """Minimum over ``axis``; NaN propagates; for bool it is ``all``.

    Parameters, returns and errors as :func:`reduce_max`.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import reduce_min
    >>> reduce_min(np.array([[True, False], [True, True]]), axis=1)
    array([False,  True])
    """
    return _reduce("min", x, axis, keepdims, _num_threads)


def _scalar_like(op: str, value: Any, name: str, like: np.ndarray[Any, Any]) -> Any:
    """A Python scalar operand as a 0-d array of the other operand's dtype, by the rule of the
    module docstring: ``dtypes.implicit_array``, the conversion feeds and py_function results
    go through (same kind only, integers only when they fit)."""
    try:
        return dtypes.implicit_array(value, dtypes.as_dtype(like.dtype))
    except TypeError as exc:
        raise TypeError(
            f"{op}: {name} is the Python {type(value).__name__} {value!r}, which does not take "
            f"the other operand's dtype {like.dtype} ({exc}); opweave does not promote dtypes "
            "(NumPy would): cast the array first"
        ) from None


def _binary(op: str, a: Any, b: Any, num_threads: int | None) -> np.ndarray[Any, Any]:
    # Python scalars take the other operand's dtype when that loses nothing (module docstring).
    if isinstance(a, (bool, int, float)) and not isinstance(b, (bool, int, float)):
        bb = _array(b, op, "b")
        aa = _array(_scalar_like(op, a, "a", bb), op, "a")
    elif isinstance(b, (bool, int, float)) and not isinstance(a, (bool, int, float)):
        aa = _array(a, op, "a")
        bb = _array(_scalar_like(op, b, "b", aa), op, "b")
    else:
        aa, bb = _array(a, op, "a"), _array(b, op, "b")
    if aa.dtype != bb.dtype:
        raise TypeError(
            f"{op}: both operands must have the same dtype, got {aa.dtype} {aa.shape} and "
            f"{bb.dtype} {bb.shape}"
        )
    if aa.dtype == np.bool_ and op in ("sub", "div"):
        raise TypeError(f"{op}: bool operands are not supported")
    try:
        np.broadcast_shapes(aa.shape, bb.shape)
    except ValueError:
        raise ValueError(f"{op}: shapes {aa.shape} and {bb.shape} do not broadcast") from None
    return _call(_core.binary, op, aa, bb, _num_threads_arg(num_threads))


def add(a: ArrayLike, b: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise ``a + b`` with broadcasting; same-dtype operands (integers wrap).

    Parameters
    ----------
    a, b : array_like
        Arrays of the same supported dtype, or one array and a Python scalar that converts to
        the array's dtype without loss of kind (see the module docstring).

    Returns
    -------
    numpy.ndarray
        The broadcast result, C-contiguous.

    Raises
    ------
    TypeError
        Different or unsupported dtypes; a Python float with an integer array, a number with a
        bool array, or a Python int outside the array dtype's range.
    ValueError
        Shapes that do not broadcast.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import add
    >>> add(np.array([[1.0], [2.0]]), np.array([10.0, 20.0]))
    array([[11., 21.],
           [12., 22.]])
    >>> add(np.array([1, 2], dtype=np.int32), 1)
    array([2, 3], dtype=int32)
    >>> add(np.array([1, 2], dtype=np.int32), 1.5)
    Traceback (most recent call last):
    ...
    TypeError: add: b is the Python float 1.5, which does not take the other operand's dtype ...
    """
    return _binary("add", a, b, _num_threads)


def sub(a: ArrayLike, b: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise ``a - b`` (see :func:`add`).

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import sub
    >>> sub(np.array([3, 4], dtype=np.int32), 1)
    array([2, 3], dtype=int32)
    """
    return _binary("sub", a, b, _num_threads)


def mul(a: ArrayLike, b: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise ``a * b`` (see :func:`add`).

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import mul
    >>> mul(np.array([1.5, 2.0]), 2.0)
    array([3., 4.])
    """
    return _binary("mul", a, b, _num_threads)


def div(a: ArrayLike, b: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise division: true division for floats, floor division (``//``) for integers.

    Integer division by zero raises :class:`opweave.errors.InvalidArgumentError`.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import div
    >>> div(np.array([7, -7], dtype=np.int64), 2)
    array([ 3, -4])
    """
    return _binary("div", a, b, _num_threads)


def maximum(a: ArrayLike, b: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise maximum; NaN propagates as in ``numpy.maximum`` (see :func:`add`).

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import maximum
    >>> maximum(np.array([1.0, np.nan, 3.0]), 2.0)
    array([ 2., nan,  3.])
    """
    return _binary("maximum", a, b, _num_threads)


def minimum(a: ArrayLike, b: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise minimum; NaN propagates (see :func:`add`).

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import minimum
    >>> minimum(np.array([1.0, 3.0]), 2.0)
    array([1., 2.])
    """
    return _binary("minimum", a, b, _num_threads)


def _unary(op: str, x: ArrayLike, num_threads: int | None) -> np.ndarray[Any, Any]:
    arr = _array(x, op)
    if arr.dtype == np.bool_ or (
        op in ("exp", "tanh", "sigmoid") and arr.dtype.type not in _FLOATS
    ):
        raise TypeError(f"{op}: dtype {arr.dtype} is not supported")
    return _call(_core.unary, op, arr, _num_threads_arg(num_threads))


def neg(x: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise ``-x`` for numeric dtypes (integers wrap).

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import neg
    >>> neg(np.array([1, -2], dtype=np.int32))
    array([-1,  2], dtype=int32)
    """
    return _unary("neg", x, _num_threads)


def relu(x: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise ``max(x, 0)`` for numeric dtypes; NaN stays NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import relu
    >>> relu(np.array([-1.0, 2.0]))
    array([0., 2.])
    """
    return _unary("relu", x, _num_threads)


def exp(x: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise exponential of a float array.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import exp
    >>> exp(np.array([0.0]))
    array([1.])
    """
    return _unary("exp", x, _num_threads)


def tanh(x: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise hyperbolic tangent of a float array.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import tanh
    >>> tanh(np.array([0.0]))
    array([0.])
    """
    return _unary("tanh", x, _num_threads)


def sigmoid(x: ArrayLike, *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Element-wise logistic function ``1 / (1 + exp(-x))`` of a float array (no overflow).

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import sigmoid
    >>> sigmoid(np.array([0.0]))
    array([0.5])
    """
    return _unary("sigmoid", x, _num_threads)


def add_n(inputs: Sequence[ArrayLike], *, _num_threads: int | None = None) -> np.ndarray[Any, Any]:
    """Sum of same-shape, same-dtype arrays, added in order.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import add_n
    >>> add_n([np.ones(2), np.ones(2), np.ones(2)])
    array([3., 3.])
    """
    arrays = [_array(x, "add_n", f"inputs[{i}]") for i, x in enumerate(inputs)]
    if not arrays:
        raise ValueError("add_n: needs at least one input")
    first = arrays[0]
    for arr in arrays[1:]:
        if arr.dtype != first.dtype:
            raise TypeError(f"add_n: dtypes differ: {first.dtype} and {arr.dtype}")
        if arr.shape != first.shape:
            raise ValueError(f"add_n: shapes differ: {first.shape} and {arr.shape}")
    if first.dtype == np.bool_:
        raise TypeError("add_n: bool inputs are not supported")
    return _call(_core.add_n, arrays, _num_threads_arg(_num_threads))


def cast(
    x: ArrayLike, dtype: npt.DTypeLike, *, _num_threads: int | None = None
) -> np.ndarray[Any, Any]:
    """Converts to ``dtype`` with ``numpy.ndarray.astype`` semantics.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import cast
    >>> cast(np.array([1.7, -1.7, 0.0]), np.int32)
    array([ 1, -1,  0], dtype=int32)
    """
    arr = _array(x, "cast")
    to = np.dtype(dtype)
    if to.type not in _SUPPORTED:
        raise TypeError(f"cast: target dtype {to} is not supported")
    return _call(_core.cast, arr, to, _num_threads_arg(_num_threads))


def transpose(
    x: ArrayLike, perm: Sequence[int] | None = None, *, _num_threads: int | None = None
) -> np.ndarray[Any, Any]:
    """Permutes the dimensions (reverses them when ``perm`` is None) into a new C-order array.

    Examples
    --------
    >>> import numpy as np
    >>> from opweave.kernels import transpose
    >>> transpose(np.zeros((2, 3, 4)), (1, 0, 2)).shape
    (3, 2, 4)
    """
    arr = _array(x, "transpose")
    p = list(range(arr.ndim))[::-1] if perm is None else [int(i) for i in perm]
    if sorted(i % arr.ndim if arr.ndim else i for i in p) != list(range(arr.ndim)) or any(
        not -arr.ndim <= i < arr.ndim for i in p
    ):
        raise ValueError(f"transpose: {perm!r} is not a permutation of the axes of {arr.shape}")
    return _call(_core.transpose, arr, p, _num_threads_arg(_num_threads))
