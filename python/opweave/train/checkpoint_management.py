"""Which checkpoints a folder holds: TensorFlow 1's ``checkpoint`` state file and the functions
around it (``latest_checkpoint``, ``get_checkpoint_state``, ``update_checkpoint_state``,
``checkpoint_exists``, ``get_checkpoint_mtimes``, ``remove_checkpoint``).

The state file is a ``CheckpointState`` message in protobuf's text format, as TensorFlow writes
it, so TensorFlow's own ``tf.train.latest_checkpoint`` and tools that read the file find
opweave's checkpoints::

    model_checkpoint_path: "model.ckpt-200"
    all_model_checkpoint_paths: "model.ckpt-100"
    all_model_checkpoint_paths: "model.ckpt-200"

It is replaced atomically (a temporary file, fsync, rename), so it always names a complete
checkpoint.

>>> import os, tempfile, opweave as ow
>>> d = tempfile.mkdtemp()
>>> ow.train.update_checkpoint_state(d, os.path.join(d, "model.ckpt-1"))
>>> with open(os.path.join(d, "checkpoint")) as f:
...     print(f.read().replace(d, "DIR"), end="")
model_checkpoint_path: "DIR/model.ckpt-1"
all_model_checkpoint_paths: "DIR/model.ckpt-1"
>>> ow.train.latest_checkpoint(d) is None  # the state names a checkpoint that does not exist
True
"""

from __future__ import annotations

import contextlib
import glob
import math
import os
import re
from collections.abc import Sequence
from typing import Any

from .. import _tf_logging as logging
from ._checkpoint_format import TEMP_MARK, atomic_write_bytes

__all__ = [
    "CheckpointState",
    "checkpoint_exists",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "latest_checkpoint",
    "meta_graph_filename",
    "remove_checkpoint",
    "update_checkpoint_state",
]

PathLike = str | os.PathLike[str]


