"""Meta graphs and frozen graphs against TensorFlow 1 itself (tensorflow-cpu, tf.compat.v1), which
runs in a process of its own (tests/tf_oracle.py): TensorFlow's meta graphs import into opweave
and train on with TensorFlow's numbers, opweave's import into TensorFlow with their variables and
collections, frozen graphs run on both sides with the same outputs, and the resumable training
program gives TensorFlow's losses. TensorFlow cannot read opweave's checkpoint files
(docs/checkpoint_format.md), so the TensorFlow side stops at the graph and its collections."""

from __future__ import annotations

import importlib.util
import json
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("google.protobuf", reason="protobuf is not installed (extra: graphdef)")
if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed", allow_module_level=True)

import opweave as tf
from opweave.graphdef._attrs import OPWEAVE_ONLY_OPS
from test_graphdef_tf import Oracle, tf_run

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    o = Oracle()
    yield o
    o.close()


def _bytes(message: Any) -> np.ndarray:
    return np.frombuffer(message.SerializeToString(), np.uint8)


# -- TensorFlow's meta graphs in opweave -------------------------------------------------------


def test_a_tensorflow_meta_graph_imports_and_trains_on_with_tensorflows_numbers(
    oracle: Oracle, tmp_path: Path
) -> None:
    reply, out = oracle.ask({"cmd": "meta_export", "seed": 4, "steps": 3})
    assert "error" not in reply, reply
    names = reply["variables"]
    with tf.Graph().as_default() as g:
        saver = tf.train.import_meta_graph(out["meta_graph"].tobytes())
        # TensorFlow's saver ops (SaveV2, RestoreV2) are replaced by an opweave saver over the
        # same variables, under the same keys, in the same scope.
        assert saver is not None
        assert saver.saver_def.restore_op_name == "save/restore_all"
        assert saver.saver_def.max_to_keep == 3
        assert not any(op.type in ("SaveV2", "RestoreV2") for op in g.get_operations())
        assert [v.op.name for v in tf.global_variables()] == names
        assert [v.name for v in tf.trainable_variables()] == [
            "layer1/w:0",
            "layer1/b:0",
            "w2:0",
        ]
        assert tf.train.get_global_step().name == "global_step:0"
        loss = tf.get_collection(tf.GraphKeys.LOSSES)[0]
        train = tf.get_collection(tf.GraphKeys.TRAIN_OP)[0]
        feeds = {k[5:]: v for k, v in out.items() if k.startswith("feed:")}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            # TensorFlow's state after its 3 steps, then one step here.
            for i, v in enumerate(tf.global_variables()):
                v.load(out[f"before:{i}"], sess)
            got_loss, _ = sess.run([loss, train], feeds)
            np.testing.assert_allclose(got_loss, out["loss"], rtol=1e-5)
            for i, v in enumerate(tf.global_variables()):
                np.testing.assert_allclose(sess.run(v), out[f"after:{i}"], rtol=1e-5, atol=1e-6)
            # The saver writes opweave's checkpoints under TensorFlow's keys.
            path = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert path is not None
    assert [k for k, _ in tf.train.list_variables(path)] == sorted(names)


# -- opweave's meta graphs in TensorFlow -------------------------------------------------------


def _opweave_training_graph() -> tuple[tf.Graph, dict[str, np.ndarray]]:
    rng = np.random.default_rng(8)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.float32, [None, 3], name="y")
        with tf.variable_scope("dense"):
            w = tf.get_variable("w", initializer=rng.standard_normal((4, 3)).astype(np.float32))
            b = tf.get_variable("b", initializer=np.zeros(3, np.float32))
        logits = tf.matmul(x, w) + b
        # A reduction keeping the batch axis (of unknown size): its gradient must be built from
        # ops TensorFlow has (no opweave-only ReducedShape).
        loss = tf.reduce_mean(tf.reduce_sum(tf.square(tf.nn.relu(logits) - y), axis=1), name="loss")
        tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
        step = tf.train.get_or_create_global_step()
        tf.train.MomentumOptimizer(0.1, 0.9).minimize(loss, global_step=step)
        tf.train.Saver(name="ckpt")
    feeds = {
        "x:0": rng.standard_normal((5, 4)).astype(np.float32),
        "y:0": rng.standard_normal((5, 3)).astype(np.float32),
    }
    return g, feeds


