"""Several Python threads running steps on one session at once (Hogwild, as TensorFlow allows):
locking updates count exactly, unlocked ones lose no element's update, reads see each 8192-element
block before or after an update, and concurrent optimizer steps train sanely."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import opweave as ow
import pytest

BLOCK = 8192  # Variable::kBlock: updates lock and readers copy blocks of this many elements


def _in_threads(n: int, body: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            body(i)
        except BaseException as e:  # re-raised in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("use_locking", [True, False])
def test_concurrent_assign_add_counts_every_step(use_locking: bool) -> None:
    n, threads, steps = 3 * BLOCK + 100, 4, 50
    with ow.Graph().as_default():
        v = ow.Variable(np.zeros(n, np.float32))
        inc = ow.assign_add(v, np.ones(n, np.float32), use_locking=use_locking).op
        with ow.Session() as s:
            s.run(v.initializer)
            _in_threads(threads, lambda i: [s.run(inc) for _ in range(steps)])
            final = s.run(v)
    # Each block's read-modify-write holds the block's lock: no element loses an update, with or
    # without use_locking (which makes each update atomic as a whole).
    np.testing.assert_array_equal(final, np.full(n, threads * steps, np.float32))


def test_reads_during_updates_see_each_block_before_or_after() -> None:
    n, writers, steps = 4 * BLOCK, 3, 40
    with ow.Graph().as_default():
        v = ow.Variable(np.zeros(n, np.float32))
        inc = v.assign_add(np.ones(n, np.float32), use_locking=False).op
        doubled = v * 2.0  # a read inside a run, used by another op
        with ow.Session() as s:
            s.run(v.initializer)
            done = threading.Event()
            seen: list[np.ndarray] = []

            def read() -> None:
                while not done.is_set():
                    seen.append(s.run(doubled) / 2.0)

            reader = threading.Thread(target=read)
            reader.start()
            try:
                _in_threads(writers, lambda i: [s.run(inc) for _ in range(steps)])
            finally:
                done.set()
                reader.join()
    assert seen
    for value in seen:
        blocks = value.reshape(-1, BLOCK)
        assert (blocks == blocks[:, :1]).all()  # every block whole
        assert blocks.min() >= 0
        assert blocks.max() <= writers * steps


@pytest.mark.parametrize("use_locking", [True, False])
def test_concurrent_optimizer_steps_train_sanely(use_locking: bool) -> None:
    rng = np.random.default_rng(0)
    x_data = rng.standard_normal((64, 8)).astype(np.float32)
    w_true = rng.standard_normal((8, 1)).astype(np.float32)
    y_data = x_data @ w_true
    threads, steps = 4, 75
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [None, 8])
        y = ow.placeholder(ow.float32, [None, 1])
        w = ow.Variable(np.zeros((8, 1), np.float32))
        err = ow.matmul(x, w) - y
        loss = ow.reduce_mean(err * err)
        step = ow.train.get_or_create_global_step()
        train = ow.train.AdamOptimizer(0.05, use_locking=use_locking).minimize(loss, step)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            first = s.run(loss, {x: x_data, y: y_data})
            feed = {x: x_data, y: y_data}
            _in_threads(threads, lambda i: [s.run(train, feed) for _ in range(steps)])
            last = s.run(loss, feed)
            assert s.run(step) == threads * steps  # the step counter loses no increment
            assert np.isfinite(s.run(w)).all()
    assert last < 0.01 * first
