"""opweave.train.Saver and checkpoints: TensorFlow 1's API, a file format that does not lose data
(docs/checkpoint_format.md), atomic saves that survive SIGKILL, and restores that change nothing
unless everything checks out."""

from __future__ import annotations

import doctest
import errno
import importlib
import json
import math
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import opweave as tf
import pytest
from opweave import _opweave_core as core
from opweave import errors
from opweave.train import _checkpoint_format as fmt
from opweave.train import checkpoint_management as cm

# -- helpers ---------------------------------------------------------------------------------------

ALL_DTYPES: dict[str, Any] = {
    "f16": np.array([[1.5, -2.0], [np.inf, 0.0]], np.float16),
    "f32": np.array([1.0, np.nan, -0.0], np.float32),
    "f64": np.array(np.pi),
    "i8": np.array([-128, 127], np.int8),
    "i16": np.array([-32768, 7], np.int16),
    "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
    "i64": np.array([2**62, -(2**63)], np.int64),
    "u8": np.array([0, 255], np.uint8),
    "b": np.array([True, False, True]),
    "s": np.array([[b"", b"a\x00b"], [b"\xff" * 3, b"long" * 100]], dtype=object),
    "empty": np.zeros((0, 3), np.float32),
}


def make_vars(values: dict[str, Any]) -> dict[str, tf.Variable]:
    return {name: tf.Variable(v, name=name) for name, v in values.items()}


def assert_same(a: Any, b: Any) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    if a.dtype == object:
        assert a.tolist() == b.tolist()
    else:  # bit for bit (NaN, -0.0)
        assert a.tobytes() == b.tobytes()


def saved_file(tmp_path: Path, values: dict[str, Any] | None = None) -> str:
    """A small checkpoint of ``values`` (default: one of each dtype), written by a Saver."""
    values = ALL_DTYPES if values is None else values
    with tf.Graph().as_default():
        make_vars(values)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
    assert path is not None
    return path


def rewrite_index(path: str, edit: Any) -> None:
    """Rewrite the index of ``path`` through ``edit(doc) -> doc or bytes`` with a valid header
    CRC: what a hostile file that passes the checksum looks like. The data moves (and the
    offsets and file size before the edit with it) when the new index is longer."""
    raw = Path(path).read_bytes()
    n = struct.unpack_from("<Q", raw, 16)[0]
    data = raw[32 + n :]
    delta = 0
    while True:
        doc = json.loads(raw[32 : 32 + n])
        doc["file_size"] += delta
        for t in doc["tensors"]:
            t["offset"] += delta
        new = edit(doc)
        index = new if isinstance(new, bytes) else json.dumps(new, separators=(",", ":")).encode()
        room = -(-(32 + len(index)) // 64) * 64 - 32
        if room - n == delta or isinstance(new, bytes):
            break
        delta = room - n
    index = index.ljust(room)
    head = bytearray(raw[:28])
    struct.pack_into("<Q", head, 16, len(index))
    crc = core.crc32c(bytes(head) + index)
    Path(path).write_bytes(bytes(head) + struct.pack("<I", crc) + index + data)


# -- saving and restoring --------------------------------------------------------------------------


def test_save_returns_the_prefix_and_restore_gives_back_every_dtype_bit_for_bit(
    tmp_path: Path,
) -> None:
    path = saved_file(tmp_path)
    assert path == str(tmp_path / "model.ckpt-1")
    assert os.path.isfile(path)
    with tf.Graph().as_default():
        zeros = {
            k: np.zeros_like(v) if v.dtype != object else np.full(v.shape, b"?", object)
            for k, v in ALL_DTYPES.items()
        }
        vs = make_vars(zeros)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, path)  # restoring initializes the variables
            for k, v in vs.items():
                assert_same(sess.run(v), ALL_DTYPES[k])


