"""The tuner on a training step: a model whose fetch is the train op (an Operation), its variables
initialized in each setting's fresh session, and the loss after the same steps compared bit for
bit across settings."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import opweave as ow
from _subprocess import finish

TRAINING_MODEL = """
import numpy as np
import opweave as ow

def build(fetch_loss=False):
    g = ow.Graph()
    with g.as_default():
        rng = np.random.default_rng(0)
        x = ow.placeholder(ow.float32, [64, 32], name="x")
        y = ow.placeholder(ow.float32, [64, 1], name="y")
        w1 = ow.Variable(rng.standard_normal((32, 64)).astype(np.float32) * 0.1, name="w1")
        w2 = ow.Variable(rng.standard_normal((64, 1)).astype(np.float32) * 0.1, name="w2")
        err = ow.matmul(ow.nn.relu(ow.matmul(x, w1)), w2) - y
        loss = ow.reduce_mean(err * err)
        step = ow.train.get_or_create_global_step()
        train = ow.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        feed = {x: rng.standard_normal((64, 32)).astype(np.float32),
                y: rng.standard_normal((64, 1)).astype(np.float32)}
    return g, ([train, loss, step] if fetch_loss else train), feed
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_cli_tunes_a_training_step_whose_fetch_is_the_train_op(tmp_path: Path) -> None:
    script = _write(tmp_path / "train_model.py", TRAINING_MODEL)
    proc = subprocess.Popen(
        [sys.executable, "-m", "opweave", "tune", str(script), "--intra", "1", "2", "--inter",
         "1", "--runs", "3", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    proc = finish(proc, 120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line[:5].strip().isdigit()]
    assert [(r[0], r[1]) for r in rows] == [("1", "1"), ("2", "1")]
    assert rows[0][7] == "reference"
    assert rows[1][7] == "same"


def test_tuned_training_steps_reach_the_same_loss_in_every_setting(
    tmp_path: Path,
) -> None:
    script = _write(tmp_path / "train_model_loss.py", TRAINING_MODEL)
    result = ow.tune(
        str(script), intra=[1, 2], inter=[1, 2], runs=3, warmup=1,
        model_kwargs={"fetch_loss": True}, progress=False,
    )  # fmt: skip
    assert all(r.ok for r in result.rows), [r.error for r in result.rows]
    # The loss and the global step after warmup + runs steps: the same bits everywhere.
    assert [r.check for r in result.rows] == ["reference", "same", "same", "same"]
