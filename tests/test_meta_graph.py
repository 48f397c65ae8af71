"""Meta graphs: ``train.export_meta_graph`` / ``import_meta_graph`` with TensorFlow 1's semantics
(graph, saver, collections), ``Saver.save``'s ``.meta`` files, training that resumes in a new
process from the meta graph alone, hostile files that import nothing, and graphs that pickle with
their seed and collections. TensorFlow's side is in tests/test_meta_graph_tf.py."""

from __future__ import annotations

import doctest
import importlib
import json
import logging
import os
import pickle
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("google.protobuf", reason="protobuf is not installed (extra: graphdef)")

import opweave as tf
from opweave import errors
from opweave.graphdef import GraphDefError
from opweave.graphdef._protos import messages

PROGRAMS = Path(__file__).parent / "programs"
FEED_X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
FEED_Y = np.ones((4, 1), np.float32)


def build_model() -> dict[str, Any]:
    """A small training graph with every kind of collection TensorFlow 1 programs fill."""
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", initializer=np.full((3, 1), 0.5, np.float32))
    b = tf.Variable([0.1], name="b")
    counter = tf.Variable(0, name="counter", trainable=False, collections=["local_variables"])
    model_var = tf.Variable(1.0, name="model_var", collections=["variables", "model_variables"])
    pred = tf.identity(tf.matmul(x, w) + b, name="pred")
    loss = tf.reduce_mean(tf.reduce_sum(tf.square(pred - y), axis=1), name="loss")
    tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
    tf.add_to_collection("ints", 3)
    tf.add_to_collection("ints", -(2**40))
    tf.add_to_collection("floats", 0.25)
    tf.add_to_collection("strings", "caf\xe9")
    tf.add_to_collection("python_objects", object())  # no CollectionDef form: left out
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
    return {
        "x": x,
        "y": y,
        "w": w,
        "b": b,
        "counter": counter,
        "model_var": model_var,
        "loss": loss,
        "train": train,
        "step": step,
    }


def graph_summary(g: tf.Graph) -> tuple[list[str], dict[str, list[str]]]:
    """The graph's op names and its collections' item names (what must not change on errors)."""
    ops = [op.name for op in g.get_operations()]
    cols = {
        k: [getattr(i, "name", repr(i)) for i in g.get_collection(k)]
        for k in g.get_all_collection_keys()
    }
    return ops, cols


# -- export -----------------------------------------------------------------------------------


def test_export_writes_tensorflows_collection_forms(caplog: pytest.LogCaptureFixture) -> None:
    with tf.Graph().as_default() as g:
        m = build_model()
        with caplog.at_level(logging.WARNING):
            meta = tf.train.export_meta_graph()
    cols = meta.collection_def
    assert sorted(cols) == sorted(
        [
            "variables",
            "trainable_variables",
            "local_variables",
            "model_variables",
            "global_step",
            "train_op",
            "losses",
            "ints",
            "floats",
            "strings",
        ]
    )
    assert "python_objects" in caplog.text
    assert "__variable_scopes" not in caplog.text
    vd = messages().VariableDef.FromString(cols["trainable_variables"].bytes_list.value[0])
    assert (vd.variable_name, vd.initializer_name, vd.snapshot_name, vd.trainable) == (
        "layer/w:0",
        "layer/w/Assign",
        "layer/w/read:0",
        True,
    )
    assert vd.initial_value_name == m["w"].initial_value.name
    assert list(cols["train_op"].node_list.value) == [m["train"].name]
    assert list(cols["losses"].node_list.value) == ["loss:0"]
    assert list(cols["ints"].int64_list.value) == [3, -(2**40)]
    assert list(cols["floats"].float_list.value) == [0.25]
    assert list(cols["strings"].bytes_list.value) == ["caf\xe9".encode()]
    assert len(cols["variables"].bytes_list.value) == len(g.get_collection("variables"))
    assert meta.graph_def == g.as_graph_def(add_shapes=True)
    assert not meta.HasField("saver_def")
    assert meta.meta_info_def.tensorflow_git_version.startswith("opweave ")
    assert meta.meta_info_def.tensorflow_version == ""


