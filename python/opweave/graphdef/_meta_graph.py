"""MetaGraphDef: a GraphDef plus what a TensorFlow 1 program needs to go on with it -- the saver's
``SaverDef`` and the graph's collections -- in TensorFlow's format, both ways.

Export (:func:`create_meta_graph_def`): the GraphDef (optionally cut to an ``export_scope``,
without devices, without other savers' nodes, without attributes at their defaults) and each
collection as TensorFlow writes it: variables as ``VariableDef`` messages (``bytes_list``),
savers as ``SaverDef`` messages, ops and tensors by name (``node_list``), numbers and strings as
they are. Collections whose items have no such form are left out with a warning, as in
TensorFlow; keys starting with ``__`` (Python state of this process, such as the variable
scopes) are left out silently.

Import (:func:`import_meta_graph_into`) is all or nothing: the MetaGraphDef is read and every
name its collections and savers refer to is checked against its GraphDef before any op is added;
then the GraphDef is imported (itself all or nothing) and the collections are filled from the
ops that import made, so they name the right ops even when the import renamed some (``_1``
suffixes). TensorFlow's own saver ops (``SaveV2``, ``RestoreV2``, ...) read TensorFlow's
checkpoint files, which opweave does not: a TensorFlow saver's name scope is left out of the
import and an opweave saver over the same variables, under the same checkpoint keys, takes its
place (made by the caller, :mod:`opweave.train.meta_graph`).

Nothing in a meta graph is executed while it is read: it is parsed by protobuf and refers to ops
by name only.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _tf_logging as logging
from .. import errors
from ..framework import Graph, GraphKeys, Operation, Tensor
from ._errors import GraphDefError
from ._import import ImportResult, _missing_ops, import_into, parse_input_name
from ._protos import messages

__all__ = [
    "SAVE_AND_RESTORE_OPS",
    "UNBOUND_INPUT_PREFIX",
    "VARIABLE_KEYS",
    "ImportedMetaGraph",
    "SaverPlan",
    "add_collection_def",
    "as_meta_graph_def",
    "create_meta_graph_def",
    "import_meta_graph_into",
    "parse_meta_graph_def",
    "prepend_name_scope",
    "read_meta_graph_file",
    "saver_def_to_proto",
    "strip_name_scope",
]

#: How ``export_scope`` marks inputs from outside the scope (TensorFlow's prefix).
UNBOUND_INPUT_PREFIX = "$unbound_inputs_"

#: Collections holding variables, written as ``VariableDef`` bytes (TensorFlow registers a proto
#: function for each of these keys).
VARIABLE_KEYS: tuple[str, ...] = (
    GraphKeys.GLOBAL_VARIABLES,
    GraphKeys.TRAINABLE_VARIABLES,
    GraphKeys.MOVING_AVERAGE_VARIABLES,
    GraphKeys.LOCAL_VARIABLES,
    GraphKeys.MODEL_VARIABLES,
    GraphKeys.GLOBAL_STEP,
    GraphKeys.METRIC_VARIABLES,
)

#: Collections of TensorFlow objects opweave does not have (queue runners, control-flow
#: contexts): not restored, with a warning.
_FOREIGN_PROTO_KEYS = (GraphKeys.QUEUE_RUNNERS, GraphKeys.COND_CONTEXT, GraphKeys.WHILE_CONTEXT)

#: The ops of TensorFlow's savers (TensorFlow's list), which read and write TensorFlow's
#: checkpoint files; a name scope holding one is a TensorFlow saver's.
SAVE_AND_RESTORE_OPS = frozenset(
    {
        "SaveV2",
        "Save",
        "SaveSlice",
        "SaveSlices",
        "LegacySave",
        "LegacySaveSlice",
        "RestoreV2",
        "Restore",
        "RestoreSlice",
        "LegacyRestore",
        "LegacyRestoreSlice",
    }
)

_SAVER_FIELDS = (
    "filename_tensor_name",
    "save_tensor_name",
    "restore_op_name",
    "max_to_keep",
    "sharded",
    "keep_checkpoint_every_n_hours",
    "version",
)


# -- names ------------------------------------------------------------------------------------


def strip_name_scope(name: str, export_scope: str | None) -> str:
    """``name`` without the leading ``export_scope/`` (also after ``^`` and ``loc:@``), as
    TensorFlow's ``ops.strip_name_scope``.

    >>> strip_name_scope("tower/w:0", "tower"), strip_name_scope("^tower/init", "tower/")
    ('w:0', '^init')
    """
    if not export_scope:
        return name
    scope = re.escape(export_scope.rstrip("/"))
    return re.sub(r"([\^]|loc:@|^)" + scope + r"[/]+(.*)", r"\1\2", name, count=1)


def prepend_name_scope(name: str, import_scope: str | None) -> str:
    """``import_scope/name`` (keeping a leading ``^`` or ``loc:@`` first), as TensorFlow's
    ``ops.prepend_name_scope``.

    >>> prepend_name_scope("w:0", "tower"), prepend_name_scope("^init", "tower/")
    ('tower/w:0', '^tower/init')
    """
    if not import_scope:
        return name
    scope = import_scope.rstrip("/")
    m = re.match(r"(\^|loc:@)?(.*)", name, re.DOTALL)
    assert m is not None  # the pattern matches every string
    return f"{m.group(1) or ''}{scope}/{m.group(2)}"


def _in_scope(name: str, scope: str | None) -> bool:
    """Whether ``name`` is inside the name scope ``scope`` (None: everything is)."""
    if not scope:
        return True
    scope = scope.rstrip("/")
    return name == scope or name.startswith(scope + "/")


# -- reading ----------------------------------------------------------------------------------


def parse_meta_graph_def(data: bytes | bytearray | memoryview, what: str) -> Any:
    """A MetaGraphDef parsed from its binary form; DataLossError when ``data`` is not one."""
    from google.protobuf.message import DecodeError

    meta = messages().MetaGraphDef()
    try:
        meta.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as e:
        raise errors.DataLossError(
            None,
            None,
            f"{what} ({len(data)} bytes) is not a valid MetaGraphDef: {e}. The data may be "
            "truncated or corrupt, or not a meta graph.",
        ) from None
    return meta


def read_meta_graph_file(filename: str | os.PathLike[str]) -> Any:
    """The MetaGraphDef in a file, binary (what ``Saver.save`` writes as ``.meta``) or text
    format, tried in that order, as TensorFlow's ``read_meta_graph_file``.

    Raises
    ------
    OSError
        The file does not exist or cannot be read (FileNotFoundError is an OSError, TensorFlow's
        IOError).
    opweave.errors.DataLossError
        The file holds neither form.
    """
    from google.protobuf import text_format

    path = os.fspath(filename)
    if not os.path.exists(path):
        raise FileNotFoundError(f"File does not exist. Received: {path}.")
    with open(path, "rb") as f:
        data = f.read()
    what = f"the file {path!r}"
    try:
        return parse_meta_graph_def(data, what)
    except errors.DataLossError as binary_error:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise binary_error from None
        meta = messages().MetaGraphDef()
        try:
            text_format.Parse(text, meta)
        except text_format.ParseError as e:
            raise errors.DataLossError(
                None,
                None,
                f"{what} is neither a binary MetaGraphDef ({binary_error.message}) nor one in "
                f"text format ({e})",
            ) from None
        return meta


def _message_copy(value: Any, name: str, what: str) -> Any:
    """``value`` as opweave's message ``name`` (itself, or another class of the same message,
    such as TensorFlow's, through its bytes); TypeError for anything else."""
    first, *nested = name.split(".")[1:]  # "tensorflow.MetaGraphDef.MetaInfoDef"
    cls = getattr(messages(), first)
    for part in nested:
        cls = getattr(cls, part)
    if isinstance(value, cls):
        return value
    descriptor = getattr(value, "DESCRIPTOR", None)
    if getattr(descriptor, "full_name", None) == name and hasattr(value, "SerializeToString"):
        out = cls()
        out.ParseFromString(value.SerializeToString())
        return out
    raise TypeError(f"{what} must be of type {name.rpartition('.')[2]}, got {type(value).__name__}")


