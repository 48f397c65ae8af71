"""opweave against TensorFlow 1 itself (tf.compat.v1 graph mode), when TensorFlow is installed:
the optimizers' loss curves on one small program, the classic programs of tests/programs/ run
from the same files with ``import tensorflow.compat.v1 as tf``, and TensorFlow 1's deep MNIST
tutorial (opweave.examples.tutorials.mnist.mnist_deep) with its import line changed back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import opweave as ow
import pytest

tf_module = pytest.importorskip("tensorflow")
# Graph mode through explicit Graphs: disable_v2_behavior() would change TensorFlow for every
# other test of the process.
tf = tf_module.compat.v1

from test_optimizers import B0, STEPS, W0, X, Y  # noqa: E402
from test_programs import (  # noqa: E402
    MNIST_PROBE_STEPS,
    MNIST_STEPS,
    mnist_deep_on_opweave,  # noqa: F401  (the session's run of the tutorial, a fixture)
    program,
    run_mnist_deep,
)

OPTIMIZERS: dict[str, Callable[[Any], Any]] = {
    "sgd": lambda lib: lib.train.GradientDescentOptimizer(0.1),
    "momentum": lambda lib: lib.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda lib: lib.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda lib: lib.train.AdamOptimizer(0.05),
    "rmsprop": lambda lib: lib.train.RMSPropOptimizer(0.002, momentum=0.5),
    "rmsprop_centered": lambda lib: lib.train.RMSPropOptimizer(0.001, centered=True),
    "adagrad": lambda lib: lib.train.AdagradOptimizer(0.3),
}


def curve(lib: Any, make: Callable[[Any], Any], dtype: Any) -> tuple[list[float], Any]:
    """The same TensorFlow 1 program on either library: 300 steps of least squares."""
    with lib.Graph().as_default():
        x = lib.placeholder(lib.as_dtype(dtype), [None, 3])
        y = lib.placeholder(lib.as_dtype(dtype), [None, 2])
        w = lib.Variable(W0.astype(dtype), name="w")
        b = lib.Variable(B0.astype(dtype), name="b")
        err = lib.matmul(x, w) + b - y
        loss = lib.reduce_mean(err * err)
        train = make(lib).minimize(loss)
        with lib.Session() as s:
            s.run(lib.global_variables_initializer())
            feed = {x: X.astype(dtype), y: Y.astype(dtype)}
            losses = [float(s.run([loss, train], feed)[0]) for _ in range(STEPS)]
            return losses, s.run(w)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_loss_curves_follow_tensorflows(name: str, dtype: Any) -> None:
    make = OPTIMIZERS[name]
    want, want_w = curve(tf, make, dtype)
    got, got_w = curve(ow, make, dtype)
    rtol = 1e-9 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(got, want, rtol=rtol)
    np.testing.assert_allclose(got_w, want_w, rtol=rtol, atol=rtol)


def test_slot_and_variable_names_match_tensorflows() -> None:
    names = {}
    for lib in (tf, ow):
        with lib.Graph().as_default():
            w = lib.Variable([1.0, 2.0], name="w")
            loss = lib.reduce_sum(w * w)
            for make in OPTIMIZERS.values():
                make(lib).minimize(loss)
            names[lib.__name__] = sorted(v.name for v in lib.global_variables())
    assert names[ow.__name__] == names[tf.__name__]


def test_linear_regression_program_reaches_tensorflows_values() -> None:
    main = program("linear_regression")["main"]
    want, got = main(tf, epochs=200), main(ow, epochs=200)
    for key in ("cost", "W", "b"):
        assert got[key] == pytest.approx(want[key], rel=1e-5), key


def test_logistic_regression_program_reaches_tensorflows_loss(tmp_path: Path) -> None:
    main = program("logistic_regression")["main"]
    want = main(tf, data_dir=str(tmp_path))
    got = main(ow, data_dir=str(tmp_path))
    # The same start (zeros) and batches: the same trajectory up to float rounding.
    assert got["cost"] == pytest.approx(want["cost"], rel=1e-4)
    assert got["accuracy"] == pytest.approx(want["accuracy"], abs=0.01)


def test_mlp_adam_program_reaches_tensorflows_loss(tmp_path: Path) -> None:
    main = program("mlp_adam")["main"]
    want = main(tf, data_dir=str(tmp_path))
    got = main(ow, data_dir=str(tmp_path))
    # Different random generators draw the initial weights: the same distribution, not the same
    # numbers, so the losses agree only roughly.
    assert got["cost"] == pytest.approx(want["cost"], rel=0.3, abs=0.05)
    assert got["accuracy"] == pytest.approx(want["accuracy"], abs=0.05)


@pytest.fixture(scope="module")
def mnist_deep_on_tensorflow(
    mnist_deep_on_opweave: dict[str, Any],  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """The tutorial on TensorFlow, from opweave's initial values."""
    return run_mnist_deep(
        tmp_path_factory.mktemp("mnist_deep_tf"),
        MNIST_STEPS,
        tf_import="import tensorflow.compat.v1 as tf",
        initial=mnist_deep_on_opweave["initial"],
        probe_steps=MNIST_PROBE_STEPS,
    )


