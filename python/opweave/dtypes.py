"""Element types of graph tensors, with TensorFlow's names.

``float16`` (``half``), ``float32`` (``"float"``), ``float64`` (``"double"``), ``int8``,
``int16``, ``int32``, ``int64``, ``uint8``, ``bool`` and ``string`` (byte strings; fetched as NumPy
object arrays of ``bytes``, as in TensorFlow).

>>> import opweave
>>> opweave.float32.name
'float32'
>>> opweave.as_dtype("double") is opweave.float64
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _opweave_core as _core

__all__ = [
    "DType",
    "as_dtype",
    "bool_",
    "double",
    "float16",
    "float32",
    "float64",
    "half",
    "int8",
    "int16",
    "int32",
    "int64",
    "string",
    "uint8",
]


class DType:
    """One element type; compare with ``is`` or ``==``.

    Attributes
    ----------
    name : str
        ``"float32"``, ``"int64"``, ``"string"``, ...
    as_numpy_dtype : numpy.dtype
        The matching NumPy dtype (``object`` for ``string``).
    """

    def __init__(
        self, name: str, numpy_dtype: np.dtype[Any], core: _core.DType, datatype_enum: int
    ) -> None:
        self.name = name
        self.as_numpy_dtype = numpy_dtype
        self._core = core
        self._enum = datatype_enum

    @property
    def as_datatype_enum(self) -> int:
        """TensorFlow's ``DataType`` number (``DT_FLOAT`` = 1, ...), as in a GraphDef."""
        return self._enum

    @property
    def base_dtype(self) -> DType:
        """This dtype (TensorFlow's reference dtypes do not exist in opweave)."""
        return self

    @property
    def real_dtype(self) -> DType:
        """This dtype (opweave has no complex types)."""
        return self

    @property
    def is_floating(self) -> bool:
        """True for float16, float32 and float64."""
        return self.as_numpy_dtype.kind == "f"

    @property
    def is_integer(self) -> bool:
        """True for the signed and unsigned integer types."""
        return self.as_numpy_dtype.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        """True for uint8."""
        return self.as_numpy_dtype.kind == "u"

    @property
    def is_bool(self) -> bool:
        """True for bool."""
        return self is bool_

    @property
    def is_numeric(self) -> bool:
        """True for the integer and floating types."""
        return self.is_integer or self.is_floating

    @property
    def is_complex(self) -> bool:
        """False: opweave has no complex types."""
        return False

    @property
    def size(self) -> int:
        """Bytes per element (0 for string, whose elements vary)."""
        return 0 if self is string else int(self.as_numpy_dtype.itemsize)

    @property
    def min(self) -> int | float:
        """The smallest value of a numeric type."""
        if self.is_floating:
            return float(np.finfo(self.as_numpy_dtype).min)
        if self.is_integer:
            return int(np.iinfo(self.as_numpy_dtype).min)
        raise TypeError(f"Cannot find minimum value of {self.name}.")

    @property
    def max(self) -> int | float:
        """The largest value of a numeric type."""
        if self.is_floating:
            return float(np.finfo(self.as_numpy_dtype).max)
        if self.is_integer:
            return int(np.iinfo(self.as_numpy_dtype).max)
        raise TypeError(f"Cannot find maximum value of {self.name}.")

    def is_compatible_with(self, other: Any) -> bool:
        """True when ``other`` names the same dtype."""
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return other is self
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> str:
        return self.name if self.name != "bool" else "bool_"

    def __repr__(self) -> str:
        return f"opweave.{self.name}"


float16 = DType("float16", np.dtype(np.float16), _core.DType.float16, 19)
float32 = DType("float32", np.dtype(np.float32), _core.DType.float32, 1)
float64 = DType("float64", np.dtype(np.float64), _core.DType.float64, 2)
int8 = DType("int8", np.dtype(np.int8), _core.DType.int8, 6)
int16 = DType("int16", np.dtype(np.int16), _core.DType.int16, 5)
int32 = DType("int32", np.dtype(np.int32), _core.DType.int32, 3)
int64 = DType("int64", np.dtype(np.int64), _core.DType.int64, 9)
uint8 = DType("uint8", np.dtype(np.uint8), _core.DType.uint8, 4)
bool_ = DType("bool", np.dtype(np.bool_), _core.DType.bool, 10)
string = DType("string", np.dtype(object), _core.DType.string, 7)
half = float16
double = float64