class CheckpointState:
    """TensorFlow's ``CheckpointState`` message: the newest checkpoint of a folder and the ones
    kept, oldest first.

    Attributes
    ----------
    model_checkpoint_path : str
    all_model_checkpoint_paths : list of str
    all_model_checkpoint_timestamps : list of float
        Seconds since the Epoch, one per path, when known.
    last_preserved_timestamp : float

    ``str(state)`` is the message in protobuf's text format (what the ``checkpoint`` file holds).
    """

    def __init__(
        self,
        model_checkpoint_path: str = "",
        all_model_checkpoint_paths: Sequence[str] | None = None,
        all_model_checkpoint_timestamps: Sequence[float] | None = None,
        last_preserved_timestamp: float = 0.0,
    ) -> None:
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths or [])
        self.all_model_checkpoint_timestamps = [
            float(t) for t in all_model_checkpoint_timestamps or []
        ]
        self.last_preserved_timestamp = float(last_preserved_timestamp or 0.0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CheckpointState) and str(self) == str(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a protobuf message

    def __repr__(self) -> str:
        return f"CheckpointState<\n{self}>"

    def __str__(self) -> str:
        lines = []
        if self.model_checkpoint_path:
            lines.append(f"model_checkpoint_path: {_quote(self.model_checkpoint_path)}")
        lines += [
            f"all_model_checkpoint_paths: {_quote(p)}" for p in self.all_model_checkpoint_paths
        ]
        lines += [
            f"all_model_checkpoint_timestamps: {_number(t)}"
            for t in self.all_model_checkpoint_timestamps
        ]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {_number(self.last_preserved_timestamp)}")
        return "".join(line + "\n" for line in lines)


# -- protobuf's text format, for the four fields of CheckpointState --------------------------------


def _quote(s: str) -> str:
    """A string literal as protobuf's text format writes it (C escapes, bytes >= 0x80 octal)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c in "\"'\\":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _number(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if math.isnan(x):
        return "nan"
    return repr(float(x))


class _ParseError(ValueError):
    pass


_TOKEN = re.compile(
    r"""\s+|\#[^\n]*|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<colon>:)|(?P<sep>[,;])"""
    r"""|(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
    r"""|(?P<number>[-+]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)""",
    re.IGNORECASE,
)
_ESCAPES = {"n": 10, "r": 13, "t": 9, "a": 7, "b": 8, "f": 12, "v": 11}
_STRING_FIELDS = {"model_checkpoint_path", "all_model_checkpoint_paths"}
_NUMBER_FIELDS = {"all_model_checkpoint_timestamps", "last_preserved_timestamp"}


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]  # the token's pattern guarantees a character after a backslash
        if e in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1 :])
            assert digits is not None
            value = int(digits.group(), 8)
            if value > 0xFF:
                raise _ParseError(f"octal escape out of range in {literal}")
            out.append(value)
            i += 1 + len(digits.group())
        elif e in "xX":
            digits = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2 :])
            if digits is None:
                raise _ParseError(f"bad \\x escape in {literal}")
            out.append(int(digits.group(), 16))
            i += 2 + len(digits.group())
        elif e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in "\"'\\?":
            out += e.encode()
            i += 2
        else:
            raise _ParseError(f"unknown escape \\{e} in {literal}")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _ParseError(f"string is not UTF-8: {literal}") from exc


def _parse_state(text: str) -> CheckpointState:
    """A ``CheckpointState`` from its text format; _ParseError for anything else (as TensorFlow's
    ``text_format.Merge``: unknown fields are errors; a field given twice keeps the last)."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _ParseError(f"unexpected character {text[pos]!r} at offset {pos}")
        pos = m.end()
        if m.lastgroup is not None:
            tokens.append((m.lastgroup, m.group()))
    state = CheckpointState()
    i = 0
    while i < len(tokens):
        kind, name = tokens[i]
        if kind != "name":
            raise _ParseError(f"expected a field name, got {name!r}")
        if name not in _STRING_FIELDS and name not in _NUMBER_FIELDS:
            raise _ParseError(f'message "CheckpointState" has no field named "{name}"')
        if i + 2 >= len(tokens) or tokens[i + 1][0] != "colon":
            raise _ParseError(f"expected ':' and a value after {name}")
        i += 2
        if name in _STRING_FIELDS:
            parts = []
            while i < len(tokens) and tokens[i][0] == "string":  # adjacent literals concatenate
                parts.append(_unquote(tokens[i][1]))
                i += 1
            if not parts:
                raise _ParseError(f"expected a string for {name}")
            value = "".join(parts)
            if name == "model_checkpoint_path":
                state.model_checkpoint_path = value
            else:
                state.all_model_checkpoint_paths.append(value)
        else:
            kind, literal = tokens[i]
            if kind != "number":
                raise _ParseError(f"expected a number for {name}, got {literal!r}")
            i += 1
            low = literal.lower()
            if low.endswith("f") and not low.endswith("inf"):  # a float suffix: 1.5f
                low = low[:-1]
            number = float(low)
            if name == "last_preserved_timestamp":
                state.last_preserved_timestamp = number
            else:
                state.all_model_checkpoint_timestamps.append(number)
        if i < len(tokens) and tokens[i][0] == "sep":
            i += 1
    return state


# -- the state file --------------------------------------------------------------------------------


def _state_filename(save_dir: str, latest_filename: str | None) -> str:
    return os.path.join(save_dir, latest_filename or "checkpoint")


def _relpath(path: str, start: str) -> str:
    return os.path.relpath(path, start or os.curdir)


def generate_checkpoint_state_proto(
    save_dir: PathLike,
    model_checkpoint_path: PathLike,
    all_model_checkpoint_paths: Sequence[PathLike] | None = None,
    all_model_checkpoint_timestamps: Sequence[float] | None = None,
    last_preserved_timestamp: float | None = None,
) -> CheckpointState:
    """The :class:`CheckpointState` naming ``model_checkpoint_path`` (appended to
    ``all_model_checkpoint_paths`` when it is not its last element); with a relative ``save_dir``,
    relative paths are made relative to it, as TensorFlow does.

    >>> import opweave as ow
    >>> s = ow.train.generate_checkpoint_state_proto(
    ...     "run", "run/model.ckpt-2", ["run/model.ckpt-1"])
    >>> s.model_checkpoint_path, s.all_model_checkpoint_paths
    ('model.ckpt-2', ['model.ckpt-1', 'model.ckpt-2'])
    """
    save_dir = os.fspath(save_dir)
    model_path = os.fspath(model_checkpoint_path)
    paths = [os.fspath(p) for p in all_model_checkpoint_paths or []]
    if not paths or paths[-1] != model_path:
        logging.info("%s is not in all_model_checkpoint_paths. Manually adding it.", model_path)
        paths.append(model_path)
    if all_model_checkpoint_timestamps and len(all_model_checkpoint_timestamps) != len(paths):
        raise ValueError(
            "Checkpoint timestamps, if provided, must match checkpoint paths (got paths "
            f"{paths} and timestamps {list(all_model_checkpoint_timestamps)})"
        )
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_path):
            model_path = _relpath(model_path, save_dir)
        paths = [p if os.path.isabs(p) else _relpath(p, save_dir) for p in paths]
    return CheckpointState(
        model_path, paths, all_model_checkpoint_timestamps, last_preserved_timestamp or 0.0
    )


