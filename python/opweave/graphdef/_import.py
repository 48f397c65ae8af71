"""GraphDef -> Graph: ``import_graph_def``, with TensorFlow 1's semantics.

Each node is built by its op's definition (``REGISTRY[node.op]``), so inputs, attributes, dtypes
and static shapes are checked as when the graph was written in Python. An import either adds
every node or none:

1. the whole GraphDef is read and checked (op types, names, inputs, a topological order);
2. every node is built in a scratch graph, where the definitions check it;
3. only then are the nodes added to the target graph, under its lock, with the attributes,
   dtypes and shapes of step 2, which leaves nothing that could fail half-way.

Nothing in a GraphDef is executed while it is read: ops are looked up by name in opweave's own
registry and attributes are data; an op that would call Python (``PyFunc``) cannot be written
to a GraphDef in the first place.
"""

from __future__ import annotations

import contextlib
import heapq
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..dtypes import as_dtype
from ..framework import _VALID_NAME, Graph, Operation, Tensor, _canonical_device
from ..ops._op_def import REGISTRY, OpDef
from ..tensor_shape import TensorShape
from ._attrs import (
    OPWEAVE_ONLY_ATTRS,
    arg_counts,
    check_tf_only_attr,
    from_attr_value,
    input_number_attrs,
    op_def_type_attrs,
    type_name,
)
from ._errors import GraphDefError

__all__ = ["ImportResult", "import_into", "parse_input_name"]

_TENSOR_NAME = re.compile(r"^([^:^]+)(?::(\d+))?$")


def parse_input_name(text: str) -> tuple[str, int, bool]:
    """``"x"`` -> ("x", 0, False), ``"x:1"`` -> ("x", 1, False), ``"^x"`` -> ("x", 0, True)."""
    control = text.startswith("^")
    m = _TENSOR_NAME.match(text[1:] if control else text)
    if m is None or (control and m.group(2) is not None):
        raise GraphDefError(f"input {text!r} is not a tensor name ('x', 'x:1' or '^x')")
    index = int(m.group(2)) if m.group(2) is not None else 0
    if index >= 2**31:
        raise GraphDefError(f"input {text!r}: output index too large")
    return m.group(1), index, control


@dataclass
class _Node:
    """One NodeDef, read and checked."""

    proto: Any
    name: str
    op_def: OpDef
    data: list[tuple[str, int]]
    control: list[str]
    device: str
    built: Operation | None = None


@dataclass
class ImportResult:
    """What an import added: the new op of each GraphDef node name, and the name prefix."""

    ops: dict[str, Operation] = field(default_factory=dict)
    prefix: str = ""


# -- step 1: read and check -------------------------------------------------------------------


def _device(text: str) -> str:
    """The device a NodeDef asks for, canonical; job/replica/task parts alone mean no device."""
    if not text:
        return ""
    parts = [p for p in text.split("/") if p and not p.startswith(("job:", "replica:", "task:"))]
    if not parts:
        return ""
    try:
        return _canonical_device("/" + "/".join(parts))
    except ValueError as e:
        raise GraphDefError(str(e)) from None


def _missing_ops(graph_def: Any) -> None:
    missing: dict[str, str] = {}
    for node in graph_def.node:
        if node.op not in REGISTRY and node.op not in missing:
            missing[node.op] = node.name
    if not missing:
        return
    op_type, node_name = next(iter(missing.items()))
    more = ""
    if len(missing) > 1:
        more = f" The graph uses {len(missing)} op types opweave lacks: {', '.join(missing)}."
    if graph_def.library.ByteSize():
        more += " (It also defines functions, which opweave does not support.)"
    raise errors.NotFoundError(
        node_name,
        op_type,
        f"Op type not registered {op_type!r} in opweave (node {node_name!r}).{more}",
    )


def _read_nodes(graph_def: Any, mapped: frozenset[str] = frozenset()) -> dict[str, _Node]:
    """The nodes of ``graph_def``, checked; an input may name a node the GraphDef lacks only
    when ``input_map`` replaces it (``mapped``: the ``$unbound_inputs_`` of a scoped export)."""
    _missing_ops(graph_def)
    nodes: dict[str, _Node] = {}
    for proto in graph_def.node:
        name = proto.name
        if not name:
            raise GraphDefError(f"a {proto.op or 'node'} node has no name", None, proto.op)
        if name in nodes:
            raise GraphDefError(f"Node {name!r} is not unique", name, proto.op)
        data: list[tuple[str, int]] = []
        control: list[str] = []
        try:
            for text in proto.input:
                src, index, is_control = parse_input_name(text)
                if is_control:
                    control.append(src)
                elif control:
                    raise GraphDefError(
                        f"data input {text!r} comes after a control input (TensorFlow lists "
                        "control inputs last)"
                    )
                else:
                    data.append((src, index))
            device = _device(proto.device)
        except GraphDefError as e:
            raise GraphDefError(e.message, name, proto.op) from None
        nodes[name] = _Node(proto, name, REGISTRY[proto.op], data, control, device)
    for node in nodes.values():
        for src in [s for s, _ in node.data] + node.control:
            if src not in nodes and src not in mapped:
                raise GraphDefError(
                    f"Node {node.name!r}: Unknown input node {src!r}", node.name, node.proto.op
                )
    return nodes


