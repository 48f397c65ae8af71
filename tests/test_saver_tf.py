"""opweave's checkpoints beside TensorFlow 1's (tensorflow.compat.v1, in its own process): each
reads the other's ``checkpoint`` state file, and the save-and-restore example gives TensorFlow's
losses."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import opweave as tf
import pytest
from opweave import errors
from opweave.examples import save_restore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("tensorflow") is None, reason="tensorflow is not installed"
    ),
]

# Runs in a fresh interpreter: TensorFlow's import is slow and its thread pools are its own.
TF_SIDE = r"""
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow.compat.v1 as tf1
tf1.disable_v2_behavior()
tf1.logging.set_verbosity(tf1.logging.ERROR)
from opweave.examples import save_restore

ours, theirs, example = sys.argv[1:4]
out = {}
state = tf1.train.get_checkpoint_state(ours)
out["state"] = [state.model_checkpoint_path, list(state.all_model_checkpoint_paths)]
out["latest"] = tf1.train.latest_checkpoint(ours)
with tf1.Graph().as_default():
    v = tf1.Variable([1.0, 2.0], name="v")
    saver = tf1.train.Saver(max_to_keep=2)
    with tf1.Session() as sess:
        sess.run(v.initializer)
        for step in (1, 2, 3):
            saver.save(sess, os.path.join(theirs, "model.ckpt"), global_step=step)
first = save_restore.train(example, steps=5, tf=tf1)
second = save_restore.train(example, steps=5, resume=True, tf=tf1)
out["losses"] = first["losses"] + second["losses"]
print(json.dumps(out))
"""


def test_tensorflow_and_opweave_read_each_others_state_files_and_agree_on_the_example(
    tmp_path: Path,
) -> None:
    ours, theirs, example, tf_example = (
        tmp_path / n for n in ("ours", "theirs", "example", "tf_example")
    )
    for d in (ours, theirs, example, tf_example):
        d.mkdir()
    # A quote and non-ASCII in the path (a backslash would be a glob escape to TensorFlow's
    # latest_checkpoint, which globs).
    prefix = str(ours / 'mod"\xe9l.ckpt')
    with tf.Graph().as_default():
        v = tf.Variable([1.0, 2.0], name="v")
        saver = tf.train.Saver(max_to_keep=2)
        with tf.Session() as sess:
            sess.run(v.initializer)
            paths = [saver.save(sess, prefix, global_step=s) for s in (1, 2, 3)]
    root = str(Path(tf.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", TF_SIDE, str(ours), str(theirs), str(tf_example)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # TensorFlow reads opweave's state file and finds its checkpoint (the prefix is the file,
    # as TensorFlow's V1 format).
    assert out["state"] == [paths[-1], paths[1:]]
    assert out["latest"] == paths[-1]
    # opweave reads TensorFlow's state file; TensorFlow's checkpoint itself is refused clearly.
    state = tf.train.get_checkpoint_state(str(theirs))
    assert state is not None
    assert state.all_model_checkpoint_paths == [
        str(theirs / "model.ckpt-2"),
        str(theirs / "model.ckpt-3"),
    ]
    latest = tf.train.latest_checkpoint(str(theirs))
    assert latest == str(theirs / "model.ckpt-3")
    with pytest.raises(errors.UnimplementedError, match="TensorFlow checkpoint"):
        tf.train.NewCheckpointReader(latest)
    # The example (train, save, rebuild, restore, go on) gives TensorFlow's losses.
    first = save_restore.train(str(example), steps=5)
    second = save_restore.train(str(example), steps=5, resume=True)
    np.testing.assert_allclose(first["losses"] + second["losses"], out["losses"], rtol=1e-5)