def update_checkpoint_state(
    save_dir: PathLike,
    model_checkpoint_path: PathLike,
    all_model_checkpoint_paths: Sequence[PathLike] | None = None,
    latest_filename: str | None = None,
    all_model_checkpoint_timestamps: Sequence[float] | None = None,
    last_preserved_timestamp: float | None = None,
    save_relative_paths: bool = False,
) -> None:
    """Replace the ``checkpoint`` file of ``save_dir`` (atomically: a reader sees the old or the
    new file, never part of one) by the state naming ``model_checkpoint_path``.

    ``save_relative_paths=True`` writes absolute paths relative to ``save_dir``, so the folder can
    be moved (TensorFlow's ``update_checkpoint_state_internal``). RuntimeError when a checkpoint
    path is the state file itself.
    """
    save_dir = os.fspath(save_dir)
    model_path = os.fspath(model_checkpoint_path)
    paths = [os.fspath(p) for p in all_model_checkpoint_paths or []]
    if save_relative_paths:
        model_path = _relpath(model_path, save_dir) if os.path.isabs(model_path) else model_path
        paths = [_relpath(p, save_dir) if os.path.isabs(p) else p for p in paths]
    state = generate_checkpoint_state_proto(
        save_dir, model_path, paths, all_model_checkpoint_timestamps, last_preserved_timestamp
    )
    filename = _state_filename(save_dir, latest_filename)
    if filename == state.model_checkpoint_path:
        raise RuntimeError(
            f"Save path '{model_checkpoint_path}' conflicts with path used for checkpoint state.  "
            "Please use a different save path."
        )
    atomic_write_bytes(filename, str(state).encode("utf-8"))


