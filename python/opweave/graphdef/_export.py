"""Graph -> GraphDef: ``Graph.as_graph_def``.

Every op becomes a NodeDef with TensorFlow's fields: its name, op type, inputs (``"x"`` for a
first output, ``"x:1"`` for others, ``"^x"`` for control inputs, after the data inputs), device
and attributes (mapped from the op's definition by :mod:`._attrs`). Nodes are written in
creation order, which is a topological order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..framework import Graph, Operation, Tensor
from ..ops._op_def import REGISTRY
from ._attrs import NOT_EXPORTABLE, exported_attrs, to_attr_value
from ._protos import messages
from ._tensors import shape_to_proto

__all__ = ["PRODUCER", "graph_to_graph_def", "node_def_for", "tensor_input_name"]

#: ``versions.producer`` of the GraphDefs opweave writes: TensorFlow 1.15's GraphDef version,
#: the op semantics opweave implements. TensorFlow 2 imports such graphs as it imports 1.15's.
PRODUCER = 134


class NotExportableError(ValueError):
    """An op that a GraphDef cannot hold (a ``py_function``): named, with the reason."""


def tensor_input_name(t: Tensor) -> str:
    """How a NodeDef names ``t`` as an input: ``"x"`` for output 0, ``"x:1"`` otherwise."""
    return f"{t.op.name}:{t.value_index}" if t.value_index else t.op.name


def node_def_for(op: Operation, add_shapes: bool = False) -> Any:
    """The NodeDef of ``op``.

    Raises
    ------
    NotExportableError
        For an op in :data:`._attrs.NOT_EXPORTABLE` (a py_function) or an attribute with no
        AttrValue form.
    """
    why = NOT_EXPORTABLE.get(op.type)
    if why is not None:
        raise NotExportableError(
            f"{op.type} node {op.name!r} cannot be written to a GraphDef: {why}"
        )
    node = messages().NodeDef(name=op.name, op=op.type, device=op.device)
    node.input.extend(tensor_input_name(t) for t in op.inputs)
    node.input.extend(f"^{c.name}" for c in op.control_inputs)
    for name, (kind, value) in exported_attrs(op, REGISTRY.get(op.type)).items():
        try:
            to_attr_value(kind, value, node.attr[name])
        except (TypeError, ValueError) as e:
            raise NotExportableError(
                f"{op.type} node {op.name!r}: attribute {name!r} cannot be written to a "
                f"GraphDef: {e}"
            ) from None
    if add_shapes:
        shapes = node.attr["_output_shapes"].list
        for t in op.outputs:
            shape_to_proto(t._shape, shapes.shape.add())
    return node


def graph_to_graph_def(
    graph: Graph, from_version: int | None = None, add_shapes: bool = False
) -> Any:
    """The GraphDef of ``graph``: every op, or the ops added since ``graph.version`` was
    ``from_version``."""
    ops: Iterable[Operation] = graph.get_operations()
    if from_version is not None:
        if isinstance(from_version, bool) or not isinstance(from_version, int) or from_version < 0:
            raise ValueError(f"from_version must be an int >= 0, got {from_version!r}")
        ops = list(ops)[from_version:]
    graph_def = messages().GraphDef()
    graph_def.versions.producer = PRODUCER
    for op in ops:
        graph_def.node.append(node_def_for(op, add_shapes))
    return graph_def