def _topological_order(nodes: dict[str, _Node]) -> list[_Node]:
    """The nodes, each after its inputs, in the GraphDef's order wherever the edges allow (a
    graph written in creation order is rebuilt in that order); GraphDefError naming a cycle.

    Inputs replaced by ``input_map`` still order their source first, so that the source's
    dtype is checked against the replacement before any consumer is built."""
    position = {name: i for i, name in enumerate(nodes)}
    waiting: dict[str, int] = {}
    consumers: dict[str, list[str]] = {name: [] for name in nodes}
    for node in nodes.values():
        # A source the GraphDef lacks is replaced by input_map: nothing to wait for.
        sources = ({s for s, _ in node.data} | set(node.control)) & nodes.keys()
        waiting[node.name] = len(sources)
        for s in sources:
            consumers[s].append(node.name)
    heap = [(position[n], n) for n, k in waiting.items() if k == 0]
    heapq.heapify(heap)
    order: list[_Node] = []
    while heap:
        _, name = heapq.heappop(heap)
        order.append(nodes[name])
        for c in consumers[name]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(heap, (position[c], c))
    if len(order) != len(nodes):
        stuck = [name for name, n in waiting.items() if n > 0]
        shown = ", ".join(repr(s) for s in stuck[:5]) + (", ..." if len(stuck) > 5 else "")
        first = nodes[stuck[0]]
        raise GraphDefError(
            f"{len(stuck)} nodes in a cycle or fed by one: {shown} (opweave has no control-flow "
            "loops; a graph's edges must not form a cycle)",
            first.name,
            first.proto.op,
        )
    return order


# -- step 2: build in a scratch graph ---------------------------------------------------------


def _node_attrs(node: _Node) -> tuple[dict[str, Any], dict[str, Any], dict[str, int]]:
    """The node's attributes: (the op definition's, the type variables', the input counts')."""
    op_def = node.op_def
    proto_attrs = node.proto.attr
    types = op_def_type_attrs(op_def)
    counts = input_number_attrs(op_def)
    derived = OPWEAVE_ONLY_ATTRS.get(node.proto.op, {})
    values: dict[str, Any] = {}
    typed: dict[str, Any] = {}
    numbers: dict[str, int] = {}
    for key in proto_attrs:
        av = proto_attrs[key]
        where = f"attr {key!r}"
        if key in counts:
            numbers[key] = from_attr_value("int", av, where)
            if numbers[key] < 0:
                raise GraphDefError(f"{where}: a count of inputs cannot be {numbers[key]}")
        elif key in op_def.attrs and key not in derived:
            values[key] = from_attr_value(op_def.attrs[key].kind, av, where)
        elif key in types:
            typed[key] = from_attr_value("type", av, where)
        elif key not in derived:
            check_tf_only_attr(key, av, where)
    if node.proto.op == "Const" and "value" in values and "dtype" in values:
        held = as_dtype(values["value"].dtype)
        if held is not values["dtype"]:
            raise GraphDefError(
                f"attr 'value' holds a {type_name(held)} tensor but attr 'dtype' is "
                f"{type_name(values['dtype'])}"
            )
    for key, spec in op_def.attrs.items():
        if key not in values and spec.kind == "shape" and spec.default is None:
            values[key] = TensorShape(None)  # TensorFlow's default of a shape: unknown rank
    for key, fn in derived.items():
        values[key] = fn(values)
    return values, typed, numbers


@contextlib.contextmanager
def _building(graph: Graph, control: Sequence[Operation], device: str) -> Iterator[None]:
    """``graph`` as the default graph, with exactly ``control`` as control dependencies."""
    with (
        graph.as_default(),
        graph.control_dependencies(None),
        graph.control_dependencies(control),
        graph.device(device) if device else contextlib.nullcontext(),
    ):
        yield


