"""The classic TensorFlow 1 programs in tests/programs/ (linear regression, logistic regression on
MNIST-shaped data, an MLP with Adam) and TensorFlow 1's deep MNIST tutorial
(opweave.examples.tutorials.mnist.mnist_deep) train as they should on opweave, run as scripts too.
tests/test_against_tensorflow.py runs the same files on TensorFlow and compares."""

from __future__ import annotations

import builtins
import contextlib
import functools
import io
import itertools
import json
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import opweave as ow
import pytest
from opweave.examples.tutorials.mnist import input_data, mnist_deep

PROGRAMS = Path(__file__).parent / "programs"


def program(name: str) -> Any:
    """The module namespace of tests/programs/<name>.py (its main is not run)."""
    return runpy.run_path(str(PROGRAMS / f"{name}.py"), run_name=f"program_{name}")


def test_linear_regression_fits_the_tutorial_points() -> None:
    result = program("linear_regression")["main"](ow, epochs=200)
    # The least-squares line of the 17 points is about y = 0.25 x + 0.8 (cost 0.077); 200 epochs
    # of per-example SGD from (0.3, -0.2) reach cost 0.114 on their way there (as TensorFlow).
    assert result["cost"] < 0.12
    assert 0.3 < result["W"] < 0.4


def test_logistic_regression_learns_mnist_shaped_data(tmp_path: Path) -> None:
    result = program("logistic_regression")["main"](ow, data_dir=str(tmp_path))
    assert result["accuracy"] > 0.9
    assert result["cost"] < 0.5


def test_mlp_with_adam_learns_mnist_shaped_data(tmp_path: Path) -> None:
    result = program("mlp_adam")["main"](ow, data_dir=str(tmp_path))
    assert result["accuracy"] > 0.85
    assert result["cost"] < 0.6


