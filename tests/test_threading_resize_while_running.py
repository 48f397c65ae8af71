"""Thread controls called while ops run: from other threads, and from inside the ops themselves.

pools/global_pools.h promises that the sizes may be set at any time. A resize waits for the work
in flight on that pool, so nothing that work needs may be held across the wait (it used to be a
Python lock: a py_function calling ``threadpool_limits`` or ``opweave.threads`` while another
thread resized the inter-op pool hung both threads). And a resize asked for from inside the pool's
own work would wait for itself: it is a clear ``FailedPreconditionError`` instead, never a hang.

Each case runs in a fresh interpreter under a timeout, so a hang fails the test.
"""

from __future__ import annotations

from _subprocess import run_python

# A graph with one py_function `y` calling BODY(v), and a Session on the global pools. A
# resizer thread (started by the case) calls RESIZE() once the py_function has started.
_PRELUDE = """
import threading, time
import numpy as np
import opweave as ow
from threadpoolctl import threadpool_limits

entered = threading.Event()
g = ow.Graph()
with g.as_default():
    x = ow.placeholder(ow.float32, shape=(3,))
    y = ow.py_function(lambda v: BODY(v), [x], ow.float32)
sess = ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=2))
ones = np.ones(3, np.float32)

def run_while_resizing(resize):
    out = {}
    def runner():
        try:
            out["run"] = sess.run(y, feed_dict={x: ones})
        except Exception as e:
            out["run"] = e
    def resizer():
        entered.wait()
        resize()
        out["resized"] = True
    threads = [threading.Thread(target=runner), threading.Thread(target=resizer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out
"""


def _run(body: str, timeout: float = 60) -> str:
    proc = run_python(_PRELUDE + body, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_threadpool_limits_in_a_py_function_while_another_thread_resizes_inter_does_not_hang() -> (
    None
):
    out = _run("""
def BODY(v):
    entered.set()
    time.sleep(0.3)  # the resizer is now waiting for this run
    with threadpool_limits(1, user_api="opweave"):
        return v * 2
before = ow.get_num_threads()
out = run_while_resizing(lambda: ow.set_num_interop_threads(3))
same_intra = ow.get_num_threads() == before
print(out["run"].tolist(), out["resized"], ow.get_num_interop_threads(), same_intra)
""")
    assert out.split() == ["[2.0,", "2.0,", "2.0]", "True", "3", "True"]


def test_threads_block_in_a_py_function_while_another_thread_resizes_inter_does_not_hang() -> None:
    out = _run("""
def BODY(v):
    entered.set()
    time.sleep(0.3)
    with ow.threads(intra=1):
        assert ow.get_num_threads() == 1
        return v * 2
out = run_while_resizing(lambda: ow.set_num_interop_threads(3))
print(out["run"].tolist(), out["resized"], ow.get_num_interop_threads())
""")
    assert out.split() == ["[2.0,", "2.0,", "2.0]", "True", "3"]


def test_a_py_function_resizing_the_pool_it_runs_on_gets_failed_precondition() -> None:
    out = _run("""
calls = iter([
    lambda: ow.set_num_interop_threads(3),
    lambda: ow.threads(inter=1).__enter__(),
    lambda: ow.config.threading.set_inter_op_parallelism_threads(0),
])
def BODY(v):
    next(calls)()
    return v * 2
for _ in range(3):
    try:
        sess.run(y, feed_dict={x: ones})
        print("no error")
    except ow.errors.FailedPreconditionError as e:
        assert "cannot resize the inter-op pool from inside its own work" in str(e), e
        print("refused")
print(ow.get_num_interop_threads(), ow.config.threading.get_inter_op_parallelism_threads())
def BODY(v):
    return v * 2
print(sess.run(y, feed_dict={x: ones}).tolist())  # the session is still usable
""")
    assert out.split("\n")[:4] == ["refused", "refused", "refused", "2 0"]
    assert out.split("\n")[4] == "[2.0, 2.0, 2.0]"


def test_a_py_function_resizing_its_own_pool_while_another_thread_resizes_it_is_refused() -> None:
    # The resizer holds the pool's resize lock and waits for this run; the py_function's own
    # resize must be refused at once rather than wait behind it.
    out = _run("""
def BODY(v):
    entered.set()
    time.sleep(0.3)
    ow.set_num_interop_threads(1)
    return v * 2
out = run_while_resizing(lambda: ow.set_num_interop_threads(3))
print(type(out["run"]).__name__, out["resized"], ow.get_num_interop_threads())
""")
    assert out.split() == ["FailedPreconditionError", "True", "3"]


def test_a_py_function_may_resize_the_intra_op_pool_it_does_not_run_on() -> None:
    out = _run("""
def BODY(v):
    ow.set_num_threads(3)
    a = np.ones((200, 200), np.float32)
    np.testing.assert_allclose(ow.kernels.matmul(a, a), a @ a)
    return v * 2
print(sess.run(y, feed_dict={x: ones}).tolist(), ow.get_num_threads())
""")
    assert out.split() == ["[2.0,", "2.0,", "2.0]", "3"]


def test_a_refused_threads_block_changes_nothing_it_set_before_the_refusal() -> None:
    out = _run("""
before = ow.get_num_threads(), ow._runtime.intra_source()
def BODY(v):
    with ow.threads(intra=1, inter=1):  # intra is set first, then inter is refused
        pass
    return v
try:
    sess.run(y, feed_dict={x: ones})
except ow.errors.FailedPreconditionError:
    print("refused")
print((ow.get_num_threads(), ow._runtime.intra_source()) == before)
""")
    assert out.split() == ["refused", "True"]


def test_setters_and_blocks_racing_on_several_threads_leave_a_consistent_setting() -> None:
    # Whatever interleaving, the size, its source, what TensorFlow's getter reports and the real
    # number of workers belong to one and the same call.
    out = _run(
        """
import re
from opweave import _opweave_core as core
def BODY(v):
    return v
stop = threading.Event()
def blocks(k):
    while not stop.is_set():
        with ow.threads(intra=k):
            pass
        with threadpool_limits(k, user_api="opweave"):
            pass
def setters():
    for i in range(100):
        ow.set_num_threads(1 + i % 4)
        ow.config.threading.set_intra_op_parallelism_threads(i % 3)
    stop.set()
threads = [threading.Thread(target=blocks, args=(k,)) for k in (2, 3)]
threads.append(threading.Thread(target=setters))
for t in threads:
    t.start()
for t in threads:
    t.join()
size, source = ow.get_num_threads(), ow._runtime.intra_source()
requested = ow.config.threading.get_intra_op_parallelism_threads()
m = re.search(r"\\((?:intra=)?(\\d+)\\)$", source)
assert requested in (0, size), (size, source, requested)
assert m is None or int(m.group(1)) == size, (size, source)
assert (m is None) == (requested == 0), (source, requested)
assert core.pool_num_workers("intra") == size - 1, (core.pool_num_workers("intra"), size)
print("consistent")
""",
        timeout=120,
    )
    assert out.split() == ["consistent"]
