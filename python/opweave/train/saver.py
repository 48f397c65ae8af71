"""``Saver``: TensorFlow 1's checkpoints of variables, in a file format that does not lose data.

``Saver.save`` reads every variable in one ``Session.run`` and writes them as one file named by
the returned prefix (``model.ckpt-100``, as TensorFlow 1's V1 format named its files), with a
CRC-32C per tensor and one over the index (``docs/checkpoint_format.md``). The file is written
beside its final name, flushed to the disk and renamed into place, and only then does the
``checkpoint`` state file (TensorFlow's text format) name it: a process killed at any moment
leaves the previous checkpoint loadable and ``latest_checkpoint`` naming a complete one.

``Saver.restore`` checks the whole file and every variable's name, dtype and shape before it
assigns anything, then assigns all of them in one ``Session.run``: a missing variable
(NotFoundError), a wrong dtype or shape (InvalidArgumentError) or a corrupt or truncated file
(DataLossError) leaves every variable as it was.

>>> import os, tempfile, opweave as ow
>>> d = tempfile.mkdtemp()
>>> with ow.Graph().as_default():
...     w = ow.Variable([1.0, 2.0], name="layer1/weights")
...     saver = ow.train.Saver()
...     with ow.Session() as sess:
...         sess.run(ow.global_variables_initializer())
...         _ = sess.run(w.assign([3.0, 4.0]))
...         path = saver.save(sess, os.path.join(d, "model.ckpt"), global_step=100)
>>> os.path.basename(path), os.path.basename(ow.train.latest_checkpoint(d))
('model.ckpt-100', 'model.ckpt-100')
>>> with ow.Graph().as_default():
...     w = ow.Variable([0.0, 0.0], name="layer1/weights")
...     saver = ow.train.Saver()
...     with ow.Session() as sess:
...         saver.restore(sess, ow.train.latest_checkpoint(d))
...         print(sess.run(w))
[3. 4.]
"""

from __future__ import annotations

import importlib
import numbers
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _tf_logging as logging
from ..errors import InvalidArgumentError, NotFoundError, OpError, UnimplementedError
from ..framework import Graph, Operation, Tensor, get_default_graph
from ..graphdef._export import NotExportableError
from ..ops import state_ops
from ..ops._op_def import constant_value
from ..ops.array_ops import constant, identity, placeholder, placeholder_with_default
from ..ops.control_flow_ops import group
from ..ops.variables import Variable, global_variables
from ..session import Session
from ..tensor_shape import TensorShape
from . import checkpoint_management as cm
from ._checkpoint_format import CheckpointFile, write_checkpoint

__all__ = ["Saver", "SaverDef"]


class SaverDef:
    """TensorFlow's ``SaverDef`` message: the names a saver's graph elements have and its
    settings (what a meta graph records to rebuild the saver).

    ``SaverDef.V1`` / ``SaverDef.V2`` are accepted as ``Saver(write_version=...)``; opweave writes
    its own format (docs/checkpoint_format.md) whichever is given.
    """

    LEGACY = 0
    V1 = 1
    V2 = 2

    def __init__(
        self,
        filename_tensor_name: str = "",
        save_tensor_name: str = "",
        restore_op_name: str = "",
        max_to_keep: int = 0,
        sharded: bool = False,
        keep_checkpoint_every_n_hours: float = 0.0,
        version: int = 0,
    ) -> None:
        self.filename_tensor_name = filename_tensor_name
        self.save_tensor_name = save_tensor_name
        self.restore_op_name = restore_op_name
        self.max_to_keep = max_to_keep
        self.sharded = sharded
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.version = version

    _FIELDS = (
        "filename_tensor_name",
        "save_tensor_name",
        "restore_op_name",
        "max_to_keep",
        "sharded",
        "keep_checkpoint_every_n_hours",
        "version",
    )

    def __eq__(self, other: object) -> bool:
        return all(getattr(self, f) == getattr(other, f, None) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a protobuf message

    def __repr__(self) -> str:
        return "SaverDef(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS) + ")"


@dataclass(frozen=True)
class _Saved:
    """One checkpoint entry of a saver: the key in the file and the variable it holds."""

    key: str
    ref: Tensor  # the VariableV2 output: fetched to save, assigned to restore
    placeholder: Tensor  # fed the value a restore assigns