def test_a_program_runs_as_a_script() -> None:
    proc = subprocess.run(
        [sys.executable, str(PROGRAMS / "linear_regression.py")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cost"] < 0.085  # 1000 epochs, the tutorial's


# -- TensorFlow 1's deep MNIST tutorial, run unchanged ---------------------------------------------
# The program is TensorFlow's, line for line: 20000 steps on the whole data set, batches of 50,
# read from FLAGS.data_dir, its graph written to a fresh temporary directory. A test runs the file
# as it is and changes only what the program looks up in its module namespace when main() runs:
# FLAGS, input_data (a small synthetic set with a fixed shuffling seed), tempfile (the graph goes
# to the test's directory) and range -- the training loop's `for i in range(20000)` gets a
# generator that yields `steps` steps and, inside the program's Session, can load given initial
# values into the Variables and measures the loss and accuracy (keep_prob 1) on a fixed batch
# before and after training, through the names TensorFlow 1 gives the program's tensors.
MNIST_DEEP_SOURCE = Path(mnist_deep.__file__).read_text()
MNIST_DEEP_IMPORT = "import opweave.compat.v1 as tf"
MNIST_SYNTHETIC_SIZE = 1200  # 1000 training (100 of them held out for validation), 200 test
MNIST_SEED = 7


def mnist_deep_data(data_dir: Path) -> Any:
    """The data the program sees in the tests (the same read_data_sets call)."""
    return input_data.read_data_sets(
        str(data_dir), one_hot=True, synthetic_size=MNIST_SYNTHETIC_SIZE, seed=MNIST_SEED
    )


def run_mnist_deep(
    workdir: Path,
    steps: int,
    tf_import: str = MNIST_DEEP_IMPORT,
    initial: Sequence[np.ndarray] | None = None,
    probe_steps: int = 0,
) -> dict[str, Any]:
    """mnist_deep.py's main() for `steps` steps, with `tf_import` in place of its import line.

    Returns the Variables' initial values ("initial", or `initial` itself when given), [loss,
    accuracy] on 500 training examples before and after training, the program's output and the
    test accuracy it printed. With `probe_steps`, the program's own Adam step first runs that many
    times on a fixed batch with keep_prob 1 (no dropout: no randomness) and "probe" holds the loss
    after each; then Adam's state and the initial values are restored for the program's training.
    """
    source = MNIST_DEEP_SOURCE
    assert source.count(MNIST_DEEP_IMPORT) == 1
    source = source.replace(MNIST_DEEP_IMPORT, tf_import)
    namespace: dict[str, Any] = {"__name__": "mnist_deep_under_test"}
    exec(compile(source, mnist_deep.__file__, "exec"), namespace)  # the file, as a module
    tf = namespace["tf"]
    data = mnist_deep_data(workdir / "data")
    eval_x, eval_y = data.train.images[:500], data.train.labels[:500]
    record: dict[str, Any] = {}

    def training_steps(n: int) -> Iterator[int]:
        assert n == 20000  # the tutorial's loop
        sess, graph = tf.get_default_session(), tf.get_default_graph()
        x, y_, keep_prob, loss, accuracy = (
            graph.get_tensor_by_name(name)
            for name in ("Placeholder:0", "Placeholder_1:0", "dropout/Placeholder:0", "Mean:0",
                         "Mean_1:0")
        )  # fmt: skip
        variables = tf.trainable_variables()
        if initial is not None:
            for v, value in zip(variables, initial, strict=True):
                v.load(value, sess)
        record["initial"] = sess.run(variables)
        if probe_steps:
            train_step = graph.get_operation_by_name("adam_optimizer/Adam")
            probe = {x: eval_x[:50], y_: eval_y[:50], keep_prob: 1.0}
            record["probe"] = []
            for _ in builtins.range(probe_steps):
                sess.run(train_step, probe)
                record["probe"].append(float(sess.run(loss, probe)))
            sess.run(tf.global_variables_initializer())  # Adam's moments and powers of beta
            for v, value in zip(variables, record["initial"], strict=True):
                v.load(value, sess)
        feed = {x: eval_x, y_: eval_y, keep_prob: 1.0}
        record["before"] = [float(v) for v in sess.run([loss, accuracy], feed)]
        yield from builtins.range(steps)
        record["after"] = [float(v) for v in sess.run([loss, accuracy], feed)]

    graph_dir = workdir / "graph"
    graph_dir.mkdir()
    namespace.update(
        FLAGS=SimpleNamespace(data_dir=str(workdir / "data")),
        input_data=SimpleNamespace(
            read_data_sets=functools.partial(
                input_data.read_data_sets,
                synthetic_size=MNIST_SYNTHETIC_SIZE,
                seed=MNIST_SEED,
            )
        ),
        tempfile=SimpleNamespace(mkdtemp=lambda: str(graph_dir)),
        range=training_steps,
    )
    out = io.StringIO()
    with tf.Graph().as_default(), contextlib.redirect_stdout(out):
        tf.set_random_seed(MNIST_SEED)
        namespace["main"]([sys.argv[0]])
    record["stdout"] = out.getvalue()
    found = re.search(r"^test accuracy ([0-9.e+-]+)$", record["stdout"], re.MULTILINE)
    assert found, record["stdout"]
    record["test_accuracy"] = float(found.group(1))
    record["graph_dir"] = graph_dir
    return record


MNIST_STEPS = 60  # of the tutorial's training loop (dropout 0.5, Adam 1e-4, batches of 50)
MNIST_PROBE_STEPS = 3


@pytest.fixture(scope="session")
def mnist_deep_on_opweave(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the tutorial on opweave, shared with tests/test_against_tensorflow.py."""
    return run_mnist_deep(
        tmp_path_factory.mktemp("mnist_deep"), MNIST_STEPS, probe_steps=MNIST_PROBE_STEPS
    )


def test_mnist_deep_tutorial_learns_synthetic_mnist(mnist_deep_on_opweave: dict[str, Any]) -> None:
    run = mnist_deep_on_opweave
    loss_0, (loss_1, accuracy_1) = run["before"][0], run["after"]
    # Guessing gives loss ln 10 = 2.30 and accuracy 0.1 (500 examples: a deviation of 0.013).
    assert loss_1 < 2.2
    assert loss_1 < loss_0 / 3
    assert accuracy_1 > 0.2
    # Without dropout, each of the program's Adam steps lowers the loss on its batch.
    probe = run["probe"]
    assert all(b < a for a, b in itertools.pairwise(probe))
    # The program ran as written: its evaluation every 100 steps (step 0 here) and at the end.
    assert f"Saving graph to: {run['graph_dir']}\nstep 0, training accuracy " in run["stdout"]
    assert 0 <= run["test_accuracy"] <= 1


def test_mnist_deep_tutorial_writes_its_graph_for_tensorboard(
    mnist_deep_on_opweave: dict[str, Any],
) -> None:
    from test_summary import events

    version, graph = events(mnist_deep_on_opweave["graph_dir"])
    assert version["file_version"] == b"brain.Event:2"
    nodes = {n.name: n.op for n in ow.graphdef.GraphDef.FromString(graph["graph_def"]).node}
    assert nodes["conv1/Conv2D"] == "Conv2D"
    assert nodes["pool2/MaxPool"] == "MaxPool"
    assert nodes["loss/softmax_cross_entropy_with_logits_sg"] == "SoftmaxCrossEntropyWithLogits"
    assert nodes["adam_optimizer/Adam"] == "NoOp"
    assert nodes["accuracy/Equal"] == "Equal"


def test_mnist_deep_tutorial_runs_as_a_module() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "opweave.examples.tutorials.mnist.mnist_deep", "--help"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "--data_dir" in proc.stdout
