"""The argument-checking layer every op shares: exact integers, axes, shapes, names, callables.

Every value that reaches the C++ core as an axis, a dimension, a count or a flag passes through
here first (op definitions call these for their attributes and integer inputs), so a bool, float
or string where an integer belongs, an integer outside its range, or a shape whose element count
overflows is a clear ``TypeError`` / ``ValueError`` naming the op and the argument, raised where
the value is given, never truncated or passed on to C++.

>>> check_int(3, "axis", op="Sum")
3
>>> check_int(True, "axis", op="Sum")
Traceback (most recent call last):
...
TypeError: Sum: axis must be an integer, got True of type bool
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "INT64_MIN",
    "check_axes",
    "check_bool",
    "check_dims",
    "check_float",
    "check_int",
    "check_int_list",
    "check_name",
    "check_string",
    "shape_product",
]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def _where(op: str | None, arg: str) -> str:
    return f"{op}: {arg}" if op else arg


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_exact_int(value: Any) -> bool:
    """An int or NumPy integer (or a 0-d integer array), but not a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    if hasattr(value, "__index__") and not isinstance(value, (float, np.floating, str, bytes)):
        # Dimension and other integer-like objects; a None Dimension raises TypeError here.
        try:
            operator.index(value)
        except TypeError:
            return False
        return True
    return False


def check_int(
    value: Any,
    arg: str,
    *,
    op: str | None = None,
    minimum: int = INT64_MIN,
    maximum: int = INT64_MAX,
) -> int:
    """``value`` as an int when it is an exact integer in ``[minimum, maximum]``.

    Raises
    ------
    TypeError
        For a bool, float, string or any other non-integer.
    ValueError
        For an integer outside the range, naming the range.
    """
    if type(value) is int and minimum <= value <= maximum:
        return value  # the usual case, decided without the general checks below
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not is_exact_int(value):
        raise TypeError(
            f"{_where(op, arg)} must be an integer, got {_short(value)} of type "
            f"{type(value).__name__}"
        )
    v = operator.index(value)
    if not minimum <= v <= maximum:
        raise ValueError(f"{_where(op, arg)} must be in [{minimum}, {maximum}], got {v}")
    return v


def check_int_list(
    value: Any,
    arg: str,
    *,
    op: str | None = None,
    minimum: int = INT64_MIN,
    maximum: int = INT64_MAX,
    allow_scalar: bool = True,
) -> list[int]:
    """A list of exact integers in range; a single integer becomes a one-element list when
    ``allow_scalar``. Strings, bools and floats (also inside the list) are a TypeError."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{_where(op, arg)} must be a list of integers, got {_short(value)}")
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "iu":
            raise TypeError(
                f"{_where(op, arg)} must hold integers, got an array of dtype {value.dtype}"
            )
        if value.ndim > 1:
            raise ValueError(f"{_where(op, arg)} must be a scalar or a vector, got {value.shape}")
        items: list[Any] = [int(v) for v in value.reshape(-1)]
        if value.ndim == 0 and not allow_scalar:
            raise TypeError(f"{_where(op, arg)} must be a list of integers, got a scalar")
    elif is_exact_int(value):
        if not allow_scalar:
            raise TypeError(f"{_where(op, arg)} must be a list of integers, got {_short(value)}")
        items = [value]
    else:
        try:
            items = list(value)
        except TypeError:
            raise TypeError(
                f"{_where(op, arg)} must be an integer or a list of integers, got "
                f"{_short(value)} of type {type(value).__name__}"
            ) from None
    return [
        check_int(v, f"{arg}[{i}]", op=op, minimum=minimum, maximum=maximum)
        for i, v in enumerate(items)
    ]


def check_axes(
    value: Any, rank: int | None, arg: str = "axis", *, op: str | None = None
) -> list[int]:
    """Axes as a list of exact integers; when ``rank`` is known each must be in
    ``[-rank, rank)`` and they must be distinct (negative ones count from the end)."""
    axes = check_int_list(value, arg, op=op)
    if rank is None:
        return axes
    seen: set[int] = set()
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(
                f"{_where(op, arg)} {a} is out of range for a tensor of rank {rank} "
                f"(expected -{rank} <= {arg} < {rank})"
                if rank
                else f"{_where(op, arg)} {a} is out of range for a scalar (rank 0)"
            )
        n = a % rank
        if n in seen:
            raise ValueError(f"{_where(op, arg)} has a repeated axis {a} in {axes}")
        seen.add(n)
    return axes


def check_dims(
    value: Any, arg: str = "shape", *, op: str | None = None, allow_unknown: bool = True
) -> list[int]:
    """A shape given as a list of sizes: exact integers >= 0, or -1 (unknown / inferred) when
    ``allow_unknown``; the product of the known sizes must fit in int64."""
    dims = check_int_list(value, arg, op=op, minimum=-1 if allow_unknown else 0, allow_scalar=False)
    shape_product([d for d in dims if d >= 0], arg, op=op)
    return dims


def shape_product(dims: Sequence[int], arg: str = "shape", *, op: str | None = None) -> int:
    """The number of elements of a shape; ValueError when it does not fit in int64."""
    n = math.prod(dims)
    if n > INT64_MAX:
        raise ValueError(
            f"{_where(op, arg)} {list(dims)} has {n} elements, more than int64 can count"
        )
    return n


def check_bool(value: Any, arg: str, *, op: str | None = None) -> bool:
    """A bool (Python or NumPy); anything else is a TypeError, as TensorFlow's bool attrs."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(
        f"{_where(op, arg)} must be a bool, got {_short(value)} of type {type(value).__name__}"
    )


def check_float(value: Any, arg: str, *, op: str | None = None) -> float:
    """A real number (int or float, not a bool or string) as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"{_where(op, arg)} must be a number, got {_short(value)} of type "
            f"{type(value).__name__}"
        )
    return float(value)


def check_string(
    value: Any, arg: str, *, op: str | None = None, allowed: Sequence[str] | None = None
) -> str:
    """A str (bytes are decoded as UTF-8), one of ``allowed`` when given."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(
            f"{_where(op, arg)} must be a string, got {_short(value)} of type "
            f"{type(value).__name__}"
        )
    if allowed is not None and value not in allowed:
        raise ValueError(
            f"{_where(op, arg)} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
        )
    return value


def check_name(value: Any, default: str) -> str:
    """An op name (``None`` = ``default``); a non-string is a TypeError."""
    if value is None:
        return default
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"name must be a string or None, got {_short(value)}")
    return value or default