def test_export_options_scope_devices_savers_and_default_attrs(tmp_path: Path) -> None:
    with tf.Graph().as_default() as g:
        with tf.device("/CPU:0"):
            outside = tf.placeholder(tf.float32, [2], name="outside")
        with tf.name_scope("tower"):
            v = tf.Variable([1.0, 2.0], name="v")
            tf.identity(v + outside, name="out")
        tf.Variable(0.0, name="other")
        first = tf.train.Saver(name="first")
        tf.train.Saver(name="second")
        tf.add_to_collection(tf.GraphKeys.SAVERS, first)
        scoped = tf.train.export_meta_graph(export_scope="tower", clear_devices=True)
        assert {n.name for n in scoped.graph_def.node} == {
            "v/initial_value",
            "v",
            "v/Assign",
            "v/read",
            "add",
            "out",
        }
        add = next(n for n in scoped.graph_def.node if n.name == "add")
        assert list(add.input) == ["v/read", "$unbound_inputs_outside"]
        assert list(scoped.collection_def["unbound_inputs"].bytes_list.value) == [
            b"$unbound_inputs_outside"
        ]
        vd = messages().VariableDef.FromString(
            scoped.collection_def["variables"].bytes_list.value[0]
        )
        assert vd.variable_name == "v:0"
        assert all(n.device == "" for n in scoped.graph_def.node)
        lean = tf.train.export_meta_graph(
            saver_def=first.saver_def, clear_extraneous_savers=True, strip_default_attrs=True
        )
        names = {n.name for n in lean.graph_def.node}
        assert "first/restore_all" in names
        assert not any(n.startswith("second/") for n in names)
        assert lean.meta_info_def.stripped_default_attrs
        assign = next(n for n in lean.graph_def.node if n.name == "first/Assign")
        assert "use_locking" not in assign.attr  # True, the default
        assert lean.saver_def.restore_op_name == "first/restore_all"
    # A scoped export imports under a new scope, its unbound input mapped to a tensor there.
    with tf.Graph().as_default() as g2:
        feed = tf.constant([10.0, 20.0], name="feed")
        with pytest.raises(ValueError, match="unbound inputs: \\$unbound_inputs_outside"):
            tf.train.import_meta_graph(scoped, import_scope="copy")
        tf.train.import_meta_graph(
            scoped, import_scope="copy", input_map={"$unbound_inputs_outside": feed}
        )
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run("copy/out:0").tolist() == [11.0, 22.0]
        # Default attributes come back from the op definitions.
        tf.train.import_meta_graph(lean, import_scope="lean")
        assert g2.get_operation_by_name("lean/first/Assign").get_attr("use_locking") is True
    assert g is not g2


def test_export_arguments_are_checked() -> None:
    with tf.Graph().as_default():
        tf.Variable(1.0)
        with pytest.raises(TypeError, match="saver_def must be of type SaverDef"):
            tf.train.export_meta_graph(saver_def="save/restore_all")
        with pytest.raises(TypeError, match="graph must be of type Graph"):
            tf.train.export_meta_graph(graph="g")
        with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
            tf.train.export_meta_graph(bogus=1)
        with pytest.raises(TypeError, match="meta_info_def must be of type MetaInfoDef"):
            tf.train.export_meta_graph(meta_info_def=b"x")
        with pytest.raises(TypeError, match="collection_list"):
            tf.train.export_meta_graph(collection_list="variables")


# -- import -----------------------------------------------------------------------------------