def get_checkpoint_state(
    checkpoint_dir: PathLike, latest_filename: str | None = None
) -> CheckpointState | None:
    """The :class:`CheckpointState` of the ``checkpoint`` file in ``checkpoint_dir``, its relative
    paths joined to ``checkpoint_dir``; None when there is no such file, or (with a warning) when
    it cannot be read or parsed. ValueError when it names no checkpoint.

    >>> import os, tempfile, opweave as ow
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "checkpoint"), "w") as f:
    ...     _ = f.write('model_checkpoint_path: "m-2"\\nall_model_checkpoint_paths: "m-1"\\n')
    >>> s = ow.train.get_checkpoint_state(d)
    >>> s.model_checkpoint_path == os.path.join(d, "m-2"), len(s.all_model_checkpoint_paths)
    (True, 1)
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    filename = _state_filename(checkpoint_dir, latest_filename)
    try:
        with open(filename, "rb") as f:
            # A state file holds a few paths; more than 64 MiB is not one.
            content = f.read(64 << 20)
    except FileNotFoundError:
        return None
    except OSError as e:
        logging.warning("%s: %s", type(e).__name__, e)
        logging.warning("%s: Checkpoint ignored", filename)
        return None
    try:
        state = _parse_state(content.decode("utf-8"))
    except (_ParseError, UnicodeDecodeError) as e:
        logging.warning("ParseError: %s", e)
        logging.warning("%s: Checkpoint ignored", filename)
        return None
    if not state.model_checkpoint_path:
        raise ValueError("Invalid checkpoint state loaded from " + checkpoint_dir)
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [
        p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)
        for p in state.all_model_checkpoint_paths
    ]
    return state


def _checkpoint_files(prefix: str) -> list[str]:
    """The file that says a checkpoint exists: opweave's (the prefix itself, as TensorFlow's V1
    format) or TensorFlow V2's ``.index``."""
    return [f for f in (prefix, prefix + ".index") if os.path.isfile(f)]


def checkpoint_exists(checkpoint_prefix: PathLike) -> bool:
    """True when a checkpoint with this prefix (``Saver.save``'s result) exists: opweave's file, or
    TensorFlow's ``<prefix>.index``.

    >>> import opweave as ow
    >>> ow.train.checkpoint_exists("/nonexistent/model.ckpt-1")
    False
    """
    return bool(_checkpoint_files(os.fspath(checkpoint_prefix)))


def latest_checkpoint(checkpoint_dir: PathLike, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint the ``checkpoint`` file of ``checkpoint_dir`` names,
    or None when there is none (or its file is gone).

    >>> import tempfile, opweave as ow
    >>> ow.train.latest_checkpoint(tempfile.mkdtemp()) is None
    True
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is not None and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        logging.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes: Sequence[PathLike]) -> list[float]:
    """The modification times (seconds since the Epoch) of the checkpoints that exist, in order;
    the missing ones are left out."""
    mtimes = []
    for prefix in checkpoint_prefixes:
        files = _checkpoint_files(os.fspath(prefix))
        if files:
            with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
                mtimes.append(os.stat(files[0]).st_mtime_ns / 1e9)
    return mtimes


def meta_graph_filename(checkpoint_filename: PathLike, meta_graph_suffix: str = "meta") -> str:
    """``<prefix>.meta``: where the meta graph of a checkpoint goes (a sharded prefix's
    ``-?????-of-NNNNN`` is dropped first).

    >>> meta_graph_filename("model.ckpt-100")
    'model.ckpt-100.meta'
    """
    base = re.sub(r"-[\d\?]+-of-\d+$", "", os.fspath(checkpoint_filename))
    return f"{base}.{meta_graph_suffix}"


def _delete(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        logging.warning(
            "Hit NotFoundError when deleting '%s', possibly because another process/thread is "
            "also deleting/moving the same file",
            path,
        )


def remove_checkpoint(
    checkpoint_prefix: PathLike, checkpoint_format_version: Any = 2, meta_graph_suffix: str = "meta"
) -> None:
    """Delete the checkpoint ``checkpoint_prefix``: its file, its meta graph, the temporary files
    of saves of it that were killed, and TensorFlow's ``.index`` / ``.data-*`` files if any."""
    del checkpoint_format_version  # opweave's format is one file whatever the version
    prefix = os.fspath(checkpoint_prefix)
    escaped = glob.escape(prefix)
    candidates = [meta_graph_filename(prefix, meta_graph_suffix), prefix, prefix + ".index"]
    candidates += glob.glob(escaped + ".data-?????-of-?????")
    candidates += glob.glob(escaped + TEMP_MARK + "*")
    for path in candidates:
        if os.path.lexists(path):
            _delete(path)
