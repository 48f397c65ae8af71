"""opweave against TensorFlow 1 itself (tf.compat.v1 graph mode), when TensorFlow is installed:
the optimizers' loss curves on one small program, and the classic programs of tests/programs/ run
from the same files with ``import tensorflow.compat.v1 as tf``."""

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
from test_programs import program  # noqa: E402

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
