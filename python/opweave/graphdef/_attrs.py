"""Op attributes <-> AttrValue, derived from each op's :class:`~opweave.ops._op_def.OpDef`.

opweave's ops use TensorFlow's op type names and attribute names, so the mapping is generic: an
attribute's kind in the OpDef (``int``, ``float``, ``bool``, ``string``, ``type``, ``shape``,
``tensor``, ``list(...)``) says which AttrValue field holds it; type variables (``T``,
``Tidx``) are ``type`` attributes and number attributes (``N``) are ints. The tables below hold
the few places where opweave and TensorFlow differ; a new op needs an entry only when it has such
a difference (``tests/test_graphdef_tf.py`` checks every op against TensorFlow's registry).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..dtypes import DType, as_dtype
from ..framework import Operation, format_shape
from ..ops._op_def import ArgSpec, OpDef
from ..tensor_shape import TensorShape
from ._errors import GraphDefError
from ._tensors import (
    dtype_from_enum,
    enum_name,
    ndarray_from_proto,
    ndarray_to_proto,
    shape_from_proto,
    shape_to_proto,
)

__all__ = [
    "NOT_EXPORTABLE",
    "OPWEAVE_ONLY_ATTRS",
    "OPWEAVE_ONLY_OPS",
    "TF_ONLY_ATTRS",
    "attr_kind",
    "from_attr_value",
    "to_attr_value",
]

#: Ops a GraphDef cannot hold, with the reason given to the user.
NOT_EXPORTABLE: dict[str, str] = {
    "PyFunc": "it calls a Python function (py_function), and a GraphDef cannot hold Python code; "
    "loading a graph never runs code from it",
}

#: Ops that only opweave has (helpers of its gradients): written to GraphDefs for opweave to read
#: back, but TensorFlow cannot import them.
OPWEAVE_ONLY_OPS: dict[str, str] = {
    "ReducedShape": "the shape of a reduction's result, for gradients (TensorFlow composes it)",
    "SigmoidCrossEntropyWithLogits": (
        "one numerically stable kernel in opweave; TensorFlow composes "
        "nn.sigmoid_cross_entropy_with_logits from Relu, Mul, Sub, Abs, Neg, Exp and Log1p"
    ),
}

#: Attributes opweave keeps for itself: never written, recomputed from the others when read.
OPWEAVE_ONLY_ATTRS: dict[str, dict[str, Callable[[dict[str, Any]], Any]]] = {
    "Placeholder": {
        "shape_str": lambda attrs: format_shape(
            attrs["shape"].as_raw() if attrs.get("shape") is not None else None
        ),
    },
}


def _any(value: Any) -> bool:
    return True


#: Attributes TensorFlow writes that opweave's ops do not have, by name (their meaning is the
#: same on every op), with the values opweave computes the same result for. Another value is an
#: error naming the node: ignoring it would give other results than TensorFlow's.
TF_ONLY_ATTRS: dict[str, tuple[Callable[[Any], bool], str]] = {
    # Hints for gradient rewrites and the GPU; they never change the result.
    "grad_a": (_any, ""),
    "grad_b": (_any, ""),
    "grad_x": (_any, ""),
    "grad_y": (_any, ""),
    "use_cudnn_on_gpu": (_any, ""),
    "incompatible_shape_error": (lambda v: v is True, "True"),
    # TopKV2's dtypes of k and of the indices (DataType enum 3 is int32), opweave's only ones.
    "Tk": (lambda v: v == 3, "int32"),
    "index_type": (lambda v: v == 3, "int32"),
    # Layouts and convolution options, on ops whose opweave definition lacks them: opweave
    # computes channels-last without dilation or explicit padding.
    "data_format": (lambda v: v in ("NHWC", "NDHWC", "NWC"), "channels last (NHWC)"),
    "explicit_paddings": (lambda v: len(v) == 0, "[]"),
    "dilations": (lambda v: all(int(d) == 1 for d in v), "all ones"),
}

_SCALAR_FIELDS = {
    "int": "i",
    "float": "f",
    "bool": "b",
    "string": "s",
    "type": "type",
    "shape": "shape",
    "tensor": "tensor",
}


def attr_kind(op_def: OpDef | None, name: str, value: Any = None) -> str:
    """The kind of attribute ``name``: from the OpDef when it declares it, else from the value
    (attributes set outside an OpDef)."""
    if op_def is not None:
        if name in op_def.attrs:
            return op_def.attrs[name].kind
        if name in op_def.types:
            return "type"
        if any(a.number_attr == name for a in op_def.inputs + op_def.outputs):
            return "int"
    return _kind_of_value(value)


def _kind_of_value(value: Any) -> str:
    if isinstance(value, DType):
        return "type"
    if isinstance(value, TensorShape):
        return "shape"
    if isinstance(value, np.ndarray):
        return "tensor"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        inner = {_kind_of_value(v) for v in value}
        if len(inner) == 1:
            return f"list({inner.pop()})"
        if not inner:
            return "list(int)"
    if callable(value):
        return "func"
    raise TypeError(f"an attribute value of type {type(value).__name__} has no AttrValue form")


def _scalar_to(kind: str, value: Any, target: Any, field: str, repeated: bool) -> None:
    """Store one value of ``kind`` in ``target.<field>`` (append when repeated)."""
    if kind == "type":
        v: Any = as_dtype(value).as_datatype_enum
    elif kind == "string":
        v = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    elif kind == "int":
        v = int(value)
    elif kind == "float":
        v = float(value)
    elif kind == "bool":
        v = bool(value)
    elif kind in ("shape", "tensor"):
        message = target.add() if repeated else getattr(target, field)
        message.SetInParent()  # a scalar's shape is an empty message, but it is set
        if kind == "shape":
            shape_to_proto(value, message)
        else:
            arr = np.asarray(value)
            ndarray_to_proto(arr, as_dtype(arr.dtype), message)
        return
    else:
        raise TypeError(f"attributes of kind {kind!r} have no AttrValue form")
    if repeated:
        target.append(v)
    else:
        setattr(target, field, v)


def to_attr_value(kind: str, value: Any, av: Any) -> None:
    """Fill the AttrValue ``av`` with ``value`` of ``kind``."""
    if kind.startswith("list(") and kind.endswith(")"):
        inner = kind[5:-1]
        field = _SCALAR_FIELDS[inner]
        av.list.SetInParent()  # an empty list is still a list
        items = getattr(av.list, field)
        for v in value:
            _scalar_to(inner, v, items, field, repeated=True)
        return
    if kind not in _SCALAR_FIELDS:
        raise TypeError(f"attributes of kind {kind!r} have no AttrValue form")
    _scalar_to(kind, value, av, _SCALAR_FIELDS[kind], repeated=False)


def _describe(av: Any) -> str:
    which = av.WhichOneof("value")
    return "no value" if which is None else f"a {which!r} value"


def _scalar_from(kind: str, raw: Any, where: str) -> Any:
    if kind == "type":
        return dtype_from_enum(int(raw), where)
    if kind == "string":
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise GraphDefError(f"{where}: the string {bytes(raw)[:40]!r} is not UTF-8") from None
    if kind == "int":
        return int(raw)
    if kind == "float":
        return float(raw)
    if kind == "bool":
        return bool(raw)
    if kind == "shape":
        return shape_from_proto(raw, where)
    if kind == "tensor":
        return ndarray_from_proto(raw, where)
    raise GraphDefError(f"{where}: attributes of kind {kind!r} cannot be read from a GraphDef")


def from_attr_value(kind: str, av: Any, where: str) -> Any:
    """The opweave value of the AttrValue ``av``, which must hold a ``kind``."""
    which = av.WhichOneof("value")
    if kind.startswith("list(") and kind.endswith(")"):
        inner = kind[5:-1]
        if which is None:  # TensorFlow writes an empty list as no value at all
            return []
        if which != "list":
            raise GraphDefError(f"{where}: expected a list of {inner}, got {_describe(av)}")
        field = _SCALAR_FIELDS.get(inner)
        if field is None:
            raise GraphDefError(f"{where}: lists of {inner} cannot be read from a GraphDef")
        for other in _SCALAR_FIELDS.values():
            if other != field and len(getattr(av.list, other)):
                raise GraphDefError(f"{where}: expected a list of {inner}, got a list of {other}")
        return [
            _scalar_from(inner, v, f"{where}[{i}]") for i, v in enumerate(getattr(av.list, field))
        ]
    field = _SCALAR_FIELDS.get(kind)
    if field is None:
        raise GraphDefError(f"{where}: attributes of kind {kind!r} cannot be read from a GraphDef")
    if which != field:
        raise GraphDefError(f"{where}: expected {kind} (AttrValue.{field}), got {_describe(av)}")
    return _scalar_from(kind, getattr(av, field), where)


def check_tf_only_attr(name: str, av: Any, where: str) -> None:
    """Accept an attribute opweave's op lacks when its value changes nothing, else raise."""
    if name.startswith("_"):  # TensorFlow's own bookkeeping: _output_shapes, _class, ...
        return
    rule = TF_ONLY_ATTRS.get(name)
    if rule is None:
        raise GraphDefError(
            f"{where}: the op has no attribute {name!r} in opweave; ignoring it could change the "
            "result"
        )
    accept, expected = rule
    which = av.WhichOneof("value")
    if which == "list":
        raw: Any = next(
            (list(getattr(av.list, f)) for f in ("i", "s", "f", "b") if len(getattr(av.list, f))),
            [],
        )
        raw = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in raw]
    elif which == "s":
        raw = av.s.decode("utf-8", "replace")
    elif which is None:
        raw = []
    else:
        raw = getattr(av, which)
    if not accept(raw):
        raise GraphDefError(
            f"{where}: {name}={raw!r} is not supported by opweave (only {expected}, which gives "
            "the same result without it)"
        )


