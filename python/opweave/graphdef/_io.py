"""GraphDef bytes and files: parse (binary or text format), write, and graphs from bytes.

Loading reads data only: the protobuf parser and opweave's op registry, never ``pickle`` or
``eval``. Bytes that are not a GraphDef (truncated, corrupt, random) are a
:class:`opweave.errors.DataLossError` saying what was being read.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any

from .. import errors
from ._protos import messages

__all__ = ["as_graph_def", "graph_from_bytes", "parse_graph_def", "read_graph_def", "write_graph"]

_TEXT_SUFFIXES = (".pbtxt", ".txt", ".prototxt")


def parse_graph_def(data: bytes | bytearray | memoryview, what: str = "GraphDef bytes") -> Any:
    """A GraphDef parsed from its binary form.

    Raises
    ------
    opweave.errors.DataLossError
        When ``data`` is not a GraphDef (truncated, corrupt).
    """
    from google.protobuf.message import DecodeError

    graph_def = messages().GraphDef()
    try:
        graph_def.ParseFromString(bytes(data))
    except (DecodeError, RuntimeError, ValueError) as e:
        raise errors.DataLossError(
            None,
            None,
            f"{what} ({len(data)} bytes) is not a valid GraphDef: {e}. The data may be "
            "truncated or corrupt, or not a binary GraphDef.",
        ) from None
    return graph_def


def _parse_text(text: str, what: str) -> Any:
    from google.protobuf import text_format

    graph_def = messages().GraphDef()
    try:
        text_format.Parse(text, graph_def)
    except text_format.ParseError as e:
        raise errors.DataLossError(
            None, None, f"{what} is not a GraphDef in text format: {e}"
        ) from None
    return graph_def


def read_graph_def(path: str | os.PathLike[str]) -> Any:
    """The GraphDef in a file: binary (``.pb``, TensorFlow's frozen graphs), or text format
    (``.pbtxt``, what ``write_graph(..., as_text=True)`` writes).

    A file whose name does not say is read as binary, and as text when it is not binary and
    reads as UTF-8.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    GraphDef

    Raises
    ------
    FileNotFoundError
    opweave.errors.DataLossError
        When the file holds no valid GraphDef.

    Examples
    --------
    >>> import opweave as ow, tempfile
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     _ = ow.constant(1.0, name="one")
    >>> path = ow.train.write_graph(g, tempfile.mkdtemp(), "g.pb", as_text=False)
    >>> [n.name for n in read_graph_def(path).node]
    ['one']
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    what = f"the file {path!r}"
    if path.endswith(_TEXT_SUFFIXES):
        try:
            return _parse_text(data.decode("utf-8"), what)
        except UnicodeDecodeError:
            raise errors.DataLossError(None, None, f"{what} is not UTF-8 text") from None
    try:
        return parse_graph_def(data, what)
    except errors.DataLossError as binary_error:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise binary_error from None
        if not text.lstrip().startswith(("node", "versions", "library", "#")):
            raise binary_error from None
        return _parse_text(text, what)


def as_graph_def(value: Any) -> Any:
    """``value`` as opweave's GraphDef message: itself, parsed from bytes, or converted from
    another GraphDef class (TensorFlow's ``tf.compat.v1.GraphDef``) through its bytes.

    Raises
    ------
    TypeError
        For anything else (a path: use :func:`read_graph_def`).
    opweave.errors.DataLossError
        For bytes that are not a GraphDef.
    """
    cls = messages().GraphDef
    if isinstance(value, cls):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return parse_graph_def(value)
    descriptor = getattr(value, "DESCRIPTOR", None)
    if getattr(descriptor, "full_name", None) == "tensorflow.GraphDef" and hasattr(
        value, "SerializeToString"
    ):
        return parse_graph_def(value.SerializeToString(), "the GraphDef")
    if isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"expected a GraphDef or its bytes, got the path {os.fspath(value)!r}: read it with "
            "opweave.graphdef.read_graph_def(path)"
        )
    raise TypeError(f"expected a GraphDef or its bytes, got {type(value).__name__}")


def write_graph(
    graph_or_graph_def: Any, logdir: str | os.PathLike[str], name: str, as_text: bool = True
) -> str:
    """Write a graph (or a GraphDef) to ``logdir/name``, as TensorFlow's
    ``tf.compat.v1.train.write_graph``: text format by default, binary with ``as_text=False``.

    The folder is created when missing; the file is written to a temporary name and renamed,
    so a reader never sees half a file.

    Parameters
    ----------
    graph_or_graph_def : Graph or GraphDef
    logdir : str or path-like
    name : str
        The file name (``"model.pb"``, ``"graph.pbtxt"``).
    as_text : bool
        Text format (True, the default) or binary (False, what ``tf.GraphDef.ParseFromString``
        and ``read_graph_def`` read).

    Returns
    -------
    str
        The path written.

    Raises
    ------
    ValueError
        When the graph holds an op a GraphDef cannot hold (a py_function).

    Examples
    --------
    >>> import opweave as ow, pathlib, tempfile
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     _ = ow.constant(1.0, name="one")
    >>> path = ow.train.write_graph(g, tempfile.mkdtemp(), "graph.pbtxt")
    >>> print(pathlib.Path(path).read_text().splitlines()[:3])
    ['node {', '  name: "one"', '  op: "Const"']
    """
    from ..framework import Graph

    if isinstance(graph_or_graph_def, Graph):
        graph_def = graph_or_graph_def.as_graph_def()
    elif hasattr(graph_or_graph_def, "SerializeToString"):
        graph_def = graph_or_graph_def
    else:
        raise TypeError(
            f"write_graph expects a Graph or a GraphDef, got {type(graph_or_graph_def).__name__}"
        )
    if as_text:
        from google.protobuf import text_format

        data = text_format.MessageToString(graph_def).encode("utf-8")
    else:
        data = graph_def.SerializeToString()
    logdir = os.fspath(logdir)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    # Beside the target (same file system, so the rename is atomic), with the usual permissions.
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def graph_from_bytes(data: bytes, seed: int | None = None, collections: bytes = b"") -> Any:
    """A new Graph holding the GraphDef ``data`` with its node names unchanged, its random
    ``seed`` and the collections of the MetaGraphDef bytes ``collections`` (how a pickled Graph
    is rebuilt: only this data travels through pickle)."""
    from ..framework import Graph
    from ._import import import_into

    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"a pickled graph's seed must be an int, got {seed!r}")
    graph = Graph()
    graph_def = parse_graph_def(data, "the pickled graph")
    if collections:
        from ..train.meta_graph import _make_saver
        from ._meta_graph import import_meta_graph_into, parse_meta_graph_def

        meta = parse_meta_graph_def(collections, "the pickled graph's collections")
        meta.graph_def.CopyFrom(graph_def)
        import_meta_graph_into(graph, meta, _make_saver, import_scope="")
    else:
        import_into(graph, graph_def, name="")
    graph.seed = seed
    return graph
