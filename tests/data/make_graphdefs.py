"""Write the GraphDef files the tests read, with TensorFlow (run once; the files are checked in).

    python tests/data/make_graphdefs.py

Writes, beside this script:

- ``mlp.pb``: a frozen two-layer MLP as ``tf.compat.v1`` writes it (``x`` -> ``logits``,
  ``probs``), binary;
- ``mlp.pbtxt``: the same graph in text format (``tf.io.write_graph(as_text=True)``);
- ``ops.pb``: a graph of many ops (reshape, transpose, concat, reductions, casts, strided
  slices, gather, one-hot, pad, tile, select, ...), with ``_output_shapes`` (add_shapes=True) and
  a control dependency;
- ``dense_frozen.pb``: dense layers of TensorFlow 1 variables (``kernel``, ``bias``: what
  ``tf.layers.dense`` made) frozen by ``convert_variables_to_constants``: BiasAdd, the
  ``.../read`` Identity nodes of frozen variables, the shape of real frozen models;
- ``expected.npz``: the inputs fed and TensorFlow's outputs, keyed ``"<file>/<tensor name>"``.

The tests never need TensorFlow to use these files.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(20240517)


def _const(shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def mlp() -> tuple[tf.Graph, dict[str, np.ndarray], list[str]]:
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        h = tf.nn.relu(tf.matmul(x, tf.constant(_const((8, 16)), name="w1")) + _const((16,)))
        logits = tf.identity(
            tf.matmul(h, tf.constant(_const((16, 4)), name="w2")) + _const((4,)), name="logits"
        )
        tf.sigmoid(logits, name="probs")
    return g, {"x:0": _const((5, 8))}, ["logits:0", "probs:0"]


def many_ops() -> tuple[tf.Graph, dict[str, np.ndarray], list[str]]:
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 6], name="x")
        idx = v1.placeholder(tf.int32, [None], name="idx")
        r = tf.reshape(x, [-1, 2, 3])
        t = tf.transpose(r, [0, 2, 1])
        c = tf.concat([tf.reshape(t, [-1, 6]), x], axis=1)
        s = tf.reduce_sum(c, axis=1, keepdims=True)
        m = tf.reduce_mean(c, axis=[0])
        cast = tf.cast(x * 10.0, tf.int32)
        sl = x[:, 1:5:2]
        gathered = tf.gather(x, idx)
        e = tf.squeeze(tf.expand_dims(s, 0), [0])
        st = tf.stack([m, m * 2.0], axis=1)
        shp = tf.shape(x)
        mx = tf.maximum(tf.tanh(x), tf.exp(-x) - 1.0)
        oh = tf.one_hot(idx, 5)
        pad = tf.pad(x, [[1, 0], [0, 2]])
        tile = tf.tile(sl, [1, 2])
        rev = tf.reverse(x, [1])
        sel = tf.where(tf.greater_equal(x, 0.0), x, -x)
        eq = tf.equal(cast, 0)
        with tf.control_dependencies([tf.no_op(name="first")]):
            tf.identity(tf.reduce_max(c) - tf.reduce_min(c), name="span")
        for name, value in [
            ("s", s),
            ("m", m),
            ("cast", cast),
            ("sl", sl),
            ("gathered", gathered),
            ("e", e),
            ("st", st),
            ("shp", shp),
            ("mx", mx),
            ("oh", oh),
            ("pad", pad),
            ("tile", tile),
            ("rev", rev),
            ("sel", sel),
            ("eq", eq),
        ]:
            tf.identity(value, name=f"out_{name}")
    feeds = {"x:0": _const((4, 6)), "idx:0": np.array([3, 0, 2], np.int32)}
    outs = [n.name + ":0" for n in g.as_graph_def().node if n.name.startswith("out_")]
    return g, feeds, [*outs, "span:0"]


def dense_frozen() -> tuple[tf.Graph, dict[str, np.ndarray], list[str]]:
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, 8], name="x")
        h = x
        for name, width, act in [("dense_1", 16, tf.nn.relu), ("dense_2", 3, tf.identity)]:
            with v1.variable_scope(name):
                kernel = v1.Variable(_const((int(h.shape[1]), width)), name="kernel")
                bias = v1.Variable(_const((width,)), name="bias")
                h = act(tf.nn.bias_add(tf.matmul(h, kernel), bias))
        tf.identity(h, name="out")
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            frozen = v1.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["out"])
    out = tf.Graph()
    with out.as_default():
        v1.import_graph_def(frozen, name="")
    return out, {"x:0": _const((6, 8))}, ["out:0"]


def main() -> None:
    v1.disable_eager_execution()
    v1.disable_resource_variables()  # TensorFlow 1's variables: what frozen TF1 models hold
    expected: dict[str, np.ndarray] = {}
    for file, (graph, feeds, fetches), add_shapes in [
        ("mlp.pb", mlp(), False),
        ("ops.pb", many_ops(), True),
        ("dense_frozen.pb", dense_frozen(), False),
    ]:
        with v1.Session(graph=graph) as sess:
            values = sess.run(fetches, feeds)
        graph_def = graph.as_graph_def(add_shapes=add_shapes)
        (HERE / file).write_bytes(graph_def.SerializeToString())
        for name, value in feeds.items():
            expected[f"{file}/feed/{name}"] = value
        for name, value in zip(fetches, values, strict=True):
            expected[f"{file}/fetch/{name}"] = np.asarray(value)
        if file == "mlp.pb":
            tf.io.write_graph(graph_def, str(HERE), "mlp.pbtxt", as_text=True)
    np.savez(HERE / "expected.npz", **expected)
    print(f"wrote {len(expected)} arrays and the graphs to {HERE}")


if __name__ == "__main__":
    main()
