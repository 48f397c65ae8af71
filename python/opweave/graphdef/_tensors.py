"""Values inside a GraphDef: DataType numbers, TensorShapeProto and TensorProto, both ways.

A TensorProto holds its elements either as raw little-endian bytes (``tensor_content``) or in
the repeated field of its type (``float_val``, ``int_val``, ...). TensorFlow writes the bytes
for numeric arrays of more than one element and the typed field for scalars, one-element arrays,
bools and strings; a typed field with fewer values than the shape holds repeats its last value
(``tf.zeros([1000])`` is one ``float_val: 0``), and an empty one means zeros. Both forms are read;
opweave writes as TensorFlow does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import DType, as_dtype, bool_, float16, float32, float64, int64, string
from ..tensor_shape import TensorShape
from ._errors import GraphDefError
from ._protos import DATA_TYPES, REF_OFFSET

__all__ = [
    "MAX_EXPANDED_BYTES",
    "dtype_from_enum",
    "ndarray_from_proto",
    "ndarray_to_proto",
    "shape_from_proto",
    "shape_to_proto",
]

_DT_NAMES = {number: name for name, number in DATA_TYPES}

# A constant stored as a few values and a shape expands to this many bytes at most. A GraphDef
# is at most 2 GiB, so this is what tensor_content could hold; a few bytes declaring more are
# refused instead of allocated (a hostile file could ask for terabytes).
MAX_EXPANDED_BYTES = 2**31

# Which repeated field holds the elements of each dtype, as TensorFlow writes them.
_TYPED_FIELD: dict[DType, str] = {
    float32: "float_val",
    float64: "double_val",
    float16: "half_val",
    int64: "int64_val",
    bool_: "bool_val",
    string: "string_val",
}
for _name in ("int32", "int16", "int8", "uint8"):
    _TYPED_FIELD[as_dtype(_name)] = "int_val"


def enum_name(number: int) -> str:
    """``DT_FLOAT`` for 1, ``DT_FLOAT_REF`` for 101; ``DataType(99)`` for an unknown number."""
    if number in _DT_NAMES:
        return _DT_NAMES[number]
    if number - REF_OFFSET in _DT_NAMES:
        return _DT_NAMES[number - REF_OFFSET] + "_REF"
    return f"DataType({number})"


def dtype_from_enum(number: int, where: str) -> DType:
    """The opweave dtype of a DataType number; a reference type counts as its value type (a
    TensorFlow 1 Variable's output). GraphDefError naming ``where`` for the others."""
    value = number - REF_OFFSET if number > REF_OFFSET else number
    try:
        dt = as_dtype(value) if value > 0 else None
    except TypeError:
        dt = None
    if dt is None:
        raise GraphDefError(
            f"{where}: dtype {enum_name(number)} is not supported by opweave (it computes with "
            "float16/32/64, int8/16/32/64, uint8, bool and string)"
        )
    return dt


# -- shapes ----------------------------------------------------------------------------------


def shape_to_proto(shape: TensorShape | tuple[int | None, ...] | None, proto: Any) -> None:
    """Fill a TensorShapeProto: unknown dims are -1, an unknown rank is ``unknown_rank``."""
    raw = shape.as_raw() if isinstance(shape, TensorShape) else shape
    if raw is None:
        proto.unknown_rank = True
        return
    for d in raw:
        proto.dim.add(size=-1 if d is None else int(d))


def shape_from_proto(proto: Any, where: str) -> TensorShape:
    """A TensorShapeProto as a TensorShape (-1 = unknown dim); GraphDefError for other
    negative sizes or a shape whose elements do not fit in int64."""
    if proto.unknown_rank:
        if len(proto.dim):
            raise GraphDefError(f"{where}: a shape with unknown rank lists {len(proto.dim)} dims")
        return TensorShape(None)
    dims: list[int | None] = []
    for d in proto.dim:
        if d.size < -1:
            raise GraphDefError(f"{where}: dimension {d.size} in a shape (-1 means unknown)")
        dims.append(None if d.size == -1 else int(d.size))
    known = math.prod(d for d in dims if d is not None)
    if known >= 2**63:
        raise GraphDefError(f"{where}: shape {dims} has more than 2**63 elements")
    return TensorShape(dims)


# -- tensors ---------------------------------------------------------------------------------


def _little_endian(dt: DType) -> np.dtype[Any]:
    little: np.dtype[Any] = np.dtype(dt.as_numpy_dtype).newbyteorder("<")
    return little


def ndarray_to_proto(value: np.ndarray[Any, Any], dtype: DType, proto: Any) -> None:
    """Fill a TensorProto with ``value`` (of ``dtype``), in TensorFlow's layout."""
    arr = np.asarray(value)
    proto.dtype = dtype.as_datatype_enum
    shape_to_proto(tuple(arr.shape), proto.tensor_shape)
    if arr.size == 0:
        return
    if dtype is string:
        proto.string_val.extend(
            v if isinstance(v, bytes) else str(v).encode("utf-8") for v in arr.reshape(-1)
        )
        return
    if dtype is bool_ or arr.size == 1:
        flat = arr.reshape(-1)
        if dtype is float16:
            proto.half_val.extend(int(v) for v in flat.view(np.uint16))
        elif dtype is bool_:
            proto.bool_val.extend(bool(v) for v in flat)
        elif dtype.is_floating:
            getattr(proto, _TYPED_FIELD[dtype]).extend(float(v) for v in flat)
        else:
            getattr(proto, _TYPED_FIELD[dtype]).extend(int(v) for v in flat)
        return
    proto.tensor_content = np.ascontiguousarray(arr, dtype=_little_endian(dtype)).tobytes()


def ndarray_from_proto(
    proto: Any, where: str, expected: DType | None = None
) -> np.ndarray[Any, Any]:
    """The array a TensorProto holds (a fresh, writable array in native byte order).

    Raises
    ------
    GraphDefError
        A dtype opweave lacks or other than ``expected``, a shape with unknown dims, bytes that
        do not match the shape, more values than elements, values out of the dtype's range, or a
        short form that would expand past :data:`MAX_EXPANDED_BYTES`.
    """
    dt = dtype_from_enum(proto.dtype, where)
    if expected is not None and dt is not expected:
        raise GraphDefError(
            f"{where}: the tensor holds {enum_name(proto.dtype)} but the node's dtype is "
            f"{enum_name(expected.as_datatype_enum)}"
        )
    shape = shape_from_proto(proto.tensor_shape, where)
    if not shape.is_fully_defined():
        raise GraphDefError(f"{where}: a tensor's shape must be fully known, got {shape}")
    dims = tuple(int(d) for d in shape.as_list())  # type: ignore[arg-type]
    n = math.prod(dims)
    itemsize = dt.size or 8  # a string element costs at least its pointer
    content = proto.tensor_content
    if content:
        if dt is string:
            raise GraphDefError(
                f"{where}: a string tensor in tensor_content form is not supported (TensorFlow "
                "writes string constants as string_val)"
            )
        if len(content) != n * itemsize:
            raise GraphDefError(
                f"{where}: tensor_content has {len(content)} bytes but a {dt.name} tensor of "
                f"shape {list(dims)} needs {n * itemsize}"
            )
        arr = np.frombuffer(content, dtype=_little_endian(dt)).astype(dt.as_numpy_dtype)
        return arr.reshape(dims)
    if n * itemsize > MAX_EXPANDED_BYTES:
        raise GraphDefError(
            f"{where}: a {dt.name} tensor of shape {list(dims)} ({n * itemsize} bytes) is stored "
            f"as a few values; opweave expands such constants up to {MAX_EXPANDED_BYTES} bytes"
        )
    values = getattr(proto, _TYPED_FIELD[dt])
    count = len(values)
    if count > n:
        raise GraphDefError(
            f"{where}: {count} values for a tensor of shape {list(dims)} ({n} elements)"
        )
    if dt is string:
        out = np.empty(n, dtype=object)
        out[:] = [bytes(v) for v in values] + [bytes(values[-1]) if count else b""] * (n - count)
        return out.reshape(dims)
    if count == 0:
        return np.zeros(dims, dtype=dt.as_numpy_dtype)
    if dt is float16:
        bits = np.asarray(list(values), dtype=np.int64)
        if bits.min() < 0 or bits.max() > 0xFFFF:
            raise GraphDefError(f"{where}: half_val holds {int(bits.max())}, not a 16-bit pattern")
        head = bits.astype(np.uint16).view(np.float16)
    elif dt.is_integer:
        ints = np.asarray(list(values), dtype=np.int64)
        info = np.iinfo(dt.as_numpy_dtype)
        if ints.min() < info.min or ints.max() > info.max:
            raise GraphDefError(
                f"{where}: values in [{int(ints.min())}, {int(ints.max())}] do not fit in {dt.name}"
            )
        head = ints.astype(dt.as_numpy_dtype)
    else:
        head = np.asarray(list(values), dtype=dt.as_numpy_dtype)
    if count == n:
        return head.reshape(dims)
    out = np.empty(n, dtype=dt.as_numpy_dtype)
    out[:count] = head
    out[count:] = head[-1]
    return out.reshape(dims)
