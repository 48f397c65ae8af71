"""Interruption and shutdown (issue 6, point 4): none may hang or crash.

Each case runs in a fresh interpreter with a timeout; a hang fails with TimeoutExpired and a
crash with a negative return code (the signal).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_PRELUDE = """
import os, sys, threading, time
import numpy as np
import opweave as ow

def slow_graph(n=200, sleep=0.02):
    x = ow.placeholder(ow.float32, shape=(3,), name="x")
    parts = [ow.py_function(lambda v: (time.sleep(sleep), v)[1], [x], ow.float32)
             for _ in range(n)]
    return x, ow.add_n(parts)

def busy_graph(n=64, size=256):
    x = ow.placeholder(ow.float32, shape=(size, size), name="x")
    y = x
    for _ in range(n):
        y = ow.tanh(ow.matmul(y, x) * 1e-3)
    return x, y
"""


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _assert_clean(proc: subprocess.CompletedProcess[str], rc: int = 0) -> None:
    assert proc.returncode == rc, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\n{proc.stderr}"


def test_ctrl_c_during_a_long_run_raises_keyboard_interrupt_promptly() -> None:
    code = """
    x, y = slow_graph()
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=2))
    print("ready", flush=True)
    t0 = time.monotonic()
    try:
        sess.run(y, feed_dict={x: np.ones(3, np.float32)})
        print("completed")
    except KeyboardInterrupt:
        print("interrupted", round(time.monotonic() - t0, 2))
    # The session is still usable afterwards and no run is left behind.
    z = ow.constant(2.0) * 3.0
    print("after", sess.run(z))
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "interrupted" in out, out + err
    assert "after 6.0" in out, out + err


def test_ctrl_c_in_caller_thread_mode_raises_keyboard_interrupt() -> None:
    code = """
    x, y = slow_graph()
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=-1))
    print("ready", flush=True)
    try:
        sess.run(y, feed_dict={x: np.ones(3, np.float32)})
        print("completed")
    except KeyboardInterrupt:
        print("interrupted")
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", _PRELUDE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "interrupted" in out, out + err


@pytest.mark.parametrize("per_session", [False, True])
def test_interpreter_exit_with_runs_in_flight_in_other_threads(per_session: bool) -> None:
    code = f"""
    x, y = busy_graph()
    xs, ys = slow_graph(n=500, sleep=0.01)
    sess = ow.Session(config=ow.ConfigProto(
        inter_op_parallelism_threads=2, use_per_session_threads={per_session}))
    v = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)

    def loop(fetch, feed):
        while True:
            sess.run(fetch, feed_dict=feed)

    for fetch, feed in [(y, {{x: v}}), (ys, {{xs: np.ones(3, np.float32)}})] * 2:
        threading.Thread(target=loop, args=(fetch, feed), daemon=True).start()
    time.sleep(0.5)
    print("exiting", flush=True)
    """
    proc = _run(code)
    _assert_clean(proc)
    assert "exiting" in proc.stdout


def test_interpreter_exit_while_py_functions_wait_for_the_gil() -> None:
    # The main thread holds the GIL in a pure-Python loop while many py_functions queue for it,
    # then exits: the waiting pool threads must not crash on a finalizing interpreter.
    code = """
    x = ow.placeholder(ow.float32, shape=(3,), name="x")
    parts = [ow.py_function(lambda v: v + 1, [x], ow.float32) for _ in range(400)]
    y = ow.add_n(parts)
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=2))

    def loop():
        while True:
            sess.run(y, feed_dict={x: np.ones(3, np.float32)})

    for _ in range(3):
        threading.Thread(target=loop, daemon=True).start()
    t_end = time.monotonic() + 0.5
    n = 0
    while time.monotonic() < t_end:
        n += 1  # holds the GIL most of the time
    print("exiting", flush=True)
    sys.exit(3)
    """
    proc = _run(code)
    _assert_clean(proc, rc=3)
    assert "exiting" in proc.stdout


def test_os_exit_with_runs_in_flight_does_not_hang() -> None:
    code = """
    x, y = slow_graph(n=500, sleep=0.01)
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=2))
    threading.Thread(target=lambda: sess.run(y, feed_dict={x: np.ones(3, np.float32)}),
                     daemon=True).start()
    time.sleep(0.3)
    os._exit(0)
    """
    _assert_clean(_run(code))


def test_garbage_collecting_a_session_whose_pools_are_busy() -> None:
    code = """
    import gc
    x, y = busy_graph(n=16, size=128)
    v = np.random.default_rng(0).standard_normal((128, 128)).astype(np.float32)
    want = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=-1)).run(
        y, feed_dict={x: v})
    errors = []
    for i in range(20):
        sess = ow.Session(config=ow.ConfigProto(
            inter_op_parallelism_threads=2, use_per_session_threads=True))
        run = sess.make_callable(y, [x])

        def work(run=run):
            try:
                np.testing.assert_allclose(run(v), want, rtol=1e-5)
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        # Drop every reference the main thread has while the runs are in flight.
        del sess, run, work
        gc.collect()
        for t in threads:
            t.join(timeout=30)
            assert not t.is_alive()
    print("errors", errors)
    """
    proc = _run(code, timeout=120)
    _assert_clean(proc)
    assert "errors []" in proc.stdout


def test_garbage_collecting_a_session_in_a_reference_cycle_mid_run() -> None:
    # The session is only reachable through a cycle, collected while a daemon thread is running
    # it; exit follows at once.
    code = """
    import gc
    x, y = slow_graph(n=100, sleep=0.01)

    class Holder:
        pass

    h = Holder()
    h.self = h
    h.sess = ow.Session(config=ow.ConfigProto(
        inter_op_parallelism_threads=2, use_per_session_threads=True))
    run = h.sess.make_callable(y, [x])
    threading.Thread(target=lambda: print("result", run(np.ones(3, np.float32))[0], flush=True),
                     daemon=False).start()
    time.sleep(0.2)
    del h, run
    gc.collect()
    """
    proc = _run(code)
    _assert_clean(proc)
    assert "result 100.0" in proc.stdout
