"""``opweave.graph_util``: TensorFlow 1's ``tf.graph_util`` -- freezing a trained graph into a
GraphDef of constants, and the GraphDef surgery that goes with it.

``convert_variables_to_constants`` is how TensorFlow 1 programs ship a model: the variables'
values in a session become ``Const`` nodes with the variables' names, and the graph is cut to
what the outputs need (no initializers, savers or training ops). The result is a plain GraphDef
that opweave and TensorFlow import (``import_graph_def``), ``python -m opweave inspect`` lists and
``python -m opweave tune`` times.

>>> import numpy as np, opweave as tf
>>> with tf.Graph().as_default():
...     x = tf.placeholder(tf.float32, [None, 2], name="x")
...     w = tf.Variable([[1.0], [2.0]], name="w")
...     y = tf.identity(tf.matmul(x, w), name="y")
...     with tf.Session() as sess:
...         sess.run(tf.global_variables_initializer())
...         frozen = tf.graph_util.convert_variables_to_constants(
...             sess, sess.graph.as_graph_def(), ["y"])
>>> [f"{n.name}:{n.op}" for n in frozen.node]
['x:Placeholder', 'w:Const', 'w/read:Identity', 'MatMul:MatMul', 'y:Identity']
>>> with tf.Graph().as_default():
...     y, = tf.import_graph_def(frozen, return_elements=["y:0"], name="")
...     print(tf.Session().run(y, {"x:0": [[1.0, 1.0]]}))
[[3.]]
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import _tf_logging as logging
from .dtypes import int32, string
from .framework import Graph, Operation
from .tensor_shape import TensorShape

__all__ = [
    "convert_variables_to_constants",
    "extract_sub_graph",
    "must_run_on_cpu",
    "remove_training_nodes",
    "tensor_shape_from_node_def_name",
]

#: The ops that hold a variable (TensorFlow 1's reference variables; resource variables'
#: VarHandleOp is recognized to say that opweave has none).
_VARIABLE_OPS = ("VariableV2", "Variable", "VarHandleOp")

_VARIABLE_RELATED_OPS = frozenset(
    {
        "Assign",
        "AssignAdd",
        "AssignSub",
        "Queue",
        "ScatterAdd",
        "ScatterSub",
        "ScatterUpdate",
        "TruncatedNormal",
        "Variable",
        "VariableV2",
    }
)


def _node_name(text: str) -> str:
    """The node an input string names: ``"^x"``, ``"x:1"`` and ``"x"`` all name ``x``."""
    return text[1:] if text.startswith("^") else text.partition(":")[0]


def _as_graph_def(graph_def: Any, argument: str) -> Any:
    from .graphdef._io import as_graph_def

    try:
        return as_graph_def(graph_def)
    except TypeError:
        raise TypeError(
            f"{argument} must be a graph_pb2.GraphDef proto, but got type {type(graph_def)}."
        ) from None


def _names(value: Any, argument: str) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{argument} must be an iterable of strings, but got type {type(value)}.")
    out = list(value)
    for v in out:
        if not isinstance(v, str):
            raise TypeError(f"{argument} must hold strings (node names), got {v!r}")
    return out


def extract_sub_graph(graph_def: Any, dest_nodes: Iterable[str]) -> Any:
    """The nodes of ``graph_def`` that ``dest_nodes`` need (through data and control inputs),
    in their original order (TensorFlow 1's ``tf.graph_util.extract_sub_graph``).

    Parameters
    ----------
    graph_def : GraphDef
    dest_nodes : list of str
        Node names (``"y"``, not ``"y:0"``).

    Returns
    -------
    GraphDef
        A new message; ``versions`` and ``library`` are copied.

    Raises
    ------
    TypeError
        ``graph_def`` is not a GraphDef, or ``dest_nodes`` is a string.
    ValueError
        A name in ``dest_nodes`` is not a node of the graph (TensorFlow raises AssertionError).

    Examples
    --------
    >>> import opweave as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     a = tf.constant(1.0, name="a")
    ...     _ = tf.identity(a, name="kept")
    ...     _ = tf.identity(a, name="dropped")
    >>> [n.name for n in extract_sub_graph(g.as_graph_def(), ["kept"]).node]
    ['a', 'kept']
    """
    graph_def = _as_graph_def(graph_def, "graph_def")
    dest = _names(dest_nodes, "dest_nodes")
    by_name = {n.name: n for n in graph_def.node}
    for d in dest:
        if d not in by_name:
            hint = f" (a node name, without ':{d.rpartition(':')[2]}')" if ":" in d else ""
            raise ValueError(f"{d} is not in graph{hint}")
    keep: set[str] = set()
    todo = collections.deque(dest)
    while todo:
        name = todo.popleft()
        if name in keep:
            continue
        keep.add(name)
        node = by_name.get(name)
        if node is not None:
            todo.extend(_node_name(i) for i in node.input)
            if "_class" in node.attr:  # colocated nodes are kept too, as TensorFlow does
                for s in node.attr["_class"].list.s:
                    text = s.decode("utf-8", "replace")
                    todo.append(text[5:] if text.startswith("loc:@") else text)
    out = type(graph_def)()
    out.node.extend(n for n in graph_def.node if n.name in keep)
    out.library.CopyFrom(graph_def.library)
    out.versions.CopyFrom(graph_def.versions)
    return out


def convert_variables_to_constants(
    sess: Any,
    input_graph_def: Any,
    output_node_names: Sequence[str],
    variable_names_whitelist: Iterable[str] | None = None,
    variable_names_blacklist: Iterable[str] | None = None,
) -> Any:
    """Freeze a graph: its variables become constants holding their values in ``sess``
    (TensorFlow 1's ``tf.graph_util.convert_variables_to_constants``).

    The graph is cut to what ``output_node_names`` need (:func:`extract_sub_graph`); each
    ``VariableV2`` left becomes a ``Const`` of the same name and dtype holding the variable's
    value, all read in one ``sess.run``; the variables' reads (``v/read``) stay Identity nodes,
    now of the constants. Other nodes are copied unchanged, in their order.

    Parameters
    ----------
    sess : Session
        A session of the graph ``input_graph_def`` was written from, where the variables are
        initialized (or restored).
    input_graph_def : GraphDef
        Usually ``sess.graph.as_graph_def()``.
    output_node_names : list of str
        The nodes the frozen graph computes (node names: ``"logits"``, not ``"logits:0"``).
    variable_names_whitelist, variable_names_blacklist : list of str, optional
        Freeze only the variables named in the first and not in the second (node names). A
        variable left out stays a variable; the result then needs an initializer or restore.

    Returns
    -------
    GraphDef
        opweave's GraphDef message (TensorFlow's bytes; ``SerializeToString()`` writes a
        ``.pb`` file TensorFlow reads).

    Raises
    ------
    ValueError
        An output is not a node of the graph, or an output needs an op that updates a frozen
        variable (``Assign``, an optimizer's update): a frozen graph has no variables to update.
    FailedPreconditionError
        A variable is not initialized in ``sess``.
    TypeError
        An argument of the wrong type.

    Examples
    --------
    >>> import opweave as tf
    >>> with tf.Graph().as_default():
    ...     v = tf.Variable(3.0, name="v")
    ...     out = tf.multiply(v, 2.0, name="out")
    ...     with tf.Session() as sess:
    ...         sess.run(v.initializer)
    ...         frozen = tf.graph_util.convert_variables_to_constants(
    ...             sess, sess.graph.as_graph_def(), ["out"])
    >>> frozen.node[0].name, frozen.node[0].op, tf.make_ndarray(frozen.node[0].attr["value"].tensor)
    ('v', 'Const', array(3., dtype=float32))
    """
    from .graphdef._protos import messages
    from .graphdef._tensors import dtype_from_enum, ndarray_to_proto
    from .ops._op_def import REGISTRY

    if not hasattr(sess, "run") or not hasattr(sess, "graph"):
        raise TypeError(f"sess must be a Session, got {type(sess).__name__}")
    outputs = _names(output_node_names, "output_node_names")
    allow = None if variable_names_whitelist is None else set(variable_names_whitelist)
    deny = set() if variable_names_blacklist is None else set(variable_names_blacklist)
    inference = extract_sub_graph(input_graph_def, outputs)

    frozen: dict[str, Any] = {}
    for node in inference.node:
        if node.op not in _VARIABLE_OPS:
            continue
        if (allow is not None and node.name not in allow) or node.name in deny:
            continue
        if node.op == "VarHandleOp":
            raise ValueError(
                f"{node.name} is a resource variable (VarHandleOp), which opweave does not have"
            )
        frozen[node.name] = node
    # Ops that update a frozen variable cannot be kept: their input would be a constant.
    for node in inference.node:
        op_def = REGISTRY.get(node.op)
        if op_def is None or node.name in frozen:
            continue
        data = [i for i in node.input if not i.startswith("^")]
        for arg, text in zip(op_def.inputs, data, strict=False):
            if arg.is_ref and _node_name(text) in frozen:
                raise ValueError(
                    f"{node.op} node {node.name!r} updates the variable {_node_name(text)!r}, and "
                    f"the outputs {outputs} need it: a frozen graph has no variables to update "
                    "(freeze the inference outputs, not the training ops)"
                )
    names = list(frozen)
    values = dict(zip(names, sess.run([f"{n}:0" for n in names]), strict=True)) if names else {}
    logging.info("Froze %d variables.", len(values))

    out = type(inference)()
    m = messages()
    for node in inference.node:
        if node.name in frozen:
            dt = dtype_from_enum(node.attr["dtype"].type, f"variable {node.name!r}")
            const = m.NodeDef(name=node.name, op="Const")
            const.attr["dtype"].type = dt.as_datatype_enum
            value = np.asarray(values[node.name])
            ndarray_to_proto(value, dt, const.attr["value"].tensor)
            out.node.append(const)
        else:
            out.node.append(node)
    out.library.CopyFrom(inference.library)
    out.versions.CopyFrom(inference.versions)
    logging.info("Converted %d variables to const ops.", len(names))
    return out


def remove_training_nodes(input_graph: Any, protected_nodes: Iterable[str] | None = None) -> Any:
    """The graph without the nodes only training needs (TensorFlow 1's
    ``tf.graph_util.remove_training_nodes``): ``CheckNumerics`` nodes are removed, and
    ``Identity`` and ``StopGradient`` nodes without control edges are spliced out (their
    consumers read their input directly). ``protected_nodes`` are kept whatever they are.

    >>> import opweave as tf
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     a = tf.constant(1.0, name="a")
    ...     _ = tf.negative(tf.identity(a, name="copy"), name="out")
    >>> [(n.name, list(n.input)) for n in remove_training_nodes(g.as_graph_def(), ["out"]).node]
    [('a', []), ('out', ['a'])]
    """
    graph_def = _as_graph_def(input_graph, "input_graph")
    protected = set(protected_nodes or ())
    removed = {
        n.name for n in graph_def.node if n.op == "CheckNumerics" and n.name not in protected
    }
    kept = []
    for node in graph_def.node:
        if node.name in removed:
            continue
        copy = type(node)()
        copy.CopyFrom(node)
        del copy.input[:]
        copy.input.extend(i for i in node.input if _node_name(i) not in removed)
        kept.append(copy)
    control_sources: set[str] = set()
    with_control: set[str] = set()
    colocated: set[str] = set()
    for node in kept:
        for i in node.input:
            if i.startswith("^"):
                control_sources.add(i[1:])
                with_control.add(node.name)
        if "_class" in node.attr:
            for s in node.attr["_class"].list.s:
                text = s.decode("utf-8", "replace")
                colocated.add(text[5:] if text.startswith("loc:@") else text)
    splice: dict[str, str] = {}
    for node in kept:
        if (
            node.op in ("Identity", "StopGradient")
            and node.name not in protected
            and node.name not in colocated
            and node.name not in with_control
            and node.name not in control_sources
            and node.input
        ):
            splice[node.name] = node.input[0]
    out = type(graph_def)()
    for node in kept:
        if node.name in splice:
            continue
        inputs = []
        for text in node.input:
            seen: set[str] = set()
            while _node_name(text) in splice and _node_name(text) not in seen:
                seen.add(_node_name(text))
                control = text.startswith("^")
                target = splice[_node_name(text)]
                text = ("^" + _node_name(target)) if control else target
            inputs.append(text)
        del node.input[:]
        node.input.extend(inputs)
        out.node.append(node)
    return out


def tensor_shape_from_node_def_name(graph: Graph, input_name: str) -> TensorShape:
    """The static shape of the tensor a NodeDef input names (``"x"`` meaning ``"x:0"``).

    >>> import opweave as tf
    >>> with tf.Graph().as_default() as g:
    ...     _ = tf.placeholder(tf.float32, [None, 3], name="x")
    >>> tensor_shape_from_node_def_name(g, "x").as_list()
    [None, 3]
    """
    name = input_name if ":" in input_name else f"{input_name}:0"
    return graph.get_tensor_by_name(name).get_shape()


def must_run_on_cpu(node: Any, pin_variables_on_cpu: bool = False) -> bool:
    """Whether TensorFlow would keep ``node`` (an Operation or NodeDef) on the CPU: string and
    int32 constants, int32 ``DynamicStitch`` and ``Cast``, and variable ops when
    ``pin_variables_on_cpu``. Every opweave op runs on the CPU; this answers TensorFlow's rule.

    >>> import opweave as tf
    >>> with tf.Graph().as_default():
    ...     must_run_on_cpu(tf.constant(1).op), must_run_on_cpu(tf.constant(1.0).op)
    (True, False)
    """
    if isinstance(node, Operation):
        op_type, attrs = node.type, node.attrs
        dtype = attrs.get("dtype")
        t = attrs.get("T")
        src = attrs.get("SrcT")
    else:
        from .graphdef._tensors import dtype_from_enum

        op_type = node.op

        def attr_type(key: str) -> Any:
            if key not in node.attr:
                return None
            return dtype_from_enum(node.attr[key].type, f"attr {key!r}")

        dtype, t, src = attr_type("dtype"), attr_type("T"), attr_type("SrcT")
    if pin_variables_on_cpu and op_type in _VARIABLE_RELATED_OPS:
        return True
    if op_type == "Const" and dtype in (string, int32):
        return True
    if op_type in ("DynamicStitch", "ParallelDynamicStitch") and t is int32:
        return True
    return op_type == "Cast" and src is int32