ALL = (float32, float64, int32, int64, bool_, int8, int16, uint8, float16, string)

_BY_NAME: dict[str, DType] = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16})
_BY_ENUM: dict[int, DType] = {d.as_datatype_enum: d for d in ALL}

# Sets used by op definitions to state which dtypes an input accepts.
FLOATS = frozenset({float16, float32, float64})
INTEGERS = frozenset({int8, int16, int32, int64, uint8})
INDEX = frozenset({int32, int64})
REALS = FLOATS | INTEGERS  # TensorFlow's "realnumbertypes"
NUMBERS = REALS
ANY = frozenset(ALL)


def as_dtype(value: Any) -> DType:
    """The :class:`DType` for a DType, a name, a NumPy dtype, a Python type or a DataType enum.

    ``"float"`` is float32 and ``"double"`` float64, as in TensorFlow; Python ``float`` is float32,
    ``int`` int32, ``bool`` bool and ``str`` / ``bytes`` string.

    Raises
    ------
    TypeError
        For anything that is not one of the supported types.

    Examples
    --------
    >>> as_dtype(np.float64) is float64
    True
    >>> as_dtype("float") is float32
    True
    """
    if isinstance(value, DType):
        return value
    if value is None:  # np.dtype(None) would be float64
        raise TypeError("a dtype is required, got None")
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is int:
        return int32
    if value is str or value is bytes:
        return string
    if isinstance(value, str):
        found = _BY_NAME.get(value)
        if found is not None:
            return found
    elif isinstance(value, int) and not isinstance(value, (bool, np.bool_)):
        found = _BY_ENUM.get(value)
        if found is not None:
            return found
    else:
        try:
            # Byte order is not part of the type: a big-endian float32 is converted on the way in.
            np_dtype = np.dtype(value).newbyteorder("=")
        except TypeError:
            np_dtype = None
        if np_dtype is not None:
            if np_dtype.kind in "SUO":
                return string
            for dt in ALL:
                if np_dtype == dt.as_numpy_dtype:
                    return dt
    raise TypeError(
        f"unsupported dtype {value!r}; opweave supports "
        + ", ".join(d.name for d in ALL)
        + ' ("float" and "double" name float32 and float64)'
    )


def implicit_array(value: Any, dtype: DType) -> np.ndarray[Any, Any]:
    """``value`` as an array of ``dtype`` (feeds, py_function results); raises TypeError rather
    than truncate, wrap or parse.

    Only conversions NumPy calls "same kind" are implicit (float64 -> float32, int -> float,
    bool -> number), as in TensorFlow; float -> int or str -> float would silently truncate or
    parse, so they are a TypeError like any other wrong dtype. Narrowing integers is allowed when
    every value fits (a Python int list becomes int64 first). A string tensor takes ``bytes`` and
    ``str`` (encoded as UTF-8) elements.
    """
    if dtype is string:
        return _string_array(value)
    target = np.dtype(dtype.as_numpy_dtype)
    arr = np.asarray(value)
    if arr.dtype == target or (arr.size == 0 and arr.dtype.kind != "O"):
        return arr.astype(target, copy=False)
    if not np.can_cast(arr.dtype, target, "same_kind"):
        raise TypeError(f"{_with_article(_kind_of(value, arr))} value does not convert implicitly")
    if target.kind in "iu" and not np.can_cast(arr.dtype, target, "safe"):
        info = np.iinfo(target)
        lo, hi = arr.min(), arr.max()
        if lo < info.min or hi > info.max:
            raise TypeError(f"values in [{lo}, {hi}] do not fit in {target}")
    return arr.astype(target, copy=False)


def _string_array(value: Any) -> np.ndarray[Any, Any]:
    """An object array of bytes; str elements are encoded as UTF-8."""
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    if arr.dtype.kind not in "SUO":
        raise TypeError(f"{_with_article(_kind_of(value, arr))} value is not a string")
    out = np.empty(arr.shape, dtype=object)
    flat_in = arr.reshape(-1)
    flat_out = out.reshape(-1)
    for i, item in enumerate(flat_in):
        if isinstance(item, bytes):
            flat_out[i] = item
        elif isinstance(item, str):
            flat_out[i] = item.encode("utf-8")
        else:
            raise TypeError(
                f"a string tensor takes bytes or str elements, got {type(item).__name__}"
            )
    return out


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
