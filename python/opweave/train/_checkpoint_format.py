"""opweave's checkpoint file: one file per checkpoint, written atomically, read without trusting
a byte of it. The layout is documented in ``docs/checkpoint_format.md``:

- a 32-byte prelude: magic ``b"\\x89OWCKPT\\n"``, format version (uint32), flags (uint32, 0), the
  index's length (uint64), a reserved uint32 (0), and the CRC-32C of the prelude's first 28
  bytes followed by the index (uint32);
- the index at byte 32: ASCII JSON naming each tensor (name, dtype, shape, offset, nbytes, the
  CRC-32C of its bytes) and the file's size;
- each tensor's bytes at a 64-byte aligned offset, little-endian, C order, zero padding between.

Every byte is covered by a checksum or must be zero, so any corruption is seen. A reader checks
the prelude, the index and every declared size against the file's real size before it allocates
anything, and a tensor's checksum before its values are used; it never runs code from the file
(JSON, no pickle).

>>> import os, tempfile, numpy as np
>>> path = os.path.join(tempfile.mkdtemp(), "ckpt")
>>> write_checkpoint(path, [("w", "float32", np.ones((2, 3), np.float32)),
...                         ("names", "string", np.array([b"a", b"bc"], dtype=object))])
>>> with CheckpointFile(path) as f:
...     print(sorted(f.entries), f.entries["w"].shape, f.read(["names"])["names"])
['names', 'w'] (2, 3) [b'a' b'bc']
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import secrets
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from .. import _opweave_core as _core
from ..errors import DataLossError

__all__ = [
    "DTYPES",
    "MAGIC",
    "TEMP_MARK",
    "CheckpointFile",
    "Entry",
    "atomic_write_bytes",
    "is_opweave_checkpoint",
    "write_checkpoint",
]

MAGIC = b"\x89OWCKPT\n"
VERSION = 1
ALIGN = 64
# magic, version, flags, index length, reserved, CRC-32C of prelude[:28] + index.
_PRELUDE = struct.Struct("<8sIIQII")
PRELUDE_SIZE = _PRELUDE.size  # 32
_FORMAT_NAME = "opweave-checkpoint"

#: Each numeric dtype's bytes in the file (little-endian whatever the machine).
DTYPES: dict[str, np.dtype[Any]] = {
    "float16": np.dtype("<f2"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
    "int8": np.dtype("i1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint8": np.dtype("u1"),
    "bool": np.dtype("?"),
}
STRING = "string"

#: A temporary file of a save is ``<final name> + TEMP_MARK + <random hex>``, in the same folder.
TEMP_MARK = ".opweave-tmp-"

_MAX_RANK = 64
_TENSOR_KEYS = {"name", "dtype", "shape", "offset", "nbytes", "crc32c"}
_TOP_KEYS = {"format", "version", "file_size", "tensors"}


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass(frozen=True)
class Entry:
    """One tensor of a checkpoint, as its index describes it (already validated)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int
    nbytes: int
    crc32c: int

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)


# -- writing ---------------------------------------------------------------------------------------


def _string_parts(name: str, value: np.ndarray[Any, Any]) -> list[memoryview]:
    """A string tensor's bytes: the elements' lengths (uint64 little-endian, C order), then the
    elements themselves, back to back."""
    items: list[bytes] = []
    for x in value.reshape(-1):
        if isinstance(x, bytes):
            items.append(x)
        elif isinstance(x, str):
            items.append(x.encode())
        elif isinstance(x, (bytearray, memoryview, np.bytes_)):
            items.append(bytes(x))
        else:
            raise TypeError(f"string tensor {name!r} holds {type(x).__name__}, not bytes")
    lengths = np.array([len(b) for b in items], dtype="<u8")
    return [lengths.view(np.uint8).data, memoryview(b"".join(items))]


def _numeric_part(name: str, dtype: str, value: np.ndarray[Any, Any]) -> memoryview:
    want = DTYPES[dtype]
    if value.dtype.kind != want.kind or value.dtype.itemsize != want.itemsize:
        raise TypeError(f"tensor {name!r} is {value.dtype}, not {dtype}")
    # No copy when the value is already C-contiguous and little-endian (the usual case).
    flat = np.ascontiguousarray(value, dtype=want).reshape(-1)
    return flat.view(np.uint8).data


def crc32c(parts: Sequence[memoryview]) -> int:
    """The CRC-32C of the bytes of ``parts``, one after the other (the GIL is released while the
    C++ core computes it, at several GB/s)."""
    crc = 0
    for part in parts:
        crc = _core.crc32c(part, crc)
    return crc