def test_import_restores_variables_collections_and_a_saver_that_trains_on(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        m = build_model()
        saver = tf.train.Saver(max_to_keep=7)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feed = {m["x"]: FEED_X, m["y"]: FEED_Y}
            for _ in range(3):
                sess.run(m["train"], feed)
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=m["step"])
            want = [float(sess.run([m["loss"], m["train"]], feed)[0]) for _ in range(3)]
        keys = tf.get_default_graph().get_all_collection_keys()
        names = {
            k: [getattr(v, "name", v) for v in tf.get_collection(k)]
            for k in keys
            if k != "python_objects" and not k.startswith("__")
        }
    assert path is not None
    assert Path(path + ".meta").is_file()
    with tf.Graph().as_default() as g:
        restored = tf.train.import_meta_graph(path + ".meta")
        assert restored is not None
        assert restored.saver_def.restore_op_name == "save/restore_all"
        assert restored.saver_def.max_to_keep == 7
        for key, items in names.items():
            got = [getattr(i, "name", i) for i in tf.get_collection(key)]
            # Strings come back as bytes, as in TensorFlow (a CollectionDef's bytes_list).
            assert got == (items if key != "strings" else ["caf\xe9".encode()]), key
        assert tf.get_collection("ints") == [3, -(2**40)]
        # One Variable object per variable, whichever collections list it.
        w = tf.trainable_variables()[0]
        assert isinstance(w, tf.Variable)
        assert w is tf.global_variables()[0]
        assert [v.trainable for v in tf.global_variables()][:3] == [True, True, True]
        assert tf.local_variables()[0].name == "counter:0"
        assert tf.model_variables()[0].name == "model_var:0"
        assert tf.train.get_global_step() is next(
            v for v in tf.global_variables() if v.name == "global_step:0"
        )
        assert w.initial_value is not None
        assert w.initializer.type == "Assign"
        loss = tf.get_collection(tf.GraphKeys.LOSSES)[0]
        train = tf.get_collection(tf.GraphKeys.TRAIN_OP)[0]
        with tf.Session() as sess:
            restored.restore(sess, path)
            assert sess.run(tf.train.get_global_step()) == 3
            feed = {"x:0": FEED_X, "y:0": FEED_Y}
            got = [float(sess.run([loss, train], feed)[0]) for _ in range(3)]
        assert got == want  # bit for bit: the same graph, the same state
    assert len(g.get_operations()) > 50


def test_the_initializers_of_imported_variables_work() -> None:
    with tf.Graph().as_default():
        build_model()
        meta = tf.train.export_meta_graph()
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(meta) is not None  # variables but no SaverDef: Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.local_variables_initializer())
            assert sess.run("layer/w:0").tolist() == [[0.5]] * 3
            assert sess.run(tf.report_uninitialized_variables()).size == 0


def test_import_scope_prefixes_names_and_the_saver_works_there(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver(name="ckpt")
        meta = saver.export_meta_graph()
    with tf.Graph().as_default() as g:
        first = tf.train.import_meta_graph(meta, import_scope="a")
        second = tf.train.import_meta_graph(meta, import_scope="a")  # made unique: a_1
        assert first is not None
        assert second is not None
        assert [x.name for x in tf.global_variables()] == ["a/v:0", "a_1/v:0"]
        assert second.saver_def.restore_op_name == "a_1/ckpt/restore_all"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(g.get_tensor_by_name("a_1/v:0"), [5.0, 6.0]))
            path = second.save(sess, str(tmp_path / "m"))
            sess.run(tf.global_variables_initializer())
            second.restore(sess, path)
            assert sess.run("a/v:0").tolist() == [1.0, 2.0]
            assert sess.run("a_1/v:0").tolist() == [5.0, 6.0]
    assert tf.train.list_variables(path) == [("v", [2])]
    assert v.name == "v:0"


def test_importing_twice_without_a_scope_refers_to_the_new_ops(tmp_path: Path) -> None:
    # The second import's names get _1 (as TensorFlow's); unlike TensorFlow, its collections and
    # saver refer to the ops it made, not to the first import's of the same name.
    with tf.Graph().as_default():
        tf.Variable([1.0], name="v")
        meta = tf.train.Saver().export_meta_graph()
    with tf.Graph().as_default():
        first = tf.train.import_meta_graph(meta)
        second = tf.train.import_meta_graph(meta)
        assert first is not None
        assert second is not None
        assert [x.name for x in tf.global_variables()] == ["v:0", "v_1:0"]
        with tf.name_scope("outer"):
            third = tf.train.import_meta_graph(meta)  # the current name scope, as TensorFlow
        assert tf.global_variables()[-1].name == "outer/v:0"
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(tf.global_variables()[1], [7.0]))
            path = second.save(sess, str(tmp_path / "m"))
            sess.run(tf.global_variables_initializer())
            second.restore(sess, path)
            assert [float(sess.run(v)[0]) for v in tf.global_variables()] == [1.0, 7.0, 1.0]
        assert third is not None