def _build_scratch(
    order: list[_Node],
    nodes: Mapping[str, _Node],
    stand_ins: Mapping[tuple[str, int], Tensor],
    control_stand_ins: Mapping[str, Operation],
    scratch: Graph,
    mapped: Mapping[tuple[str, int], Tensor],
) -> None:
    replaced: dict[str, list[int]] = {}
    for src, index in mapped:
        replaced.setdefault(src, []).append(index)
    for node in order:
        try:
            _build_one(node, nodes, stand_ins, control_stand_ins, scratch)
            for index in replaced.get(node.name, []):
                _check_replacement(node, index, mapped[(node.name, index)])
        except GraphDefError as e:
            if e.node_name is not None:
                raise
            raise GraphDefError(e.message, node.name, node.proto.op) from None
        except (TypeError, ValueError) as e:
            raise GraphDefError(str(e), node.name, node.proto.op) from None


def _check_replacement(node: _Node, index: int, t: Tensor) -> None:
    """The tensor ``input_map`` puts in place of output ``index`` of ``node`` fits it."""
    op = node.built
    assert op is not None
    key = f"{node.name}:{index}"
    if index >= len(op.outputs):
        raise GraphDefError(
            f"input_map key {key!r}: node {node.name!r} has {len(op.outputs)} outputs"
        )
    if op.outputs[index].dtype is not t.dtype:
        raise GraphDefError(
            f"input_map[{key!r}] is {t.name} of dtype {t.dtype.name}, but {key!r} is "
            f"{op.outputs[index].dtype.name}"
        )


def _source(
    nodes: Mapping[str, _Node], stand_ins: Mapping[tuple[str, int], Tensor], src: str, index: int
) -> Tensor:
    if (src, index) in stand_ins:
        return stand_ins[(src, index)]
    op = nodes[src].built
    assert op is not None  # built before its consumers: the order is topological
    if index >= len(op.outputs):
        raise GraphDefError(
            f"Connecting to invalid output {index} of source node {src} which has "
            f"{len(op.outputs)} outputs"
        )
    return op.outputs[index]


def _build_one(
    node: _Node,
    nodes: Mapping[str, _Node],
    stand_ins: Mapping[tuple[str, int], Tensor],
    control_stand_ins: Mapping[str, Operation],
    scratch: Graph,
) -> None:
    op_def = node.op_def
    values, typed, numbers = _node_attrs(node)
    inputs = [_source(nodes, stand_ins, s, i) for s, i in node.data]
    control: list[Operation] = []
    for c in node.control:
        op_c = control_stand_ins[c] if c in control_stand_ins else nodes[c].built
        assert op_c is not None  # built before its consumers: the order is topological
        control.append(op_c)
    counts = arg_counts(op_def, {**values, **numbers}, len(inputs), f"{node.proto.op} node")
    kwargs: dict[str, Any] = {}
    at = 0
    for a, n in zip(op_def.inputs, counts, strict=True):
        kwargs[a.name] = inputs[at : at + n] if (a.number_attr or a.is_list) else inputs[at]
        at += n
    counted = input_number_attrs(op_def)
    kwargs.update({k: v for k, v in values.items() if k not in counted})
    before = len(scratch.get_operations())
    with _building(scratch, control, ""):
        op_def(name=node.name + "/", **kwargs)  # "name/": exactly this name, no uniquifying
    ops = scratch.get_operations()
    if len(ops) != before + 1 or ops[-1].name != node.name:
        raise errors.InternalError(
            node.name,
            node.proto.op,
            f"building the op added {len(ops) - before} nodes to the scratch graph instead of 1",
        )
    op = ops[-1]
    for key, dt in typed.items():
        got = op.attrs.get(key)
        if got is not dt:
            raise GraphDefError(
                f"attr {key!r} is {type_name(dt)}, but the inputs make it "
                f"{type_name(got) if got is not None else 'undetermined'} (input dtypes: "
                + ", ".join(f"{t.name} {t.dtype.name}" for t in inputs)
                + ")"
            )
    node.built = op


# -- step 3: add to the target graph ----------------------------------------------------------


def _final_names(graph: Graph, order: list[_Node], prefix: str) -> dict[str, str]:
    """Each node's name in ``graph``: ``prefix/name``, made unique with ``_1``, ``_2`` ... where
    the graph already has it (TensorFlow's importer does the same)."""
    taken = set(graph._names_in_use) | set(graph._by_name)
    out: dict[str, str] = {}
    for node in order:
        base = f"{prefix}/{node.name}" if prefix else node.name
        name = base
        i = 1
        while name in taken:
            name = f"{base}_{i}"
            i += 1
        taken.add(name)
        out[node.name] = name
    return out