def op_def_type_attrs(op_def: OpDef) -> set[str]:
    """The type variables of ``op_def`` that are inferred from its inputs (not set directly)."""
    return {t for t in op_def.types if t not in op_def.attrs}


def input_number_attrs(op_def: OpDef) -> set[str]:
    """The number attributes that count list inputs (``N`` of ``values: N * T``)."""
    return {a.number_attr for a in op_def.inputs if a.number_attr}


def arg_counts(op_def: OpDef, attrs: dict[str, Any], total: int, where: str) -> list[int]:
    """How many of the ``total`` data inputs each input arg of ``op_def`` takes: one, ``N`` for
    ``N * T`` (from the node's ``N``), or what is left for the one list whose length is not
    given."""
    counts = [_fixed_count(a, attrs) for a in op_def.inputs]
    unknown = [i for i, c in enumerate(counts) if c is None]
    known = sum(c for c in counts if c is not None)
    if len(unknown) == 1 and total >= known:
        counts[unknown[0]] = total - known
    elif len(unknown) > 1:
        raise GraphDefError(f"{where}: the number of inputs of each list argument is not given")
    if sum(c or 0 for c in counts) != total:
        args = ", ".join(
            f"{a.name}: {'list' if a.number_attr or a.is_list else 'one'}" for a in op_def.inputs
        )
        raise GraphDefError(
            f"{where}: {total} inputs given, but {op_def.type} takes "
            + (f"{known} ({args})" if not unknown else f"at least {known} ({args})")
        )
    return [int(c or 0) for c in counts]


