"""Interruption and shutdown: none may hang or crash.

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
from _subprocess import finish, spawn_python

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_PRELUDE = """
import os, sys, threading, time
import numpy as np
import opweave as ow

_started = threading.Event()
_announce_lock = threading.Lock()  # two ops starting at once must not both announce

def slow_graph(n=200, sleep=0.02, announce=False):
    # announce: the first op to run prints "ready", so the run is surely in flight by then.
    x = ow.placeholder(ow.float32, shape=(3,), name="x")
    def body(v):
        if announce:
            with _announce_lock:
                if not _started.is_set():
                    # Printed before the event is set: a waiter's output must not interleave.
                    print("ready", flush=True)
                    _started.set()
        time.sleep(sleep)
        return v
    parts = [ow.py_function(body, [x], ow.float32) for _ in range(n)]
    return x, ow.add_n(parts)

def busy_graph(n=64, size=256):
    x = ow.placeholder(ow.float32, shape=(size, size), name="x")
    y = x
    for _ in range(n):
        y = ow.tanh(ow.matmul(y, x) * 1e-3)
    return x, y
"""


def _spawn(code: str) -> subprocess.Popen[str]:
    return spawn_python(_PRELUDE + textwrap.dedent(code))


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return finish(_spawn(code), timeout)


def _interrupt_when_ready(
    code: str, runner_ignores_sigint: bool = False
) -> subprocess.CompletedProcess[str]:
    """Start ``code``, send SIGINT once it printed "ready" (and half a second more).

    runner_ignores_sigint: start it the way a runner that ignores SIGINT would (the child
    inherits SIG_IGN).
    """
    if runner_ignores_sigint:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            proc = _spawn(code)
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        proc = _spawn(code)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line == "ready":
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
    done = finish(proc)
    assert line == "ready", f"{line}\n{done.stdout}\n{done.stderr}"
    return done


def _assert_clean(proc: subprocess.CompletedProcess[str], rc: int = 0) -> None:
    assert proc.returncode == rc, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\n{proc.stderr}"


def test_ctrl_c_during_a_long_run_raises_keyboard_interrupt() -> None:
    code = """
    x, y = slow_graph(sleep=0.05, announce=True)  # 5 s of work on two threads
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=2))
    try:
        sess.run(y, feed_dict={x: np.ones(3, np.float32)})
        print("completed")
    except KeyboardInterrupt:
        print("interrupted")
    # The session is still usable afterwards and no run is left behind.
    z = ow.constant(2.0) * 3.0
    print("after", sess.run(z))
    """
    proc = _interrupt_when_ready(code)
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 0, err
    assert "interrupted" in out, out + err
    assert "after 6.0" in out, out + err


def test_ctrl_c_interrupts_a_child_of_a_runner_that_ignores_sigint() -> None:
    # nohup, `cmd &` in a non-interactive shell and some CI agents start the test runner with
    # SIGINT ignored, and every child inherits that: the tests' children must still get Ctrl-C.
    code = """
    x, y = slow_graph(sleep=0.05, announce=True)
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=2))
    try:
        sess.run(y, feed_dict={x: np.ones(3, np.float32)})
        print("completed")
    except KeyboardInterrupt:
        print("interrupted")
    """
    proc = _interrupt_when_ready(code, runner_ignores_sigint=True)
    assert proc.returncode == 0, proc.stderr
    assert "interrupted" in proc.stdout, proc.stdout + proc.stderr


def test_ctrl_c_in_caller_thread_mode_raises_keyboard_interrupt() -> None:
    code = """
    x, y = slow_graph(n=100, sleep=0.05, announce=True)  # 5 s of work in the caller
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=-1))
    try:
        sess.run(y, feed_dict={x: np.ones(3, np.float32)})
        print("completed")
    except KeyboardInterrupt:
        print("interrupted")
    """
    proc = _interrupt_when_ready(code)
    out, err = proc.stdout, proc.stderr
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


def test_a_session_in_a_reference_cycle_is_collected_once_the_run_holding_it_ends() -> None:
    # The main thread drops its last reference (a cycle) mid-run; the running callable holds the
    # session until the run ends, then the cycle is collected, and exit follows at once.
    code = """
    import gc, weakref
    x, y = slow_graph(n=100, sleep=0.01)

    class Holder:
        pass

    h = Holder()
    h.self = h
    h.sess = ow.Session(config=ow.ConfigProto(
        inter_op_parallelism_threads=2, use_per_session_threads=True))
    session = weakref.ref(h.sess)
    run = h.sess.make_callable(y, [x])
    t = threading.Thread(
        target=lambda: print("result", run(np.ones(3, np.float32))[0], flush=True))
    t.start()
    time.sleep(0.2)
    del h, run
    gc.collect()
    t.join()
    gc.collect()
    print("collected after the run", session() is None)
    """
    proc = _run(code)
    _assert_clean(proc)
    assert "result 100.0" in proc.stdout
    assert "collected after the run True" in proc.stdout


def test_garbage_collecting_a_session_while_its_named_pool_runs_another_sessions_work() -> None:
    # The other way round: the session is collected at once (its pool is the
    # process-wide named pool, busy with another session's run), and the run is not disturbed.
    code = """
    import gc, weakref
    x, y = slow_graph(n=300, sleep=0.01, announce=True)  # 1.5 s on the pool's two threads
    shared = ow.ConfigProto(session_inter_op_thread_pool=[ow.ThreadPoolOptionProto(2, "shared")])
    busy = ow.Session(config=shared)

    class Holder:
        pass

    h = Holder()
    h.self = h
    h.sess = ow.Session(config=shared)
    h.sess.run(x + 1.0, feed_dict={x: np.ones(3, np.float32)})  # it has used the pool too
    session = weakref.ref(h.sess)
    results = []
    feed = {x: np.ones(3, np.float32)}
    t = threading.Thread(target=lambda: results.append(busy.run(y, feed_dict=feed)))
    t.start()
    assert _started.wait(30)
    del h
    gc.collect()
    print("collected while the pool is busy", session() is None, t.is_alive(), flush=True)
    t.join()
    print("result", results[0][0])
    """
    proc = _run(code)
    _assert_clean(proc)
    assert "collected while the pool is busy True True" in proc.stdout
    assert "result 300.0" in proc.stdout


def test_interpreter_exit_with_kernels_in_flight_in_daemon_threads() -> None:
    # A kernel call releases the GIL; a daemon thread taking it back after finalization started
    # would be killed inside C++ and abort the process. Exit waits for the call instead.
    code = """
    from opweave import kernels
    a = np.random.default_rng(0).standard_normal((300, 300))

    def loop():
        while True:
            kernels.matmul(a, a)
            kernels.reduce_sum(a, axis=0)

    for _ in range(3):
        threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.5)
    print("exiting", flush=True)
    """
    proc = _run(code)
    _assert_clean(proc)
    assert "exiting" in proc.stdout


def test_a_child_forked_mid_run_does_not_wait_for_the_parents_runs_at_exit() -> None:
    # The parent's run lives on in the child's counters only: the child's exit must not wait for
    # it (it would wait out the whole exit timeout, then warn).
    code = """
    from opweave import _opweave_core
    entered, release = threading.Event(), threading.Event()

    def block(v):
        entered.set()
        release.wait(30)
        return v

    x = ow.placeholder(ow.float32, shape=(3,), name="x")
    y = ow.py_function(block, [x], ow.float32)
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads=2))
    t = threading.Thread(target=lambda: sess.run(y, feed_dict={x: np.ones(3, np.float32)}))
    t.start()
    assert entered.wait(30)
    pid = os.fork()
    if pid == 0:
        idle = _opweave_core.close_runs_for_exit(0.0)
        os._exit(0 if idle else 7)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    release.set()
    t.join()
    print("child", code)
    """
    proc = _run(code)
    _assert_clean(proc)
    assert "child 0" in proc.stdout, proc.stdout + proc.stderr
