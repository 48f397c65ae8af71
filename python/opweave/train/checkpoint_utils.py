"""Reading checkpoints without a graph: ``NewCheckpointReader``, ``load_checkpoint``,
``list_variables`` and ``load_variable``, as TensorFlow 1's ``tf.train``.

>>> import os, tempfile, numpy as np, opweave as ow
>>> d = tempfile.mkdtemp()
>>> with ow.Graph().as_default():
...     w = ow.Variable(np.ones((2, 3), np.float32), name="layer1/weights")
...     saver = ow.train.Saver()
...     with ow.Session() as sess:
...         sess.run(w.initializer)
...         _ = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=1)
>>> ow.train.list_variables(d)
[('layer1/weights', [2, 3])]
>>> ow.train.load_variable(d, "layer1/weights:0").sum()
np.float32(6.0)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..dtypes import DType, as_dtype
from ..errors import NotFoundError, UnimplementedError
from . import checkpoint_management as cm
from ._checkpoint_format import CheckpointFile, Entry

__all__ = [
    "CheckpointReader",
    "NewCheckpointReader",
    "list_variables",
    "load_checkpoint",
    "load_variable",
]


class CheckpointReader:
    """The tensors of one checkpoint file (TensorFlow's ``CheckpointReader``).

    The index is read and checked when the reader is made; each :meth:`get_tensor` re-opens the
    file and checks that tensor's checksum (DataLossError naming the file and the tensor).
    """

    def __init__(self, path: str) -> None:
        self._path = path
        with CheckpointFile(path) as f:
            self._entries: dict[str, Entry] = dict(f.entries)

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """``{name: shape as a list}`` of every tensor."""
        return {name: list(e.shape) for name, e in self._entries.items()}

    def get_variable_to_dtype_map(self) -> dict[str, DType]:
        """``{name: DType}`` of every tensor."""
        return {name: as_dtype(e.dtype) for name, e in self._entries.items()}

    def has_tensor(self, tensor_str: str) -> bool:
        """True when the checkpoint holds ``tensor_str``."""
        return tensor_str in self._entries

    def get_tensor(self, tensor_str: str) -> np.ndarray[Any, Any]:
        """The value of ``tensor_str`` (NotFoundError when the checkpoint has no such tensor)."""
        if tensor_str not in self._entries:
            raise NotFoundError(None, None, f"Key {tensor_str} not found in checkpoint")
        with CheckpointFile(self._path) as f:
            if tensor_str not in f.entries:  # the file was replaced meanwhile
                raise NotFoundError(None, None, f"Key {tensor_str} not found in checkpoint")
            return f.read([tensor_str])[tensor_str]

    def debug_string(self) -> bytes:
        """One line per tensor: ``name (dtype) [shape]``."""
        lines = [
            f"{name} ({e.dtype}) {list(e.shape)}\n" for name, e in sorted(self._entries.items())
        ]
        return "".join(lines).encode()


def NewCheckpointReader(filepattern: str | os.PathLike[str]) -> CheckpointReader:
    """A :class:`CheckpointReader` of the checkpoint with prefix ``filepattern``.

    NotFoundError when there is none; UnimplementedError for a TensorFlow (V2) checkpoint;
    DataLossError when its index is corrupt.
    """
    path = os.fsdecode(os.fspath(filepattern))
    if not os.path.isfile(path):
        if os.path.isfile(path + ".index"):
            raise UnimplementedError(
                None,
                None,
                f"{path} is a TensorFlow checkpoint ({path}.index and .data files); opweave "
                "reads the checkpoints it writes (docs/checkpoint_format.md)",
            )
        raise NotFoundError(
            None,
            None,
            "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for "
            f"{path}",
        )
    return CheckpointReader(path)


def _checkpoint_filename(ckpt_dir_or_file: str | os.PathLike[str]) -> str:
    path = os.fsdecode(os.fspath(ckpt_dir_or_file))
    if os.path.isdir(path):
        latest = cm.latest_checkpoint(path)
        if latest is None:
            raise ValueError(
                f"Couldn't find 'checkpoint' file or checkpoints in given directory {path}"
            )
        return latest
    return path


def load_checkpoint(ckpt_dir_or_file: str | os.PathLike[str]) -> CheckpointReader:
    """A :class:`CheckpointReader` of a checkpoint prefix, or of the latest checkpoint of a
    folder (ValueError when the folder has none)."""
    return NewCheckpointReader(_checkpoint_filename(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str | os.PathLike[str]) -> list[tuple[str, list[int]]]:
    """``(name, shape)`` of every tensor of a checkpoint (or of a folder's latest), by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


def load_variable(ckpt_dir_or_file: str | os.PathLike[str], name: str) -> np.ndarray[Any, Any]:
    """The value of tensor ``name`` (a trailing ``:0`` is ignored) in a checkpoint."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