def test_mnist_deep_tutorial_learns_as_on_tensorflow(
    mnist_deep_on_opweave: dict[str, Any],  # noqa: F811
    mnist_deep_on_tensorflow: dict[str, Any],
) -> None:
    ours, theirs = mnist_deep_on_opweave, mnist_deep_on_tensorflow
    # The same weights give the same loss and accuracy.
    np.testing.assert_allclose(ours["before"], theirs["before"], rtol=1e-5)
    # The program's Adam steps without dropout: the same trajectory up to float32 rounding
    # (convolutions, pooling, the dense layers and their gradients, the loss and Adam).
    np.testing.assert_allclose(ours["probe"], theirs["probe"], rtol=1e-4)
    # Its training with dropout (each library draws its own masks) learns alike: both below
    # chance's loss (ln 10 = 2.30) and well above its accuracy (0.1) after the same steps.
    for run in (ours, theirs):
        assert run["after"][0] < 2.2
        assert run["after"][1] > 0.2
    assert ours["after"][0] == pytest.approx(theirs["after"][0], rel=0.15)
    assert ours["after"][1] == pytest.approx(theirs["after"][1], abs=0.1)


def test_mnist_deep_tutorial_graph_matches_tensorflows_and_tensorflow_reads_it(
    mnist_deep_on_opweave: dict[str, Any],  # noqa: F811
    mnist_deep_on_tensorflow: dict[str, Any],
) -> None:
    def graph_in(run: dict[str, Any]) -> dict[str, str]:
        (path,) = run["graph_dir"].iterdir()
        version, graph = tf.train.summary_iterator(str(path))
        assert version.file_version == "brain.Event:2"
        return {n.name: n.op for n in tf.GraphDef.FromString(graph.graph_def).node}

    ours, theirs = graph_in(mnist_deep_on_opweave), graph_in(mnist_deep_on_tensorflow)
    # The layers, the loss, its gradients and the evaluation have TensorFlow's names and ops
    # (variables, constants and the ops inside composite functions are spelled differently by
    # TensorFlow 2's compat.v1: resource variables, AddV2, dropout's internals).
    compared = {"Placeholder", "Conv2D", "Relu", "MaxPool", "MatMul", "Mean", "ArgMax", "Equal",
                "Cast", "SoftmaxCrossEntropyWithLogits", "ReluGrad", "MaxPoolGrad",
                "Conv2DBackpropInput", "Conv2DBackpropFilter"}  # fmt: skip
    want = {name: op for name, op in theirs.items() if op in compared}
    assert len(want) > 30
    assert {name: ours.get(name) for name in want} == want