@pytest.mark.parametrize("import_scope", [None, "restored"])
def test_opweaves_meta_graph_imports_into_tensorflow_with_its_collections(
    oracle: Oracle, tmp_path: Path, import_scope: str | None
) -> None:
    g, feeds = _opweave_training_graph()
    with g.as_default():
        saver = tf.train.Saver(name="ckpt")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=0)
            train = tf.get_collection(tf.GraphKeys.TRAIN_OP)[0]
            loss = tf.get_collection(tf.GraphKeys.LOSSES)[0]
            for _ in range(2):
                sess.run(train, feeds)
            want = sess.run([loss, "dense/w:0"], feeds)
    assert path is not None
    assert not any(op.type in OPWEAVE_ONLY_OPS for op in g.get_operations())
    meta = tf.graphdef.MetaGraphDef.FromString(Path(path + ".meta").read_bytes())
    prefix = f"{import_scope}/" if import_scope else ""
    reply, out = oracle.ask(
        {
            "cmd": "meta_import",
            "import_scope": import_scope,
            "run": [prefix + meta.collection_def["train_op"].node_list.value[0]] * 2,
            "fetches": [prefix + "loss:0", prefix + "dense/w:0"],
        },
        meta_graph=_bytes(meta),
        **{f"feed:{prefix}{k}": v for k, v in feeds.items()},
    )
    assert "error" not in reply, reply["error"]
    assert reply["saver"] == [
        prefix + "ckpt_1/Const:0",
        prefix + "ckpt_1/control_dependency:0",
        prefix + "ckpt_1/restore_all",
    ]
    with g.as_default():
        assert reply["global"] == [prefix + v.name for v in tf.global_variables()]
        assert reply["trainable"] == [prefix + v.name for v in tf.trainable_variables()]
    assert reply["global_step"] == prefix + "global_step:0"
    assert reply["keys"] == sorted(
        ["variables", "trainable_variables", "global_step", "train_op", "losses"]
    )
    # The graph runs in TensorFlow: initialized there, two training steps give opweave's numbers.
    np.testing.assert_allclose(out["out:0"], want[0], rtol=1e-5)
    np.testing.assert_allclose(out["out:1"], want[1], rtol=1e-5, atol=1e-6)


# -- frozen graphs ------------------------------------------------------------------------------


def test_a_graph_frozen_by_opweave_runs_in_tensorflow_with_the_same_outputs(
    oracle: Oracle,
) -> None:
    rng = np.random.default_rng(2)
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        with tf.variable_scope("layer"):
            w = tf.get_variable("w", [6, 4], initializer=tf.random_normal_initializer(seed=1))
            b = tf.get_variable("b", [4], initializer=tf.constant_initializer(0.5))
        counts = tf.Variable(np.arange(4, dtype=np.int64), name="counts")
        tf.identity(tf.nn.relu(tf.matmul(x, w) + b), name="out")
        tf.identity(counts * 2, name="doubled")
        tf.train.AdamOptimizer().minimize(tf.reduce_sum(w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            feeds = {"x:0": rng.standard_normal((3, 6)).astype(np.float32)}
            want = sess.run(["out:0", "doubled:0"], feeds)
            frozen = tf.graph_util.convert_variables_to_constants(
                sess, g.as_graph_def(), ["out", "doubled"]
            )
    got = tf_run(oracle, frozen, feeds, ["out:0", "doubled:0"])
    assert not isinstance(got, str), got
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], want[1])


def test_a_graph_frozen_by_tensorflow_runs_in_opweave_with_its_outputs(oracle: Oracle) -> None:
    reply, out = oracle.ask({"cmd": "freeze", "seed": 9})
    assert "error" not in reply, reply
    frozen = tf.graphdef.GraphDef.FromString(out["graph_def"].tobytes())
    assert {n.op for n in frozen.node} >= {"Const", "Identity", "MatMul"}
    assert not any(n.op == "VariableV2" for n in frozen.node)
    with tf.Graph().as_default() as g:
        tf.import_graph_def(frozen, name="")
        with tf.Session(graph=g) as sess:
            got = sess.run("out:0", {"x:0": out["feed:x:0"]})
    np.testing.assert_allclose(got, out["out:0"], rtol=1e-5, atol=1e-6)


# -- the resumable program, on both libraries -------------------------------------------------


_ON_TENSORFLOW = """
import json, runpy, sys
program = runpy.run_path(sys.argv[1], run_name="program")
tf = program["_library"](True)
first = program["train"](tf, sys.argv[2], 3)
second = program["resume"](tf, sys.argv[2], 3)  # a new graph: nothing of the first is kept
print(json.dumps([first["losses"], second["losses"], second["start"]]))
"""


@pytest.mark.slow
def test_the_resumable_program_gives_tensorflows_losses(tmp_path: Path) -> None:
    # Both halves in one TensorFlow process (importing TensorFlow takes seconds); opweave's
    # halves in separate processes are tests/test_meta_graph.py's.
    (tmp_path / "tf").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", _ON_TENSORFLOW, str(PROGRAMS / "meta_graph_resume.py"),
         str(tmp_path / "tf")],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    tf_first, tf_second, tf_start = json.loads(proc.stdout.strip().splitlines()[-1])
    assert tf_start == 3
    program = runpy.run_path(str(PROGRAMS / "meta_graph_resume.py"), run_name="program")
    (tmp_path / "ow").mkdir()
    first = program["train"](tf, str(tmp_path / "ow"), 3)
    second = program["resume"](tf, str(tmp_path / "ow"), 3)
    assert second["start"] == 3
    losses = {"opweave": first["losses"] + second["losses"], "tensorflow": tf_first + tf_second}
    np.testing.assert_allclose(losses["opweave"], losses["tensorflow"], rtol=1e-5)
