"""The README's TensorFlow 1 example runs as printed there and does what the text says: it trains
to the stated accuracy and saves a checkpoint that a new graph restores."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import opweave as ow
from _subprocess import finish, spawn_python

README = Path(__file__).resolve().parent.parent / "README.md"


def _first_python_block_after(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    match = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert match is not None, f"no python block under {heading!r}"
    return match.group(1)


def test_the_tensorflow1_example_trains_saves_and_restores(tmp_path: Path) -> None:
    code = _first_python_block_after("## TensorFlow 1 programs")
    assert "import opweave as tf" in code
    assert code.count('"/tmp/model.ckpt"') == 1
    code = code.replace('"/tmp/model.ckpt"', repr(str(tmp_path / "model.ckpt")))
    proc = finish(spawn_python(code), 120)
    assert proc.returncode == 0, proc.stderr
    # The README quotes this line; the numbers are what its text says they are.
    match = re.fullmatch(r"loss (\d\.\d{3}), accuracy (\d\.\d{3})", proc.stdout.strip())
    assert match is not None, proc.stdout
    assert float(match.group(1)) < 0.05
    assert float(match.group(2)) >= 0.99
    assert ow.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-200")

    # The checkpoint restores into a graph built anew, under the README's variable names.
    with ow.Graph().as_default(), ow.Session() as sess:
        with ow.variable_scope("mlp"):
            w1 = ow.get_variable("w1", [20, 64])
            ow.get_variable("b1", [64])
            ow.get_variable("w2", [64, 3])
        step = ow.train.get_or_create_global_step()
        ow.train.Saver([w1, step]).restore(sess, ow.train.latest_checkpoint(str(tmp_path)))
        assert sess.run(step) == 200
        assert np.isfinite(sess.run(w1)).all()
