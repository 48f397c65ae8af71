"""Save and restore a model, as in TensorFlow 1's tutorials: train a few steps, save a checkpoint,
build the graph again in a new process, restore the checkpoint and go on training.

The program imports only ``opweave as tf`` (and NumPy, for its data): it is a TensorFlow 1 program
with that one line changed. Run it as a script::

    python -m opweave.examples.save_restore            # both phases; the second in a new process
    python -m opweave.examples.save_restore --steps 50 --dir /tmp/ckpt

It trains a two-layer network with Adam for ``--steps`` steps and saves ``model.ckpt-<step>``;
then a new Python process builds the same graph, restores the latest checkpoint (weights, Adam's
slots and the global step) and trains ``--steps`` more. Since everything that determines a step
was restored, its losses are exactly those of training without the interruption, which the
script checks (exit status 1 otherwise).

>>> import tempfile
>>> first = train(tempfile.mkdtemp(), steps=3)
>>> [round(x, 4) for x in first["losses"]], first["global_step"]
([0.7475, 0.4255, 0.3803], 3)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

import opweave as tf


def make_data() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A small regression problem (fixed seed): y = sin(x . a) + noise."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = np.sin(x @ np.array([[1.0], [-0.5], [0.25], [2.0]], np.float32)) + 0.05 * (
        rng.standard_normal((64, 1)).astype(np.float32)
    )
    return x, y.astype(np.float32)


def build_model(tf: Any) -> dict[str, Any]:
    """The graph: placeholders, a 4-16-1 network, its loss, Adam and a saver.

    ``tf`` is the module (opweave, or ``tensorflow.compat.v1`` for comparison).
    """
    rng = np.random.default_rng(1)
    w1 = (0.5 * rng.standard_normal((4, 16))).astype(np.float32)
    w2 = (0.5 * rng.standard_normal((16, 1))).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.variable_scope("layer1"):
        weights1 = tf.Variable(w1, name="weights")
        biases1 = tf.Variable(np.zeros(16, np.float32), name="biases")
        hidden = tf.nn.relu(tf.matmul(x, weights1) + biases1)
    with tf.variable_scope("layer2"):
        weights2 = tf.Variable(w2, name="weights")
        biases2 = tf.Variable(np.zeros(1, np.float32), name="biases")
        prediction = tf.matmul(hidden, weights2) + biases2
    error = prediction - y
    loss = tf.reduce_mean(error * error, name="loss")
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
    saver = tf.train.Saver(max_to_keep=3)  # every global variable: Adam's slots and the step too
    return {"x": x, "y": y, "loss": loss, "train_op": train_op, "step": global_step, "saver": saver}


def train(ckpt_dir: str, steps: int, resume: bool = False, tf: Any = tf) -> dict[str, Any]:
    """Train ``steps`` steps (from the latest checkpoint of ``ckpt_dir`` when ``resume``), then
    save; returns the losses and the global step."""
    x_data, y_data = make_data()
    with tf.Graph().as_default():
        m = build_model(tf)
        with tf.Session() as sess:
            if resume:
                latest = tf.train.latest_checkpoint(ckpt_dir)
                if latest is None:
                    raise SystemExit(f"no checkpoint in {ckpt_dir}")
                m["saver"].restore(sess, latest)
            else:
                sess.run(tf.global_variables_initializer())
            losses = []
            for _ in range(steps):
                _, loss = sess.run([m["train_op"], m["loss"]], {m["x"]: x_data, m["y"]: y_data})
                losses.append(float(loss))
            path = m["saver"].save(
                sess, os.path.join(ckpt_dir, "model.ckpt"), global_step=m["step"]
            )
            return {"losses": losses, "global_step": int(sess.run(m["step"])), "path": path}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", help="checkpoint folder (default: a new temporary one)")
    parser.add_argument("--steps", type=int, default=30, help="steps per phase")
    parser.add_argument("--phase", choices=["both", "train", "resume"], default="both")
    args = parser.parse_args(argv)
    ckpt_dir = args.dir or tempfile.mkdtemp(prefix="opweave-save-restore-")
    if args.phase != "both":
        result = train(ckpt_dir, args.steps, resume=args.phase == "resume")
        print(json.dumps(result))
        return 0
    first = train(ckpt_dir, args.steps)
    print(
        f"trained {first['global_step']} steps: loss {first['losses'][0]:.4f} -> "
        f"{first['losses'][-1]:.4f}; saved {first['path']}"
    )
    # The second phase runs in a new process: nothing but the checkpoint carries the state over.
    cmd = [
        sys.executable,
        "-m",
        "opweave.examples.save_restore",
        "--phase",
        "resume",
        "--dir",
        ckpt_dir,
        "--steps",
        str(args.steps),
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    second = json.loads(out.strip().splitlines()[-1])
    print(
        f"restored in a new process and trained to step {second['global_step']}: loss "
        f"{second['losses'][0]:.4f} -> {second['losses'][-1]:.4f}; saved {second['path']}"
    )
    straight = train(tempfile.mkdtemp(prefix="opweave-save-restore-"), 2 * args.steps)
    same = straight["losses"] == first["losses"] + second["losses"]
    print("losses equal those of training without the interruption:", same)
    return 0 if same and second["global_step"] == 2 * args.steps else 1


if __name__ == "__main__":
    sys.exit(main())
