"""Training that stops and goes on in a new process from the meta graph alone, as TensorFlow 1
programs write it: the first process builds a model, trains it and saves a checkpoint (which
writes the meta graph ``model.ckpt-N.meta`` beside it); the second builds nothing -- it imports
the meta graph, restores the checkpoint and trains on with the ops and tensors it finds in the
graph's collections.

    python tests/programs/meta_graph_resume.py train DIR [--steps N] [--tensorflow]
    python tests/programs/meta_graph_resume.py resume DIR [--steps N] [--tensorflow]

Each prints its losses as JSON; ``train(tf, ...)``, ``resume(tf, ...)`` and ``uninterrupted(tf,
...)`` return them. The data and the initial weights are NumPy's (seeded), so TensorFlow and
opweave start from the same values.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import numpy as np

_RNG = np.random.default_rng(17)
W_HIDDEN = _RNG.standard_normal((4, 8)).astype(np.float32) * 0.5
W_OUT = _RNG.standard_normal((8, 1)).astype(np.float32) * 0.5
TRUE_W = _RNG.standard_normal((4, 1)).astype(np.float32)


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    """The mini-batch of a training step (the same in every process)."""
    rng = np.random.default_rng(1000 + step)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = (np.tanh(x @ TRUE_W) + 0.1 * rng.standard_normal((16, 1))).astype(np.float32)
    return x, y


def build(tf: Any) -> tuple[Any, Any, Any, Any]:
    """The model: a ReLU layer and a linear output, squared error, Adam, a global step."""
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.variable_scope("hidden"):
        w = tf.get_variable("weights", initializer=W_HIDDEN)
        b = tf.get_variable("biases", initializer=np.zeros(8, np.float32))
    h = tf.nn.relu(tf.matmul(x, w) + b)
    w_out = tf.Variable(W_OUT, name="out_weights")
    prediction = tf.matmul(h, w_out, name="prediction")
    loss = tf.reduce_mean(tf.square(prediction - y), name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
    # What the resuming process looks up: the inputs and the loss by collection, the training
    # op in GraphKeys.TRAIN_OP (where minimize puts it).
    tf.add_to_collection("inputs", x)
    tf.add_to_collection("inputs", y)
    tf.add_to_collection("loss", loss)
    return x, y, loss, train_op


def train(tf: Any, model_dir: str, steps: int) -> dict[str, Any]:
    with tf.Graph().as_default():
        x, y, loss, train_op = build(tf)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = []
            for step in range(steps):
                bx, by = batch(step)
                value, _ = sess.run([loss, train_op], {x: bx, y: by})
                losses.append(float(value))
            path = saver.save(
                sess, os.path.join(model_dir, "model.ckpt"), global_step=tf.train.get_global_step()
            )
    return {"losses": losses, "checkpoint": path}


def resume(tf: Any, model_dir: str, steps: int) -> dict[str, Any]:
    checkpoint = tf.train.latest_checkpoint(model_dir)
    with tf.Graph().as_default():
        saver = tf.train.import_meta_graph(checkpoint + ".meta")
        x, y = tf.get_collection("inputs")
        loss = tf.get_collection("loss")[0]
        train_op = tf.get_collection(tf.GraphKeys.TRAIN_OP)[0]
        global_step = tf.train.get_global_step()
        with tf.Session() as sess:
            saver.restore(sess, checkpoint)
            start = int(sess.run(global_step))
            losses = []
            for step in range(start, start + steps):
                bx, by = batch(step)
                value, _ = sess.run([loss, train_op], {x: bx, y: by})
                losses.append(float(value))
            saver.save(sess, os.path.join(model_dir, "model.ckpt"), global_step=global_step)
        return {
            "losses": losses,
            "start": start,
            "trainable": [v.name for v in tf.trainable_variables()],
            "global": [v.name for v in tf.global_variables()],
        }


def uninterrupted(tf: Any, steps: int) -> list[float]:
    """The losses of training ``steps`` steps in one go (what train + resume must give)."""
    with tf.Graph().as_default():
        x, y, loss, train_op = build(tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = []
            for step in range(steps):
                bx, by = batch(step)
                out.append(float(sess.run([loss, train_op], {x: bx, y: by})[0]))
            return out


def _library(use_tensorflow: bool) -> Any:
    if use_tensorflow:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        return tf
    import opweave as tf

    return tf


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["train", "resume"])
    parser.add_argument("model_dir")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--tensorflow", action="store_true", help="run on tensorflow.compat.v1")
    args = parser.parse_args()
    lib = _library(args.tensorflow)
    run = train if args.mode == "train" else resume
    print(json.dumps(run(lib, args.model_dir, args.steps)))
