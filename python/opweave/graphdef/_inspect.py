"""What a GraphDef holds: its inputs, outputs, op counts, and the ops opweave lacks.

``python -m opweave inspect model.pb`` prints it; :func:`summarize` computes it from the GraphDef
alone (reading never runs the graph), then tries to build the graph in a scratch
:class:`~opweave.Graph` for the static dtypes and shapes of the outputs.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from .. import errors
from ..framework import Graph, format_shape
from ..ops._op_def import REGISTRY
from ._errors import GraphDefError
from ._tensors import dtype_from_enum, enum_name, shape_from_proto

__all__ = ["NOT_OUTPUTS", "GraphSummary", "summarize"]

_COLUMNS = ("name", "dtype", "shape", "op")

#: Ops that are not outputs even when nothing reads them: constants and feeds.
NOT_OUTPUTS = frozenset({"Const", "Placeholder", "PlaceholderWithDefault"})


@dataclass
class TensorInfo:
    """A named tensor of the graph: its dtype and static shape, as far as they are known."""

    name: str
    op: str
    dtype: str = "?"
    shape: str = "<unknown>"


@dataclass
class GraphSummary:
    """A GraphDef's interface and contents (see :func:`summarize`)."""

    nodes: int
    producer: int
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    op_counts: dict[str, int] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # why opweave cannot build the graph, when it cannot

    @property
    def runnable(self) -> bool:
        """Whether opweave can build (and so run) the graph."""
        return not self.missing and self.error is None

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain data (``--json``)."""
        return {
            "nodes": self.nodes,
            "producer": self.producer,
            "inputs": [vars(t) for t in self.inputs],
            "outputs": [vars(t) for t in self.outputs],
            "op_counts": self.op_counts,
            "missing_ops": self.missing,
            "error": self.error,
            "runnable": self.runnable,
        }

    def format(self, label: str = "graph") -> str:
        """The summary as the table ``python -m opweave inspect`` prints."""
        lines = [
            f"{label}: {self.nodes} nodes of {len(self.op_counts)} op types "
            f"(GraphDef producer {self.producer})"
        ]
        for title, items in (("inputs", self.inputs), ("outputs", self.outputs)):
            lines.append(f"{title}:" if items else f"{title}: none")
            widths = [max((len(getattr(t, a)) for t in items), default=0) for a in _COLUMNS]
            for t in items:
                cells = [f"{getattr(t, a):<{w}}" for a, w in zip(_COLUMNS, widths, strict=True)]
                lines.append("  " + "  ".join(cells).rstrip())
        counts = sorted(self.op_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        line = "op counts:"
        for op, n in counts:  # wrapped between items, never inside one
            item = f" {op} {n},"
            if len(line) + len(item) > 96:
                lines.append(line)
                line = " "
            line += item
        lines.append(line.rstrip(","))
        if self.missing:
            lines.append(
                "ops opweave lacks: "
                + ", ".join(f"{op} ({n} node{'s' * (n != 1)})" for op, n in self.missing.items())
            )
        else:
            lines.append("ops opweave lacks: none")
        if self.error is not None:
            lines.append(f"opweave cannot build it: {self.error}")
        elif self.runnable:
            lines.append("opweave can run it.")
        return "\n".join(lines)


def _static_info(node: Any) -> TensorInfo:
    """A placeholder's dtype and shape from its attributes (no graph needed)."""
    info = TensorInfo(node.name, node.op)
    if "dtype" in node.attr:
        number = node.attr["dtype"].type
        try:
            info.dtype = dtype_from_enum(number, "dtype").name
        except GraphDefError:
            info.dtype = enum_name(number)  # a dtype opweave lacks: TensorFlow's name
    if "shape" in node.attr:
        try:
            shape = shape_from_proto(node.attr["shape"].shape, "shape")
            info.shape = format_shape(shape.as_raw())
        except GraphDefError:
            pass
    return info


def summarize(graph_def: Any) -> GraphSummary:
    """Inputs (placeholders), outputs (nodes nothing reads, constants aside), op counts, the op
    types opweave lacks, and whether opweave can build the graph.

    >>> import opweave as ow
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     x = ow.placeholder(ow.float32, shape=(None, 3), name="x")
    ...     _ = ow.identity(x * 2.0, name="y")
    >>> s = summarize(g.as_graph_def())
    >>> [t.name for t in s.inputs], [(t.name, t.shape) for t in s.outputs]
    (['x'], [('y', '[?,3]')])
    """
    counts = collections.Counter(node.op for node in graph_def.node)
    consumed: set[str] = set()
    for node in graph_def.node:
        for text in node.input:
            consumed.add(text.lstrip("^").split(":")[0])
    summary = GraphSummary(
        nodes=len(graph_def.node),
        producer=int(graph_def.versions.producer),
        op_counts=dict(sorted(counts.items())),
        missing={op: n for op, n in sorted(counts.items()) if op not in REGISTRY},
    )
    summary.inputs = [
        _static_info(n) for n in graph_def.node if n.op in ("Placeholder", "PlaceholderWithDefault")
    ]
    outputs = [n for n in graph_def.node if n.name not in consumed and n.op not in NOT_OUTPUTS]
    summary.outputs = [TensorInfo(n.name, n.op) for n in outputs]
    if summary.missing:
        return summary
    from ._import import import_into

    scratch = Graph()
    try:
        result = import_into(scratch, graph_def, name="")
    except (errors.OpError, ValueError, TypeError) as e:
        summary.error = str(e).splitlines()[0]
        return summary
    for info in summary.outputs:
        op = result.ops[info.name]
        if op.outputs:
            t = op.outputs[0]
            info.dtype = t.dtype.name
            info.shape = format_shape(t._shape)
            if len(op.outputs) > 1:
                info.shape += f" (+{len(op.outputs) - 1} more outputs)"
        else:
            info.dtype, info.shape = "-", "(no outputs)"
    return summary