def test_default_var_list_is_every_global_variable_named_by_op_name_slots_included(
    tmp_path: Path,
) -> None:
    with tf.Graph().as_default():
        with tf.variable_scope("layer1"):
            w = tf.Variable([1.0, 2.0], name="weights")
        local = tf.Variable(5.0, name="local", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        loss = tf.reduce_sum(w * w) + local
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdamOptimizer(0.1).minimize(loss, var_list=[w], global_step=step)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(train_op)
            path = saver.save(sess, str(tmp_path / "m"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert names == sorted(
        [
            "beta1_power",
            "beta2_power",
            "global_step",
            "layer1/weights",
            "layer1/weights/Adam",
            "layer1/weights/Adam_1",
        ]
    )  # local variables are not saved, as in TensorFlow
    assert tf.train.load_variable(path, "global_step") == 1


def test_var_list_dict_saves_under_its_keys_and_list_under_op_names(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(2.0, name="scope/b")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            p1 = tf.train.Saver({"renamed": a, "other/name": b}).save(sess, str(tmp_path / "d"))
            p2 = tf.train.Saver([b]).save(sess, str(tmp_path / "l"))
            p3 = tf.train.Saver([b._ref()]).save(sess, str(tmp_path / "r"))
    assert tf.train.list_variables(p1) == [("other/name", []), ("renamed", [])]
    assert tf.train.list_variables(p2) == [("scope/b", [])] == tf.train.list_variables(p3)


def test_a_checkpoint_restores_into_another_graph_with_the_same_names(tmp_path: Path) -> None:
    path = saved_file(tmp_path, {"x": np.arange(3.0), "y": np.array(7, np.int64)})
    with tf.Graph().as_default():
        tf.constant(0.0, name="unrelated")  # other ops, other order of creation
        y = tf.Variable(np.int64(0), name="y")
        x = tf.Variable(np.zeros(3), name="x")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, path)
            assert sess.run(x).tolist() == [0.0, 1.0, 2.0]
            assert sess.run(y) == 7
    with tf.Graph().as_default():
        tf.Variable(np.zeros(3), name="x")
        z = tf.Variable(np.int64(0), name="z")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(z.initializer)
            with pytest.raises(errors.NotFoundError, match="Key z not found in checkpoint"):
                saver.restore(sess, path)


def test_restore_with_reshape_takes_another_shape_of_as_many_elements(tmp_path: Path) -> None:
    path = saved_file(tmp_path, {"w": np.arange(6.0).reshape(2, 3)})
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros((3, 2)), name="w")
        with tf.Session() as sess:
            with pytest.raises(errors.InvalidArgumentError):
                tf.train.Saver().restore(sess, path)
            tf.train.Saver(reshape=True).restore(sess, path)
            assert sess.run(w).tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_a_variable_of_unknown_shape_restores_the_saved_shape(tmp_path: Path) -> None:
    path = saved_file(tmp_path, {"v": np.arange(4.0)})
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(2), name="v", validate_shape=False)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            assert sess.run(v).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_global_step_may_be_a_variable_or_tensor_and_pad_step_number_pads(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            sess.run(step.initializer)
            sess.run(step.assign(42))
            saver = tf.train.Saver()
            assert saver.save(sess, str(tmp_path / "a"), global_step=step).endswith("a-42")
            assert saver.save(sess, str(tmp_path / "b"), global_step=step.value()).endswith("-42")
            padded = tf.train.Saver(pad_step_number=True)
            assert padded.save(sess, str(tmp_path / "c"), global_step=7).endswith("c-00000007")


# -- the checkpoint state file ---------------------------------------------------------------------


def counter_graph() -> tuple[tf.Variable, Any]:
    v = tf.Variable(0, name="v")
    return v, v.assign_add(1)


def test_state_file_is_tensorflows_text_format_and_max_to_keep_deletes_old_files(
    tmp_path: Path,
) -> None:
    with tf.Graph().as_default():
        v, inc = counter_graph()
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step in range(1, 5):
                sess.run(inc)
                saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    d = str(tmp_path)
    assert (tmp_path / "checkpoint").read_text() == (
        f'model_checkpoint_path: "{d}/model.ckpt-4"\n'
        f'all_model_checkpoint_paths: "{d}/model.ckpt-3"\n'
        f'all_model_checkpoint_paths: "{d}/model.ckpt-4"\n'
    )
    # Each checkpoint's meta graph beside it, deleted with it (TensorFlow's .meta files).
    assert sorted(os.listdir(d)) == [
        "checkpoint",
        "model.ckpt-3",
        "model.ckpt-3.meta",
        "model.ckpt-4",
        "model.ckpt-4.meta",
    ]
    assert saver.last_checkpoints == [f"{d}/model.ckpt-3", f"{d}/model.ckpt-4"]
    assert tf.train.latest_checkpoint(d) == f"{d}/model.ckpt-4"
    state = tf.train.get_checkpoint_state(d)
    assert state is not None
    assert state.model_checkpoint_path == f"{d}/model.ckpt-4"
    assert state.all_model_checkpoint_paths == [f"{d}/model.ckpt-3", f"{d}/model.ckpt-4"]
    assert tf.train.load_variable(d, "v") == 4


def test_relative_folders_and_save_relative_paths_write_relative_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    os.mkdir("run")
    os.mkdir("abs")
    with tf.Graph().as_default():
        v, _ = counter_graph()
        with tf.Session() as sess:
            sess.run(v.initializer)
            assert tf.train.Saver().save(sess, "run/model", global_step=1) == "run/model-1"
            assert tf.train.Saver().save(sess, "here", global_step=1) == "here-1"
            tf.train.Saver(save_relative_paths=True).save(
                sess, str(tmp_path / "abs" / "m"), global_step=3
            )
    assert Path("run/checkpoint").read_text() == (
        'model_checkpoint_path: "model-1"\nall_model_checkpoint_paths: "model-1"\n'
    )
    assert Path("checkpoint").read_text().startswith('model_checkpoint_path: "here-1"\n')
    assert Path("abs/checkpoint").read_text().startswith('model_checkpoint_path: "m-3"\n')
    assert tf.train.latest_checkpoint("run") == os.path.join("run", "model-1")
    assert tf.train.latest_checkpoint(str(tmp_path / "abs")) == str(tmp_path / "abs" / "m-3")


def test_max_to_keep_none_keeps_all_and_keep_every_n_hours_keeps_old_ones(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        v, _ = counter_graph()
        keep_all = tf.train.Saver(max_to_keep=None)
        hourly = tf.train.Saver(max_to_keep=1, keep_checkpoint_every_n_hours=1e-9)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for i in range(3):
                keep_all.save(sess, str(tmp_path / "all"), global_step=i)
            time.sleep(0.01)
            for i in range(3):
                hourly.save(sess, str(tmp_path / "hourly"), global_step=i, latest_filename="h")
    files = sorted(os.listdir(tmp_path))
    files = [f for f in files if not f.endswith(".meta")]  # each checkpoint's meta graph
    assert [f for f in files if f.startswith("all")] == ["all-0", "all-1", "all-2"]
    # Each checkpoint is older than the last kept one by more than 1e-9 hours: all stay, while
    # the state file names only the newest (max_to_keep=1).
    assert [f for f in files if f.startswith("hourly")] == ["hourly-0", "hourly-1", "hourly-2"]
    assert hourly.last_checkpoints == [str(tmp_path / "hourly-2")]
    assert keep_all.last_checkpoints == []  # TensorFlow's: max_to_keep=0 records none


def test_recover_last_checkpoints_lets_a_new_saver_go_on_deleting(tmp_path: Path) -> None:
    d = str(tmp_path)
    with tf.Graph().as_default():
        v, _ = counter_graph()
        with tf.Session() as sess:
            sess.run(v.initializer)
            first = tf.train.Saver(max_to_keep=2)
            for i in range(2):
                first.save(sess, f"{d}/m", global_step=i)
            second = tf.train.Saver(max_to_keep=2)  # after a restart
            state = tf.train.get_checkpoint_state(d)
            assert state is not None
            second.recover_last_checkpoints([*state.all_model_checkpoint_paths, f"{d}/gone"])
            assert second.last_checkpoints == [f"{d}/m-0", f"{d}/m-1"]
            second.save(sess, f"{d}/m", global_step=2)
            assert sorted(os.listdir(d)) == ["checkpoint", "m-1", "m-1.meta", "m-2", "m-2.meta"]
            second.set_last_checkpoints_with_time([(f"{d}/m-2", 1.0)])
            assert second.last_checkpoints == [f"{d}/m-2"]
            second.set_last_checkpoints([f"{d}/m-1"])
            assert second.last_checkpoints == [f"{d}/m-1"]
            with pytest.raises(TypeError):
                second.set_last_checkpoints((f"{d}/m-1",))  # type: ignore[arg-type]


def test_write_state_false_leaves_the_state_file_alone(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        v, _ = counter_graph()
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver = tf.train.Saver()
            path = saver.save(sess, str(tmp_path / "m"), write_state=False)
    assert sorted(os.listdir(tmp_path)) == ["m", "m.meta"]
    assert path == str(tmp_path / "m")
    assert saver.last_checkpoints == []
    assert tf.train.latest_checkpoint(str(tmp_path)) is None


def test_state_file_parser_reads_what_tensorflow_may_write_and_ignores_garbage(
    tmp_path: Path,
) -> None:
    d = tmp_path
    (d / "checkpoint").write_text(
        "# a comment\n"
        "model_checkpoint_path: 'm\\303\\251-2'  all_model_checkpoint_paths: \"m-1\"\n"
        'all_model_checkpoint_paths: "m\\xc3\\xa9" "-2";\n'
        "all_model_checkpoint_timestamps: 1.5e9 all_model_checkpoint_timestamps: 17\n"
        "last_preserved_timestamp: -inf\n"
    )
    s = tf.train.get_checkpoint_state(str(d))
    assert s is not None
    assert s.model_checkpoint_path == str(d / "mé-2")
    assert s.all_model_checkpoint_paths == [str(d / "m-1"), str(d / "mé-2")]
    assert s.all_model_checkpoint_timestamps == [1.5e9, 17.0]
    assert s.last_preserved_timestamp == -math.inf
    # A state written back parses to the same state (non-ASCII as octal escapes, as protobuf).
    text = str(s)
    assert "\\303\\251" in text
    assert cm._parse_state(text) == s
    for garbage in [
        'model_checkpoint_path: "unterminated\n',
        "other_field: 1\n",
        'model_checkpoint_path "m"\n',
        "model_checkpoint_path: 3\n",
        "\x00\x01",
    ]:
        (d / "checkpoint").write_text(garbage)
        assert tf.train.get_checkpoint_state(str(d)) is None, garbage
        assert tf.train.latest_checkpoint(str(d)) is None
    (d / "checkpoint").write_text('all_model_checkpoint_paths: "m"\n')
    with pytest.raises(ValueError, match="Invalid checkpoint state"):
        tf.train.get_checkpoint_state(str(d))


def test_checkpoint_file_helpers(tmp_path: Path) -> None:
    path = saved_file(tmp_path, {"v": np.ones(2)})
    assert tf.train.checkpoint_exists(path)
    assert not tf.train.checkpoint_exists(path + "x")
    assert tf.train.get_checkpoint_mtimes([path, path + "x"]) == [os.stat(path).st_mtime_ns / 1e9]
    (tmp_path / "model.ckpt-1.meta").write_bytes(b"meta")
    (tmp_path / ("model.ckpt-1" + fmt.TEMP_MARK + "abc")).write_bytes(b"junk of a killed save")
    tf.train.remove_checkpoint(path)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"]
    assert cm.meta_graph_filename("a/m-1-00000-of-00002", "mg") == "a/m-1.mg"
    state = tf.train.generate_checkpoint_state_proto("/d", "/d/m-2", ["/d/m-1"], [1.0, 2.0])
    assert state.all_model_checkpoint_timestamps == [1.0, 2.0]
    with pytest.raises(ValueError, match="timestamps"):
        tf.train.generate_checkpoint_state_proto("/d", "/d/m-2", [], [1.0, 2.0])
    with pytest.raises(RuntimeError, match="conflicts"):
        tf.train.update_checkpoint_state(str(tmp_path), str(tmp_path / "checkpoint"))


# -- reading checkpoints without a graph -----------------------------------------------------------


def test_checkpoint_reader_lists_and_loads_tensors(tmp_path: Path) -> None:
    path = saved_file(tmp_path)
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == {k: list(v.shape) for k, v in ALL_DTYPES.items()}
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["f16"] is tf.float16
    assert dtypes["s"] is tf.string
    assert dtypes["b"] is tf.bool
    assert reader.has_tensor("s")
    assert not reader.has_tensor("nope")
    for k, v in ALL_DTYPES.items():
        assert_same(reader.get_tensor(k), v)
    with pytest.raises(errors.NotFoundError, match="Key nope not found in checkpoint"):
        reader.get_tensor("nope")
    assert b"i32 (int32) [2, 3]\n" in reader.debug_string()
    assert_same(tf.train.load_variable(str(tmp_path), "i32:0"), ALL_DTYPES["i32"])
    assert [n for n, _ in tf.train.list_variables(str(tmp_path))] == sorted(ALL_DTYPES)
    with pytest.raises(errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.NewCheckpointReader(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_checkpoint(str(tmp_path / "empty"))


def test_numpy_reads_the_file_as_the_format_document_says(tmp_path: Path) -> None:
    path = saved_file(tmp_path)
    raw = Path(path).read_bytes()
    assert raw[:8] == b"\x89OWCKPT\n"
    index = json.loads(raw[32 : 32 + int.from_bytes(raw[16:24], "little")])
    seen = {}
    for t in index["tensors"]:
        if t["dtype"] != "string":
            seen[t["name"]] = np.frombuffer(
                raw,
                np.dtype(t["dtype"]).newbyteorder("<"),
                count=math.prod(t["shape"]),
                offset=t["offset"],
            ).reshape(t["shape"])
    assert set(seen) == set(ALL_DTYPES) - {"s"}
    for k, v in seen.items():
        assert_same(v, ALL_DTYPES[k])
    doc = (Path(__file__).parent.parent / "docs" / "checkpoint_format.md").read_text()
    assert 'np.frombuffer(raw, np.dtype(t["dtype"]).newbyteorder("<")' in doc


def test_a_tensorflow_checkpoint_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "tfmodel.index").write_bytes(b"\x00")
    (tmp_path / "tfmodel.data-00000-of-00001").write_bytes(b"\x00")
    with pytest.raises(errors.UnimplementedError, match="is a TensorFlow checkpoint"):
        tf.train.NewCheckpointReader(str(tmp_path / "tfmodel"))
    with tf.Graph().as_default():
        tf.Variable(1.0, name="v")
        with tf.Session() as sess, pytest.raises(errors.UnimplementedError):
            tf.train.Saver().restore(sess, str(tmp_path / "tfmodel"))


# -- argument errors, as TensorFlow's --------------------------------------------------------------


def test_argument_errors_are_tensorflows(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver()
        empty = tf.train.Saver(allow_empty=True)
        v = tf.Variable(1.0, name="v")
        w = tf.Variable(2.0, name="w")
        with pytest.raises(ValueError, match="same name: v"):
            tf.train.Saver([v, v])
        with pytest.raises(ValueError, match="restored with two names"):
            tf.train.Saver({"a": v, "b": v})
        with pytest.raises(TypeError, match="not a Variable"):
            tf.train.Saver([tf.constant(1.0)])
        with pytest.raises(TypeError, match="list or a dict"):
            tf.train.Saver(v)
        with pytest.raises(ValueError, match="cannot be deferred"):
            tf.train.Saver([v], defer_build=True)
        with pytest.raises(NotImplementedError, match="builder"):
            tf.train.Saver(builder=object())
        deferred = tf.train.Saver(defer_build=True)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert empty.save(sess, str(tmp_path / "e")) is None
            empty.restore(sess, str(tmp_path / "e"))  # does nothing
            with pytest.raises(RuntimeError, match="build"):
                deferred.save(sess, str(tmp_path / "d"))
            deferred.build()
            assert deferred.save(sess, str(tmp_path / "d")) == str(tmp_path / "d")
            with pytest.raises(TypeError, match="must be a Session"):
                saver.save(object(), str(tmp_path / "x"))  # type: ignore[arg-type]
            with pytest.raises(ValueError, match=r"Parent directory of .* doesn't exist"):
                saver.save(sess, str(tmp_path / "no" / "such" / "dir" / "m"))
            with pytest.raises(ValueError, match="is a directory: save_path is the checkpoint"):
                saver.save(sess, str(tmp_path) + os.sep)
            with pytest.raises(ValueError, match="must not contain path components"):
                saver.save(sess, str(tmp_path / "m"), latest_filename="a/b")
            with pytest.raises(ValueError, match="collides with 'save_path'"):
                saver.save(sess, str(tmp_path / "checkpoint"))
            with pytest.raises(ValueError, match="when it is None"):
                saver.restore(sess, None)
            with pytest.raises(ValueError, match="not a valid checkpoint"):
                saver.restore(sess, str(tmp_path / "missing"))
            both = saver.save(sess, str(tmp_path / "both"))
            sess.run([v.assign(5.0), w.assign(6.0)])
            tf.train.Saver([w]).restore(sess, both)
            assert sess.run([v, w]) == [5.0, 2.0]  # only w was restored
        with (
            tf.Graph().as_default(),
            tf.Session() as other,
            pytest.raises(ValueError, match="not in the session's graph"),
        ):
            saver.save(other, str(tmp_path / "m"))
    assert tf.train.SaverDef.V2 == 2
    assert tf.train.SaverDef.V1 == 1


def test_saving_uninitialized_variables_is_failed_precondition(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        tf.Variable(1.0, name="never_initialized")
        saver = tf.train.Saver()
        with tf.Session() as sess, pytest.raises(errors.FailedPreconditionError):
            saver.save(sess, str(tmp_path / "m"))
    assert os.listdir(tmp_path) == []


def test_saver_def_names_the_savers_ops_and_rebuilds_the_saver(tmp_path: Path) -> None:
    with tf.Graph().as_default() as g:
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver(max_to_keep=3, name="my_saver")
        sd = saver.as_saver_def()
        assert sd is not None
        assert (sd.filename_tensor_name, sd.save_tensor_name, sd.restore_op_name) == (
            "my_saver/Const:0",
            "my_saver/control_dependency:0",
            "my_saver/restore_all",
        )
        assert sd.max_to_keep == 3
        assert sd.version == tf.train.SaverDef.V2
        stripped = saver.to_proto(export_scope="my_saver")
        assert stripped is not None
        assert stripped.restore_op_name == "restore_all"
        assert saver.to_proto(export_scope="elsewhere") is None
        # What import_meta_graph does with the SaverDef of an imported graph.
        rebuilt = tf.train.Saver.from_proto(sd)
        assert rebuilt.as_saver_def() == sd
        with tf.Session() as sess:
            sess.run(v.initializer)
            path = rebuilt.save(sess, str(tmp_path / "m"))
            sess.run(v.assign([0.0, 0.0]))
            saver.restore(sess, path)
            assert sess.run(v).tolist() == [1.0, 2.0]
        with pytest.raises(ValueError, match="do not exist"):
            tf.train.Saver(saver_def=tf.train.SaverDef("a:0", "b:0", "c"))
        assert g.get_operation_by_name("my_saver/restore_all").type == "NoOp"


def test_a_saver_rebuilds_from_its_saver_def_in_a_graph_imported_from_a_graphdef(
    tmp_path: Path,
) -> None:
    pytest.importorskip("google.protobuf")
    with tf.Graph().as_default() as g:
        tf.Variable([1.0, 2.0], name="v")
        tf.Variable(np.array([b"a", b"b"], dtype=object), name="s")
        saver = tf.train.Saver(name="ckpt")
        graph_def = g.as_graph_def()
        saver_def = saver.as_saver_def()
    with tf.Graph().as_default() as g2:  # what import_meta_graph does
        tf.import_graph_def(graph_def, name="imported")
        rebuilt = tf.train.Saver(saver_def=saver_def, name="imported")
        assert rebuilt.as_saver_def() is not None
        assert rebuilt.as_saver_def().restore_op_name == "imported/ckpt/restore_all"
        with tf.Session() as sess:
            sess.run(["imported/v/Assign", "imported/s/Assign"])
            path = rebuilt.save(sess, str(tmp_path / "m"))
            sess.run(tf.assign(g2.get_tensor_by_name("imported/v:0"), [0.0, 0.0]))
            rebuilt.restore(sess, path)
            assert sess.run("imported/v:0").tolist() == [1.0, 2.0]
    assert tf.train.list_variables(path) == [("s", [2]), ("v", [2])]


def test_write_meta_graph_uses_export_meta_graph_when_opweave_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            if not hasattr(tf.train, "export_meta_graph"):
                saver.save(sess, str(tmp_path / "m"), global_step=1)
                assert not (tmp_path / "m-1.meta").exists()
                with pytest.raises(NotImplementedError, match="meta graph support"):
                    saver.export_meta_graph(str(tmp_path / "x.meta"))
            calls: list[dict[str, Any]] = []

            def fake_export(**kwargs: Any) -> str:
                calls.append(kwargs)
                return "exported"

            monkeypatch.setattr(tf.train, "export_meta_graph", fake_export, raising=False)
            saver.save(sess, str(tmp_path / "m"), global_step=2, strip_default_attrs=True)
            saver.save(sess, str(tmp_path / "m"), global_step=3, write_meta_graph=False)
    assert len(calls) == 1
    assert calls[0]["filename"] == str(tmp_path / "m-2.meta")
    assert calls[0]["saver_def"] is saver.saver_def
    assert calls[0]["strip_default_attrs"]


# -- restoring never half-restores -----------------------------------------------------------------


def restore_into_fresh_values(path: str, values: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Restore ``path`` into variables initialized to ``values``; returns the exception and the
    values after the attempt."""
    with tf.Graph().as_default():
        vs = make_vars(values)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            try:
                saver.restore(sess, path)
                err = None
            except Exception as e:
                err = e
            return err, {k: sess.run(v) for k, v in vs.items()}


FRESH = {"a": np.full(3, 9.0), "b": np.full((2, 2), 9, np.int32)}


def test_shape_and_dtype_mismatches_name_both_and_restore_nothing(tmp_path: Path) -> None:
    path = saved_file(tmp_path, {"a": np.arange(3.0), "b": np.ones((2, 2), np.int32)})
    err, after = restore_into_fresh_values(
        path, {"a": FRESH["a"], "b": np.full((2, 3), 9, np.int32)}
    )
    assert isinstance(err, errors.InvalidArgumentError)
    assert "lhs shape= [2,3] rhs shape= [2,2]" in str(err)
    assert "variable b" in str(err)
    assert err.op is not None
    assert err.op.name == "save/restore_all"
    assert after["a"].tolist() == [9.0] * 3  # a was valid but is not restored either
    err, after = restore_into_fresh_values(path, {"a": FRESH["a"], "b": np.full((2, 2), 9.0)})
    assert isinstance(err, errors.InvalidArgumentError)
    assert "expected dtype float64 does not equal original dtype int32" in str(err)
    assert after["a"].tolist() == [9.0] * 3
    err, after = restore_into_fresh_values(path, {**FRESH, "c": np.zeros(1)})
    assert isinstance(err, errors.NotFoundError)
    assert "Key c not found in checkpoint" in str(err)
    assert after["a"].tolist() == [9.0] * 3


def read_all(path: str) -> dict[str, Any]:
    with fmt.CheckpointFile(path) as f:
        return f.read(list(f.entries))


def flip(path: str, offset: int) -> None:
    raw = bytearray(Path(path).read_bytes())
    raw[offset] ^= 0x10
    Path(path).write_bytes(bytes(raw))


def test_a_flipped_byte_anywhere_is_data_loss_and_restores_nothing(tmp_path: Path) -> None:
    values = {"a": np.arange(3.0), "b": np.ones((2, 2), np.int32)}
    good = Path(saved_file(tmp_path, values)).read_bytes()
    path = str(tmp_path / "model.ckpt-1")
    index = fmt.CheckpointFile(path)
    entries = dict(index.entries)
    index.close()
    # Every byte of the file: prelude, index, padding, tensor data (flipped in place and back:
    # truncating a file to rewrite it is slow on some file systems).
    fd = os.open(path, os.O_RDWR)
    try:
        for offset in range(len(good)):
            os.pwrite(fd, bytes([good[offset] ^ 0x10]), offset)
            with pytest.raises(errors.DataLossError, match=str(path)) as info:
                read_all(path)
            os.pwrite(fd, good[offset : offset + 1], offset)
            e = entries["a"]
            if e.offset <= offset < e.offset + e.nbytes:
                assert "tensor 'a'" in str(info.value)
                assert "CRC-32C" in str(info.value)
    finally:
        os.close(fd)
    # Through Saver.restore: nothing restored, for data, index and prelude damage.
    for offset in (entries["b"].offset + 1, 60, 3):
        Path(path).write_bytes(good)
        flip(path, offset)
        err, after = restore_into_fresh_values(path, FRESH)
        assert isinstance(err, errors.DataLossError), offset
        assert after["a"].tolist() == [9.0] * 3
        assert after["b"].tolist() == [[9, 9], [9, 9]]


def test_a_truncated_file_is_data_loss_naming_the_cut_tensor(tmp_path: Path) -> None:
    values = {"a": np.arange(100.0), "z": np.arange(50.0)}
    good = Path(saved_file(tmp_path, values)).read_bytes()
    path = str(tmp_path / "model.ckpt-1")
    with fmt.CheckpointFile(path) as f:
        z = f.entries["z"]
    for cut in (0, 5, 31, 32, 100, z.offset - 1, z.offset + 10, len(good) - 1):
        Path(path).write_bytes(good[:cut])
        err, after = restore_into_fresh_values(path, {"a": np.zeros(100), "z": np.zeros(50)})
        assert isinstance(err, errors.DataLossError), cut
        assert path in str(err)
        if cut >= z.offset:
            assert "tensor 'z'" in str(err)
            assert "truncated" in str(err)
        assert not after["a"].any()
        assert not after["z"].any()
    Path(path).write_bytes(good + b"\x00")
    with pytest.raises(errors.DataLossError, match="the file has"):
        fmt.CheckpointFile(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "shape": [2**30, 2**30]}]}, "shape"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "nbytes": 2**60}]}, "bytes"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "offset": 2**60}]}, "offset"),
        (lambda d: {**d, "file_size": 2**60}, "file_size"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "shape": [-1]}]}, "bad shape"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "shape": [True]}]}, "bad shape"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "dtype": "object"}]}, "unknown dtype"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "crc32c": 2**40}]}, "bad crc32c"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "extra": 1}]}, "wrong fields"),
        (lambda d: {**d, "tensors": d["tensors"] * 2}, "offset"),
        (lambda d: {**d, "tensors": [{**d["tensors"][0], "name": ""}]}, "no name"),
        (lambda d: {**d, "version": 2}, "format name or version"),
        (lambda d: [d], "not a checkpoint index"),
        (lambda d: b'{"format": NaN}', "NaN"),
        (lambda d: b'{"format": 1, "format": 2}', "duplicate key"),
        (lambda d: b"[" * 100000, "corrupt index"),
        (lambda d: b"\xff\xfe", "corrupt index"),
        (lambda d: b'{"a": 1' + b"9" * 5000 + b"}", "corrupt index"),
    ],
)
def test_a_hostile_index_with_a_valid_checksum_is_data_loss_before_any_allocation(
    tmp_path: Path, edit: Any, message: str
) -> None:
    path = saved_file(tmp_path, {"a": np.arange(4.0)})
    rewrite_index(path, edit)
    with pytest.raises(errors.DataLossError, match=message):
        read_all(path)


def test_hostile_prelude_and_tensor_bytes_are_data_loss(tmp_path: Path) -> None:
    path = saved_file(tmp_path, {"a": np.arange(4.0)})
    raw = Path(path).read_bytes()
    huge = raw[:16] + struct.pack("<Q", 2**60) + raw[24:]
    Path(path).write_bytes(huge)
    with pytest.raises(errors.DataLossError, match="declares a 1152921504606846976-byte index"):
        fmt.CheckpointFile(path)
    Path(path).write_bytes(b"PK\x03\x04 not a checkpoint at all" * 4)
    with pytest.raises(errors.DataLossError, match="bad magic"):
        fmt.CheckpointFile(path)
    Path(path).write_bytes(b"")
    with pytest.raises(errors.DataLossError, match="truncated"):
        fmt.CheckpointFile(path)
    head = bytearray(raw[:28])
    head[8] = 9  # a future version, with a valid checksum
    n = struct.unpack_from("<Q", raw, 16)[0]
    index = raw[32 : 32 + n]
    Path(path).write_bytes(
        bytes(head) + struct.pack("<I", core.crc32c(bytes(head) + index)) + raw[32:]
    )
    with pytest.raises(errors.DataLossError, match="format version 9"):
        fmt.CheckpointFile(path)

    def with_data(name: str, dtype: str, shape: list[int], data: bytes) -> str:
        p = str(tmp_path / name)
        fmt.write_checkpoint(p, [("t", "uint8", np.frombuffer(data, np.uint8))])

        def edit(d: Any) -> Any:
            d["tensors"][0].update(dtype=dtype, shape=shape)
            return d

        rewrite_index(p, edit)
        return p

    bad_bool = with_data("bool", "bool", [2], b"\x01\x02")
    with pytest.raises(errors.DataLossError, match="neither 0 nor 1"):
        read_all(bad_bool)
    # Two strings whose lengths add up to 2**64 + 2 (wrapping) over a 2-byte blob.
    lengths = struct.pack("<QQ", 2**63 + 1, 2**63 + 1)
    wrap = with_data("wrap", "string", [2], lengths + b"ab")
    with pytest.raises(errors.DataLossError, match="string lengths"):
        read_all(wrap)
    short = with_data("short", "string", [2], struct.pack("<QQ", 1, 5) + b"ab")
    with pytest.raises(errors.DataLossError, match="string lengths"):
        read_all(short)
    many = with_data("many", "string", [2**40], b"")
    with pytest.raises(errors.DataLossError, match="strings need at least"):
        fmt.CheckpointFile(many)


def test_a_failed_save_leaves_the_previous_checkpoint_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tf.Graph().as_default():
        v, inc = counter_graph()
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            good = saver.save(sess, str(tmp_path / "m"), global_step=1)
            sess.run(inc)

            def disk_full(fd: int) -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            monkeypatch.setattr(os, "fsync", disk_full)
            with pytest.raises(OSError, match="No space left"):
                saver.save(sess, str(tmp_path / "m"), global_step=2)
            with pytest.raises(OSError, match="No space left"):  # the same name again
                saver.save(sess, str(tmp_path / "m"), global_step=1)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-1", "m-1.meta"]
    assert saver.last_checkpoints == [good]
    assert tf.train.latest_checkpoint(str(tmp_path)) == good
    assert tf.train.load_variable(good, "v") == 0


def test_a_reader_opened_before_a_save_reads_the_old_file_whole(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    fmt.write_checkpoint(path, [("x", "float64", np.zeros(10))])
    with fmt.CheckpointFile(path) as old:
        fmt.write_checkpoint(path, [("x", "float64", np.ones(1000))])
        assert old.read(["x"])["x"].tolist() == [0.0] * 10
    with fmt.CheckpointFile(path) as new:
        assert new.read(["x"])["x"].sum() == 1000


def test_crc32c_matches_the_standard_check_value_on_both_paths() -> None:
    assert core.crc32c(b"123456789") == 0xE3069283 == core.crc32c_portable(b"123456789")
    assert core.crc32c(b"") == 0
    rng = np.random.default_rng(0)
    data = rng.bytes(5000)
    for start, stop in [(0, 5000), (1, 4000), (3, 11), (7, 7)]:
        piece = data[start:stop]
        assert core.crc32c(memoryview(data)[start:stop]) == core.crc32c_portable(piece)
        half = len(piece) // 2
        assert core.crc32c(piece[half:], core.crc32c(piece[:half])) == core.crc32c(piece)
    with pytest.raises(ValueError, match="contiguous"):
        core.crc32c(np.zeros(8)[::2])


# -- killed while saving ---------------------------------------------------------------------------

# A process that imports opweave and builds the graph once, then forks a child per line of stdin
# ("<first step> <die at>"); the child says "go" when it starts saving and "saved <seconds>" after
# each save of steps first, first+1, ... until it is killed (or, with "die at" n > 0, kills
# itself just before the n-th file system call of its first save). The zygote says "pid <pid>",
# waits for the child and says "reaped <status>"; forking keeps each trial to milliseconds.
ZYGOTE = r"""
import os, signal, sys, time
import numpy as np
import opweave as tf

d, n = sys.argv[1], int(sys.argv[2])
base = np.random.default_rng(0).standard_normal(n).astype(np.float32)
g = tf.Graph()
with g.as_default():
    big = tf.Variable(np.zeros(n, np.float32), name="big")
    step = tf.Variable(np.int64(0), name="step")
    value, k = tf.placeholder(tf.float32, [n]), tf.placeholder(tf.int64, [])
    set_state = [big.assign(value), step.assign(k)]
    saver = tf.train.Saver(max_to_keep=3)

def child(first, die_at):
    if die_at:
        calls = [0]
        def dying(fn):
            def wrapper(*args, **kwargs):
                calls[0] += 1
                if calls[0] == die_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return fn(*args, **kwargs)
            return wrapper
        for name in ("open", "fsync", "replace", "remove", "unlink"):
            setattr(os, name, dying(getattr(os, name)))
    with g.as_default(), tf.Session() as sess:
        state = tf.train.get_checkpoint_state(d)
        if state is not None:
            saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
        s = first
        while True:
            sess.run(set_state, {value: base + np.float32(s), k: s})
            if s == first:
                print("go", flush=True)
            t = time.perf_counter()
            saver.save(sess, os.path.join(d, "model.ckpt"), global_step=s)
            print("saved", time.perf_counter() - t, flush=True)
            if die_at:
                os._exit(0)
            s += 1

print("ready", flush=True)
for line in sys.stdin:
    first, die_at = map(int, line.split())
    pid = os.fork()
    if pid == 0:
        try:
            child(first, die_at)
        finally:
            os._exit(3)
    print("pid", pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print("reaped", status, flush=True)
"""


def check_directory(d: str, base: Any, saver: Any, sess: Any, v: Any, s: Any) -> int:
    """latest_checkpoint names a complete checkpoint holding exactly one of the saved states, and
    every checkpoint the state file lists is there and whole; returns the latest step (-1: none
    yet)."""
    latest = tf.train.latest_checkpoint(d)
    if latest is None:
        assert not any(
            f.startswith("model.ckpt-") and fmt.TEMP_MARK not in f for f in os.listdir(d)
        ), os.listdir(d)
        return -1
    state = tf.train.get_checkpoint_state(d)
    assert state is not None
    assert state.all_model_checkpoint_paths[-1] == latest
    saver.restore(sess, latest)
    k = int(latest.rsplit("-", 1)[1])
    assert sess.run(s) == k
    assert np.array_equal(sess.run(v), base + np.float32(k))
    # The older ones were checked when they were the latest, and a save never rewrites a name
    # the state file lists (each child starts after the latest step): their index and size
    # suffice.
    for path in state.all_model_checkpoint_paths[:-1]:
        with fmt.CheckpointFile(path) as f:
            assert set(f.entries) == {"big", "step"}
    return k


def test_a_save_killed_at_any_moment_leaves_the_latest_checkpoint_complete(
    tmp_path: Path,
) -> None:
    n = 1 << 20  # 4 MiB: a save takes long enough to be killed in the middle of writing
    base = np.random.default_rng(0).standard_normal(n).astype(np.float32)  # as the zygote's
    (tmp_path / "ckpt").mkdir()
    d = str(tmp_path / "ckpt")
    # stderr to a file: a pipe nobody reads could fill up and block the children.
    err_path = tmp_path / "zygote.err"
    with open(err_path, "w") as err:
        zygote = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-c", ZYGOTE, d, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    out_fd = zygote.stdout.fileno()
    pending = bytearray()
    transcript: list[str] = []

    def why() -> str:
        return (
            f"files: {sorted(os.listdir(d))}\nlast lines: {transcript[-30:]}\n"
            f"stderr: {err_path.read_text()[-3000:]}"
        )

    def send(command: str) -> None:
        transcript.append("> " + command)
        zygote.stdin.write(command.encode() + b"\n")  # type: ignore[union-attr]
        zygote.stdin.flush()  # type: ignore[union-attr]

    def receive() -> str:
        """The zygote's next line; a failure (not a hang) when none comes within 60 s."""
        deadline = time.monotonic() + 60
        while b"\n" not in pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out_fd], [], [], left)[0]:
                pytest.fail(f"no word from the zygote for 60 s\n{why()}")
            chunk = os.read(out_fd, 4096)
            if not chunk:
                pytest.fail(f"the zygote died\n{why()}")
            pending.extend(chunk)
        line, _, rest = bytes(pending).partition(b"\n")
        pending[:] = rest
        transcript.append(line.decode())
        return line.decode()

    try:
        assert receive() == "ready"
        with tf.Graph().as_default():
            v = tf.Variable(np.zeros(n, np.float32), name="big")
            s = tf.Variable(np.int64(0), name="step")
            saver = tf.train.Saver()
            with tf.Session() as sess:
                save_times: list[float] = []

                def trial(first: int, die_at: int, kill_after: float | None) -> int:
                    """Run one child; with ``kill_after``, SIGKILL it that long after it starts
                    saving. Returns its wait status."""
                    send(f"{first} {die_at}")
                    pid, go = None, False
                    while True:
                        word, *rest = receive().split()
                        if word == "pid":
                            pid = int(rest[0])
                        elif word == "go":
                            go = True
                        elif word == "saved":
                            save_times.append(float(rest[0]))
                        elif word == "reaped":
                            return int(rest[0])
                        if kill_after is not None and pid is not None and go:
                            time.sleep(kill_after)
                            transcript.append(f"kill {pid} after {kill_after:.3f} s")
                            os.kill(pid, signal.SIGKILL)
                            kill_after = None

                # A first complete save.
                assert trial(0, 1000, None) == 0, why()
                latest = check_directory(d, base, saver, sess, v, s)
                assert latest == 0
                # Deterministic: die before each file system call of a save (there are ~12).
                die_at = 1
                while True:
                    status = trial(latest + 1, die_at, None)
                    latest = check_directory(d, base, saver, sess, v, s)
                    if status == 0:
                        break
                    assert os.WIFSIGNALED(status), f"status {status}\n{why()}"
                    assert os.WTERMSIG(status) == signal.SIGKILL
                    die_at += 1
                assert die_at > 8  # the save's calls were all visited
                # Random: 40 kills spread over the time of a few saves (most land while data is
                # written or synced). The window follows how long saves take on this machine and
                # widens while kills keep landing before the first save ends (a loaded machine).
                rng = random.Random(1234)
                steps_seen = {latest}
                widen = 1.0
                for _ in range(40):
                    window = 2.5 * widen * float(np.median(save_times[-8:]))
                    status = trial(latest + 1, 0, rng.uniform(0.0, window))
                    assert os.WIFSIGNALED(status), f"status {status}\n{why()}"
                    previous, latest = latest, check_directory(d, base, saver, sess, v, s)
                    steps_seen.add(latest)
                    widen = 1.0 if latest > previous else min(widen * 1.5, 8.0)
                # Some kills came after saves completed, some in the middle of writing one.
                assert len(steps_seen) > 5, f"steps {sorted(steps_seen)}, saves {save_times}"
                leftovers = [f for f in os.listdir(d) if f.startswith("model.ckpt-")]
                assert any(fmt.TEMP_MARK in f for f in leftovers), why()
    finally:
        zygote.kill()
        zygote.communicate()


# -- the example program and docstrings ------------------------------------------------------------


def test_the_save_restore_example_continues_training_exactly(tmp_path: Path) -> None:
    from opweave.examples import save_restore

    first = save_restore.train(str(tmp_path), steps=4)
    second = save_restore.train(str(tmp_path), steps=4, resume=True)
    (tmp_path / "straight").mkdir()
    straight = save_restore.train(str(tmp_path / "straight"), steps=8)
    assert first["losses"] + second["losses"] == straight["losses"]
    assert second["global_step"] == 8
    assert second["path"].endswith("model.ckpt-8")
    assert second["losses"][0] < first["losses"][0]


def test_the_save_restore_example_runs_as_a_script_with_a_new_process(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(tf.__file__).parent.parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "opweave.examples.save_restore",
            "--steps",
            "5",
            "--dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "equal those of training without the interruption: True" in out.stdout
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-10")


@pytest.mark.parametrize(
    "module",
    [
        "opweave.train.saver",
        "opweave.train.checkpoint_management",
        "opweave.train.checkpoint_utils",
        "opweave.train._checkpoint_format",
        "opweave.examples.save_restore",
    ],
)
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
