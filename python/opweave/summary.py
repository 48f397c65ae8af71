"""``opweave.summary``: TensorFlow 1's ``tf.summary.FileWriter``, which writes a graph (and
serialized ``Summary`` messages) to an events file that TensorBoard reads.

The file is TensorFlow's: ``events.out.tfevents.<seconds>.<host><suffix>`` in the log directory,
TFRecord framing (length, masked CRC-32C of the length, data, masked CRC-32C of the data) around
``Event`` messages, the first one holding ``file_version = "brain.Event:2"``.

>>> import os, tempfile
>>> import opweave as ow
>>> with ow.Graph().as_default() as g:
...     y = ow.nn.relu(ow.constant([-1.0, 2.0]), name="y")
>>> with tempfile.TemporaryDirectory() as logdir:
...     with ow.summary.FileWriter(logdir, g) as writer:
...         pass
...     [name.startswith("events.out.tfevents.") for name in os.listdir(logdir)]
[True]

Summary ops (``tf.summary.scalar``, ``merge_all``) are not part of opweave yet; ``add_summary``
takes a ``Summary`` message built elsewhere, or its serialized bytes.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import threading
import time
from types import TracebackType
from typing import Any

from .framework import Graph

__all__ = ["FileWriter"]

_FILE_VERSION = b"brain.Event:2"

# CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord files.
_CRC32C_TABLE: list[int] = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked_crc32c(data: bytes) -> int:
    """TFRecord's masked checksum: a CRC of data that itself holds CRCs is a weak check, so the
    stored value is rotated right by 15 bits and offset by a constant."""
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _record(data: bytes) -> bytes:
    """One TFRecord: little-endian uint64 length, masked CRC of those 8 bytes, data, its CRC."""
    length = struct.pack("<Q", len(data))
    return (
        length
        + struct.pack("<I", _masked_crc32c(length))
        + data
        + struct.pack("<I", _masked_crc32c(data))
    )


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # int64 fields are encoded as their two's complement uint64
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _event(
    wall_time: float,
    step: int = 0,
    file_version: bytes | None = None,
    graph_def: bytes | None = None,
    summary: bytes | None = None,
) -> bytes:
    """An ``Event`` message (tensorflow/core/util/event.proto), encoded by hand: wall_time = 1
    (double), step = 2 (int64), then one of file_version = 3, graph_def = 4 (serialized
    GraphDef), summary = 5 (Summary message), all length-delimited."""
    out = b"\x09" + struct.pack("<d", wall_time)
    if step:
        out += b"\x10" + _varint(step)
    for tag, payload in ((0x1A, file_version), (0x22, graph_def), (0x2A, summary)):
        if payload is not None:
            out += bytes([tag]) + _varint(len(payload)) + payload
    return out


class FileWriter:
    """Writes a graph, and serialized summaries, to an events file in ``logdir`` for TensorBoard
    (TensorFlow 1's ``tf.summary.FileWriter``).

    The directory is created if needed and the file started at once. Each event is appended to
    the file as it is added (``max_queue`` and ``flush_secs``, TensorFlow's queueing knobs, are
    accepted and have nothing to tune), so the file is complete whenever the program stops, and
    no file stays open between events. The methods are thread-safe.

    Parameters
    ----------
    logdir : str or os.PathLike
        The directory of the events file.
    graph : Graph, optional
        Written at once, as by :meth:`add_graph`.
    max_queue, flush_secs : int
        Accepted for TensorFlow compatibility.
    graph_def : GraphDef, optional
        Deprecated in TensorFlow 1 in favour of ``graph``: a GraphDef to write.
    filename_suffix : str, optional
        Appended to the file's name.
    session : None
        TensorFlow 1 writes through a session's summary ops when given one; opweave has no
        summary ops, so it must be None.

    Examples
    --------
    >>> import tempfile
    >>> import opweave as ow
    >>> with ow.Graph().as_default() as g:
    ...     _ = ow.constant(1.0)
    >>> with tempfile.TemporaryDirectory() as logdir:
    ...     writer = ow.summary.FileWriter(logdir)
    ...     writer.add_graph(g)
    ...     writer.close()
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        graph: Graph | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        graph_def: Any = None,
        filename_suffix: str | None = None,
        session: Any = None,
    ) -> None:
        if session is not None:
            raise ValueError(
                "FileWriter(session=...) writes through a session's summary ops in TensorFlow 1; "
                "opweave has no summary ops: leave session out"
            )
        if not isinstance(logdir, (str, os.PathLike)):
            raise TypeError(f"logdir must be a path, got {type(logdir).__name__}")
        if filename_suffix is not None and not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix must be a str, got {type(filename_suffix).__name__}")
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be an opweave Graph, got {type(graph).__name__}")
        self._logdir = os.fspath(logdir)
        self._suffix = filename_suffix or ""
        # Serializes writes (records must not interleave) and open / close.
        self._lock = threading.Lock()
        self._path: str | None = None  # the events file; None once closed
        with self._lock:
            self._open_locked()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open_locked(self) -> None:
        os.makedirs(self._logdir, exist_ok=True)
        now = time.time()
        stem = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}"
        # A new file, never one that another writer (opened in the same second) appends to.
        for k in itertools.count():
            path = os.path.join(self._logdir, stem + (f".{k}" if k else "") + self._suffix)
            try:
                with open(path, "xb") as f:
                    f.write(_record(_event(now, file_version=_FILE_VERSION)))
                break
            except FileExistsError:
                continue
        self._path = path

    def _write(self, event: bytes) -> None:
        # The file is opened per event, so a writer that is never closed (TensorFlow's tutorials
        # leave theirs open) holds no file handle and its file is always complete.
        with self._lock:
            if self._path is None:
                raise ValueError(
                    f"the FileWriter of {self._logdir!r} is closed (reopen() opens a new file)"
                )
            with open(self._path, "ab") as f:
                f.write(_record(event))

    def get_logdir(self) -> str:
        """The directory the events file is in."""
        return self._logdir

    def add_graph(
        self, graph: Graph | None, global_step: int | None = None, graph_def: Any = None
    ) -> None:
        """Write ``graph`` (as its GraphDef with output shapes, as TensorFlow does) for
        TensorBoard's graph view; or ``graph_def``, a GraphDef, instead (deprecated in TensorFlow
        1). Needs the ``protobuf`` package."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is not None:
            if not isinstance(graph, Graph):
                raise TypeError(f"graph must be an opweave Graph, got {type(graph).__name__}")
            data = graph.as_graph_def(add_shapes=True).SerializeToString()
        elif graph_def is not None:
            if not hasattr(graph_def, "SerializeToString"):
                raise TypeError(f"graph_def must be a GraphDef, got {type(graph_def).__name__}")
            data = graph_def.SerializeToString()
        else:
            raise ValueError("add_graph needs a graph (or a graph_def)")
        self._write(_event(time.time(), _step(global_step), graph_def=data))

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Write a ``Summary`` message (anything with ``SerializeToString``) or its serialized
        bytes, at ``global_step``."""
        if isinstance(summary, (bytes, bytearray, memoryview)):
            data = bytes(summary)
        elif hasattr(summary, "SerializeToString"):
            data = summary.SerializeToString()
        else:
            raise TypeError(
                f"summary must be a Summary message or its serialized bytes, got "
                f"{type(summary).__name__}"
            )
        self._write(_event(time.time(), _step(global_step), summary=data))

    def flush(self) -> None:
        """Accepted for TensorFlow compatibility: each event is written to the file when added."""

    def close(self) -> None:
        """Later events need :meth:`reopen`. Closing twice is harmless."""
        with self._lock:
            self._path = None

    def reopen(self) -> None:
        """After :meth:`close`, start a new events file in the same directory (else nothing)."""
        with self._lock:
            if self._path is None:
                self._open_locked()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _step(global_step: Any) -> int:
    if global_step is None:
        return 0
    try:
        return int(global_step)
    except (TypeError, ValueError):
        raise TypeError(f"global_step must be an integer, got {global_step!r}") from None