def _prefix_for(graph: Graph, name: str | None) -> str:
    """The name scope ``import_graph_def(name=...)`` uses, without registering it yet."""
    if name == "":
        return ""
    base = "import" if name is None else name
    if base.endswith("/"):
        return base[:-1]
    scopes = graph._stack("names")
    full = (scopes[-1] if scopes else "") + base
    count = graph._names_in_use.get(full, 0)
    if not count:
        return full
    while f"{full}_{count}" in graph._names_in_use:
        count += 1
    return f"{full}_{count}"


def import_into(
    graph: Graph,
    graph_def: Any,
    input_map: Mapping[str, Tensor | Operation] | None = None,
    name: str | None = "import",
    return_names: Sequence[str] = (),
) -> ImportResult:
    """Add the nodes of ``graph_def`` to ``graph``: every one, or none (and an error).

    ``input_map`` keys are canonical (``"x:0"``, ``"^x"``), values elements of ``graph``.
    ``return_names`` are checked to name nodes (or outputs) of ``graph_def`` before anything
    is built. The extension point for imports that restore more than ops (collections, savers):
    :attr:`ImportResult.ops` maps every GraphDef node name to its new op.
    """
    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")
    input_map = dict(input_map or {})
    nodes = _read_nodes(graph_def, frozenset(parse_input_name(k)[0] for k in input_map))
    used = {s for node in nodes.values() for s in [s for s, _ in node.data] + node.control}
    mapped: dict[tuple[str, int], Tensor] = {}
    mapped_control: dict[str, Operation] = {}
    missing = []
    for key, value in input_map.items():
        src, index, control = parse_input_name(key)
        if src not in nodes and src not in used:
            missing.append(key)
        elif control:
            mapped_control[src] = value.op if isinstance(value, Tensor) else value
        else:
            if not isinstance(value, Tensor):
                raise TypeError(f"input_map[{key!r}] must be a Tensor, got {value!r}")
            mapped[(src, index)] = value
    if missing:
        raise GraphDefError(f"Attempted to map inputs that were not found in graph_def: {missing}")
    for key, value in input_map.items():
        if value.graph is not graph:
            raise ValueError(f"input_map[{key!r}] ({value.name}) is not an element of this graph")
    for ret in return_names:
        src = ret.rpartition(":")[0] if ":" in ret else ret
        if src not in nodes:
            raise GraphDefError(f"Requested return_element {ret!r} not found in graph_def.")
    order = _topological_order(nodes)

    # Step 2: the scratch graph, with stand-ins for the mapped tensors.
    scratch = Graph()
    placeholder = REGISTRY["Placeholder"]
    stand_ins: dict[tuple[str, int], Tensor] = {}
    control_stand_ins: dict[str, Operation] = {}
    with scratch.as_default():
        for i, ((src, index), t) in enumerate(mapped.items()):
            s = t.shape
            stand_ins[(src, index)] = placeholder(
                dtype=t.dtype, shape=s, shape_str="", name=f"input_map_{i}/"
            )
        for i, src in enumerate(mapped_control):
            control_stand_ins[src] = REGISTRY["NoOp"](name=f"input_map_control_{i}/")
    _build_scratch(order, nodes, stand_ins, control_stand_ins, scratch, mapped)
    for ret in return_names:
        if ":" in ret:
            src, _, index_text = ret.rpartition(":")
            op = nodes[src].built
            if not index_text.isdigit() or op is None or int(index_text) >= len(op.outputs):
                raise GraphDefError(f"Requested return_element {ret!r} not found in graph_def.")

    # Step 3: the target graph. Everything that could fail has been checked; the lock keeps
    # other threads from taking the names chosen here.
    result = ImportResult()
    with graph._lock:
        prefix = _prefix_for(graph, name)
        if prefix and not _VALID_NAME.match(prefix):
            raise ValueError(f"{prefix!r} is not a valid name for an import scope")
        final = _final_names(graph, order, prefix)
        for node in order:
            src_op = node.built
            assert src_op is not None
            new_inputs = [
                mapped[(s, i)] if (s, i) in mapped else result.ops[s].outputs[i]
                for s, i in node.data
            ]
            new_control = [
                mapped_control[c] if c in mapped_control else result.ops[c] for c in node.control
            ]
            with _building(graph, (), node.device):
                result.ops[node.name] = graph._create_op(
                    src_op.type,
                    new_inputs,
                    src_op.attrs,
                    [(t.dtype, t._shape) for t in src_op.outputs],
                    final[node.name],
                    control_inputs=new_control,
                    unique_name=final[node.name],
                )
        base = "import" if name is None else name
        if base and not base.endswith("/"):
            registered = graph.unique_name(base)  # takes the scope's name, as name_scope does
            assert registered == prefix, (registered, prefix)
        result.prefix = prefix
    return result
