"""Element types of graph tensors: ``float32``, ``float64``, ``int32``, ``int64`` and ``bool``.

>>> import opweave
>>> opweave.float32.name
'float32'
>>> opweave.as_dtype("int64") is opweave.int64
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _opweave_core as _core

__all__ = ["DType", "as_dtype", "bool_", "float32", "float64", "int32", "int64"]


class DType:
    """One element type; compare with ``is`` or ``==``.

    Attributes
    ----------
    name : str
        ``"float32"``, ``"float64"``, ``"int32"``, ``"int64"`` or ``"bool"``.
    as_numpy_dtype : numpy.dtype
        The matching NumPy dtype.
    """

    def __init__(self, name: str, numpy_dtype: np.dtype[Any], core: _core.DType) -> None:
        self.name = name
        self.as_numpy_dtype = numpy_dtype
        self._core = core

    @property
    def is_floating(self) -> bool:
        """True for float32 and float64."""
        return self.as_numpy_dtype.kind == "f"

    @property
    def is_integer(self) -> bool:
        """True for int32 and int64."""
        return self.as_numpy_dtype.kind == "i"

    def __repr__(self) -> str:
        return f"opweave.{self.name}"


float32 = DType("float32", np.dtype(np.float32), _core.DType.float32)
float64 = DType("float64", np.dtype(np.float64), _core.DType.float64)
int32 = DType("int32", np.dtype(np.int32), _core.DType.int32)
int64 = DType("int64", np.dtype(np.int64), _core.DType.int64)
bool_ = DType("bool", np.dtype(np.bool_), _core.DType.bool)

_ALL = (float32, float64, int32, int64, bool_)


def as_dtype(value: Any) -> DType:
    """Return the :class:`DType` for a DType, a name, a NumPy dtype or a Python type.

    Raises
    ------
    TypeError
        For anything that is not one of the five supported types.

    Examples
    --------
    >>> as_dtype(np.float64) is float64
    True
    """
    if isinstance(value, DType):
        return value
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is int:
        return int32
    try:
        # Byte order is not part of the type: a big-endian float32 is converted on the way in.
        np_dtype = np.dtype(value).newbyteorder("=")
    except TypeError:
        np_dtype = None
    for dt in _ALL:
        if value == dt.name or (np_dtype is not None and np_dtype == dt.as_numpy_dtype):
            return dt
    raise TypeError(
        f"unsupported dtype {value!r}; opweave supports float32, float64, int32, int64, bool"
    )


def implicit_array(value: Any, dtype: DType) -> np.ndarray[Any, Any]:
    """``value`` as an array of ``dtype`` (feeds, py_function results); raises TypeError rather
    than truncate, wrap or parse.

    Only conversions NumPy calls "same kind" are implicit (float64 -> float32, int -> float,
    bool -> number), as in TensorFlow; float -> int or str -> float would silently truncate or
    parse, so they are a TypeError like any other wrong dtype. Narrowing integers is allowed when
    every value fits (a Python int list becomes int64 first).
    """
    target = np.dtype(dtype.as_numpy_dtype)
    arr = np.asarray(value)
    if arr.dtype == target or arr.size == 0:
        return arr.astype(target, copy=False)
    if not np.can_cast(arr.dtype, target, "same_kind"):
        raise TypeError(f"{_with_article(_kind_of(value, arr))} value does not convert implicitly")
    if target.kind in "iu" and not np.can_cast(arr.dtype, target, "safe"):
        info = np.iinfo(target)
        lo, hi = arr.min(), arr.max()
        if lo < info.min or hi > info.max:
            raise TypeError(f"values in [{lo}, {hi}] do not fit in {target}")
    return arr.astype(target, copy=False)


def _kind_of(value: Any, arr: np.ndarray[Any, Any]) -> str:
    """What a value is, for messages: its NumPy dtype name, or its Python type for an object
    array (``dict``), ``str`` / ``bytes`` for text (not ``<U21``)."""
    if arr.dtype.kind == "O":
        return type(value).__name__
    text: dict[str, str] = {"U": "str", "S": "bytes", "V": "structured"}
    return text.get(arr.dtype.kind, str(arr.dtype.name))


def _with_article(word: str) -> str:
    """``"an int64"``, ``"a float64"``, ``"a uint8"`` (a "you" sound takes "a")."""
    return f"{'an' if word[:1].lower() in 'aeio' else 'a'} {word}"