def _index_bytes(entries: Sequence[dict[str, Any]], file_size: int) -> bytes:
    doc = {"format": _FORMAT_NAME, "version": VERSION, "file_size": file_size, "tensors": entries}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def _layout(
    metas: Sequence[tuple[str, str, tuple[int, ...], int]],
) -> tuple[list[dict[str, Any]], int, int]:
    """Offsets for ``(name, dtype, shape, nbytes)`` rows: the index entries (with the longest
    checksum, so that the real ones make an index no longer), where data starts, and the file
    size."""
    data_start = _align(PRELUDE_SIZE + 256)
    for _ in range(16):  # the index's length depends on the offsets' digits: iterate to a fix
        entries: list[dict[str, Any]] = []
        pos = data_start
        for name, dtype, shape, nbytes in metas:
            entries.append(
                {
                    "name": name,
                    "dtype": dtype,
                    "shape": list(shape),
                    "offset": pos,
                    "nbytes": nbytes,
                    "crc32c": 0xFFFFFFFF,
                }
            )
            pos = _align(pos + nbytes)
        index_len = len(_index_bytes(entries, pos))
        if _align(PRELUDE_SIZE + index_len) == data_start:
            return entries, data_start, pos
        data_start = _align(PRELUDE_SIZE + index_len)
    raise AssertionError("checkpoint index layout did not converge")  # pragma: no cover


def _fsync_dir(directory: str) -> None:
    """Make a rename in ``directory`` durable (POSIX; a no-op where folders cannot be opened)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory or ".", flags)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder
            os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _temp_beside(path: str) -> Iterator[tuple[BinaryIO, str]]:
    """A new file beside ``path``, removed again unless the body renamed it into place."""
    tmp = f"{path}{TEMP_MARK}{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    f = os.fdopen(fd, "wb")
    try:
        yield f, tmp
    except BaseException:
        f.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        f.close()


def _publish(f: BinaryIO, tmp: str, path: str) -> None:
    """Flush ``f`` to the disk, rename it over ``path`` and make the rename durable: ``path`` is
    then the old file or the complete new one, whenever the process or the machine stops."""
    f.flush()
    os.fsync(f.fileno())
    f.close()
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path))


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (temporary file, fsync, rename, folder fsync)."""
    with _temp_beside(path) as (f, tmp):
        f.write(data)
        _publish(f, tmp, path)


def write_checkpoint(path: str, tensors: Sequence[tuple[str, str, np.ndarray[Any, Any]]]) -> None:
    """Write ``(name, dtype name, value)`` rows as the checkpoint file ``path``, atomically.

    ``path`` is replaced only once the new file is complete and on the disk; a process killed at
    any moment leaves the old file (or none) and perhaps a ``TEMP_MARK`` file beside it.
    """
    rows: list[tuple[str, str, tuple[int, ...], list[memoryview]]] = []
    seen: set[str] = set()
    for name, dtype, value in sorted(tensors, key=lambda row: row[0]):
        if name in seen:
            raise ValueError(f"two tensors are named {name!r}")
        seen.add(name)
        value = np.asarray(value)
        if dtype == STRING:
            parts = _string_parts(name, value)
        elif dtype in DTYPES:
            parts = [_numeric_part(name, dtype, value)]
        else:
            raise TypeError(f"tensor {name!r}: a checkpoint cannot hold dtype {dtype!r}")
        rows.append((name, dtype, tuple(int(d) for d in value.shape), parts))
    metas = [(n, d, s, sum(len(p) for p in parts)) for n, d, s, parts in rows]
    entries, data_start, file_size = _layout(metas)
    with _temp_beside(path) as (f, tmp):
        f.write(bytes(data_start))  # prelude and index come last, once the checksums are known
        for entry, (_, _, _, parts) in zip(entries, rows, strict=True):
            entry["crc32c"] = crc32c(parts)
            for part in parts:
                f.write(part)
            f.write(bytes(_align(entry["nbytes"]) - entry["nbytes"]))
        index = _index_bytes(entries, file_size)
        # Real checksums are never longer than the placeholders: pad the index with spaces.
        index += b" " * (data_start - PRELUDE_SIZE - len(index))
        head = _PRELUDE.pack(MAGIC, VERSION, 0, len(index), 0, 0)[:28]
        f.seek(0)
        f.write(head + struct.pack("<I", _core.crc32c(head + index)) + index)
        _publish(f, tmp, path)


# -- reading ---------------------------------------------------------------------------------------