def _variable_ref(v: Any) -> Tensor:
    """The VariableV2 output behind ``v`` (a Variable, or a ref tensor of one)."""
    if isinstance(v, Variable):
        return v._ref()
    if isinstance(v, Tensor) and v.op.type == "VariableV2":
        return v
    raise TypeError(f"Variable to save is not a Variable: {v!r}")


def _named_refs(var_list: Any) -> list[tuple[str, Tensor]]:
    """``(key, ref)`` pairs of a list (keys: the variables' op names) or dict of variables."""
    if isinstance(var_list, Mapping):
        pairs = []
        for key, v in var_list.items():
            if not isinstance(key, str):
                raise TypeError(f"var_list keys must be strings, got {key!r}")
            if isinstance(v, (list, tuple)):
                raise TypeError(
                    f"var_list[{key!r}] is a list: partitioned variables are not supported"
                )
            pairs.append((key, _variable_ref(v)))
    elif isinstance(var_list, (list, tuple, set, frozenset)):
        pairs = []
        for v in var_list:
            ref = _variable_ref(v)
            pairs.append((ref.op.name, ref))
        if isinstance(var_list, (set, frozenset)):
            pairs.sort(key=lambda p: p[0])
    else:
        raise TypeError(f"var_list must be a list or a dict of Variables, got {var_list!r}")
    keys: set[str] = set()
    refs: dict[Tensor, str] = {}
    for key, ref in pairs:
        if key in keys:
            raise ValueError(f"At least two variables have the same name: {key}")
        if ref in refs:
            raise ValueError(
                f"The same saveable will be restored with two names: {refs[ref]} and {key}"
            )
        keys.add(key)
        refs[ref] = key
    return pairs


def _format_shape(shape: tuple[int | None, ...] | None) -> str:
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def _meta_graph_exporter() -> Any:
    """``opweave.train.export_meta_graph`` when this build of opweave has meta graphs, else None
    (found by name, so that support added later is used without changing the Saver)."""
    train = importlib.import_module("opweave.train")
    return getattr(train, "export_meta_graph", None)


