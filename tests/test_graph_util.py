"""``opweave.graph_util`` (TensorFlow 1's ``tf.graph_util``): freezing a trained graph into
constants in one run, cut to what its outputs need, and the GraphDef helpers; the frozen file
loads, and ``python -m opweave inspect`` and ``tune`` work on it. TensorFlow's side is in
tests/test_meta_graph_tf.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("google.protobuf", reason="protobuf is not installed (extra: graphdef)")

import opweave as tf
from opweave import errors
from opweave.__main__ import main

FEED = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(2, 6)


class CountingSession:
    """A session that counts its runs (convert_variables_to_constants reads in one)."""

    def __init__(self, sess: tf.Session) -> None:
        self.sess, self.graph, self.runs = sess, sess.graph, 0

    def run(self, fetches: Any, feed_dict: Any = None) -> Any:
        self.runs += 1
        return self.sess.run(fetches, feed_dict)


def trained_model() -> tuple[tf.Graph, tf.Session]:
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        with tf.variable_scope("hidden"):
            w = tf.get_variable("w", [6, 5], initializer=tf.random_normal_initializer(seed=3))
            b = tf.get_variable("b", [5], initializer=tf.constant_initializer(0.1))
        h = tf.nn.relu(tf.matmul(x, w) + b)
        out_w = tf.Variable(tf.random_normal([5, 2], seed=4), name="out_w")
        logits = tf.identity(tf.matmul(h, out_w), name="logits")
        tf.nn.softmax(logits, name="probs")
        scale = tf.Variable(np.int32(3), name="scale")
        tf.multiply(tf.shape(x)[0], scale, name="rows_scaled")
        y = tf.placeholder(tf.float32, [None, 2], name="y")
        loss = tf.reduce_mean(tf.square(logits - y))
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
        tf.train.Saver()
        sess = tf.Session(graph=g)
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: FEED, y: np.ones((2, 2), np.float32)})
    return g, sess


def test_freezing_makes_constants_of_the_variables_in_one_run_and_keeps_the_outputs() -> None:
    g, sess = trained_model()
    with sess:
        want = sess.run(["probs:0", "rows_scaled:0"], {"x:0": FEED})
        counting = CountingSession(sess)
        frozen = tf.graph_util.convert_variables_to_constants(
            counting, g.as_graph_def(), ["probs", "rows_scaled"]
        )
        values = sess.run(["hidden/w:0", "out_w:0", "scale:0"])
    assert counting.runs == 1
    ops = {n.name: n.op for n in frozen.node}
    # TensorFlow's names: the variables are constants of the same names, their reads stay.
    assert ops["hidden/w"] == ops["hidden/b"] == ops["out_w"] == ops["scale"] == "Const"
    assert ops["hidden/w/read"] == "Identity"
    assert list(next(n for n in frozen.node if n.name == "hidden/w/read").input) == ["hidden/w"]
    # Cut to what the outputs need: no initializers, optimizer, global step or saver.
    assert "VariableV2" not in ops.values()
    assert "Assign" not in ops.values()
    assert not any(n.startswith(("save/", "Adam", "global_step", "gradients")) for n in ops)
    assert [n.name for n in frozen.node] == [
        n.name for n in g.as_graph_def().node if n.name in ops
    ]  # in the original order
    w = next(n for n in frozen.node if n.name == "hidden/w")
    np.testing.assert_array_equal(tf.make_ndarray(w.attr["value"].tensor), values[0])
    assert (
        tf.make_ndarray(next(n for n in frozen.node if n.name == "scale").attr["value"].tensor) == 3
    )
    with tf.Graph().as_default() as g2:
        tf.import_graph_def(frozen, name="")
        assert not tf.global_variables()
        with tf.Session() as s2:  # no initializer: nothing to initialize
            got = s2.run(["probs:0", "rows_scaled:0"], {"x:0": FEED})
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len(g2.get_operations()) == len(frozen.node) < len(g.get_operations()) // 3
    del values


def test_whitelist_and_blacklist_choose_the_variables_frozen() -> None:
    g, sess = trained_model()
    with sess:
        gd = g.as_graph_def()
        only_w = tf.graph_util.convert_variables_to_constants(
            sess, gd, ["probs"], variable_names_whitelist=["hidden/w"]
        )
        not_w = tf.graph_util.convert_variables_to_constants(
            sess, gd, ["probs"], variable_names_blacklist=["hidden/w"]
        )
    kinds = {n.name: n.op for n in only_w.node}
    assert (kinds["hidden/w"], kinds["hidden/b"], kinds["out_w"]) == (
        "Const",
        "VariableV2",
        "VariableV2",
    )
    kinds = {n.name: n.op for n in not_w.node}
    assert (kinds["hidden/w"], kinds["hidden/b"], kinds["out_w"]) == (
        "VariableV2",
        "Const",
        "Const",
    )


def test_freezing_errors_are_clear() -> None:
    g, sess = trained_model()
    with sess:
        gd = g.as_graph_def()
        with pytest.raises(ValueError, match="nope is not in graph"):
            tf.graph_util.convert_variables_to_constants(sess, gd, ["nope"])
        with pytest.raises(ValueError, match=r"probs:0 is not in graph \(a node name"):
            tf.graph_util.convert_variables_to_constants(sess, gd, ["probs:0"])
        with pytest.raises(ValueError, match=r"updates the variable .*a frozen graph has no"):
            tf.graph_util.convert_variables_to_constants(sess, gd, ["Adam"])
        with pytest.raises(TypeError, match="output_node_names must be an iterable of strings"):
            tf.graph_util.convert_variables_to_constants(sess, gd, "probs")
        with pytest.raises(TypeError, match=r"must be a graph_pb2\.GraphDef"):
            tf.graph_util.convert_variables_to_constants(sess, {"node": []}, ["probs"])
    with g.as_default(), tf.Session() as fresh, pytest.raises(errors.FailedPreconditionError):
        tf.graph_util.convert_variables_to_constants(fresh, g.as_graph_def(), ["probs"])


def test_extract_sub_graph_remove_training_nodes_and_shapes() -> None:
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [None, 3], name="a")
        c = tf.identity(a, name="copy")
        stop = tf.stop_gradient(c, name="stop")
        with tf.control_dependencies([c]):
            guarded = tf.identity(stop, name="guarded")
        tf.negative(guarded, name="out")
        tf.constant(1.0, name="unused")
    gd = g.as_graph_def()
    sub = tf.graph_util.extract_sub_graph(gd, ["out"])
    assert "unused" not in [n.name for n in sub.node]
    assert [n.name for n in sub.node] == [n.name for n in gd.node if n.name != "unused"]
    with pytest.raises(TypeError, match="dest_nodes must be an iterable of strings"):
        tf.graph_util.extract_sub_graph(gd, "out")
    # A CheckNumerics between "a" and "copy" (TensorFlow's op; remove_training_nodes works on
    # the GraphDef alone).
    check = gd.node.add(name="checked", op="CheckNumerics", input=["a"])
    check.attr["message"].s = b"bad"
    next(n for n in gd.node if n.name == "copy").input[0] = "checked"
    lean = tf.graph_util.remove_training_nodes(gd, protected_nodes=["out"])
    names = {n.name: list(n.input) for n in lean.node}
    assert "checked" not in names
    assert names["copy"] == []
    # "copy" feeds a control edge and "guarded" has one: both stay; "stop" is spliced out.
    assert "stop" not in names
    assert "copy" in names
    assert "guarded" in names
    assert names["guarded"] == ["copy", "^copy"]
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "a").as_list() == [None, 3]
    assert tf.graph_util.tensor_shape_from_node_def_name(g, "copy:0").as_list() == [None, 3]
    assert tf.graph_util.must_run_on_cpu(next(n for n in gd.node if n.name == "unused")) is False
    with g.as_default():
        assert tf.graph_util.must_run_on_cpu(tf.constant("s").op)
        assert tf.graph_util.must_run_on_cpu(tf.Variable(1.0).op, pin_variables_on_cpu=True)


def test_the_command_line_inspects_and_tunes_a_frozen_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    g, sess = trained_model()
    with sess:
        frozen = tf.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["probs"])
    path = tmp_path / "frozen.pb"
    path.write_bytes(frozen.SerializeToString())
    status = main(["inspect", str(path), "--json"])
    out, _ = capsys.readouterr()
    assert status == 0, out
    summary = json.loads(out)
    assert [i["name"] for i in summary["inputs"]] == ["x"]
    assert [o["name"] for o in summary["outputs"]] == ["probs"]
    assert summary["missing_ops"] == {}
    status = main(
        [
            "tune",
            str(path),
            "--feed",
            "x:8,6",
            "--intra",
            "1",
            "2",
            "--inter",
            "1",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--no-progress",
            "--json",
        ]
    )
    out, _ = capsys.readouterr()
    assert status == 0, out
    result = json.loads(out)
    assert "feeds x[8,6]; fetches probs:0" in result["description"]
    assert [r["check"] for r in result["rows"]] == ["reference", "same"]