def _fixed_count(a: ArgSpec, attrs: dict[str, Any]) -> int | None:
    if a.number_attr:
        n = attrs.get(a.number_attr)
        return None if n is None else int(n)
    if a.is_list:
        for key in ("T", "Tin"):
            types = attrs.get(key)
            if isinstance(types, list):
                return len(types)
        return None
    return 1


def exported_attrs(op: Operation, op_def: OpDef | None) -> dict[str, tuple[str, Any]]:
    """The attributes ``op`` writes to its NodeDef, as ``name -> (kind, value)``."""
    drop = OPWEAVE_ONLY_ATTRS.get(op.type, {})
    out: dict[str, tuple[str, Any]] = {}
    counts: dict[str, int] = {}
    if op_def is not None:
        counts = _list_input_counts(op, op_def)
    for name, value in op.attrs.items():
        if name.startswith("_") or name in drop:
            continue
        if value is None and name in counts:
            value = counts[name]
        if value is None:
            continue  # an optional attribute left unset: TensorFlow's default applies
        out[name] = (attr_kind(op_def, name, value), value)
    for name, n in counts.items():
        out.setdefault(name, ("int", n))
    return out


def _list_input_counts(op: Operation, op_def: OpDef) -> dict[str, int]:
    """``N`` of each list input of ``op``, from its flat inputs."""
    numbered = [a for a in op_def.inputs if a.number_attr]
    if not numbered:
        return {}
    singles = sum(1 for a in op_def.inputs if not a.number_attr and not a.is_list)
    if len(numbered) == 1 and not any(a.is_list for a in op_def.inputs):
        return {str(numbered[0].number_attr): len(op.inputs) - singles}
    return {
        str(a.number_attr): int(op.attrs[str(a.number_attr)])
        for a in numbered
        if op.attrs.get(str(a.number_attr)) is not None
    }


def type_name(dt: DType) -> str:
    """``DT_FLOAT`` for float32."""
    return enum_name(dt.as_datatype_enum)