def is_opweave_checkpoint(path: str) -> bool:
    """True when ``path`` is a file that starts with the checkpoint magic."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _is_int(x: Any) -> bool:
    return type(x) is int  # not bool


class CheckpointFile:
    """An open checkpoint whose prelude and index were checked; :meth:`read` checks the tensors.

    The file stays open until :meth:`close` (or the ``with`` block ends), so a save that renames
    a new file over the same name meanwhile does not change what this object reads.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._f: io.BufferedReader = open(path, "rb")  # noqa: SIM115 - closed by close()
        try:
            self.size = os.fstat(self._f.fileno()).st_size
            self.entries: dict[str, Entry] = self._read_index()
        except BaseException:
            self._f.close()
            raise

    def __enter__(self) -> CheckpointFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._f.close()

    def _loss(self, what: str, tensor: str | None = None) -> DataLossError:
        where = f"tensor {tensor!r} of checkpoint" if tensor is not None else "checkpoint"
        return DataLossError(None, None, f"{where} {self.path}: {what}")

    def _read_exact(self, offset: int, n: int, tensor: str | None = None) -> bytes:
        self._f.seek(offset)
        data = self._f.read(n)
        if len(data) != n:
            raise self._loss(f"truncated: wanted {n} bytes at offset {offset}", tensor)
        return data

    def _read_index(self) -> dict[str, Entry]:
        if self.size < PRELUDE_SIZE:
            if self._read_exact(0, min(self.size, len(MAGIC))) != MAGIC[: min(self.size, 8)]:
                raise self._loss("not an opweave checkpoint (bad magic)")
            raise self._loss(
                f"truncated: {self.size} bytes, shorter than the {PRELUDE_SIZE}-byte prelude"
            )
        prelude = self._read_exact(0, PRELUDE_SIZE)
        magic, version, flags, index_len, reserved, crc = _PRELUDE.unpack(prelude)
        if magic != MAGIC:
            raise self._loss("not an opweave checkpoint (bad magic)")
        if index_len > self.size - PRELUDE_SIZE:
            raise self._loss(
                f"truncated or corrupt: the prelude declares a {index_len}-byte index but the "
                f"file has {self.size} bytes"
            )
        index = self._read_exact(PRELUDE_SIZE, index_len)
        if _core.crc32c(prelude[:28] + index) != crc:
            raise self._loss("corrupt: the prelude and index do not match their CRC-32C")
        if version != VERSION:
            raise self._loss(f"format version {version}; this opweave reads version {VERSION}")
        if flags != 0 or reserved != 0:
            raise self._loss("corrupt: reserved prelude fields are not zero")
        try:
            doc = json.loads(
                index.decode("ascii"),
                object_pairs_hook=_reject_duplicates,
                parse_constant=_no_constants,
            )
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            raise self._loss(f"corrupt index: {e}") from None
        data_start = _align(PRELUDE_SIZE + index_len)
        entries = self._check_index(doc, data_start)
        tail = self._read_exact(PRELUDE_SIZE + index_len, data_start - PRELUDE_SIZE - index_len)
        if tail.strip(b"\0"):
            raise self._loss("corrupt: non-zero bytes after the index")
        return entries

    def _check_index(self, doc: Any, data_start: int) -> dict[str, Entry]:
        if not isinstance(doc, dict) or set(doc) != _TOP_KEYS:
            raise self._loss("corrupt index: not a checkpoint index")
        if doc["format"] != _FORMAT_NAME or doc["version"] != VERSION:
            raise self._loss("corrupt index: wrong format name or version")
        file_size, tensors = doc["file_size"], doc["tensors"]
        if not _is_int(file_size) or not isinstance(tensors, list):
            raise self._loss("corrupt index: bad file_size or tensors")
        entries: dict[str, Entry] = {}
        pos = data_start
        for t in tensors:
            entry = self._check_entry(t, pos)
            if entry.name in entries:
                raise self._loss(f"corrupt index: two tensors are named {entry.name!r}")
            entries[entry.name] = entry
            pos = _align(entry.offset + entry.nbytes)  # its padding included
            if pos > self.size:
                raise self._loss(
                    f"truncated: it ends at byte {pos} but the file has {self.size} bytes (its "
                    f"index says {file_size})",
                    entry.name,
                )
        if file_size != pos:
            raise self._loss(f"corrupt index: file_size {file_size} but the tensors end at {pos}")
        if self.size != file_size:
            raise self._loss(
                f"{'truncated' if self.size < file_size else 'corrupt'}: the file has "
                f"{self.size} bytes, its index says {file_size}"
            )
        return entries

    def _check_entry(self, t: Any, pos: int) -> Entry:
        if not isinstance(t, dict) or set(t) != _TENSOR_KEYS:
            raise self._loss("corrupt index: a tensor entry has the wrong fields")
        name = t["name"]
        if not isinstance(name, str) or not name:
            raise self._loss("corrupt index: a tensor has no name")
        dtype, shape, offset, nbytes, crc = (
            t["dtype"],
            t["shape"],
            t["offset"],
            t["nbytes"],
            t["crc32c"],
        )
        if dtype != STRING and dtype not in DTYPES:
            raise self._loss(f"corrupt index: unknown dtype {dtype!r}", name)
        if (
            not isinstance(shape, list)
            or len(shape) > _MAX_RANK
            or not all(_is_int(d) and d >= 0 for d in shape)
        ):
            raise self._loss(f"corrupt index: bad shape {shape!r}", name)
        if not _is_int(offset) or not _is_int(nbytes) or nbytes < 0:
            raise self._loss("corrupt index: bad offset or size", name)
        if offset != pos:
            raise self._loss(f"corrupt index: offset {offset}, expected {pos}", name)
        if not _is_int(crc) or not 0 <= crc <= 0xFFFFFFFF:
            raise self._loss("corrupt index: bad crc32c", name)
        n = math.prod(shape)
        # Every size is compared with the file's before anything of that size is allocated.
        if dtype == STRING:
            if n * 8 > nbytes:
                raise self._loss(
                    f"corrupt index: {n} strings need at least {n * 8} bytes, not {nbytes}", name
                )
        elif n * DTYPES[dtype].itemsize != nbytes:
            raise self._loss(
                f"corrupt index: shape {shape} of {dtype} is {n * DTYPES[dtype].itemsize} "
                f"bytes, not {nbytes}",
                name,
            )
        if nbytes > self.size:
            raise self._loss(f"declares {nbytes} bytes; the file has {self.size}", name)
        return Entry(name, dtype, tuple(shape), offset, nbytes, crc)

    def read(self, names: Sequence[str]) -> dict[str, np.ndarray[Any, Any]]:
        """The values of ``names`` (each in the index), every checksum checked first.

        DataLossError naming the file and the tensor when a tensor's bytes are not the ones
        saved; nothing is returned then.
        """
        todo = [self.entries[n] for n in names]
        out: dict[str, np.ndarray[Any, Any]] = {}
        for e in todo:
            out[e.name] = self._read_entry(e)
        return out

    def _read_entry(self, e: Entry) -> np.ndarray[Any, Any]:
        raw = np.empty(e.nbytes, np.uint8)  # e.nbytes was checked against the file's size
        view = raw.data
        self._f.seek(e.offset)
        got = 0
        while got < e.nbytes:
            n = self._f.readinto(view[got:])
            if not n:
                raise self._loss(f"truncated while reading its {e.nbytes} bytes", e.name)
            got += n
        padding = self._f.read(_align(e.nbytes) - e.nbytes)
        if _core.crc32c(view) != e.crc32c:
            raise self._loss("corrupt: its bytes do not match their CRC-32C", e.name)
        if padding.strip(b"\0") or len(padding) != _align(e.nbytes) - e.nbytes:
            raise self._loss("corrupt: non-zero padding after it", e.name)
        if e.dtype == STRING:
            return self._decode_strings(e, raw)
        if e.dtype == "bool" and np.any(raw > 1):
            raise self._loss("corrupt: a bool is neither 0 nor 1", e.name)
        value = raw.view(DTYPES[e.dtype]).reshape(e.shape)
        # Little-endian in the file; the machine's order for the caller.
        return value.astype(value.dtype.newbyteorder("="), copy=False)

    def _decode_strings(self, e: Entry, raw: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        n = e.num_elements
        lengths = raw[: 8 * n].view("<u8")
        blob = raw[8 * n :].data
        total = len(blob)
        ends = np.cumsum(lengths, dtype=np.uint64)
        # Each length is at most the blob's size, so a sum that wrapped around 2**64 would
        # decrease somewhere: non-decreasing ends and the right total mean the lengths add up.
        if n and (
            np.any(lengths > total) or np.any(ends[1:] < ends[:-1]) or int(ends[-1]) != total
        ):
            raise self._loss("corrupt: the string lengths do not add up to its size", e.name)
        if not n and total:
            raise self._loss("corrupt: bytes after an empty string tensor", e.name)
        out = np.empty(n, dtype=object)
        start = 0
        for i, end in enumerate(ends.tolist()):
            out[i] = bytes(blob[start:end])
            start = end
        return out.reshape(e.shape)
