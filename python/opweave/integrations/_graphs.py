"""A graph sent to worker processes once, and one Session per graph in each of them.

The Dask and Ray helpers ship a graph as a :class:`GraphPayload`: its GraphDef bytes and their
SHA-256, computed once where the graph was built. A worker keeps a :class:`GraphRunner` per
digest (a bounded cache): the graph is rebuilt and its Session created the first time a task of
that graph runs in the process, and every later task reuses them, so a task pays for a
``Session.run`` and nothing more. Only GraphDef bytes travel; rebuilding them runs no code.
"""

from __future__ import annotations

import collections
import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..config import ConfigProto
from ..dtypes import DType, implicit_array
from ..framework import Graph, Tensor

__all__ = ["GraphPayload", "GraphRunner", "runner_for", "tensor_in"]

#: Graphs kept per process, each with its Session; the least recently used goes first.
MAX_CACHED_GRAPHS = 8


class GraphPayload:
    """A graph as GraphDef bytes with their SHA-256 (its identity on the workers).

    Parameters
    ----------
    data : bytes
        A serialized GraphDef.
    digest : str, optional
        ``sha256(data).hexdigest()``; computed when not given.
    """

    __slots__ = ("data", "digest")

    def __init__(self, data: bytes, digest: str | None = None) -> None:
        self.data = bytes(data)
        self.digest = digest or hashlib.sha256(self.data).hexdigest()

    @classmethod
    def from_graph(cls, graph: Any) -> GraphPayload:
        """The payload of a Graph, a GraphDef message (opweave's or TensorFlow's), its bytes,
        or a payload (returned as is)."""
        if isinstance(graph, GraphPayload):
            return graph
        if isinstance(graph, Graph):
            return cls(graph.as_graph_def().SerializeToString())
        if isinstance(graph, (bytes, bytearray, memoryview)):
            return cls(bytes(graph))
        if hasattr(graph, "SerializeToString"):
            return cls(graph.SerializeToString())
        raise TypeError(
            f"expected a Graph, a GraphDef or GraphDef bytes, got {type(graph).__name__}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (GraphPayload, (self.data, self.digest))

    def __dask_tokenize__(self) -> str:
        # The same graph scattered twice is the same key: sent to the workers once.
        return f"opweave-graph-{self.digest}"

    def __repr__(self) -> str:
        return f"<GraphPayload {self.digest[:12]} ({len(self.data)} bytes)>"


def tensor_in(graph: Graph, name: Any, role: str) -> Tensor:
    """The tensor ``name`` (``"x"`` meaning ``"x:0"``, or a Tensor of ``graph``), with an error
    naming ``role`` and the graph's placeholders when it is not there."""
    if isinstance(name, Tensor):
        if name.graph is not graph:
            raise ValueError(f"{role} {name.name!r} is a tensor of another graph")
        return name
    if not isinstance(name, str):
        raise TypeError(f"{role} must be a tensor name or a Tensor, got {name!r}")
    try:
        el = graph.as_graph_element(name if ":" in name else f"{name}:0")
    except (KeyError, ValueError):
        placeholders = [op.name for op in graph.get_operations() if op.type == "Placeholder"]
        raise ValueError(
            f"{role} {name!r} is not a tensor of the graph (its placeholders: "
            f"{', '.join(placeholders) or 'none'})"
        ) from None
    assert isinstance(el, Tensor)
    return el


class GraphRunner:
    """A graph rebuilt from its payload and the Session that runs it (one per process)."""

    def __init__(self, payload: GraphPayload, config: ConfigProto | None = None) -> None:
        from ..graphdef._io import graph_from_bytes
        from ..session import Session

        self.digest = payload.digest
        self.graph: Graph = graph_from_bytes(payload.data)
        self.session = Session(graph=self.graph, config=config)
        self._lock = threading.Lock()
        self._signatures: dict[tuple[tuple[str, ...], tuple[str, ...]], Any] = {}

    def _callable(self, feeds: Sequence[str], fetches: Sequence[str]) -> Any:
        """``(feed tensors, Session.make_callable)`` for one signature, made once."""
        key = (tuple(feeds), tuple(fetches))
        with self._lock:
            found = self._signatures.get(key)
            if found is None:
                feed_ts = [tensor_in(self.graph, n, "feed") for n in feeds]
                fetch_ts = [tensor_in(self.graph, n, "fetch") for n in fetches]
                call = self.session.make_callable(fetch_ts, feed_ts)
                found = self._signatures[key] = (feed_ts, call)
        return found

    def run(
        self, feeds: Mapping[str, Any], fetches: Sequence[str], where: str = ""
    ) -> list[np.ndarray]:
        """Run the graph on ``feeds`` (tensor name -> array); errors say ``where`` first.

        An array whose dtype does not convert implicitly to its placeholder's is a TypeError
        naming the feed (and ``where``, e.g. the block), not a cast.
        """
        feed_ts, call = self._callable(list(feeds), list(fetches))
        values = [
            checked_feed(value, t.dtype, f"{where}feed {name!r}")
            for t, (name, value) in zip(feed_ts, feeds.items(), strict=True)
        ]
        try:
            out = call(*values)
        except (errors.OpError, TypeError, ValueError) as e:
            raise with_context(e, where.rstrip(": ")) from None
        return list(out)


def checked_feed(value: Any, dtype: DType, where: str) -> Any:
    """``value`` as an array of ``dtype`` when it converts implicitly, else a TypeError."""
    arr = np.asarray(value)
    if arr.dtype == dtype.as_numpy_dtype:
        return arr
    try:
        return implicit_array(arr, dtype)
    except TypeError as e:
        raise TypeError(
            f"{where} has dtype {arr.dtype}, the placeholder {dtype.name}: {e}"
        ) from None


def with_context(e: Exception, where: str) -> Exception:
    """``e`` again, its message starting with ``where`` (a block, a batch): the same class, so
    callers catch what they would catch from a local run."""
    if not where:
        return e
    if isinstance(e, errors.OpError):
        return type(e)(e.node_name, e.op_type, f"{where}: {e.message}", e.error_code)
    try:
        return type(e)(f"{where}: {e}")
    except TypeError:  # an exception class with another constructor
        return RuntimeError(f"{where}: {type(e).__name__}: {e}")


_cache: collections.OrderedDict[tuple[str, str], GraphRunner] = collections.OrderedDict()
_cache_lock = threading.Lock()
#: How many GraphRunners this process built (tests check that a graph is built once).
built_count = 0


def runner_for(payload: GraphPayload, config: ConfigProto | None = None) -> GraphRunner:
    """This process's runner of ``payload`` (built on first use, then reused).

    Thread-safe: tasks running at once in one worker share the runner (Session.run may be
    called from several threads); the lock is held while a runner is built, so it is built once.
    """
    global built_count
    key = (payload.digest, repr(config))
    with _cache_lock:
        runner = _cache.get(key)
        if runner is not None:
            _cache.move_to_end(key)
            return runner
        runner = GraphRunner(payload, config)
        built_count += 1
        _cache[key] = runner
        while len(_cache) > MAX_CACHED_GRAPHS:
            # Dropped, not closed: a task of another thread may still be running it.
            _cache.popitem(last=False)
        return runner
