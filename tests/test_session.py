"""Session.run: fetch structures, feeds and pruning, errors, threads, Ctrl-C and timeouts.

These tests use only data-movement ops and py_function, so they specify the session and the
executor independently of the arithmetic kernels. Sessions here use the process-global pools
with default sizes, per-session pools or caller-thread mode, so no first-session warning fires.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import numpy as np
import opweave as ow
import pytest
from _subprocess import finish, run_python, spawn_python

PER_SESSION_2 = ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)


def test_fetch_structures_come_back_with_the_same_shape() -> None:
    Pair = collections.namedtuple("Pair", "a b")
    with ow.Graph().as_default() as g:
        a = ow.constant(1.0, name="a")
        b = ow.identity(a, name="b")
        nop = ow.no_op(name="nop")
    with ow.Session(graph=g) as sess:
        out = sess.run({"x": [a, (b, "a:0")], "p": Pair(a, "b:0"), "op": nop, "name": "nop"})
        assert isinstance(out["x"], list)
        assert isinstance(out["x"][1], tuple)
        assert out["x"][1][1] == 1.0
        assert isinstance(out["p"], Pair)
        assert out["p"].b == 1.0
        assert out["op"] is None
        assert out["name"] is None
        assert sess.run(a) == 1.0


def test_mapping_fetches_keep_their_type_and_a_defaultdict_its_factory() -> None:
    with ow.Graph().as_default() as g:
        a = ow.constant(1.0, name="a")
    with ow.Session(graph=g) as sess:
        out = sess.run(collections.defaultdict(list, {"a": a}))
        ordered = sess.run(collections.OrderedDict([("b", a), ("a", "a:0")]))
    assert isinstance(out, collections.defaultdict)
    assert out.default_factory is list
    assert out["a"] == 1.0
    assert out["missing"] == []
    assert isinstance(ordered, collections.OrderedDict)
    assert list(ordered) == ["b", "a"]


def test_zero_d_fetches_are_numpy_scalars_and_others_arrays() -> None:
    with ow.Graph().as_default() as g:
        f = ow.constant(1.5, name="f")
        i = ow.constant(np.int64(3))
        b = ow.constant(True)
        x = ow.placeholder(ow.float64, shape=())
        v = ow.constant([1.0])
    with ow.Session(graph=g) as sess:
        out = sess.run({"f": f, "i": [i], "b": (b,), "x": x, "v": v, "s": ow.reduce_sum(v)}, {x: 2})
        call = sess.make_callable(x * 2.0, [x])
        assert type(call(4.0)) is np.float64
    assert type(out["f"]) is np.float32
    assert type(out["i"][0]) is np.int64
    assert type(out["b"][0]) is np.bool_
    assert type(out["x"]) is np.float64
    assert type(out["s"]) is np.float32
    assert type(out["v"]) is np.ndarray
    assert out["v"].shape == (1,)


def test_invalid_fetches_are_type_and_value_errors() -> None:
    with ow.Graph().as_default() as g:
        ow.constant(1.0, name="a")
    with ow.Session(graph=g) as sess:
        with pytest.raises(TypeError, match="invalid type"):
            sess.run(3)
        with pytest.raises(ValueError, match="cannot be interpreted"):
            sess.run("missing:0")


def test_feeding_any_tensor_prunes_what_lies_upstream() -> None:
    calls: list[str] = []

    def upstream() -> np.ndarray:
        calls.append("ran")
        return np.float32(1.0)

    with ow.Graph().as_default() as g:
        u = ow.py_function(upstream, [], ow.float32, name="upstream")
        mid = ow.identity(u, name="mid")
        out = ow.identity(mid, name="out")
    with ow.Session(graph=g) as sess:
        assert sess.run(out, feed_dict={mid: 5.0}) == 5.0
        assert sess.run(out, feed_dict={"mid:0": 6.0}) == 6.0
        assert calls == []
        assert sess.run(out) == 1.0
        assert calls == ["ran"]


def test_unfed_placeholder_is_invalid_argument_naming_it() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
        y = ow.identity(x)
    with ow.Session(graph=g) as sess, pytest.raises(ow.errors.InvalidArgumentError) as info:
        sess.run(y)
    assert info.value.node_name == "x"
    assert info.value.op_type == "Placeholder"
    assert "You must feed a value for placeholder tensor 'x' with dtype float32" in str(info.value)


def test_feed_with_wrong_shape_is_value_error_naming_tensor_and_shapes() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
    with (
        ow.Session(graph=g) as sess,
        pytest.raises(
            ValueError,
            match=r"Cannot feed value of shape \(3,\) for Tensor 'x:0', which has shape "
            r"'\(\?, 2\)'",
        ),
    ):
        sess.run(x, feed_dict={x: np.zeros(3)})


def test_feeds_are_used_without_copying_and_fetches_own_their_memory() -> None:
    seen: list[np.ndarray] = []

    def keep(v: np.ndarray) -> np.ndarray:
        seen.append(v)
        return v

    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(4,), name="x")
        y = ow.py_function(keep, [x], ow.float32)
        c = ow.constant([1.0, 2.0])
    feed = np.arange(8, dtype=np.float32)[::2]  # strided: still viewable
    with ow.Session(graph=g) as sess:
        out = sess.run(y, feed_dict={x: feed})
        assert np.shares_memory(seen[0], feed)
        assert not seen[0].flags.writeable
        np.testing.assert_array_equal(out, feed)
        fetched_c = sess.run(c)
        fetched_c[0] = 100.0  # a fetch never aliases the graph's constant
        assert sess.run(c)[0] == 1.0
        fed_back = sess.run(x, feed_dict={x: feed})
        assert not np.shares_memory(fed_back, feed)
    del sess, out
    assert fed_back.sum() == feed.sum()


def test_make_callable_runs_the_fetches_with_positional_feeds() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.int64, shape=(), name="x")
        y = ow.py_function(lambda v: v * 2, [x], ow.int64)
    with ow.Session(graph=g) as sess:
        double = sess.make_callable([y, {"x": x}], feed_list=[x])
        assert double(21)[0] == 42
        assert double(5)[1]["x"] == 5
        with pytest.raises(ValueError, match="expected 1 feed values"):
            double()


def test_make_callable_rejects_a_bad_feed_list_when_made() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(), name="x")
        y = ow.identity(x)
    with ow.Session(graph=g) as sess:
        with pytest.raises(TypeError, match="Cannot interpret feed_list key 'nope:0' as a Tensor"):
            sess.make_callable(y, feed_list=["nope:0"])
        with pytest.raises(TypeError, match="Cannot interpret feed_list key 3 as a Tensor"):
            sess.make_callable(y, feed_list=[x, 3])
        with pytest.raises(TypeError, match="Cannot interpret feed_list key 'x' as a Tensor"):
            sess.make_callable(y, feed_list=["x"])  # an op, not a tensor
        with pytest.raises(TypeError, match="`feed_list` must be a list or tuple"):
            sess.make_callable(y, feed_list=x)  # type: ignore[arg-type]
        assert sess.make_callable(y, feed_list=("x:0",))(1.5) == 1.5


def test_make_callable_feeds_like_a_dict_when_a_tensor_is_listed_twice() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.int64, shape=(), name="x")
        y = ow.identity(x)
    with ow.Session(graph=g) as sess:
        call = sess.make_callable(y, [x, x])
        assert call(1, 2) == 2  # the last value wins, as in a feed_dict built from the pairs


def test_fetching_a_name_works_once_the_graph_has_it() -> None:
    with ow.Graph().as_default() as g:
        ow.constant(1, name="a")
    with ow.Session(graph=g) as sess:
        with pytest.raises(ValueError, match="'b:0' cannot be interpreted"):
            sess.run("b:0")
        with g.as_default():
            ow.constant(2, name="b")
        assert sess.run("b:0") == 2
        assert sess.run("a:0") == 1


def test_fetched_small_arrays_are_writeable_and_independent_between_runs() -> None:
    # Fetches of at most 64 bytes are copied out of the run; larger ones wrap its buffer.
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.int64, shape=(2,), name="x")
        y = ow.identity(x)
    with ow.Session(graph=g) as sess:
        first = sess.run(y, {x: [1, 1]})
        second = sess.run(y, {x: [2, 2]})
        first[0] = 10
        assert second.tolist() == [2, 2]
        assert first.tolist() == [10, 1]


def test_py_function_exception_keeps_its_type_and_traceback_and_session_still_works() -> None:
    class MyError(Exception):
        pass

    def failing_body(v: np.ndarray) -> np.ndarray:
        raise MyError("bad value")

    with ow.Graph().as_default() as g:
        c = ow.constant(1.0)
        bad = ow.py_function(failing_body, [c], ow.float32, name="bad")
        good = ow.identity(c, name="good")
    with ow.Session(graph=g) as sess:
        with pytest.raises(MyError, match="bad value") as info:
            sess.run(bad)
        frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
        assert "failing_body" in frames
        assert "run" in frames
        assert sess.run(good) == 1.0


def test_closed_session_cannot_run() -> None:
    with ow.Graph().as_default() as g:
        c = ow.constant(1.0)
    sess = ow.Session(graph=g)
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_eight_python_threads_run_one_session_concurrently() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.int64, shape=(None,), name="x")
        y = ow.py_function(lambda v: v + 1, [ow.identity(x)], ow.int64)
        z = ow.reshape(ow.identity(y), [-1, 1])
    errors: list[BaseException] = []

    def worker(sess: ow.Session, k: int) -> None:
        try:
            for i in range(40):
                v = np.array([k, i], dtype=np.int64)
                out = sess.run(z, feed_dict={x: v})
                assert out.shape == (2, 1)
                assert list(out[:, 0]) == [k + 1, i + 1]
        except BaseException as e:
            errors.append(e)

    for config in (None, PER_SESSION_2):
        with ow.Session(graph=g, config=config) as sess:
            threads = [threading.Thread(target=worker, args=(sess, k)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert errors == []


@pytest.mark.parametrize("other_session", [False, True])
def test_py_function_calling_session_run_does_not_deadlock_with_one_inter_thread(
    other_session: bool,
) -> None:
    config = ow.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)
    with ow.Graph().as_default() as g:
        inner = ow.py_function(lambda: np.float32(2.0), [], ow.float32, name="inner")
        sess = ow.Session(graph=g, config=config)
        runner = ow.Session(graph=g, config=config) if other_session else sess
        outer = ow.py_function(lambda: runner.run(inner) * 3, [], ow.float32, name="outer")
        both = [ow.py_function(lambda: runner.run(inner), [], ow.float32) for _ in range(3)]
    assert sess.run(outer) == 6.0
    assert sess.run(both) == [2.0, 2.0, 2.0]
    sess.close()
    runner.close()


def test_helper_thread_of_a_py_function_can_run_nested_in_its_own_thread() -> None:
    # The documented way out of the helper-thread deadlock (see py_function's Notes): the
    # helper's run executes in the helper, so the one blocked inter-op worker is not needed.
    # In a subprocess so that a regression fails on a timeout instead of hanging the suite.
    result = run_python(
        """
        import threading
        import numpy as np
        import opweave as ow
        config = ow.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)
        with ow.Graph().as_default() as g:
            inner = ow.py_function(lambda: np.float32(2.0), [], ow.float32)
            sess = ow.Session(graph=g, config=config)
            def body():
                box = []
                in_helper = ow.RunOptions(inter_op_thread_pool=-1)
                nested = lambda: box.append(sess.run(inner, options=in_helper))
                helper = threading.Thread(target=nested)
                helper.start()
                helper.join()
                return box[0] * 3
            outer = ow.py_function(body, [], ow.float32)
        print(sess.run(outer))
        """,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "6.0"


def test_caller_thread_mode_runs_every_op_in_the_calling_thread() -> None:
    threads: list[int] = []

    def record() -> np.ndarray:
        threads.append(threading.get_ident())
        return np.float32(0)

    with ow.Graph().as_default() as g:
        ops = [ow.py_function(record, [], ow.float32) for _ in range(4)]
    with ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=-1)) as sess:
        sess.run(ops)
    with ow.Session(graph=g, config=PER_SESSION_2) as sess:
        sess.run(ops, options=ow.RunOptions(inter_op_thread_pool=-1))
    assert threads == [threading.get_ident()] * 8


@pytest.mark.parametrize("inter", [2, -1])
def test_control_dependent_op_starts_only_after_its_control_input_finished(inter: int) -> None:
    order: list[str] = []

    def slow() -> np.ndarray:
        order.append("slow started")
        time.sleep(0.05)  # widens the window in which a missing dependency would show
        order.append("slow finished")
        return np.float32(0)

    def dependent() -> np.ndarray:
        order.append("dependent ran")
        return np.float32(0)

    with ow.Graph().as_default() as g:
        s = ow.py_function(slow, [], ow.float32, name="slow")
        with ow.control_dependencies([s]):
            d = ow.py_function(dependent, [], ow.float32, name="dependent")
    expected = ["slow started", "slow finished", "dependent ran"]
    config = ow.ConfigProto(inter_op_parallelism_threads=inter, use_per_session_threads=inter > 0)
    with ow.Session(graph=g, config=config) as sess:
        sess.run(d)  # the control input runs although nothing fetches it
        assert order == expected
        for fetches in ([d, s], [s, d]):
            order.clear()
            sess.run(fetches)
            assert order == expected


def _sleep_chain(n: int, seconds: float) -> tuple[ow.Graph, ow.Tensor, list[int]]:
    counter = [0]

    def step(v: np.ndarray) -> np.ndarray:
        counter[0] += 1
        time.sleep(seconds)
        return v

    g = ow.Graph()
    with g.as_default():
        t = ow.constant(0.0)
        for _ in range(n):
            t = ow.py_function(step, [t], ow.float32)
    return g, t, counter


@pytest.mark.parametrize("mode", ["pool", "caller"])
def test_timeout_is_deadline_exceeded_and_nothing_keeps_running(mode: str) -> None:
    g, last, counter = _sleep_chain(100, 0.01)
    config = PER_SESSION_2 if mode == "pool" else ow.ConfigProto(inter_op_parallelism_threads=-1)
    with ow.Session(graph=g, config=config) as sess:
        with pytest.raises(ow.errors.DeadlineExceededError, match="Timed out"):
            sess.run(last, options=ow.RunOptions(timeout_in_ms=100))
        stopped_at = counter[0]
        time.sleep(0.1)
        assert counter[0] == stopped_at < 100
        assert sess.run("Const:0") == 0.0  # the session still works


def test_operation_timeout_in_ms_applies_to_every_run() -> None:
    g, last, counter = _sleep_chain(100, 0.01)
    config = ow.ConfigProto(
        operation_timeout_in_ms=100, inter_op_parallelism_threads=1, use_per_session_threads=True
    )
    with ow.Session(graph=g, config=config) as sess:
        runs = [
            lambda: sess.run(last),
            lambda: sess.run(last),  # not only the first run of the session
            lambda: sess.run(last, options=ow.RunOptions()),  # timeout_in_ms=0: the default
            sess.make_callable(last),
        ]
        for run in runs:
            before = counter[0]
            with pytest.raises(ow.errors.DeadlineExceededError, match="longer than 100 ms"):
                run()
            assert 0 < counter[0] - before < 100
        assert sess.run("Const:0") == 0.0  # a run within the deadline still succeeds


@pytest.mark.parametrize("inter", [0, -1])
def test_ctrl_c_raises_keyboard_interrupt_and_cancels_the_run(inter: int) -> None:
    code = f"INTER = {inter}\n" + textwrap.dedent(
        """
        import sys, time
        import numpy as np
        import opweave as ow
        counter = [0]
        def step(v):
            counter[0] += 1
            if counter[0] == 3:
                print("started", flush=True)
            time.sleep(0.02)
            return v
        with ow.Graph().as_default() as g:
            t = ow.constant(0.0)
            for _ in range(500):
                t = ow.py_function(step, [t], ow.float32)
        sess = ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=INTER))
        try:
            sess.run(t)
        except KeyboardInterrupt:
            n = counter[0]
            time.sleep(0.2)
            assert counter[0] == n, "ops kept running after Ctrl-C"
            assert sess.run("Const:0") == 0.0
            print("interrupted", n, flush=True)
            sys.exit(0)
        sys.exit(3)
        """
    )
    proc = spawn_python(code)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line == "started":
        proc.send_signal(signal.SIGINT)
    done = finish(proc, timeout=30)
    assert line == "started", f"{line}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("interrupted")
    assert int(done.stdout.split()[1]) < 500


def test_independent_branches_overlap_in_step_stats_when_inter_is_above_one() -> None:
    def nap(v: np.ndarray) -> np.ndarray:
        time.sleep(0.15)
        return v

    with ow.Graph().as_default() as g:
        c = ow.constant(1.0)
        left = ow.py_function(nap, [c], ow.float32, name="left")
        right = ow.py_function(nap, [c], ow.float32, name="right")
    meta = ow.RunMetadata()
    with ow.Session(graph=g, config=PER_SESSION_2) as sess:
        sess.run(
            [left, right],
            options=ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE),
            run_metadata=meta,
        )
    stats = {s.node_name: s for s in meta.step_stats.node_stats}
    assert set(stats) == {"Const", "left", "right"}
    left_s, right_s = stats["left"], stats["right"]
    assert left_s.op == "PyFunc"
    assert left_s.scheduled_micros <= left_s.all_start_micros <= left_s.all_end_micros
    assert left_s.all_start_micros < right_s.all_end_micros  # the intervals overlap
    assert right_s.all_start_micros < left_s.all_end_micros
    assert left_s.thread_id != right_s.thread_id
    assert meta.step_stats.dev_stats[0].device.endswith("/device:CPU:0")


def test_step_stats_thread_ids_are_real_kernel_thread_ids() -> None:
    with ow.Graph().as_default() as g:
        tid = ow.py_function(lambda: np.int64(threading.get_native_id()), [], ow.int64, name="t")
    meta = ow.RunMetadata()
    with ow.Session(graph=g) as sess:
        got = sess.run(
            tid, options=ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE), run_metadata=meta
        )
    assert meta.step_stats.node_stats[0].thread_id == int(got)


def test_tensor_eval_and_operation_run_use_the_default_session() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=())
        y = ow.identity(x)
        nop = ow.no_op()
    with ow.Session(graph=g):
        assert y.eval(feed_dict={x: 2.0}) == 2.0
        nop.run()
    with pytest.raises(ValueError, match="without a session"):
        y.eval(feed_dict={x: 2.0})


def test_no_step_stats_without_tracing() -> None:
    with ow.Graph().as_default() as g:
        c = ow.constant(1.0)
    meta = ow.RunMetadata()
    with ow.Session(graph=g) as sess:
        sess.run(c, run_metadata=meta)
    assert meta.step_stats.dev_stats == []


def test_nested_run_in_fresh_process_with_global_inter_pool_of_one() -> None:
    out = run_python(
        """
        import numpy as np, opweave as ow
        with ow.Graph().as_default() as g:
            inner = ow.py_function(lambda: np.float32(2.0), [], ow.float32)
        sess = ow.Session(graph=g, config=ow.ConfigProto(inter_op_parallelism_threads=1))
        with g.as_default():
            outer = [ow.py_function(lambda: sess.run(inner) + 1, [], ow.float32) for _ in range(4)]
        print([float(v) for v in sess.run(outer)])
        """,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[3.0, 3.0, 3.0, 3.0]"


def test_forked_child_runs_every_kind_of_session_pool_without_hanging() -> None:
    out = run_python(
        """
        import os, sys
        import numpy as np
        import opweave as ow
        with ow.Graph().as_default() as g:
            c = ow.constant(1.0)
            ys = [ow.py_function(lambda v: v + 1, [c], ow.float32) for _ in range(3)]
        configs = [
            None,
            ow.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=2),
            ow.ConfigProto(session_inter_op_thread_pool=[
                ow.ThreadPoolOptionProto(num_threads=2, global_name="forked")]),
        ]
        sessions = [ow.Session(graph=g, config=cfg) for cfg in configs]
        for s in sessions:
            s.run(ys)
        pid = os.fork()
        if pid == 0:
            ok = all([float(v) for v in s.run(ys)] == [2.0] * 3 for s in sessions)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        if os.fork() == 0:
            sys.exit(0)  # a child that never runs still exits: its sessions' pools are not joined
        _, status = os.wait()
        print("idle child", os.waitstatus_to_exitcode(status))
        """,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["child 0", "idle child 0"]


def test_as_default_makes_the_session_default_for_eval_and_run_without_closing_it() -> None:
    with ow.Graph().as_default() as g:
        c = ow.constant(2.0)
        hits: list[int] = []
        counted = ow.py_function(lambda: hits.append(1) or np.float32(0), [], ow.float32)
    outer_graph = ow.get_default_graph()
    sess = ow.Session(graph=g)
    assert ow.get_default_session() is None
    with sess.as_default() as entered:
        assert entered is sess
        assert ow.get_default_session() is sess
        assert c.eval() == 2.0
        counted.op.run()
        assert hits == [1]
        assert ow.get_default_graph() is outer_graph  # as in TensorFlow: the graph is unchanged
        with ow.Session(graph=g) as inner:
            assert ow.get_default_session() is inner
        assert ow.get_default_session() is sess
    assert ow.get_default_session() is None
    assert sess.run(c) == 2.0  # not closed
    with pytest.raises(ValueError, match="Cannot evaluate without a session"):
        c.eval()
    sess.close()


_DEEP_NESTING = """
import sys, numpy as np, opweave as ow
sys.setrecursionlimit(1_000_000)  # Python's own limit must not be what stops it
with ow.Graph().as_default():
    sess = ow.Session(config=ow.ConfigProto(inter_op_parallelism_threads={inter}))
    depth_in = ow.placeholder(ow.float32, shape=())
    def nest(v):
        d = int(v)
        return np.float32(0) if d <= 0 else sess.run(y, {{depth_in: np.float32(d - 1)}})
    y = ow.py_function(nest, [depth_in], ow.float32)
    try:
        sess.run(y, {{depth_in: np.float32(100_000)}})
    except ow.errors.ResourceExhaustedError as e:
        print("refused:", e.message)
    print("after:", sess.run(y, {{depth_in: np.float32(5)}}))
"""


@pytest.mark.parametrize("inter", [1, -1], ids=["pool_thread", "caller_thread"])
def test_nesting_runs_deeper_than_the_stack_holds_is_resource_exhausted_not_a_crash(
    inter: int,
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _DEEP_NESTING.format(inter=inter)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused: Session.run nested" in out.stdout
    assert "would overflow this thread's stack" in out.stdout
    assert "after: 0.0" in out.stdout