def as_meta_graph_def(value: Any) -> Any:
    """``value`` as opweave's MetaGraphDef: itself, TensorFlow's message (through its bytes),
    serialized bytes, or a file name (:func:`read_meta_graph_file`)."""
    if isinstance(value, (str, os.PathLike)):
        return read_meta_graph_file(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return parse_meta_graph_def(value, "the MetaGraphDef bytes")
    return _message_copy(value, "tensorflow.MetaGraphDef", "meta_graph_or_file")


# -- saver defs -------------------------------------------------------------------------------


def saver_def_to_proto(saver_def: Any) -> Any:
    """TensorFlow's ``SaverDef`` message holding the fields of ``saver_def`` (opweave's
    :class:`~opweave.train.SaverDef`, or a SaverDef message of any class)."""
    if getattr(getattr(saver_def, "DESCRIPTOR", None), "full_name", None) == "tensorflow.SaverDef":
        return _message_copy(saver_def, "tensorflow.SaverDef", "saver_def")
    if not all(hasattr(saver_def, f) for f in _SAVER_FIELDS):
        raise TypeError(f"saver_def must be of type SaverDef, got {type(saver_def).__name__}")
    proto = messages().SaverDef()
    for f in _SAVER_FIELDS:
        setattr(proto, f, getattr(saver_def, f))
    return proto


# -- export -----------------------------------------------------------------------------------


def _scoped_node(
    node: Any, export_scope: str | None, unbound: list[str], clear_devices: bool
) -> Any:
    """A copy of ``node`` with ``export_scope`` stripped from its names; inputs from outside
    the scope become ``$unbound_inputs_<name>`` and are listed in ``unbound``."""
    out = messages().NodeDef()
    out.CopyFrom(node)
    del out.input[:]
    for text in node.input:
        bare = text[1:] if text.startswith("^") else text
        if export_scope and not _in_scope(bare, export_scope):
            marked = ("^" if text.startswith("^") else "") + UNBOUND_INPUT_PREFIX + bare
            out.input.append(marked)
            unbound.append(marked)
        else:
            out.input.append(strip_name_scope(text, export_scope))
    out.name = strip_name_scope(node.name, export_scope)
    if "_class" in node.attr and export_scope:
        kept = [
            strip_name_scope(s.decode("utf-8", "replace"), export_scope).encode()
            for s in node.attr["_class"].list.s
            if _in_scope(s.decode("utf-8", "replace").partition("@")[2], export_scope)
        ]
        del out.attr["_class"]
        out.attr["_class"].list.s.extend(kept)
    if clear_devices:
        out.device = ""
    return out


def _saver_scopes(graph_def: Any) -> set[str]:
    """The name scopes (``"save/"``) of the savers whose ops ``graph_def`` holds: TensorFlow's
    (a save or restore op) and opweave's (a ``restore_all`` NoOp beside a ``tensor_names``)."""
    names = {n.name: n for n in graph_def.node}
    scopes: set[str] = set()
    for name, node in names.items():
        scope, sep, base = name.rpartition("/")
        if not sep:
            continue
        if node.op in SAVE_AND_RESTORE_OPS:
            scopes.add(scope + "/")
        elif base.startswith("restore_all") and node.op == "NoOp":
            other = names.get(f"{scope}/tensor_names")
            if other is not None and other.op == "Const":
                scopes.add(scope + "/")
    return scopes


def _extraneous_saver_nodes(graph_def: Any, saver_def: Any) -> set[str]:
    """The nodes of the savers other than ``saver_def``'s (TensorFlow's assumption: each saver
    lives in a name scope of its own)."""
    keep: set[str] = set()
    if saver_def is not None:
        for name in (saver_def.save_tensor_name, saver_def.restore_op_name):
            scope = name.partition(":")[0].rpartition("/")[0]
            keep.add(scope + "/")
    drop = _saver_scopes(graph_def) - keep
    return {n.name for n in graph_def.node if any(n.name.startswith(s) for s in drop)}


def _strip_default_attrs(graph_def: Any) -> None:
    """Remove the attributes whose value is their op's default (TensorFlow's
    ``strip_default_attrs``; readers fill the defaults back in)."""
    from ..ops._op_def import _REQUIRED, REGISTRY
    from ._attrs import to_attr_value

    for node in graph_def.node:
        op_def = REGISTRY.get(node.op)
        if op_def is None:
            continue
        for name, spec in op_def.attrs.items():
            if name not in node.attr or spec.default is _REQUIRED or spec.default is None:
                continue
            default = messages().AttrValue()
            try:
                to_attr_value(spec.kind, spec.default, default)
            except (TypeError, ValueError):
                continue
            if default == node.attr[name]:
                del node.attr[name]


def _kind_of(item: Any) -> str:
    """The CollectionDef field an item goes to (TensorFlow's ``_get_kind_name``)."""
    if isinstance(item, (str, bytes)):
        return "bytes_list"
    if isinstance(item, int):
        return "int64_list"
    if isinstance(item, float):
        return "float_list"
    return "node_list"


def _node_name_of(item: Any, graph: Graph) -> str:
    if isinstance(item, (Tensor, Operation)) or hasattr(item, "_as_graph_element"):
        element = item._as_graph_element() if hasattr(item, "_as_graph_element") else item
        if element.graph is not graph:
            raise ValueError(f"{element.name} is not an element of the exported graph")
        return str(element.name)
    raise TypeError(f"{type(item).__name__} items have no name in the graph")


def add_collection_def(
    meta_graph_def: Any,
    key: str,
    graph: Graph,
    export_scope: str | None = None,
    exclude_nodes: Iterable[str] | None = None,
    override_contents: Sequence[Any] | None = None,
    warn: bool = True,
) -> None:
    """Add the collection ``key`` of ``graph`` to ``meta_graph_def`` (TensorFlow's
    ``add_collection_def``): items outside ``export_scope`` or in ``exclude_nodes`` are left
    out; a collection whose items have no CollectionDef form is left out with a warning."""
    if not isinstance(key, str):
        if warn:
            logging.warning(
                "Only collections with string type keys will be serialized. This key has %s",
                type(key),
            )
        return
    if key.startswith("__"):
        return  # Python state of this process (variable scopes, ...): it does not travel
    excluded = set(exclude_nodes or ())
    items = list(override_contents) if override_contents else graph.get_collection(key)

    def included(item: Any) -> bool:
        name = getattr(item, "name", None)
        if not isinstance(name, str):
            return True
        bare = name.partition(":")[0]
        if bare in excluded or name in excluded:
            return False
        return name.startswith(UNBOUND_INPUT_PREFIX) or _in_scope(bare, export_scope)

    items = [x for x in items if included(x)]
    if not items:
        return
    col = messages().CollectionDef()
    try:
        if key in VARIABLE_KEYS:
            for x in items:
                if not hasattr(x, "to_proto") or not hasattr(x, "initializer"):
                    raise TypeError(f"{x!r} is not a Variable")
                proto = x.to_proto(export_scope=export_scope)
                if proto is not None:
                    col.bytes_list.value.append(proto.SerializeToString())
        elif key == GraphKeys.SAVERS:
            for x in items:
                sd = x.to_proto(export_scope=export_scope) if hasattr(x, "to_proto") else x
                if sd is not None:
                    col.bytes_list.value.append(saver_def_to_proto(sd).SerializeToString())
        else:
            kind = _kind_of(items[0])
            if kind == "node_list":
                for x in items:
                    name = _node_name_of(x, graph)
                    if _in_scope(name.partition(":")[0], export_scope):
                        col.node_list.value.append(strip_name_scope(name, export_scope))
            elif kind == "bytes_list":
                col.bytes_list.value.extend(
                    x.encode("utf-8") if isinstance(x, str) else x for x in items
                )
            else:
                getattr(col, kind).value.extend(items)
    except (TypeError, ValueError, AttributeError) as e:
        if warn:
            logging.warning(
                "The collection %r is not written to the meta graph: its items have no "
                "CollectionDef form (%s). This is a warning; the graph and the other collections "
                "are written.",
                key,
                e,
            )
        return
    if col.WhichOneof("kind") is not None:
        meta_graph_def.collection_def[key].CopyFrom(col)


def create_meta_graph_def(
    graph: Graph,
    graph_def: Any = None,
    meta_info_def: Any = None,
    saver_def: Any = None,
    collection_list: Iterable[str] | None = None,
    export_scope: str | None = None,
    clear_devices: bool = False,
    clear_extraneous_savers: bool = False,
    strip_default_attrs: bool = False,
    unbound_inputs_col_name: str | None = "unbound_inputs",
    warn: bool = True,
) -> Any:
    """The MetaGraphDef of ``graph`` (TensorFlow's ``export_scoped_meta_graph`` without the
    file): see :func:`opweave.train.export_meta_graph` for the arguments."""
    from .._version import __version__
    from ._io import as_graph_def

    m = messages()
    meta = m.MetaGraphDef()
    if meta_info_def is not None:
        meta.meta_info_def.CopyFrom(
            _message_copy(meta_info_def, "tensorflow.MetaGraphDef.MetaInfoDef", "meta_info_def")
        )
    # tensorflow_version stays empty: TensorFlow compares it as a version number (it reads the
    # variables' ``trainable`` flags only from 1.9 on, and from unversioned meta graphs).
    meta.meta_info_def.tensorflow_git_version = f"opweave {__version__}"
    source = as_graph_def(graph_def) if graph_def is not None else None
    if source is None:
        source = graph.as_graph_def(add_shapes=True)
    proto_saver = saver_def_to_proto(saver_def) if saver_def is not None else None
    exclude: set[str] = set()
    if clear_extraneous_savers:
        exclude = _extraneous_saver_nodes(source, proto_saver)
    if export_scope or clear_devices or exclude:
        unbound: list[str] = []
        out = meta.graph_def
        out.versions.CopyFrom(source.versions)
        out.library.CopyFrom(source.library)
        for node in source.node:
            if node.name in exclude or not _in_scope(node.name, export_scope):
                continue
            out.node.append(_scoped_node(node, export_scope, unbound, clear_devices))
        if unbound_inputs_col_name:
            # Recorded in the graph's collection too, as TensorFlow does: importers must map
            # these inputs (input_map) to tensors of their graph.
            graph.clear_collection(unbound_inputs_col_name)
            for name in dict.fromkeys(unbound):
                graph.add_to_collection(unbound_inputs_col_name, name)
    else:
        meta.graph_def.CopyFrom(source)
    if strip_default_attrs:
        _strip_default_attrs(meta.graph_def)
        meta.meta_info_def.stripped_default_attrs = True
    if proto_saver is not None:
        meta.saver_def.CopyFrom(proto_saver)
    keys = graph.get_all_collection_keys() if collection_list is None else list(collection_list)
    for key in keys:
        override = None
        if clear_extraneous_savers and key == GraphKeys.SAVERS and proto_saver is not None:
            override = [proto_saver]
        add_collection_def(meta, key, graph, export_scope, exclude, override, warn)
    return meta


def collections_bytes(graph: Graph) -> bytes:
    """A MetaGraphDef holding only ``graph``'s collections, serialized (b"" when it has none
    that can be written): what travels with a pickled Graph."""
    meta = messages().MetaGraphDef()
    for key in graph.get_all_collection_keys():
        add_collection_def(meta, key, graph, warn=False)
    return meta.SerializeToString() if len(meta.collection_def) else b""


# -- import: plans checked against the GraphDef before anything is added ----------------------


@dataclass
class SaverPlan:
    """A saver of the meta graph, checked against its GraphDef, to rebuild after the import.

    An opweave saver's ops are imported and adopted (``opweave_names``: its restore op,
    ``tensor_names`` constant, filename and save tensors, by GraphDef name). A TensorFlow
    saver's scope is left out of the import and replaced by an opweave saver over
    ``tf_variables`` (``(checkpoint key, VariableV2 node)`` pairs) in the same scope.
    """

    saver_def: Any
    scope: str
    opweave_names: tuple[str, str, str, str] | None = None
    tf_variables: list[tuple[str, str]] = field(default_factory=list)
    #: After the import: the saver's name scope in the target graph, and its elements (the
    #: opweave saver's four elements, or the variables' refs by checkpoint key).
    target_scope: str = ""
    elements: tuple[Any, ...] = ()
    variables: dict[str, Tensor] = field(default_factory=dict)


@dataclass
class ImportedMetaGraph:
    """What :func:`import_meta_graph_into` made: the import (new op of each GraphDef node), the
    variables by their names without the import scope, the savers and the returned elements."""

    result: ImportResult
    variables: dict[str, Any]
    saver: Any
    return_elements: list[Any]


def _nodes_of(graph_def: Any) -> dict[str, Any]:
    return {n.name: n for n in graph_def.node}


def _ref(name: Any, nodes: Mapping[str, Any], what: str, *, tensor: bool | None = None) -> str:
    """Check that ``name`` (``"x"`` an op, ``"x:0"`` a tensor) names a node of the GraphDef."""
    if not isinstance(name, str) or not name:
        raise GraphDefError(f"{what} names no graph element ({name!r})")
    if tensor is True and ":" not in name:
        raise GraphDefError(f"{what} must name a tensor ('x:0'), got {name!r}")
    if tensor is False and ":" in name:
        raise GraphDefError(f"{what} must name an op, got the tensor {name!r}")
    try:
        src, _, control = parse_input_name(name)
    except GraphDefError:
        raise GraphDefError(f"{what}: {name!r} is not an op or tensor name") from None
    if control or src not in nodes:
        raise GraphDefError(f"{what} names {name!r}, which is not in the meta graph's graph_def")
    return name


def _string_const(nodes: Mapping[str, Any], text: str, what: str) -> list[str]:
    """The strings of the Const node ``text`` names (a TensorFlow saver's tensor names)."""
    from ..dtypes import string
    from ._tensors import ndarray_from_proto

    src, _, control = parse_input_name(text)
    node = nodes.get(src)
    if control or node is None or node.op != "Const":
        raise GraphDefError(f"{what}: {text!r} is not a constant of the graph_def")
    arr = ndarray_from_proto(node.attr["value"].tensor, f"{what} ({src})", string)
    if arr.ndim > 1:
        raise GraphDefError(f"{what}: {src} is not a list of strings (shape {list(arr.shape)})")
    out = []
    for v in arr.reshape(-1).tolist():
        try:
            out.append(bytes(v).decode("utf-8"))
        except UnicodeDecodeError:
            raise GraphDefError(f"{what}: {src} holds a name that is not UTF-8") from None
    return out


def _variable_node(nodes: Mapping[str, Any], text: str, what: str) -> str:
    """The VariableV2 node behind the input ``text`` (through Identity reads)."""
    seen: set[str] = set()
    while True:
        src, index, control = parse_input_name(text)
        node = nodes.get(src)
        if node is None or control:
            raise GraphDefError(f"{what}: {text!r} is not in the graph_def")
        if node.op == "VariableV2" and index == 0:
            return src
        if node.op != "Identity" or not node.input or src in seen:
            raise GraphDefError(
                f"{what}: {text!r} is a {node.op} node, not a variable (opweave's savers save "
                "VariableV2 variables)"
            )
        seen.add(src)
        text = node.input[0]


def _check_saver_settings(sd: Any, what: str) -> None:
    if sd.max_to_keep < 0:
        raise GraphDefError(f"{what}: max_to_keep is {sd.max_to_keep}")
    hours = sd.keep_checkpoint_every_n_hours
    if not hours >= 0 or math.isnan(hours):
        raise GraphDefError(f"{what}: keep_checkpoint_every_n_hours is {hours}")


def _plan_tf_saver(
    sd: Any, scope: str, nodes: Mapping[str, Any], tf_scopes: set[str], what: str
) -> SaverPlan:
    """A TensorFlow saver in ``scope``: its checkpoint keys and variables, from its save ops'
    inputs (``tensor_names`` and the variables, in the same order)."""
    plan = SaverPlan(sd, scope.rstrip("/"))
    keys: set[str] = set()
    variables: set[str] = set()
    for name, node in nodes.items():
        if not name.startswith(scope) or node.op not in ("SaveV2", "Save", "SaveSlices"):
            continue
        data = [t for t in node.input if not t.startswith("^")]
        first = 2 if node.op == "Save" else 3
        if len(data) < first:
            raise GraphDefError(f"{what}: {node.op} node {name!r} has {len(data)} inputs")
        tensor_names = _string_const(nodes, data[1], f"{what}: {name}")
        if node.op != "Save":
            slices = _string_const(nodes, data[2], f"{what}: {name}")
            if any(slices):
                raise GraphDefError(
                    f"{what}: {name} saves slices of partitioned variables, which opweave does "
                    "not support"
                )
        saved = data[first:]
        if len(saved) != len(tensor_names):
            raise GraphDefError(
                f"{what}: {name} saves {len(saved)} tensors under {len(tensor_names)} names"
            )
        for key, text in zip(tensor_names, saved, strict=True):
            var = _variable_node(nodes, text, f"{what}: {name}")
            if any(var.startswith(s) for s in tf_scopes):
                raise GraphDefError(f"{what}: {name} saves {var!r} of a saver's own scope")
            if key in keys or var in variables:
                raise GraphDefError(f"{what}: {key!r} ({var}) is saved twice")
            keys.add(key)
            variables.add(var)
            plan.tf_variables.append((key, var))
    if not plan.tf_variables:
        raise GraphDefError(f"{what}: no save op in {scope[:-1]!r} names the variables it saves")
    return plan


def _plan_opweave_saver(sd: Any, nodes: Mapping[str, Any], what: str) -> SaverPlan:
    """An opweave saver: a ``restore_all`` NoOp after one ``Assign`` of a placeholder per
    variable, and the checkpoint keys in ``tensor_names`` beside it."""
    restore = _ref(sd.restore_op_name, nodes, f"{what}: restore_op_name", tensor=False)
    filename = _ref(sd.filename_tensor_name, nodes, f"{what}: filename_tensor_name", tensor=True)
    save = _ref(sd.save_tensor_name, nodes, f"{what}: save_tensor_name", tensor=True)
    scope = restore.rpartition("/")[0]
    names = f"{scope}/tensor_names" if scope else "tensor_names"
    node = nodes[restore]
    if node.op != "NoOp" or names not in nodes:
        raise GraphDefError(
            f"{what}: {restore!r} is a {node.op} node without a {names!r} beside it: not a "
            "saver opweave or TensorFlow made"
        )
    keys = _string_const(nodes, names, what)
    assigns = [t[1:] for t in node.input if t.startswith("^")]
    if len(assigns) != len(node.input) or len(assigns) != len(keys) or len(set(keys)) != len(keys):
        raise GraphDefError(
            f"{what}: {restore!r} runs {len(node.input)} ops for {len(keys)} checkpoint keys "
            f"({names}): not a saver opweave made"
        )
    for a in assigns:
        assign = nodes.get(a)
        data = [t for t in assign.input if not t.startswith("^")] if assign is not None else []
        if assign is None or assign.op != "Assign" or len(data) != 2:
            raise GraphDefError(f"{what}: {restore!r} runs {a!r}, which is not an Assign")
        _variable_node(nodes, data[0], f"{what}: {a}")
        src = parse_input_name(data[1])[0]
        if src not in nodes or nodes[src].op != "Placeholder":
            raise GraphDefError(f"{what}: {a!r} assigns {data[1]!r}, which is not a placeholder")
    plan = SaverPlan(sd, scope)
    plan.opweave_names = (restore, names, filename, save)
    return plan


def _plan_saver(sd: Any, nodes: Mapping[str, Any], tf_scopes: set[str], what: str) -> SaverPlan:
    _check_saver_settings(sd, what)
    if not isinstance(sd.restore_op_name, str) or not sd.restore_op_name:
        raise GraphDefError(f"{what}: restore_op_name is empty")
    scope = sd.restore_op_name.partition(":")[0].rpartition("/")[0] + "/"
    if scope in tf_scopes:
        return _plan_tf_saver(sd, scope, nodes, tf_scopes, what)
    return _plan_opweave_saver(sd, nodes, what)


def _legacy_trainable(meta: Any) -> bool:
    """Whether the meta graph predates ``VariableDef.trainable`` (TensorFlow before 1.9)."""
    m = re.match(r"(\d+)\.(\d+)", meta.meta_info_def.tensorflow_version)
    return m is not None and (int(m.group(1)), int(m.group(2))) < (1, 9)


@dataclass
class _CollectionPlan:
    key: str
    kind: str
    values: list[Any]  # VariableDef messages, SaverPlans, names, numbers or bytes


def _plan_collections(
    meta: Any,
    nodes: Mapping[str, Any],
    kept: Mapping[str, Any],
    tf_scopes: set[str],
    dropped: set[str],
    unbound_inputs_col_name: str | None,
    predicate: Callable[[str], bool],
) -> list[_CollectionPlan]:
    """The collections to restore, each checked against the GraphDef: ``kept`` holds its nodes
    but TensorFlow's savers' (``nodes`` all of them, which the savers' plans read)."""
    m = messages()
    keys = sorted(meta.collection_def)
    if GraphKeys.TRAINABLE_VARIABLES in keys:  # first, as TensorFlow: see _legacy_trainable
        keys.remove(GraphKeys.TRAINABLE_VARIABLES)
        keys.insert(0, GraphKeys.TRAINABLE_VARIABLES)
    legacy = _legacy_trainable(meta)
    plans: list[_CollectionPlan] = []
    for key in keys:
        if key == unbound_inputs_col_name or not predicate(key):
            continue
        col = meta.collection_def[key]
        kind = col.WhichOneof("kind")
        what = f"collection {key!r}"
        if kind is None:
            logging.error("Cannot identify data type for collection %s. Skipping.", key)
            continue
        values = list(getattr(col, kind).value)
        if key in _FOREIGN_PROTO_KEYS:
            logging.warning(
                "The collection %r holds TensorFlow objects opweave lacks: skipped", key
            )
            continue
        if kind == "bytes_list" and key in VARIABLE_KEYS:
            defs = []
            for i, data in enumerate(values):
                vd = m.VariableDef()
                try:
                    vd.ParseFromString(data)
                except Exception as e:  # protobuf's DecodeError, or a RuntimeError from upb
                    raise errors.DataLossError(
                        None, None, f"{what}[{i}] is not a VariableDef: {e}"
                    ) from None
                where = f"{what}[{i}]"
                if vd.HasField("save_slice_info_def"):
                    raise GraphDefError(
                        f"{where} ({vd.variable_name}) is part of a partitioned variable, which "
                        "opweave does not support"
                    )
                ref = _ref(vd.variable_name, kept, f"{where}.variable_name", tensor=True)
                src, index, _ = parse_input_name(ref)
                if kept[src].op != "VariableV2" or index != 0:
                    raise GraphDefError(
                        f"{where}: {ref!r} is output {index} of a {kept[src].op} node, not a "
                        "VariableV2 (opweave's variables are TensorFlow 1's reference variables)"
                    )
                _ref(vd.initializer_name, kept, f"{where}.initializer_name", tensor=False)
                _ref(vd.snapshot_name, kept, f"{where}.snapshot_name", tensor=True)
                if vd.initial_value_name:
                    _ref(vd.initial_value_name, kept, f"{where}.initial_value_name", tensor=True)
                if legacy:
                    vd.trainable = key == GraphKeys.TRAINABLE_VARIABLES
                defs.append(vd)
            plans.append(_CollectionPlan(key, "variables", defs))
        elif kind == "bytes_list" and key == GraphKeys.SAVERS:
            savers = []
            for i, data in enumerate(values):
                sd = m.SaverDef()
                try:
                    sd.ParseFromString(data)
                except Exception as e:  # protobuf's DecodeError, or a RuntimeError from upb
                    raise errors.DataLossError(
                        None, None, f"{what}[{i}] is not a SaverDef: {e}"
                    ) from None
                savers.append(_plan_saver(sd, nodes, tf_scopes, f"{what}[{i}]"))
            plans.append(_CollectionPlan(key, "savers", savers))
        elif kind == "node_list":
            names = []
            for i, name in enumerate(values):
                if name.partition(":")[0] in dropped:
                    logging.warning(
                        "%s[%d] names %s of TensorFlow's saver, which opweave replaces: skipped",
                        what,
                        i,
                        name,
                    )
                    continue
                names.append(_ref(name, kept, f"{what}[{i}]"))
            plans.append(_CollectionPlan(key, kind, names))
        elif kind == "int64_list":
            plans.append(_CollectionPlan(key, kind, [int(v) for v in values]))
        elif kind == "float_list":
            plans.append(_CollectionPlan(key, kind, [float(v) for v in values]))
        else:
            plans.append(_CollectionPlan(key, kind, [bytes(v) for v in values]))
    return plans


def _without_tf_savers(graph_def: Any, tf_scopes: set[str]) -> tuple[Any, set[str]]:
    """``graph_def`` without the nodes of TensorFlow's savers; GraphDefError when another node
    reads one of them."""
    dropped = {n.name for n in graph_def.node if any(n.name.startswith(s) for s in tf_scopes)}
    if not dropped:
        return graph_def, dropped
    out = messages().GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        if node.name in dropped:
            continue
        for text in node.input:
            src = parse_input_name(text)[0]
            if src in dropped:
                raise GraphDefError(
                    f"Node {node.name!r} reads {text!r}, an op of TensorFlow's saver (which reads "
                    "and writes TensorFlow's checkpoint files; opweave replaces it by its own "
                    "saver)",
                    node.name,
                    node.op,
                )
        out.node.append(node)
    return out, dropped


def _element(result: ImportResult, name: str) -> Any:
    """The op (``"x"``) or tensor (``"x:1"``) the import made for a GraphDef name."""
    src, index, _ = parse_input_name(name)
    op = result.ops[src]
    return op.outputs[index] if ":" in name else op


def _make_variable(result: ImportResult, vd: Any) -> Any:
    from ..ops.variables import Variable

    v = Variable.__new__(Variable)
    initial = _element(result, vd.initial_value_name) if vd.initial_value_name else None
    v._adopt(
        _element(result, vd.variable_name),
        _element(result, vd.initializer_name),
        _element(result, vd.snapshot_name),
        initial,
        bool(vd.trainable),
    )
    return v


def _resolve_saver(plan: SaverPlan, result: ImportResult) -> SaverPlan:
    plan.target_scope = prepend_name_scope(plan.scope, result.prefix) if plan.scope else ""
    if plan.opweave_names is not None:
        plan.elements = tuple(_element(result, n) for n in plan.opweave_names)
    else:
        plan.variables = {k: result.ops[v].outputs[0] for k, v in plan.tf_variables}
    return plan


def import_meta_graph_into(
    graph: Graph,
    meta: Any,
    make_saver: Callable[[SaverPlan], Any],
    *,
    import_scope: str | None = None,
    input_map: Mapping[str, Tensor | Operation] | None = None,
    clear_devices: bool = False,
    unbound_inputs_col_name: str | None = "unbound_inputs",
    restore_collections_predicate: Callable[[str], bool] = lambda key: True,
    return_elements: Sequence[str] = (),
) -> ImportedMetaGraph:
    """Import the MetaGraphDef ``meta`` into ``graph``: its GraphDef, its collections, and its
    savers (each built by ``make_saver`` from its checked, resolved plan). Everything the meta
    graph names is checked before anything is added; on an error the graph is unchanged.

    ``import_scope`` None imports into the current name scope with the GraphDef's names (a name
    the graph already has gets ``_1``); otherwise into the scope ``import_scope``, made unique.
    Returns the import's result and the savers (``saver`` from ``meta.saver_def``, None without
    one).
    """
    from . import _check_input_map

    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    mapping = _check_input_map(input_map)
    if unbound_inputs_col_name and unbound_inputs_col_name in meta.collection_def:
        col = meta.collection_def[unbound_inputs_col_name]
        kind = col.WhichOneof("kind")
        values = [
            v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
            for v in (getattr(col, kind).value if kind else [])
        ]
        if values and (not input_map or sorted(values) != sorted(input_map)):
            missing = [v for v in values if not input_map or v not in input_map]
            raise ValueError(
                f"Graph contains unbound inputs: {','.join(missing)}. Must provide these inputs "
                "through input_map."
            )
    graph_def = meta.graph_def
    _missing_ops_of_kept(graph_def)
    nodes = _nodes_of(graph_def)
    tf_scopes = {
        n.name.rpartition("/")[0] + "/"
        for n in graph_def.node
        if n.op in SAVE_AND_RESTORE_OPS and "/" in n.name
    }
    saver_plan = None
    if meta.HasField("saver_def"):
        saver_plan = _plan_saver(meta.saver_def, nodes, tf_scopes, "saver_def")
    trimmed, dropped = _without_tf_savers(graph_def, tf_scopes)
    kept = _nodes_of(trimmed) if dropped else nodes
    plans = _plan_collections(
        meta,
        nodes,
        kept,
        tf_scopes,
        dropped,
        unbound_inputs_col_name,
        restore_collections_predicate,
    )
    if saver_plan is not None and saver_plan.opweave_names is not None:
        for name in saver_plan.opweave_names:
            _ref(name, kept, "saver_def")
    if clear_devices:
        if trimmed is graph_def:
            trimmed = messages().GraphDef()
            trimmed.CopyFrom(graph_def)
        for node in trimmed.node:
            node.device = ""
    refs: dict[str, None] = {}
    for plan in plans:
        if plan.kind == "variables":
            for vd in plan.values:
                for name in (vd.variable_name, vd.snapshot_name, vd.initial_value_name):
                    if name:
                        refs[name] = None
        elif plan.kind == "node_list":
            refs.update(dict.fromkeys(plan.values))
        elif plan.kind == "savers":
            for sp in plan.values:
                refs.update(dict.fromkeys(sp.opweave_names or ()))
    if saver_plan is not None:
        refs.update(dict.fromkeys(saver_plan.opweave_names or ()))
    if isinstance(return_elements, str) or not all(isinstance(r, str) for r in return_elements):
        raise TypeError(f"return_elements must be a list of strings, got {return_elements!r}")
    refs.update(dict.fromkeys(return_elements))

    if import_scope is None:
        scopes = graph._stack("names")
        name = scopes[-1] if scopes else ""
    else:
        name = import_scope
    try:
        result = import_into(graph, trimmed, mapping, name, list(refs))
    except GraphDefError as e:
        if e.message.startswith("Requested return_element"):
            raise GraphDefError(
                e.message.replace("Requested return_element", "The meta graph names")
                + " (in a collection, a VariableDef or the SaverDef)"
            ) from None
        raise

    # Everything below was checked against the GraphDef: it cannot fail half-way.
    made: dict[str, Any] = {}
    for plan in plans:
        for value in plan.values:
            if plan.kind == "variables":
                item = made.get(value.variable_name)
                if item is None:
                    item = made[value.variable_name] = _make_variable(result, value)
            elif plan.kind == "savers":
                with graph.as_default():
                    item = make_saver(_resolve_saver(value, result))
            elif plan.kind == "node_list":
                item = _element(result, value)
            else:
                item = value
            graph.add_to_collection(plan.key, item)
    saver = None
    if saver_plan is not None:
        with graph.as_default():
            saver = make_saver(_resolve_saver(saver_plan, result))
    ours = {id(v) for v in made.values()}
    variables = {
        strip_name_scope(v.name, result.prefix): v
        for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        if id(v) in ours
    }
    return ImportedMetaGraph(
        result, variables, saver, [_element(result, r) for r in return_elements]
    )


def _missing_ops_of_kept(graph_def: Any) -> None:
    """NotFoundError for ops opweave lacks, TensorFlow's saver ops aside (they are replaced)."""
    if any(n.op in SAVE_AND_RESTORE_OPS for n in graph_def.node):
        tf_scopes = {
            n.name.rpartition("/")[0] + "/"
            for n in graph_def.node
            if n.op in SAVE_AND_RESTORE_OPS and "/" in n.name
        }
        rest = messages().GraphDef()
        rest.library.CopyFrom(graph_def.library)
        for n in graph_def.node:
            if not any(n.name.startswith(s) for s in tf_scopes):
                rest.node.add(name=n.name, op=n.op)
        _missing_ops(rest)
    else:
        _missing_ops(graph_def)