def test_import_options_devices_predicate_and_graph(tmp_path: Path) -> None:
    with tf.Graph().as_default():
        with tf.device("/CPU:0"):
            tf.Variable(1.0, name="v")
        tf.add_to_collection("keep", 1)
        tf.add_to_collection("drop", 2)
        path = str(tmp_path / "g.meta")
        tf.train.export_meta_graph(path, as_text=True)
    assert Path(path).read_text().lstrip().startswith(("meta_info_def", "graph_def"))
    target = tf.Graph()
    saver = tf.train.import_meta_graph(
        path,
        clear_devices=True,
        graph=target,
        restore_collections_predicate=lambda key: key != "drop",
    )
    assert saver is not None
    assert target.get_operation_by_name("v").device == ""
    assert target.get_collection("keep") == [1]
    assert target.get_collection("drop") == []
    assert tf.get_default_graph() is not target
    with tf.Graph().as_default():
        tf.train.import_meta_graph(path)
        assert tf.get_default_graph().get_operation_by_name("v").device == "/device:CPU:0"
    with tf.Graph().as_default():
        assert tf.train.import_meta_graph(tf.train.export_meta_graph()) is None  # nothing to save
        with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
            tf.train.import_meta_graph(path, bogus=1)
        with pytest.raises(FileNotFoundError, match="does not exist"):
            tf.train.import_meta_graph(str(tmp_path / "missing.meta"))


def test_saver_save_writes_the_meta_graph_atomically_beside_the_checkpoint(
    tmp_path: Path,
) -> None:
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=1)
        with tf.Session() as sess:
            sess.run(v.initializer)
            saver.save(sess, str(tmp_path / "m"), global_step=1)
            saver.save(sess, str(tmp_path / "m"), global_step=2)
            saver.save(sess, str(tmp_path / "n"), write_meta_graph=False, write_state=False)
            saver.save(sess, str(tmp_path / "s"), meta_graph_suffix="mg", write_state=False)
    # Only complete files, no temporary ones; the deleted checkpoint's meta graph went with it.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint",
        "m-2",
        "m-2.meta",
        "n",
        "s",
        "s.mg",
    ]
    parsed = messages().MetaGraphDef.FromString((tmp_path / "m-2.meta").read_bytes())
    assert parsed.saver_def.restore_op_name == "save/restore_all"
    assert parsed == messages().MetaGraphDef.FromString((tmp_path / "s.mg").read_bytes())


def test_a_py_function_leaves_the_checkpoint_and_skips_the_meta_graph_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with tf.Graph().as_default():
        v = tf.Variable(1.0, name="v")
        tf.py_function(lambda a: a, [v.value()], tf.float32)
        saver = tf.train.Saver()
        with tf.Session() as sess, caplog.at_level(logging.WARNING):
            sess.run(v.initializer)
            path = saver.save(sess, str(tmp_path / "m"))
        with pytest.raises(ValueError, match="PyFunc"):
            tf.train.export_meta_graph()
    assert path is not None
    assert Path(path).is_file()
    assert not Path(path + ".meta").exists()
    assert "was not written" in caplog.text
    assert "PyFunc" in caplog.text


