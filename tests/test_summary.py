"""opweave.summary.FileWriter writes TensorFlow's events files: TFRecord framing with masked
CRC-32C checksums around Event messages, read back here by an independent little decoder
(tests/test_against_tensorflow.py reads them with TensorFlow itself)."""

from __future__ import annotations

import os
import struct
import threading
from pathlib import Path
from typing import Any

import opweave as ow
import pytest
from opweave import summary


def crc32c_bitwise(data: bytes) -> int:
    """CRC-32C one bit at a time, straight from the polynomial (the module uses a table)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    crc = crc32c_bitwise(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path: Path) -> list[bytes]:
    """The records of a TFRecord file, every checksum verified."""
    data = path.read_bytes()
    out, at = [], 0
    while at < len(data):
        header = data[at : at + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[at + 8 : at + 12])[0] == masked(header)
        body = data[at + 12 : at + 12 + length]
        assert len(body) == length
        assert struct.unpack("<I", data[at + 12 + length : at + 16 + length])[0] == masked(body)
        out.append(body)
        at += 16 + length
    return out


def varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def decode_event(data: bytes) -> dict[str, Any]:
    """Event fields by number: 1 wall_time (double), 2 step (int64), 3-5 length-delimited."""
    names = {1: "wall_time", 2: "step", 3: "file_version", 4: "graph_def", 5: "summary"}
    out: dict[str, Any] = {}
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 1:
            out[names[field]] = struct.unpack("<d", data[at : at + 8])[0]
            at += 8
        elif wire == 0:
            value, at = varint(data, at)
            out[names[field]] = value - (1 << 64) if value >> 63 else value
        else:
            assert wire == 2
            length, at = varint(data, at)
            out[names[field]] = data[at : at + length]
            at += length
    return out


def events(logdir: Path) -> list[dict[str, Any]]:
    (path,) = logdir.iterdir()
    return [decode_event(r) for r in read_records(path)]


def small_graph() -> ow.Graph:
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, [None, 3], name="x")
        ow.nn.relu(ow.matmul(x, ow.ones([3, 2])), name="y")
    return g


def test_crc32c_is_castagnolis() -> None:
    assert summary._crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    for data in (b"", b"a", bytes(range(256)) * 3):
        assert summary._crc32c(data) == crc32c_bitwise(data)


def test_a_new_writer_starts_the_file_with_the_version_event(tmp_path: Path) -> None:
    writer = ow.summary.FileWriter(tmp_path / "logs", filename_suffix=".v1")
    (path,) = (tmp_path / "logs").iterdir()
    assert path.name.startswith("events.out.tfevents.")
    assert path.name.endswith(".v1")
    (first,) = events(tmp_path / "logs")  # on disk before close
    assert first["file_version"] == b"brain.Event:2"
    assert first["wall_time"] > 1e9
    writer.close()


def test_add_graph_writes_the_graph_def_with_its_shapes(tmp_path: Path) -> None:
    g = small_graph()
    with ow.summary.FileWriter(str(tmp_path), g) as writer:
        writer.add_graph(g, global_step=7)
    _, at_start, at_seven = events(tmp_path)
    assert "step" not in at_start
    assert at_seven["step"] == 7
    for event in (at_start, at_seven):
        graph_def = ow.graphdef.GraphDef.FromString(event["graph_def"])
        assert [n.name for n in graph_def.node] == [op.name for op in g.get_operations()]
        y = next(n for n in graph_def.node if n.name == "y")
        assert y.attr["_output_shapes"].list.shape[0].dim[1].size == 2


def test_add_graph_takes_a_graph_def_instead(tmp_path: Path) -> None:
    graph_def = small_graph().as_graph_def()
    with ow.summary.FileWriter(tmp_path, graph_def=graph_def):
        pass
    assert events(tmp_path)[1]["graph_def"] == graph_def.SerializeToString()


def test_add_summary_writes_serialized_summaries_at_their_step(tmp_path: Path) -> None:
    class Message:
        def SerializeToString(self) -> bytes:
            return b"\x0a\x03abc"

    with ow.summary.FileWriter(tmp_path) as writer:
        writer.add_summary(b"\x0a\x01z", global_step=3)
        writer.add_summary(Message(), global_step=-2)
        writer.add_summary(bytearray(b"\x0a\x00"))
    _, a, b, c = events(tmp_path)
    assert (a["summary"], a["step"]) == (b"\x0a\x01z", 3)
    assert (b["summary"], b["step"]) == (b"\x0a\x03abc", -2)
    assert c["summary"] == b"\x0a\x00"


def test_a_closed_writer_refuses_events_until_reopened_in_a_new_file(tmp_path: Path) -> None:
    writer = ow.summary.FileWriter(tmp_path)
    writer.close()
    writer.close()
    writer.flush()
    with pytest.raises(ValueError, match="closed"):
        writer.add_summary(b"")
    writer.reopen()
    writer.add_summary(b"", global_step=1)
    writer.reopen()  # open: nothing to do
    writer.close()
    files = sorted(tmp_path.iterdir())
    assert len(files) == 2
    assert [len(read_records(f)) for f in files] == [1, 2]


def test_writers_of_one_directory_never_share_a_file(tmp_path: Path) -> None:
    writers = [ow.summary.FileWriter(tmp_path) for _ in range(3)]
    for w in writers:
        w.close()
    assert len(os.listdir(tmp_path)) == 3


def test_threads_adding_events_at_once_write_whole_records(tmp_path: Path) -> None:
    payload = bytes(20000)  # larger than a file buffer

    with ow.summary.FileWriter(tmp_path) as writer:

        def add(step: int) -> None:
            for _ in range(5):
                writer.add_summary(payload, global_step=step)

        threads = [threading.Thread(target=add, args=(i + 1,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    written = events(tmp_path)[1:]
    assert sorted(e["step"] for e in written) == sorted([1, 2, 3, 4] * 5)
    assert all(e["summary"] == payload for e in written)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda d: ow.summary.FileWriter(d, session=object()), ValueError, "summary ops"),
        (lambda d: ow.summary.FileWriter(3), TypeError, "logdir must be a path"),
        (lambda d: ow.summary.FileWriter(d, filename_suffix=1), TypeError, "filename_suffix"),
        (lambda d: ow.summary.FileWriter(d, graph="g"), TypeError, "opweave Graph"),
        (lambda d: ow.summary.FileWriter(d).add_graph(None), ValueError, "needs a graph"),
        (lambda d: ow.summary.FileWriter(d).add_graph(None, graph_def=1), TypeError, "GraphDef"),
        (
            lambda d: ow.summary.FileWriter(d).add_graph(ow.Graph(), graph_def=b""),
            ValueError,
            "not both",
        ),
        (lambda d: ow.summary.FileWriter(d).add_summary(1.5), TypeError, "Summary message"),
        (lambda d: ow.summary.FileWriter(d).add_summary(b"", "x"), TypeError, "global_step"),
    ],
)
def test_bad_arguments_are_clear_errors(tmp_path: Path, call: Any, error: Any, match: str) -> None:
    with pytest.raises(error, match=match):
        call(tmp_path)
