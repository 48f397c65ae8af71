"""Graphs that travel: TensorFlow's GraphDef format, read and written by opweave.

A :class:`~opweave.Graph` becomes a ``GraphDef`` (TensorFlow's protobuf message, byte for byte)
with :meth:`Graph.as_graph_def`, and a GraphDef becomes ops of the default graph with
:func:`import_graph_def`, with TensorFlow 1's semantics (a name prefix, ``input_map``,
``return_elements``). Frozen TensorFlow models (``.pb`` files) load and run; graphs built in
opweave load in TensorFlow; graphs pickle through their GraphDef, which is how they reach Dask
and Ray workers.

Needs the ``protobuf`` package (``pip install "opweave[graphdef]"``); opweave imports without it
and these functions say so when it is missing.

>>> import numpy as np, opweave as ow
>>> g = ow.Graph()
>>> with g.as_default():
...     x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
...     y = ow.nn.relu(x * 2.0, name="y")
>>> graph_def = g.as_graph_def()
>>> [n.op for n in graph_def.node]
['Placeholder', 'Const', 'Mul', 'Relu']
>>> with ow.Graph().as_default() as g2:
...     y2, = ow.import_graph_def(graph_def, return_elements=["y:0"], name="")
...     with ow.Session() as sess:
...         print(sess.run(y2, {"x:0": np.array([[-1.0, 3.0]])}))
[[0. 6.]]

Phase 2 (variables) builds on these pieces: :func:`._export.node_def_for` and
:func:`._tensors.ndarray_to_proto` (a Variable's value becomes a Const NodeDef:
``convert_variables_to_constants``), :func:`._import.import_into`, whose result maps every node
name to its new op (collections and savers restored by ``import_meta_graph``), and the
``MetaGraphDef`` / ``SaverDef`` / ``CollectionDef`` messages of :func:`._protos.messages`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..dtypes import as_dtype
from ..framework import Operation, Tensor, get_default_graph
from ._errors import GraphDefError
from ._io import read_graph_def, write_graph
from ._protos import INSTALL_HINT

__all__ = [
    "INSTALL_HINT",
    "AttrValue",
    "GraphDef",
    "GraphDefError",
    "MetaGraphDef",
    "NodeDef",
    "TensorProto",
    "import_graph_def",
    "make_ndarray",
    "make_tensor_proto",
    "read_graph_def",
    "write_graph",
]

# Message classes, built on first access (so that opweave imports without protobuf).
_MESSAGE_NAMES = ("AttrValue", "GraphDef", "MetaGraphDef", "NodeDef", "TensorProto")


def __getattr__(name: str) -> Any:
    if name in _MESSAGE_NAMES:
        from ._protos import messages

        return getattr(messages(), name)
    raise AttributeError(f"module 'opweave.graphdef' has no attribute {name!r}")


def _check_input_map(input_map: Any) -> dict[str, Tensor | Operation]:
    if input_map is None:
        return {}
    if not isinstance(input_map, Mapping):
        raise TypeError(
            f"input_map must be a dictionary mapping strings to Tensors, got {input_map!r}"
        )
    out: dict[str, Tensor | Operation] = {}
    for key, value in input_map.items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be strings (tensor names), got {key!r}")
        if not isinstance(value, (Tensor, Operation)) or (
            isinstance(value, Operation) and not key.startswith("^")
        ):
            raise TypeError(f"input_map[{key!r}] must be a Tensor, got {value!r}")
        canonical = key if key.startswith("^") or ":" in key else f"{key}:0"
        out[canonical] = value
    return out


def import_graph_def(
    graph_def: Any,
    input_map: Mapping[str, Tensor] | None = None,
    return_elements: Sequence[str] | None = None,
    name: str | None = None,
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list[Tensor | Operation] | None:
    """Add the nodes of a GraphDef to the default graph (TensorFlow's ``tf.import_graph_def``).

    Every node is built by opweave's definition of its op, which checks its inputs, attributes
    and dtypes and infers its static shapes. Either every node is added or none is: after an
    error the graph is as it was.

    Parameters
    ----------
    graph_def : GraphDef or bytes
        opweave's GraphDef, TensorFlow's (``tf.compat.v1.GraphDef``), or the serialized bytes.
    input_map : dict, optional
        Tensors of the graph that replace tensors of ``graph_def``, by name: ``{"x:0": t}`` (or
        ``"x"``, meaning ``"x:0"``); ``"^x"`` replaces the control input ``x``. The replaced
        nodes are still imported; their consumers read the given tensors instead.
    return_elements : list of str, optional
        Names in ``graph_def`` to return: ``"x:0"`` gives a Tensor, ``"x"`` an Operation.
    name : str, optional
        The prefix of the imported names (default ``"import"``, made unique as a name scope:
        ``import_1``, ...); ``""`` keeps the names (a name already in the graph gets ``_1``).
    op_dict : optional
        Ignored, as in TensorFlow 1 (deprecated there).
    producer_op_list : optional
        Accepted and ignored: attributes opweave's ops lack are judged by their values instead.

    Returns
    -------
    list or None
        The elements named by ``return_elements``, in that order (None when not given).

    Raises
    ------
    opweave.errors.NotFoundError
        A node's op type does not exist in opweave (the error names it and the node, and lists
        every missing op type).
    GraphDefError
        An ``opweave.errors.InvalidArgumentError`` that is also a ``ValueError`` (TensorFlow
        raises ValueError here), naming the node: a missing input, a cycle, a duplicate name, a
        wrong or unsupported attribute, a constant whose bytes do not match its shape, a dtype
        opweave lacks, a bad ``input_map`` or ``return_elements`` name.
    opweave.errors.DataLossError
        ``graph_def`` is bytes that are not a GraphDef.
    TypeError
        ``graph_def``, ``input_map`` or ``return_elements`` has the wrong type.
    ImportError
        The ``protobuf`` package is not installed.

    Examples
    --------
    >>> import numpy as np, opweave as ow
    >>> src = ow.Graph()
    >>> with src.as_default():
    ...     x = ow.placeholder(ow.float32, shape=[None], name="x")
    ...     _ = ow.identity(x * 3.0, name="y")
    >>> with ow.Graph().as_default():
    ...     z = ow.constant([1.0, 2.0])
    ...     y, = ow.import_graph_def(src.as_graph_def(), input_map={"x": z},
    ...                              return_elements=["y:0"])
    ...     print(y.name, ow.Session().run(y))
    import/y:0 [3. 6.]
    """
    from ._import import import_into
    from ._io import as_graph_def

    del op_dict, producer_op_list
    message = as_graph_def(graph_def)
    mapping = _check_input_map(input_map)
    if return_elements is not None:
        if isinstance(return_elements, str) or not all(isinstance(r, str) for r in return_elements):
            raise TypeError(f"return_elements must be a list of strings, got {return_elements!r}")
        names = list(return_elements)
    else:
        names = []
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string, got {name!r}")
    graph = get_default_graph()
    result = import_into(graph, message, mapping, name, names)
    if return_elements is None:
        return None
    out: list[Tensor | Operation] = []
    for ret in names:
        if ":" in ret:
            op_name, _, index = ret.rpartition(":")
            out.append(result.ops[op_name].outputs[int(index)])
        else:
            out.append(result.ops[ret])
    return out


def make_tensor_proto(values: Any, dtype: Any = None, shape: Any = None) -> Any:
    """A TensorProto holding ``values`` (TensorFlow's ``tf.make_tensor_proto``).

    >>> proto = make_tensor_proto([1.0, 2.0])
    >>> proto.dtype, [d.size for d in proto.tensor_shape.dim]
    (1, [2])
    """
    import numpy as np

    from ..ops._op_def import to_array
    from ._protos import messages
    from ._tensors import ndarray_to_proto

    arr = to_array(values, None if dtype is None else as_dtype(dtype))
    if shape is not None:
        target = tuple(int(d) for d in shape)
        arr = np.broadcast_to(arr, target) if arr.size == 1 else arr.reshape(target)
    proto = messages().TensorProto()
    ndarray_to_proto(arr, as_dtype(arr.dtype), proto)
    return proto


def make_ndarray(tensor: Any) -> Any:
    """The NumPy array a TensorProto holds (TensorFlow's ``tf.make_ndarray``).

    >>> make_ndarray(make_tensor_proto([[1, 2]]))
    array([[1, 2]], dtype=int32)
    """
    from ._tensors import ndarray_from_proto

    return ndarray_from_proto(tensor, "TensorProto")
