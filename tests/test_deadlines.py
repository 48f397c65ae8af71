"""Deadlines that hold: DeadlineExceededError within 100 ms of the deadline even while an op
cannot be interrupted; the op finishes in the background with its outputs dropped, the session
stays usable, and close() waits for it."""

from __future__ import annotations

import threading
import time

import numpy as np
import opweave as ow
import pytest


def _sleeper(seconds: float, done: threading.Event) -> ow.Graph:
    g = ow.Graph()

    def body(x: np.ndarray) -> np.ndarray:
        time.sleep(seconds)
        done.set()
        return x

    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        ow.py_function(body, [x], ow.float32, name="sleepy")
        ow.identity(x * 2.0, name="quick")
    return g


@pytest.mark.parametrize("how", ["run_options", "config"])
def test_a_deadline_holds_while_a_py_function_sleeps(how: str) -> None:
    done = threading.Event()
    g = _sleeper(1.0, done)
    config = ow.ConfigProto(operation_timeout_in_ms=200 if how == "config" else 0)
    options = ow.RunOptions(timeout_in_ms=200) if how == "run_options" else None
    sess = ow.Session(graph=g, config=config)
    t0 = time.monotonic()
    with pytest.raises(ow.errors.DeadlineExceededError):
        sess.run("sleepy:0", {"x:0": [1.0, 2.0]}, options=options)
    took = time.monotonic() - t0
    assert took < 0.2 + 0.1 + 0.05, took  # the deadline + the promised 100 ms (+ slack)
    assert not done.is_set()  # the op still runs, in the background
    # The session stays usable meanwhile.
    np.testing.assert_array_equal(sess.run("quick:0", {"x:0": [1.0, 2.0]}), [2.0, 4.0])
    sess.close()  # waits for the sleeping op
    assert done.is_set()
    assert time.monotonic() - t0 >= 0.9


def test_the_abandoned_op_s_outputs_are_dropped_and_its_errors_reach_no_one() -> None:
    g = ow.Graph()
    started = threading.Event()

    def fails_late(x: np.ndarray) -> np.ndarray:
        started.set()
        time.sleep(0.3)
        raise RuntimeError("late failure nobody waits for")

    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(1,), name="x")
        ow.py_function(fails_late, [x], ow.float32, name="late")
    with ow.Session(graph=g) as sess:
        with pytest.raises(ow.errors.DeadlineExceededError):
            sess.run("late:0", {"x:0": [0.0]}, options=ow.RunOptions(timeout_in_ms=50))
        assert started.is_set()
    # Leaving the with-block closed the session after the late op failed in the background.


def test_a_long_kernel_stops_between_pieces_at_the_deadline() -> None:
    # A chain of big matmuls: the deadline cancels the chain and the running matmul's remaining
    # row blocks, so the run ends soon after the deadline without abandoning anything.
    with ow.Graph().as_default():
        a = ow.placeholder(ow.float32, shape=(1500, 1500))
        y = a
        for _ in range(40):
            y = ow.matmul(y, a)
        with ow.Session() as sess:
            t0 = time.monotonic()
            with pytest.raises(ow.errors.DeadlineExceededError):
                sess.run(
                    y, {a: np.eye(1500, dtype=np.float32)}, options=ow.RunOptions(timeout_in_ms=30)
                )
            assert time.monotonic() - t0 < 0.03 + 0.1 + 0.05
            assert sess._executor.num_abandoned_runs() == 0


def test_runs_without_a_deadline_are_unchanged() -> None:
    done = threading.Event()
    g = _sleeper(0.05, done)
    with ow.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run("sleepy:0", {"x:0": [1.0, 2.0]}), [1.0, 2.0])
    assert done.is_set()