def test_resuming_in_a_new_process_from_the_meta_graph_alone(tmp_path: Path) -> None:
    """tests/programs/meta_graph_resume.py: train and save in one process, import the meta graph,
    restore and train on in another; the losses are those of training without a break."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(tf.__file__).parent.parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    outputs = []
    for mode in ("train", "resume"):
        proc = subprocess.run(
            [sys.executable, str(PROGRAMS / "meta_graph_resume.py"), mode, str(tmp_path),
             "--steps", "4"],
            capture_output=True, text=True, timeout=120, env=env, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        outputs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    program = runpy.run_path(str(PROGRAMS / "meta_graph_resume.py"), run_name="program")
    assert outputs[0]["losses"] + outputs[1]["losses"] == program["uninterrupted"](tf, 8)
    assert outputs[1]["start"] == 4
    assert outputs[1]["trainable"] == ["hidden/weights:0", "hidden/biases:0", "out_weights:0"]
    assert "hidden/weights/Adam:0" in outputs[1]["global"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-8")


# -- malformed and hostile meta graphs import nothing ------------------------------------------


def _meta_with_saver() -> Any:
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0], name="v")
        tf.add_to_collection("outs", tf.constant(1.0, name="c"))
        return tf.train.Saver().export_meta_graph()


def _edit(meta: Any, fn: Any) -> Any:
    copy = messages().MetaGraphDef()
    copy.CopyFrom(meta)
    fn(copy)
    return copy


def _hostile_cases() -> dict[str, tuple[Any, type[Exception], str]]:
    meta = _meta_with_saver()
    m = messages()

    def var_def(**fields: Any) -> bytes:
        vd = m.VariableDef.FromString(meta.collection_def["variables"].bytes_list.value[0])
        for k, v in fields.items():
            setattr(vd, k, v)
        return bytes(vd.SerializeToString())

    def set_var(data: bytes) -> Any:
        def fn(c: Any) -> None:
            c.collection_def["variables"].bytes_list.value[0] = data

        return fn

    def sliced(c: Any) -> None:
        vd = m.VariableDef.FromString(c.collection_def["variables"].bytes_list.value[0])
        vd.save_slice_info_def.full_name = "v"
        c.collection_def["variables"].bytes_list.value[0] = vd.SerializeToString()

    def node(name: str) -> Any:
        return lambda c: next(n for n in c.graph_def.node if n.name == name)

    data = meta.SerializeToString()
    return {
        "random bytes": (os.urandom(64) + b"\xff" * 8, errors.DataLossError, "not a valid"),
        "truncated": (data[: len(data) // 2], errors.DataLossError, "not a valid"),
        "variable def garbage": (
            _edit(meta, set_var(b"\xff\xff\xff")),
            errors.DataLossError,
            "not a VariableDef",
        ),
        "variable names a missing node": (
            _edit(meta, set_var(var_def(variable_name="nowhere:0"))),
            GraphDefError,
            "nowhere:0",
        ),
        "variable is a constant": (
            _edit(meta, set_var(var_def(variable_name="v/initial_value:0"))),
            GraphDefError,
            "not a VariableV2",
        ),
        "variable's read is an op name": (
            _edit(meta, set_var(var_def(snapshot_name="v/read"))),
            GraphDefError,
            "must name a tensor",
        ),
        "variable output index out of range": (
            _edit(meta, set_var(var_def(snapshot_name="v/read:5"))),
            GraphDefError,
            "v/read:5",
        ),
        "partitioned variable": (_edit(meta, sliced), GraphDefError, "partitioned"),
        "collection names a missing op": (
            _edit(meta, lambda c: c.collection_def["outs"].node_list.value.append("ghost:0")),
            GraphDefError,
            "ghost:0",
        ),
        "saver names a missing op": (
            _edit(meta, lambda c: setattr(c.saver_def, "restore_op_name", "save/nothing")),
            GraphDefError,
            "save/nothing",
        ),
        "saver restore op is not a NoOp": (
            _edit(meta, lambda c: setattr(c.saver_def, "restore_op_name", "v/Assign")),
            GraphDefError,
            "not a saver",
        ),
        "saver restores through a missing op": (
            _edit(meta, lambda c: node("save/restore_all")(c).input.__setitem__(0, "^ghost")),
            GraphDefError,
            "'ghost', which is not an Assign",
        ),
        "a TensorFlow saver scope without save ops": (
            _edit(meta, lambda c: setattr(node("save/restore_value")(c), "op", "RestoreV2")),
            GraphDefError,
            "no save op in 'save'",
        ),
        "saver with negative max_to_keep": (
            _edit(meta, lambda c: setattr(c.saver_def, "max_to_keep", -3)),
            GraphDefError,
            "max_to_keep",
        ),
        "saver with NaN hours": (
            _edit(meta, lambda c: setattr(c.saver_def, "keep_checkpoint_every_n_hours", math_nan)),
            GraphDefError,
            "keep_checkpoint_every_n_hours",
        ),
        "an op opweave lacks": (
            _edit(meta, lambda c: setattr(node("v/read")(c), "op", "NoSuchOp")),
            errors.NotFoundError,
            "NoSuchOp",
        ),
        "a cycle": (
            _edit(
                meta,
                lambda c: (
                    node("v/initial_value")(c).input.append("^v/read"),
                    node("v/read")(c).input.append("^v/Assign"),
                ),
            ),
            GraphDefError,
            "cycle",
        ),
        "savers collection garbage": (
            _edit(meta, lambda c: c.collection_def["savers"].bytes_list.value.append(b"\x0a\xff")),
            errors.DataLossError,
            "not a SaverDef",
        ),
    }


math_nan = float("nan")
HOSTILE = _hostile_cases()


@pytest.mark.parametrize("case", list(HOSTILE))
def test_malformed_meta_graphs_are_clear_errors_and_import_nothing(
    case: str, tmp_path: Path
) -> None:
    value, error, match = HOSTILE[case]
    with tf.Graph().as_default() as g:
        tf.Variable(3.0, name="existing")
        tf.add_to_collection("outs", 1)
        before = graph_summary(g)
        for source in (value, None):
            if source is None:  # the same through a file
                path = tmp_path / "hostile.meta"
                path.write_bytes(value if isinstance(value, bytes) else value.SerializeToString())
                source = str(path)
            with pytest.raises(error, match=match) as info:
                tf.train.import_meta_graph(source, import_scope="imp")
            assert isinstance(
                info.value,
                (errors.DataLossError, errors.InvalidArgumentError, errors.NotFoundError),
            )
            assert graph_summary(g) == before
        assert g.unique_name("imp") == "imp"  # not even the scope's name was taken


def test_a_text_file_that_is_not_a_meta_graph_is_data_loss(tmp_path: Path) -> None:
    path = tmp_path / "x.meta"
    path.write_text("graph_def { node { name: 'a' op: 'Const' } nonsense: 1 }")
    with tf.Graph().as_default(), pytest.raises(errors.DataLossError, match="text format"):
        tf.train.import_meta_graph(str(path))


def test_a_finalized_graph_refuses_an_import() -> None:
    meta = _meta_with_saver()
    g = tf.Graph()
    g.finalize()
    with pytest.raises(RuntimeError, match="finalized"):
        tf.train.import_meta_graph(meta, graph=g)


# -- variables as protos, graphs as pickles ---------------------------------------------------


def test_variable_to_proto_and_back() -> None:
    with tf.Graph().as_default():
        with tf.name_scope("scope"):
            v = tf.Variable([1.0], name="v", trainable=False)
        proto = v.to_proto()
        assert proto.variable_name == "scope/v:0"
        assert not proto.trainable
        assert v.to_proto(export_scope="elsewhere") is None
        assert v.to_proto(export_scope="scope").variable_name == "v:0"
        same = tf.Variable(variable_def=proto)
        assert (same.name, same.op, same.initializer, same.value()) == (
            v.name,
            v.op,
            v.initializer,
            v.value(),
        )
        assert same.initial_value is v.initial_value
        assert not same.trainable
        scoped = tf.Variable.from_proto(v.to_proto(export_scope="scope"), import_scope="scope")
        assert scoped.op is v.op
        with pytest.raises(ValueError, match="mutually exclusive"):
            tf.Variable(1.0, variable_def=proto)
        with pytest.raises(TypeError, match="VariableDef"):
            tf.Variable(variable_def="scope/v:0")


def test_a_graph_pickles_with_its_seed_and_collections() -> None:
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(42)
        m = build_model()
    copy = pickle.loads(pickle.dumps(g))
    assert copy.seed == 42
    assert [v.name for v in copy.get_collection("variables")] == [
        v.name for v in g.get_collection("variables")
    ]
    assert copy.get_collection("ints") == [3, -(2**40)]
    assert copy.get_collection("train_op")[0].name == m["train"].name
    assert copy.get_collection("python_objects") == []
    with copy.as_default(), tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.get_collection("train_op"), {"x:0": FEED_X, "y:0": FEED_Y})
        assert sess.run(tf.train.get_global_step()) == 1


@pytest.mark.parametrize(
    "module", ["opweave.train.meta_graph", "opweave.graphdef._meta_graph", "opweave.graph_util"]
)
def test_docstring_examples_hold(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