class Saver:
    """Saves and restores variables, as TensorFlow 1's ``tf.train.Saver``.

    Parameters
    ----------
    var_list : list or dict of Variable, optional
        What to save: a list (each saved under its op name, ``"layer1/weights"``) or a dict from
        checkpoint key to variable. Default: every global variable when the saver is built,
        optimizers' slots and the global step included.
    reshape : bool, default False
        Restore a value of another shape but as many elements into a variable (row-major).
    sharded : bool, default False
        Accepted; opweave writes one file per checkpoint.
    max_to_keep : int, default 5
        How many recent checkpoints to keep; older ones are deleted after each save. None or 0
        keeps all.
    keep_checkpoint_every_n_hours : float, default 10000.0
        Also keep one checkpoint every this many hours, whatever ``max_to_keep`` says.
    name : str, optional
        The name scope of the saver's ops (default ``"save"``).
    restore_sequentially : bool, default False
        Accepted; a restore assigns every variable in one run.
    saver_def : SaverDef, optional
        Rebuild a saver from the elements a ``SaverDef`` names in the default graph (a graph
        imported with its saver); ``name`` is then the import scope.
    builder : None
        Only None (opweave has one way of building the saver's ops).
    defer_build : bool, default False
        Build in :meth:`build` instead (when the variables are made later); ``var_list`` must
        then be None.
    allow_empty : bool, default False
        With no variables: save and restore do nothing instead of ValueError.
    write_version : int, default SaverDef.V2
        Accepted for TensorFlow's code; the format is always opweave's.
    pad_step_number : bool, default False
        Zero-pad the global step in file names to eight digits (``model.ckpt-00000100``).
    save_relative_paths : bool, default False
        Write paths relative to the folder into the ``checkpoint`` state file.
    filename : str, optional
        The default of the saver's filename tensor (``SaverDef.filename_tensor_name``).

    Notes
    -----
    A saver is bound to the graph of its variables and can be used by any session of that
    graph. ``save`` and ``restore`` may be called from several threads; each checkpoint file is
    written whole before anything names it.

    Deleting old checkpoints follows TensorFlow, except that all checkpoints beyond
    ``max_to_keep`` go at once (TensorFlow deletes one per save, so a list made longer by
    :meth:`set_last_checkpoints_with_time` never shrinks).

    Examples
    --------
    >>> import os, tempfile, opweave as ow
    >>> d = tempfile.mkdtemp()
    >>> with ow.Graph().as_default():
    ...     v = ow.Variable(0, name="v")
    ...     inc = v.assign_add(1)
    ...     saver = ow.train.Saver(max_to_keep=2)
    ...     with ow.Session() as sess:
    ...         sess.run(v.initializer)
    ...         for step in range(1, 4):
    ...             _ = sess.run(inc)
    ...             _ = saver.save(sess, os.path.join(d, "model"), global_step=step)
    ...     print([os.path.basename(p) for p in saver.last_checkpoints])
    ['model-2', 'model-3']
    >>> ow.train.load_variable(d, "v")
    array(3, dtype=int32)
    """

    def __init__(
        self,
        var_list: Any = None,
        reshape: bool = False,
        sharded: bool = False,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000.0,
        name: str | None = None,
        restore_sequentially: bool = False,
        saver_def: SaverDef | None = None,
        builder: Any = None,
        defer_build: bool = False,
        allow_empty: bool = False,
        write_version: int = SaverDef.V2,
        pad_step_number: bool = False,
        save_relative_paths: bool = False,
        filename: str | None = None,
    ) -> None:
        if defer_build and var_list:
            raise ValueError(
                "If `var_list` is provided then build cannot be deferred. Either set "
                "defer_build=False or var_list=None."
            )
        if builder is not None:
            raise NotImplementedError(
                "Saver(builder=...) is not supported by opweave: its saver builds its own ops"
            )
        if max_to_keep is None:
            max_to_keep = 0
        if not isinstance(max_to_keep, numbers.Integral) or isinstance(max_to_keep, bool):
            raise TypeError(f"max_to_keep must be an integer or None, got {max_to_keep!r}")
        if not isinstance(keep_checkpoint_every_n_hours, numbers.Real) or not (
            keep_checkpoint_every_n_hours >= 0
        ):
            raise ValueError(
                "keep_checkpoint_every_n_hours must be a non-negative number, got "
                f"{keep_checkpoint_every_n_hours!r}"
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a string, got {name!r}")
        if filename is not None and not isinstance(filename, str):
            raise TypeError(f"filename must be a string, got {filename!r}")
        # A protobuf SaverDef message (from a meta graph) has the same fields.
        if saver_def is not None and not all(hasattr(saver_def, f) for f in SaverDef._FIELDS):
            raise ValueError(f"saver_def must be a saver_pb2.SaverDef: {saver_def!r}")
        self._var_list: Any = var_list
        self._reshape: bool = bool(reshape)
        self._sharded: bool = bool(sharded)
        self._max_to_keep: int = int(max_to_keep)
        self._keep_checkpoint_every_n_hours: float = float(keep_checkpoint_every_n_hours)
        self._name: str | None = name
        self._restore_sequentially: bool = bool(restore_sequentially)
        self._write_version: int = int(write_version)
        self._pad_step_number: bool = bool(pad_step_number)
        self._save_relative_paths: bool = bool(save_relative_paths)
        self._filename: str | None = filename
        self._allow_empty: bool = bool(allow_empty)
        self.saver_def: SaverDef | None = saver_def
        self._graph: Graph = get_default_graph()
        self._saved: list[_Saved] = []
        self._restore_op: Operation | None = None
        self._is_built: bool = False
        self._is_empty: bool = False
        # (path, time) of the checkpoints kept, oldest first; guarded by _lock with the rest of
        # the bookkeeping, so saves from several threads keep one consistent list.
        self._lock: threading.Lock = threading.Lock()
        self._last_checkpoints: list[tuple[str, float]] = []
        self._checkpoints_to_be_deleted: list[tuple[str, float]] = []
        self._next_checkpoint_time: float = time.time() + self._keep_checkpoint_every_n_hours * 3600
        if not defer_build:
            self.build()

    # -- building ----------------------------------------------------------------------------------
    def build(self) -> None:
        """Make the saver's ops (once; done by the constructor unless ``defer_build``)."""
        if self._is_built:
            return
        self._is_built = True
        if self.saver_def is not None:
            self._rebuild_from_saver_def(self.saver_def)
            return
        var_list = global_variables() if self._var_list is None else self._var_list
        pairs = _named_refs(var_list)
        if not pairs:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        graphs = {ref.graph for _, ref in pairs}
        if len(graphs) > 1:
            raise ValueError("The variables of a Saver must all be in the same graph")
        g = graphs.pop()
        self._graph = g
        with g.as_default(), g.control_dependencies(None), g.name_scope(self._name or "save"):
            default = constant(self._filename or "model", name="filename/input")
            filename = placeholder_with_default(default, [], name="filename")
            filename = placeholder_with_default(filename, [], name="Const")
            save_tensor = identity(filename, name="control_dependency")
            constant([key for key, _ in pairs], name="tensor_names")
            assigns = []
            for key, ref in pairs:
                ph = placeholder(ref.dtype, ref.shape, name="restore_value")
                assign = state_ops.assign(
                    ref, ph, validate_shape=ref.shape.is_fully_defined(), name="Assign"
                )
                assigns.append(assign.op)
                self._saved.append(_Saved(key, ref, ph))
            self._restore_op = group(*assigns, name="restore_all")
        self.saver_def = SaverDef(
            filename_tensor_name=filename.name,
            save_tensor_name=save_tensor.name,
            restore_op_name=self._restore_op.name,
            max_to_keep=self._max_to_keep,
            sharded=self._sharded,
            keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours,
            version=int(self._write_version),
        )

    def _rebuild_from_saver_def(self, sd: Any) -> None:
        """Find the ops an opweave saver made (named by ``sd``) in the default graph."""
        g = get_default_graph()

        def scoped(n: str) -> str:
            return f"{self._name}/{n}" if self._name else n

        try:
            restore_op = g.get_operation_by_name(scoped(sd.restore_op_name))
            save_tensor = g.as_graph_element(scoped(sd.save_tensor_name))
            filename = g.as_graph_element(scoped(sd.filename_tensor_name))
        except (KeyError, ValueError) as e:
            raise ValueError(f"saver_def names graph elements that do not exist: {e}") from None
        scope = restore_op.name.rsplit("/", 1)[0] if "/" in restore_op.name else ""
        try:
            names_op = g.get_operation_by_name(f"{scope}/tensor_names" if scope else "tensor_names")
        except KeyError:
            raise ValueError(
                f"{restore_op.name} was not made by an opweave Saver (no tensor_names beside it)"
            ) from None
        self._adopt(sd, restore_op, names_op, filename, save_tensor)

    def _adopt(
        self, sd: Any, restore_op: Operation, names_op: Operation, filename: Any, save_tensor: Any
    ) -> None:
        """Become the saver whose ops these are: its ``restore_all``, its ``tensor_names``
        constant (the checkpoint keys, in the order of the restore op's assignments) and its
        filename and save tensors; ``sd`` gives the settings."""
        self._graph = restore_op.graph
        keys = constant_value(names_op.outputs[0])
        assigns = restore_op.control_inputs
        if keys is None or len(keys) != len(assigns) or any(a.type != "Assign" for a in assigns):
            raise ValueError(f"{restore_op.name} was not made by an opweave Saver")
        for key, assign in zip(keys.tolist(), assigns, strict=True):
            ref, ph = assign.inputs[0], assign.inputs[1]
            self._saved.append(_Saved(key.decode() if isinstance(key, bytes) else key, ref, ph))
        self._restore_op = restore_op
        self._max_to_keep = int(sd.max_to_keep)
        self._keep_checkpoint_every_n_hours = float(sd.keep_checkpoint_every_n_hours)
        self._next_checkpoint_time = time.time() + self._keep_checkpoint_every_n_hours * 3600
        self._write_version = int(sd.version)
        self._sharded = bool(sd.sharded)
        self.saver_def = SaverDef(
            filename_tensor_name=filename.name,
            save_tensor_name=save_tensor.name,
            restore_op_name=restore_op.name,
            max_to_keep=self._max_to_keep,
            sharded=self._sharded,
            keep_checkpoint_every_n_hours=self._keep_checkpoint_every_n_hours,
            version=self._write_version,
        )

    @classmethod
    def _from_graph_elements(
        cls, sd: Any, restore_op: Operation, names_op: Operation, filename: Any, save_tensor: Any
    ) -> Saver:
        """The saver whose ops these are (see :meth:`_adopt`): how ``import_meta_graph``
        rebuilds a saver from the ops it imported, whatever names the import gave them."""
        saver = cls(saver_def=sd, defer_build=True)
        saver._is_built = True
        saver._adopt(sd, restore_op, names_op, filename, save_tensor)
        return saver

    def as_saver_def(self) -> SaverDef | None:
        """The :class:`SaverDef` of this saver."""
        return self.saver_def

    def to_proto(self, export_scope: str | None = None) -> SaverDef | None:
        """The :class:`SaverDef`, with ``export_scope`` removed from its names (None when they are
        not under it)."""
        sd = self.saver_def
        if sd is None or export_scope is None:
            return sd
        prefix = export_scope.rstrip("/") + "/"
        names = (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name)
        if not all(n.startswith(prefix) for n in names):
            return None
        return SaverDef(
            filename_tensor_name=names[0][len(prefix) :],
            save_tensor_name=names[1][len(prefix) :],
            restore_op_name=names[2][len(prefix) :],
            max_to_keep=sd.max_to_keep,
            sharded=sd.sharded,
            keep_checkpoint_every_n_hours=sd.keep_checkpoint_every_n_hours,
            version=sd.version,
        )

    @staticmethod
    def from_proto(saver_def: SaverDef, import_scope: str | None = None) -> Saver:
        """A saver rebuilt from ``saver_def`` in the default graph."""
        return Saver(saver_def=saver_def, name=import_scope)

    # -- which checkpoints are kept ----------------------------------------------------------------
    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints kept (not deleted yet), oldest first; each can be restored."""
        with self._lock:
            return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        """Deprecated: :meth:`set_last_checkpoints_with_time`. These are never deleted."""
        if not isinstance(last_checkpoints, list):
            raise TypeError(f"last_checkpoints must be a list, got {last_checkpoints!r}")
        with self._lock:
            self._last_checkpoints = [(os.fspath(p), float("inf")) for p in last_checkpoints]

    def set_last_checkpoints_with_time(
        self, last_checkpoints_with_time: list[tuple[str, float]]
    ) -> None:
        """Set the kept checkpoints as ``(path, seconds since the Epoch)`` pairs, oldest first."""
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError(
                f"last_checkpoints_with_time must be a list, got {last_checkpoints_with_time!r}"
            )
        pairs = [(os.fspath(p), float(t)) for p, t in last_checkpoints_with_time]
        with self._lock:
            self._last_checkpoints = pairs

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """After a restart: keep ``checkpoint_paths`` (e.g. ``get_checkpoint_state(d)
        .all_model_checkpoint_paths``) that still exist, timed by their files' mtimes, so later
        saves go on deleting the old ones."""
        pairs = []
        for path in checkpoint_paths:
            mtime = cm.get_checkpoint_mtimes([path])
            if mtime:
                pairs.append((os.fspath(path), mtime[0]))
        self.set_last_checkpoints_with_time(pairs)

    def _record_last_checkpoint(self, path: str) -> None:
        if not self._max_to_keep:
            return
        self._last_checkpoints = [p for p in self._last_checkpoints if p[0] != path]
        self._last_checkpoints.append((path, time.time()))
        while len(self._last_checkpoints) > self._max_to_keep:
            self._checkpoints_to_be_deleted.append(self._last_checkpoints.pop(0))

    def _delete_old_checkpoints(self, meta_graph_suffix: str) -> None:
        while self._checkpoints_to_be_deleted:
            path, saved_at = self._checkpoints_to_be_deleted.pop(0)
            # One checkpoint every keep_checkpoint_every_n_hours stays.
            if saved_at > self._next_checkpoint_time:
                self._next_checkpoint_time += self._keep_checkpoint_every_n_hours * 3600
                continue
            try:
                cm.remove_checkpoint(path, self._write_version, meta_graph_suffix)
            except OSError as e:
                logging.warning("Ignoring: %s", e)

    # -- saving ------------------------------------------------------------------------------------
    def _check_session(self, sess: Any) -> None:
        if not isinstance(sess, Session):
            raise TypeError(f"'sess' must be a Session; {sess}")
        if sess.graph is not self._graph:
            raise ValueError(
                "The Saver's variables are not in the session's graph: run save and restore "
                "with a session of the graph the Saver was made in"
            )

    def save(
        self,
        sess: Session,
        save_path: str | os.PathLike[str],
        global_step: Any = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> str | None:
        """Save the variables' values in ``sess``; returns the checkpoint's path prefix.

        Parameters
        ----------
        sess : Session
            A session of the saver's graph, in which the variables are initialized.
        save_path : str or path
            The checkpoint's prefix (``"run/model.ckpt"``); its folder must exist.
        global_step : int, Tensor or Variable, optional
            Appended to the prefix (``"run/model.ckpt-100"``); a tensor is evaluated in ``sess``.
        latest_filename : str, default "checkpoint"
            The state file in the same folder that lists the recent checkpoints.
        meta_graph_suffix, write_meta_graph, strip_default_attrs, save_debug_info
            The meta graph ``<prefix>.meta`` is written when this build of opweave has
            ``opweave.train.export_meta_graph``; otherwise these are accepted and ignored.
        write_state : bool, default True
            Update the state file (and delete checkpoints beyond ``max_to_keep``).

        Returns
        -------
        str or None
            The prefix to pass to :meth:`restore` (None for an empty saver).

        Raises
        ------
        TypeError
            ``sess`` is not a Session.
        ValueError
            The folder does not exist, ``latest_filename`` has path components or is the
            checkpoint's name.
        FailedPreconditionError
            A variable is not initialized in ``sess``.
        OSError
            The file could not be written (permissions, disk full); no checkpoint is half
            written, the previous ones are untouched.
        """
        if not self._is_built:
            raise RuntimeError("`build()` should be called before save if defer_build==True")
        if latest_filename is None:
            latest_filename = "checkpoint"
        if os.path.split(latest_filename)[0]:
            raise ValueError("'latest_filename' must not contain path components")
        save_path = os.fsdecode(os.fspath(save_path))
        if global_step is not None:
            if not isinstance(global_step, numbers.Integral):
                global_step = int(sess.run(global_step))
            step = int(global_step)
            checkpoint_file = (
                f"{save_path}-{step:08d}" if self._pad_step_number else (f"{save_path}-{step}")
            )
        else:
            checkpoint_file = save_path
            if os.path.basename(save_path) == latest_filename and not self._sharded:
                raise ValueError(
                    f"'latest_filename' collides with 'save_path': '{latest_filename}' and "
                    f"'{save_path}'"
                )
        self._check_session(sess)
        save_dir = os.path.dirname(save_path)
        if not self._is_empty:
            # One run reads every variable, so the checkpoint is one step's state.
            values = sess.run([s.ref for s in self._saved])
            if not os.path.isdir(save_dir or os.curdir):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
            if os.path.isdir(checkpoint_file):
                raise ValueError(
                    f"{checkpoint_file} is a directory: save_path is the checkpoint's file prefix "
                    f"(e.g. {os.path.join(checkpoint_file, 'model.ckpt')})"
                )
            write_checkpoint(
                checkpoint_file,
                [
                    (s.key, s.ref.dtype.name, np.asarray(value))
                    for s, value in zip(self._saved, values, strict=True)
                ],
            )
            if write_state:
                with self._lock:
                    self._record_last_checkpoint(checkpoint_file)
                    cm.update_checkpoint_state(
                        save_dir,
                        checkpoint_file,
                        [p for p, _ in self._last_checkpoints],
                        latest_filename,
                        save_relative_paths=self._save_relative_paths,
                    )
                    self._delete_old_checkpoints(meta_graph_suffix)
        if write_meta_graph and _meta_graph_exporter() is not None:
            meta_file = cm.meta_graph_filename(checkpoint_file, meta_graph_suffix)
            try:
                with sess.graph.as_default():
                    self.export_meta_graph(
                        meta_file,
                        strip_default_attrs=strip_default_attrs,
                        save_debug_info=save_debug_info,
                    )
            except (ImportError, NotExportableError) as e:
                # The checkpoint is complete and named; only the graph cannot be written (no
                # protobuf package, or a py_function, which a GraphDef cannot hold).
                logging.warning("The meta graph %s was not written: %s", meta_file, e)
        return None if self._is_empty else checkpoint_file

    def export_meta_graph(
        self,
        filename: str | None = None,
        collection_list: Any = None,
        as_text: bool = False,
        export_scope: str | None = None,
        clear_devices: bool = False,
        clear_extraneous_savers: bool = False,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> Any:
        """Write the graph and this saver's :class:`SaverDef` as a ``MetaGraphDef`` (needs
        ``opweave.train.export_meta_graph``; NotImplementedError in builds without it)."""
        exporter = _meta_graph_exporter()
        if exporter is None:
            raise NotImplementedError(
                "Saver.export_meta_graph needs meta graph support (opweave.train."
                "export_meta_graph), which this build of opweave does not have"
            )
        kwargs: dict[str, Any] = {
            "filename": filename,
            "graph": self._graph,
            "saver_def": self.saver_def,
            "collection_list": collection_list,
            "as_text": as_text,
            "export_scope": export_scope,
            "clear_devices": clear_devices,
            "clear_extraneous_savers": clear_extraneous_savers,
            "strip_default_attrs": strip_default_attrs,
        }
        if save_debug_info:
            kwargs["save_debug_info"] = True
        return exporter(**kwargs)

    # -- restoring ---------------------------------------------------------------------------------
    def _restore_error(self, cls: type[OpError], cause: str, message: str) -> OpError:
        err = cls(
            self._restore_op.name if self._restore_op is not None else None,
            "NoOp",
            f"Restoring from checkpoint failed. This is most likely due to {cause} from the "
            "checkpoint. Please ensure that you have not altered the graph expected based on "
            f"the checkpoint. Original error:\n\n{message}",
        )
        err._attach_graph(self._graph)
        return err

    def restore(self, sess: Session, save_path: str | os.PathLike[str] | None) -> None:
        """Assign the values saved in ``save_path`` to the saver's variables in ``sess``.

        Every variable is checked against the checkpoint, and the file against its checksums,
        before any is assigned; then all are assigned in one run. On any error no variable
        changes.

        Raises
        ------
        ValueError
            ``save_path`` is None or no checkpoint exists there.
        NotFoundError
            A variable's key is not in the checkpoint (``Key <name> not found in checkpoint``).
        InvalidArgumentError
            A variable's dtype or shape differs from the checkpoint's (both named).
        DataLossError
            The file is truncated or corrupt (names the file and, for its data, the tensor).
        UnimplementedError
            ``save_path`` is a TensorFlow (V2) checkpoint, which opweave does not read.
        """
        if self._is_empty:
            return
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        path = os.fsdecode(os.fspath(save_path))
        if not cm.checkpoint_exists(path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + path)
        self._check_session(sess)
        logging.info("Restoring parameters from %s", path)
        if not os.path.isfile(path):
            raise UnimplementedError(
                None,
                None,
                f"{path} is a TensorFlow checkpoint ({path}.index and .data files); opweave "
                "reads the checkpoints it writes (docs/checkpoint_format.md)",
            )
        feed: dict[Tensor, np.ndarray[Any, Any]] = {}
        with CheckpointFile(path) as ckpt:
            shapes: list[tuple[int, ...]] = []
            for s in self._saved:
                shapes.append(self._check_entry(ckpt, s, path))
            values = ckpt.read([s.key for s in self._saved])
        for s, shape in zip(self._saved, shapes, strict=True):
            value = values[s.key]
            feed[s.placeholder] = value.reshape(shape) if value.shape != shape else value
        assert self._restore_op is not None
        sess.run(self._restore_op, feed)

    def _check_entry(self, ckpt: CheckpointFile, s: _Saved, path: str) -> tuple[int, ...]:
        """The shape to feed for ``s`` (the checkpoint's, or the variable's with ``reshape``);
        NotFoundError / InvalidArgumentError when the checkpoint cannot restore it."""
        entry = ckpt.entries.get(s.key)
        var = s.ref.op.name
        if entry is None:
            raise self._restore_error(
                NotFoundError,
                "a Variable name or other graph key that is missing",
                f"Key {s.key} not found in checkpoint {path}",
            )
        if entry.dtype != s.ref.dtype.name:
            raise self._restore_error(
                InvalidArgumentError,
                "a mismatch between the current graph and the graph",
                f"tensor_name = {s.key}; expected dtype {s.ref.dtype.name} does not equal "
                f"original dtype {entry.dtype} (variable {var}, checkpoint {path})",
            )
        static: TensorShape = s.ref.shape
        raw = static.as_raw()
        fits = static.is_compatible_with(TensorShape(list(entry.shape)))
        if fits:
            return entry.shape
        if (
            self._reshape
            and static.is_fully_defined()
            and static.num_elements() == entry.num_elements
        ):
            return tuple(int(d or 0) for d in static.as_list())
        raise self._restore_error(
            InvalidArgumentError,
            "a mismatch between the current graph and the graph",
            "Assign requires shapes of both tensors to match. lhs shape= "
            f"{_format_shape(raw)} rhs shape= {_format_shape(entry.shape)} (variable {var}, "
            f"key {s.key} in checkpoint {path})",
        )
