"""Fork safety: a forked child (os.fork, multiprocessing's fork start method) runs kernels and
graphs on pools rebuilt lazily with the parent's sizes; it never hangs, crashes or floods stderr.

Every scenario runs in its own interpreter under a timeout, so a hang fails the test instead of
the suite, and the pytest process itself (which may hold threads) never forks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import opweave
import pytest

TIMEOUT_S = 60

# Work used by every scenario: a kernel called directly and a graph run in a Session, both
# checked against NumPy. Each returns only when the pools really ran the work.
PRELUDE = textwrap.dedent(
    """
    import os, sys, threading, multiprocessing
    import numpy as np
    import numpy.testing  # imported before any fork: a child cannot finish an import that a
                          # parent thread was in the middle of (Python's import lock)
    import opweave

    A = np.arange(300 * 200, dtype=np.float64).reshape(300, 200) / 1e4
    # NumPy's own matmul only here, before any thread starts: OpenBLAS itself can hang a fork
    # that happens while another thread is inside it (its prefork handler joins its workers).
    REF = A @ A.T

    def kernel_work():
        np.testing.assert_allclose(opweave.kernels.matmul(A, A.T), REF, rtol=1e-12)

    def graph_work(config=None):
        with opweave.Graph().as_default():
            x = opweave.placeholder(opweave.float64, shape=(None, 200))
            towers = [opweave.reduce_sum(opweave.matmul(x, x, transpose_b=True)) for _ in range(3)]
            total = opweave.add_n(towers)
            with opweave.Session(config=config) as sess:
                got = sess.run(total, feed_dict={x: A})
        np.testing.assert_allclose(got, 3 * REF.sum(), rtol=1e-9)

    def at_once(*jobs, repeats=3):
        # Each job on its own thread, all released together and repeated, so kernels and graphs
        # (global and per-session pools) overlap, also while the pools are first rebuilt.
        barrier = threading.Barrier(len(jobs))
        failures = []
        def run(job):
            try:
                barrier.wait()
                for _ in range(repeats):
                    job()
            except BaseException as e:
                failures.append(e)
        threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]

    PER_SESSION = opweave.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=2)

    def work():
        if WORKLOAD == "concurrent":
            at_once(kernel_work, kernel_work, graph_work, lambda: graph_work(PER_SESSION))
        else:
            kernel_work()
            if WORKLOAD == "graph":
                graph_work()
        return [opweave.get_num_threads(), opweave.get_num_interop_threads()]
    """
)

# Every scenario runs kernels alone, then kernels and a graph one after the other, then kernels
# and graphs at once from separate threads (once the graph runtime exists).
_needs_graphs = pytest.mark.skipif(
    not hasattr(opweave, "Session"), reason="needs the graph runtime"
)
workloads = pytest.mark.parametrize(
    "workload",
    [
        "kernels",
        pytest.param("graph", marks=_needs_graphs),
        pytest.param("concurrent", marks=_needs_graphs),
    ],
)


def _run(
    body: str, workload: str = "kernels", timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPWEAVE_", "OMP_"))}
    code = f"WORKLOAD = {workload!r}\n{PRELUDE}{textwrap.dedent(body)}"
    # Own session: on a timeout the whole group goes, forked children included.
    with subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"hung for {timeout}s (a forked child waited on a dead thread?)")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _ok(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.split()


def _stderr_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    # Python >= 3.12 warns once when a multi-threaded process forks; that is Python's, not ours.
    return [
        line
        for line in proc.stderr.splitlines()
        if line.strip()
        and "use of fork() may lead to deadlocks" not in line
        and not line.lstrip().startswith(("self.pid = os.fork()", "pid = os.fork()"))
    ]


@workloads
def test_os_fork_child_runs_kernels_and_graphs_with_the_parents_sizes(workload: str) -> None:
    proc = _run(
        """
        opweave.set_num_threads(2)
        opweave.set_num_interop_threads(3)
        work()  # the parent's pools exist and their workers are alive
        pid = os.fork()
        if pid == 0:
            try:
                sizes = work()
                os._exit(0 if sizes == [2, 3] else 3)
            except BaseException:
                import traceback; traceback.print_exc()
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        print(*work())  # the parent's pools still work after the fork
        """,
        workload,
    )
    assert _ok(proc) == ["0", "2", "3"]
    assert _stderr_lines(proc) == []


@workloads
def test_child_forked_while_the_parent_is_busy_does_not_hang(workload: str) -> None:
    proc = _run(
        """
        opweave.set_num_threads(2)
        stop = threading.Event()
        def busy():
            while not stop.is_set():
                work()
        threads = [threading.Thread(target=busy) for _ in range(2)]
        for t in threads:
            t.start()
        codes = []
        for _ in range(5):
            pid = os.fork()
            if pid == 0:
                try:
                    work()
                    os._exit(0)
                except BaseException:
                    import traceback; traceback.print_exc()
                    os._exit(1)
            codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        stop.set()
        for t in threads:
            t.join()
        print(*codes)
        """,
        workload,
    )
    assert _ok(proc) == ["0"] * 5
    assert _stderr_lines(proc) == []


@workloads
def test_grandchild_of_a_fork_still_runs_work(workload: str) -> None:
    proc = _run(
        """
        opweave.set_num_threads(2)
        work()
        def fork_and_work(depth):
            pid = os.fork()
            if pid == 0:
                try:
                    work()
                    code = fork_and_work(depth - 1) if depth > 1 else 0
                    os._exit(code)
                except BaseException:
                    import traceback; traceback.print_exc()
                    os._exit(1)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        print(fork_and_work(3))
        """,
        workload,
    )
    assert _ok(proc) == ["0"]


@workloads
def test_multiprocessing_fork_pool_runs_work_in_every_child_with_the_parents_sizes(
    workload: str,
) -> None:
    proc = _run(
        """
        def task(i):
            return work() + [i]

        if __name__ == "__main__":
            opweave.set_num_threads(2)
            opweave.set_num_interop_threads(2)
            work()
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(2) as pool:
                results = pool.map(task, range(6))
            assert results == [[2, 2, i] for i in range(6)], results
            print("ok")
        """,
        workload,
    )
    assert _ok(proc) == ["ok"]
    assert _stderr_lines(proc) == []


@workloads
def test_multiprocessing_fork_children_run_work_while_the_parent_is_busy(workload: str) -> None:
    proc = _run(
        """
        def task(i):
            return work() + [i]

        if __name__ == "__main__":
            opweave.set_num_threads(2)
            opweave.set_num_interop_threads(3)
            stop = threading.Event()
            def busy():
                while not stop.is_set():
                    work()
            threads = [threading.Thread(target=busy) for _ in range(2)]
            for t in threads:
                t.start()
            try:
                ctx = multiprocessing.get_context("fork")
                with ctx.Pool(2) as pool:  # forks while the parent's pools are busy
                    results = pool.map(task, range(4))
            finally:
                stop.set()
                for t in threads:
                    t.join()
            assert results == [[2, 3, i] for i in range(4)], results
            print("ok")
        """,
        workload,
    )
    assert _ok(proc) == ["ok"]
    assert _stderr_lines(proc) == []


def test_many_forks_do_not_flood_stderr_and_keep_sizes() -> None:
    proc = _run(
        """
        opweave.set_num_threads(2)
        kernel_work()
        codes = []
        for _ in range(20):
            pid = os.fork()
            if pid == 0:
                kernel_work()
                os._exit(0 if opweave.get_num_threads() == 2 else 3)
            codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        print(sum(codes))
        """
    )
    assert _ok(proc) == ["0"]
    assert _stderr_lines(proc) == []


@pytest.mark.parametrize(
    "pools",
    [
        "use_per_session_threads=True, inter_op_parallelism_threads=2",
        "session_inter_op_thread_pool=[opweave.ThreadPoolOptionProto(2, 'forked')]",
    ],
)
def test_child_runs_a_session_whose_own_pools_were_created_before_the_fork(pools: str) -> None:
    if not hasattr(opweave, "Session"):
        pytest.skip("needs the graph runtime")
    proc = _run(
        f"""
        import gc
        with opweave.Graph().as_default():
            x = opweave.placeholder(opweave.float64, shape=(None, 200))
            y = opweave.add_n([opweave.reduce_sum(x) for _ in range(3)])
            sess = opweave.Session(config=opweave.ConfigProto({pools}))
            sess.run(y, feed_dict={{x: A}})
            pid = os.fork()
            if pid == 0:
                sess.run(y, feed_dict={{x: A}})
                info = opweave.parallel_info()
                sess.close()
                del sess
                gc.collect()  # dropping the parent's pools must not join their threads
                sys.exit(0 if info.count("inter-op pool") == 1 else 3)
            print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        """,
    )
    assert _ok(proc) == ["0"]
