"""TensorFlow's graph messages (GraphDef and what it holds), defined for opweave.

The messages are built at run time from a ``FileDescriptorProto`` written here, field by field,
with the names and numbers of TensorFlow's public schema (``tensorflow/core/framework/graph.proto``,
``node_def.proto``, ``attr_value.proto``, ``tensor.proto``, ``tensor_shape.proto``,
``types.proto``, ``versions.proto``, ``function.proto``, ``variable.proto``;
``tensorflow/core/protobuf/meta_graph.proto`` and ``saver.proto``), so the bytes are
TensorFlow's. The ``protobuf`` package does the wire format and the text format; there is no
generated code and no build step, which keeps the wheel free of protoc and of a ``protobuf``
runtime version pinned at build time.

Only what opweave reads or writes is declared. Fields left out (``GraphDef.debug_info``,
``NodeDef.experimental_type``, the function library's contents, ``TensorProto``'s resource and
variant values, ...) are kept as unknown fields when a message is parsed, so they survive a
parse and re-serialization unchanged, and are ignored otherwise.

The messages live in a private descriptor pool: TensorFlow's own classes (package
``tensorflow`` too) can be imported in the same process without a clash.

``protobuf`` is an optional dependency (``pip install "opweave[graphdef]"``); :func:`messages`
raises an ImportError that says so when it is missing.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

__all__ = ["INSTALL_HINT", "messages"]

INSTALL_HINT = (
    "opweave reads and writes TensorFlow GraphDefs with the protobuf package, which is not "
    'installed: pip install "opweave[graphdef]" (or pip install protobuf)'
)

# Field types and labels of descriptor.proto (FieldDescriptorProto.Type / .Label).
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32 = 1, 2, 3, 4, 5
_BOOL, _STRING, _MESSAGE, _BYTES, _UINT32, _ENUM = 8, 9, 11, 12, 13, 14
_OPTIONAL, _REPEATED = 1, 3

# TensorFlow's DataType enum (types.proto): every value, so that text-format graphs naming any
# of them parse; opweave computes with the ones dtypes.py lists and says so for the others.
DATA_TYPES: tuple[tuple[str, int], ...] = (
    ("DT_INVALID", 0),
    ("DT_FLOAT", 1),
    ("DT_DOUBLE", 2),
    ("DT_INT32", 3),
    ("DT_UINT8", 4),
    ("DT_INT16", 5),
    ("DT_INT8", 6),
    ("DT_STRING", 7),
    ("DT_COMPLEX64", 8),
    ("DT_INT64", 9),
    ("DT_BOOL", 10),
    ("DT_QINT8", 11),
    ("DT_QUINT8", 12),
    ("DT_QINT32", 13),
    ("DT_BFLOAT16", 14),
    ("DT_QINT16", 15),
    ("DT_QUINT16", 16),
    ("DT_UINT16", 17),
    ("DT_COMPLEX128", 18),
    ("DT_HALF", 19),
    ("DT_RESOURCE", 20),
    ("DT_VARIANT", 21),
    ("DT_UINT32", 22),
    ("DT_UINT64", 23),
    ("DT_FLOAT8_E5M2", 24),
    ("DT_FLOAT8_E4M3FN", 25),
    ("DT_FLOAT8_E4M3FNUZ", 26),
    ("DT_FLOAT8_E4M3B11FNUZ", 27),
    ("DT_FLOAT8_E5M2FNUZ", 28),
    ("DT_INT4", 29),
    ("DT_UINT4", 30),
    ("DT_INT2", 31),
    ("DT_UINT2", 32),
    ("DT_FLOAT4_E2M1FN", 33),
)
# Reference types (the dtype of a TensorFlow 1 Variable's output) are the value type + 100.
REF_OFFSET = 100

# A message: its fields as (name, number, type, label, type name or "", oneof index or None),
# its nested messages, whether it is a map entry, and its oneofs.
_Field = tuple[str, int, int, int, str, "int | None"]


def _f(
    name: str,
    number: int,
    kind: int,
    type_name: str = "",
    *,
    repeated: bool = False,
    oneof: int | None = None,
) -> _Field:
    return (name, number, kind, _REPEATED if repeated else _OPTIONAL, type_name, oneof)


def _map_entry(name: str, value: _Field) -> dict[str, Any]:
    key = _f("key", 1, _STRING)
    return {"name": name, "fields": [key, value], "map_entry": True}


_ATTR_MAP_VALUE = _f("value", 2, _MESSAGE, ".tensorflow.AttrValue")

# The schema, message by message. Numbers and types are TensorFlow's; names of fields opweave
# never touches are still TensorFlow's, so the text format reads the same.
_MESSAGES: list[dict[str, Any]] = [
    {
        "name": "TensorShapeProto",
        "fields": [
            _f("dim", 2, _MESSAGE, ".tensorflow.TensorShapeProto.Dim", repeated=True),
            _f("unknown_rank", 3, _BOOL),
        ],
        "nested": [
            {"name": "Dim", "fields": [_f("size", 1, _INT64), _f("name", 2, _STRING)]},
        ],
    },
    {
        "name": "TensorProto",
        "fields": [
            _f("dtype", 1, _ENUM, ".tensorflow.DataType"),
            _f("tensor_shape", 2, _MESSAGE, ".tensorflow.TensorShapeProto"),
            _f("version_number", 3, _INT32),
            _f("tensor_content", 4, _BYTES),
            _f("half_val", 13, _INT32, repeated=True),
            _f("float_val", 5, _FLOAT, repeated=True),
            _f("double_val", 6, _DOUBLE, repeated=True),
            _f("int_val", 7, _INT32, repeated=True),
            _f("string_val", 8, _BYTES, repeated=True),
            _f("scomplex_val", 9, _FLOAT, repeated=True),
            _f("int64_val", 10, _INT64, repeated=True),
            _f("bool_val", 11, _BOOL, repeated=True),
            _f("dcomplex_val", 12, _DOUBLE, repeated=True),
            _f("uint32_val", 16, _UINT32, repeated=True),
            _f("uint64_val", 17, _UINT64, repeated=True),
        ],
    },
    {
        "name": "AttrValue",
        "fields": [
            _f("s", 2, _BYTES, oneof=0),
            _f("i", 3, _INT64, oneof=0),
            _f("f", 4, _FLOAT, oneof=0),
            _f("b", 5, _BOOL, oneof=0),
            _f("type", 6, _ENUM, ".tensorflow.DataType", oneof=0),
            _f("shape", 7, _MESSAGE, ".tensorflow.TensorShapeProto", oneof=0),
            _f("tensor", 8, _MESSAGE, ".tensorflow.TensorProto", oneof=0),
            _f("list", 1, _MESSAGE, ".tensorflow.AttrValue.ListValue", oneof=0),
            _f("func", 10, _MESSAGE, ".tensorflow.NameAttrList", oneof=0),
            _f("placeholder", 9, _STRING, oneof=0),
        ],
        "nested": [
            {
                "name": "ListValue",
                "fields": [
                    _f("s", 2, _BYTES, repeated=True),
                    _f("i", 3, _INT64, repeated=True),
                    _f("f", 4, _FLOAT, repeated=True),
                    _f("b", 5, _BOOL, repeated=True),
                    _f("type", 6, _ENUM, ".tensorflow.DataType", repeated=True),
                    _f("shape", 7, _MESSAGE, ".tensorflow.TensorShapeProto", repeated=True),
                    _f("tensor", 8, _MESSAGE, ".tensorflow.TensorProto", repeated=True),
                    _f("func", 9, _MESSAGE, ".tensorflow.NameAttrList", repeated=True),
                ],
            }
        ],
        "oneofs": ["value"],
    },
    {
        "name": "NameAttrList",
        "fields": [
            _f("name", 1, _STRING),
            _f("attr", 2, _MESSAGE, ".tensorflow.NameAttrList.AttrEntry", repeated=True),
        ],
        "nested": [_map_entry("AttrEntry", _ATTR_MAP_VALUE)],
    },
    {
        "name": "NodeDef",
        "fields": [
            _f("name", 1, _STRING),
            _f("op", 2, _STRING),
            _f("input", 3, _STRING, repeated=True),
            _f("device", 4, _STRING),
            _f("attr", 5, _MESSAGE, ".tensorflow.NodeDef.AttrEntry", repeated=True),
        ],
        "nested": [_map_entry("AttrEntry", _ATTR_MAP_VALUE)],
    },
    {
        "name": "VersionDef",
        "fields": [
            _f("producer", 1, _INT32),
            _f("min_consumer", 2, _INT32),
            _f("bad_consumers", 3, _INT32, repeated=True),
        ],
    },
    # Functions are not supported: the library is declared so that a graph that has one parses
    # (its contents kept as unknown fields) and the importer can say so.
    {"name": "FunctionDefLibrary", "fields": []},
    {
        "name": "GraphDef",
        "fields": [
            _f("node", 1, _MESSAGE, ".tensorflow.NodeDef", repeated=True),
            _f("versions", 4, _MESSAGE, ".tensorflow.VersionDef"),
            _f("version", 3, _INT32),
            _f("library", 2, _MESSAGE, ".tensorflow.FunctionDefLibrary"),
        ],
    },
    # -- meta graphs and savers (meta_graph.proto, saver.proto), for export_meta_graph ---------
    {
        "name": "SaverDef",
        "fields": [
            _f("filename_tensor_name", 1, _STRING),
            _f("save_tensor_name", 2, _STRING),
            _f("restore_op_name", 3, _STRING),
            _f("max_to_keep", 4, _INT32),
            _f("sharded", 5, _BOOL),
            _f("keep_checkpoint_every_n_hours", 6, _FLOAT),
            _f("version", 7, _ENUM, ".tensorflow.SaverDef.CheckpointFormatVersion"),
        ],
        "enums": [("CheckpointFormatVersion", [("LEGACY", 0), ("V1", 1), ("V2", 2)])],
    },
    {
        "name": "CollectionDef",
        "fields": [
            _f("node_list", 1, _MESSAGE, ".tensorflow.CollectionDef.NodeList", oneof=0),
            _f("bytes_list", 2, _MESSAGE, ".tensorflow.CollectionDef.BytesList", oneof=0),
            _f("int64_list", 3, _MESSAGE, ".tensorflow.CollectionDef.Int64List", oneof=0),
            _f("float_list", 4, _MESSAGE, ".tensorflow.CollectionDef.FloatList", oneof=0),
        ],
        "nested": [
            {"name": "NodeList", "fields": [_f("value", 1, _STRING, repeated=True)]},
            {"name": "BytesList", "fields": [_f("value", 1, _BYTES, repeated=True)]},
            {"name": "Int64List", "fields": [_f("value", 1, _INT64, repeated=True)]},
            {"name": "FloatList", "fields": [_f("value", 1, _FLOAT, repeated=True)]},
        ],
        "oneofs": ["kind"],
    },
    {
        "name": "TensorInfo",
        "fields": [
            _f("name", 1, _STRING, oneof=0),
            _f("coo_sparse", 4, _MESSAGE, ".tensorflow.TensorInfo.CooSparse", oneof=0),
            _f("dtype", 2, _ENUM, ".tensorflow.DataType"),
            _f("tensor_shape", 3, _MESSAGE, ".tensorflow.TensorShapeProto"),
        ],
        "nested": [
            {
                "name": "CooSparse",
                "fields": [
                    _f("values_tensor_name", 1, _STRING),
                    _f("indices_tensor_name", 2, _STRING),
                    _f("dense_shape_tensor_name", 3, _STRING),
                ],
            }
        ],
        "oneofs": ["encoding"],
    },
    {
        "name": "SignatureDef",
        "fields": [
            _f("inputs", 1, _MESSAGE, ".tensorflow.SignatureDef.InputsEntry", repeated=True),
            _f("outputs", 2, _MESSAGE, ".tensorflow.SignatureDef.OutputsEntry", repeated=True),
            _f("method_name", 3, _STRING),
        ],
        "nested": [
            _map_entry("InputsEntry", _f("value", 2, _MESSAGE, ".tensorflow.TensorInfo")),
            _map_entry("OutputsEntry", _f("value", 2, _MESSAGE, ".tensorflow.TensorInfo")),
        ],
    },
    {
        "name": "AssetFileDef",
        "fields": [
            _f("tensor_info", 1, _MESSAGE, ".tensorflow.TensorInfo"),
            _f("filename", 2, _STRING),
        ],
    },
    # -- variables in meta graph collections (variable.proto) ------------------------------------
    {
        "name": "SaveSliceInfoDef",
        "fields": [
            _f("full_name", 1, _STRING),
            _f("full_shape", 2, _INT64, repeated=True),
            _f("var_offset", 3, _INT64, repeated=True),
            _f("var_shape", 4, _INT64, repeated=True),
        ],
    },
    {
        "name": "VariableDef",
        "fields": [
            _f("variable_name", 1, _STRING),
            _f("initial_value_name", 6, _STRING),
            _f("initializer_name", 2, _STRING),
            _f("snapshot_name", 3, _STRING),
            _f("save_slice_info_def", 4, _MESSAGE, ".tensorflow.SaveSliceInfoDef"),
            _f("is_resource", 5, _BOOL),
            _f("trainable", 7, _BOOL),
            _f("synchronization", 8, _ENUM, ".tensorflow.VariableSynchronization"),
            _f("aggregation", 9, _ENUM, ".tensorflow.VariableAggregation"),
        ],
    },
    {
        "name": "MetaGraphDef",
        "fields": [
            _f("meta_info_def", 1, _MESSAGE, ".tensorflow.MetaGraphDef.MetaInfoDef"),
            _f("graph_def", 2, _MESSAGE, ".tensorflow.GraphDef"),
            _f("saver_def", 3, _MESSAGE, ".tensorflow.SaverDef"),
            _f(
                "collection_def",
                4,
                _MESSAGE,
                ".tensorflow.MetaGraphDef.CollectionDefEntry",
                repeated=True,
            ),
            _f(
                "signature_def",
                5,
                _MESSAGE,
                ".tensorflow.MetaGraphDef.SignatureDefEntry",
                repeated=True,
            ),
            _f("asset_file_def", 6, _MESSAGE, ".tensorflow.AssetFileDef", repeated=True),
        ],
        "nested": [
            {
                # stripped_op_list (2) and any_info (3) are left out: kept as unknown fields.
                "name": "MetaInfoDef",
                "fields": [
                    _f("meta_graph_version", 1, _STRING),
                    _f("tags", 4, _STRING, repeated=True),
                    _f("tensorflow_version", 5, _STRING),
                    _f("tensorflow_git_version", 6, _STRING),
                    _f("stripped_default_attrs", 7, _BOOL),
                ],
            },
            _map_entry("CollectionDefEntry", _f("value", 2, _MESSAGE, ".tensorflow.CollectionDef")),
            _map_entry("SignatureDefEntry", _f("value", 2, _MESSAGE, ".tensorflow.SignatureDef")),
        ],
    },
]

# Enums at the file's top level besides DataType, with TensorFlow's values (variable.proto).
_ENUMS: list[tuple[str, list[tuple[str, int]]]] = [
    (
        "VariableSynchronization",
        [
            ("VARIABLE_SYNCHRONIZATION_AUTO", 0),
            ("VARIABLE_SYNCHRONIZATION_NONE", 1),
            ("VARIABLE_SYNCHRONIZATION_ON_WRITE", 2),
            ("VARIABLE_SYNCHRONIZATION_ON_READ", 3),
        ],
    ),
    (
        "VariableAggregation",
        [
            ("VARIABLE_AGGREGATION_NONE", 0),
            ("VARIABLE_AGGREGATION_SUM", 1),
            ("VARIABLE_AGGREGATION_MEAN", 2),
            ("VARIABLE_AGGREGATION_ONLY_FIRST_REPLICA", 3),
        ],
    ),
]

#: The message classes, by name, once built (see :func:`messages`).
_built: SimpleNamespace | None = None
_lock = threading.Lock()


def _import_protobuf() -> Any:
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} ({e})") from e
    return descriptor_pb2, descriptor_pool, message_factory


def _add_message(container: Any, spec: dict[str, Any]) -> None:
    msg = container.add(name=spec["name"])
    for oneof in spec.get("oneofs", []):
        msg.oneof_decl.add(name=oneof)
    for name, number, kind, label, type_name, oneof in spec["fields"]:
        field = msg.field.add(name=name, number=number, type=kind, label=label, json_name=name)
        if type_name:
            field.type_name = type_name
        if oneof is not None:
            field.oneof_index = oneof
    for nested in spec.get("nested", []):
        _add_message(msg.nested_type, nested)
    for enum_name, values in spec.get("enums", []):
        enum = msg.enum_type.add(name=enum_name)
        for value_name, number in values:
            enum.value.add(name=value_name, number=number)
    if spec.get("map_entry"):
        msg.options.map_entry = True


def _build() -> SimpleNamespace:
    descriptor_pb2, descriptor_pool, message_factory = _import_protobuf()
    file = descriptor_pb2.FileDescriptorProto(
        name="opweave/tensorflow_graph.proto", package="tensorflow", syntax="proto3"
    )
    data_type = file.enum_type.add(name="DataType")
    for name, number in DATA_TYPES:
        data_type.value.add(name=name, number=number)
    for name, number in DATA_TYPES[1:]:
        data_type.value.add(name=f"{name}_REF", number=number + REF_OFFSET)
    for enum_name, values in _ENUMS:
        enum = file.enum_type.add(name=enum_name)
        for value_name, number in values:
            enum.value.add(name=value_name, number=number)
    for spec in _MESSAGES:
        _add_message(file.message_type, spec)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(file.SerializeToString())
    classes = {
        spec["name"]: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"tensorflow.{spec['name']}")
        )
        for spec in _MESSAGES
    }
    return SimpleNamespace(pool=pool, **classes)


def messages() -> SimpleNamespace:
    """The message classes (``messages().GraphDef``, ``.NodeDef``, ``.AttrValue``, ...).

    Built once per process, on first use.

    Raises
    ------
    ImportError
        When the ``protobuf`` package is not installed (the message names the extra).
    """
    global _built
    if _built is None:
        with _lock:
            if _built is None:
                _built = _build()
    return _built
