"""The fixed cost of a run: make_callable's fast path gives what Session.run gives (values,
conversions, errors), and a small cheap graph, or one the inter-op pool cannot speed up (a chain),
runs in the calling thread while ops that can overlap, or may block, still go to the pool."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import opweave as ow
import pytest

CONFIG = ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
TRACE = ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE)


def _graph() -> tuple[ow.Graph, ow.Tensor, ow.Tensor]:
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
        y = ow.tanh(x * 2.0, name="y")
    return g, x, y


@pytest.mark.parametrize(
    "value",
    [
        np.array([[0.5, -1.0]], np.float32),  # passed as is
        np.float32(0.25) * np.ones((3, 2), np.float32),
        np.array([[1, 2]], np.int64),  # converted (int -> float is implicit)
        [[0.5, 0.25]],  # a list
        np.array([[0.5, -1.0]], np.float64),  # float64 -> float32
        np.asfortranarray(np.ones((2, 2), np.float32)),  # a strided layout
        np.ones((2, 4), np.float32)[:, ::2],  # a view
    ],
    ids=["array", "ones", "int64", "list", "float64", "fortran", "view"],
)
def test_a_callable_gives_what_session_run_gives(value: Any) -> None:
    g, x, y = _graph()
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x])
        want = sess.run(y, {x: value})
        for _ in range(3):
            got = call(value)
            assert got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()


def test_scalars_come_back_as_numpy_scalars_and_results_are_the_callers() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(), name="x")
        y = x + 1.0
        z = ow.identity(x, name="z")
    with ow.Session(graph=g, config=CONFIG) as sess:
        one = sess.make_callable(y, [x])
        out = one(np.float32(1.0))
        assert type(out) is np.float32
        assert out == 2.0
        assert one(1.0) == 2.0
        assert one(np.float64(2.0)) == 3.0
        feed = np.array(5.0, np.float32)
        echo = sess.make_callable([z], [x])
        (back,) = echo(feed)
        back += 1  # the caller's own value: the fed array is unchanged
        assert feed == 5.0


def test_bad_values_raise_the_errors_session_run_raises() -> None:
    g, x, y = _graph()
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x])
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\)"):
            call(np.ones(3, np.float32))
        with pytest.raises(TypeError, match="Cannot feed value for Tensor 'x:0'"):
            call(np.array([["a", "b"]]))
        with pytest.raises(ValueError, match="expected 1 feed values, got 2"):
            call(np.ones((1, 2), np.float32), np.ones((1, 2), np.float32))
        with pytest.raises(TypeError, match="accept_options=False"):
            call(np.ones((1, 2), np.float32), options=TRACE)
    with pytest.raises(RuntimeError, match="closed Session"):
        call(np.ones((1, 2), np.float32))


def test_run_failures_name_the_node_and_py_function_errors_are_the_users() -> None:
    class Oops(Exception):
        pass

    def boom(v: np.ndarray) -> np.ndarray:
        raise Oops("no")

    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(2,), name="x")
        idx = ow.placeholder(ow.int32, shape=(), name="idx")
        picked = ow.gather(x, idx, name="picked")
        failing = ow.py_function(boom, [x], ow.float32, name="failing")
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(picked, [x, idx])
        assert call(np.array([1.0, 2.0], np.float32), np.int32(1)) == 2.0
        with pytest.raises(ow.errors.InvalidArgumentError) as e:
            call(np.array([1.0, 2.0], np.float32), np.int32(7))
        assert e.value.node_name == "picked"
        assert e.value.op is picked.op
        with pytest.raises(Oops):
            sess.make_callable(failing, [x])(np.ones(2, np.float32))


def test_options_still_trace_through_a_callable() -> None:
    g, x, y = _graph()
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x], accept_options=True)
        meta = ow.RunMetadata()
        call(np.ones((1, 2), np.float32), options=TRACE, run_metadata=meta)
        assert "y" in {n.node_name for n in meta.step_stats.node_stats}


def _cheap_graph() -> tuple[ow.Graph, ow.Tensor, ow.Tensor]:
    """Ops registered as cheap (Identity, Reshape, Const): no timing decides, so the test does
    not depend on how loaded the machine is (measured costs would)."""
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(None, 2), name="x")
        y = ow.reshape(ow.identity(x, name="i"), [-1], name="y")
    return g, x, y


def _op_threads(sess: ow.Session, y: ow.Tensor, feed: dict[Any, Any]) -> set[str]:
    meta = ow.RunMetadata()
    sess.run(y, feed, options=TRACE, run_metadata=meta)
    names = meta.step_stats.thread_names
    return {names[n.thread_id] for n in meta.step_stats.node_stats}


def test_a_small_cheap_graph_runs_in_the_calling_thread() -> None:
    g, x, y = _cheap_graph()
    config = ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    config.graph_options.optimizer_options.opt_level = ow.OptimizerOptions.L0  # keep i
    with ow.Session(graph=g, config=config) as sess:
        assert _op_threads(sess, y, {x: np.ones((1, 2), np.float32)}) == {"caller"}
        # Costs are learnt on small feeds; a large one could make a kernel long, and a run in
        # the caller's thread would notice Ctrl-C or its deadline only after it.
        big = np.ones((40_000, 2), np.float32)
        assert _op_threads(sess, y, {x: big}) <= {"inter-op 0", "inter-op 1"}


def test_expensive_ops_still_run_on_the_inter_op_pool() -> None:
    ran_on: list[int] = []

    def body(v: np.ndarray) -> np.ndarray:
        ran_on.append(threading.get_native_id())
        return v

    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(), name="x")
        y = ow.py_function(body, [x], ow.float32, name="y")
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x])
        for _ in range(50):
            call(np.float32(1.0))
    assert threading.get_native_id() not in ran_on  # a py_function is never "cheap"


def _layers(towers: int) -> tuple[ow.Graph, ow.Tensor, ow.Tensor]:
    """`towers` chains of 3 products (1 x 1024 times 1024 x 1024, each well above the inline
    threshold and far below the 2 ms limit of a node in the caller's thread), summed."""
    rng = np.random.default_rng(0)
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(1, 1024), name="x")
        ends = []
        for _ in range(towers):
            h = x
            for _ in range(3):
                w = rng.standard_normal((1024, 1024)).astype(np.float32) / 32
                h = ow.nn.relu(ow.matmul(h, ow.constant(w)))
            ends.append(h)
        y = ends[0] if towers == 1 else ow.add_n(ends)
    return g, x, y


def _callable_threads(towers: int) -> tuple[set[str], set[str]]:
    """The threads a callable's first run and a later one (once its nodes are measured) ran on."""
    g, x, y = _layers(towers)
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x], accept_options=True)
        v = np.ones((1, 1024), np.float32)
        seen = []
        for i in range(21):
            meta = ow.RunMetadata()
            call(v, options=TRACE if i in (0, 20) else None, run_metadata=meta)
            if i in (0, 20):
                names = meta.step_stats.thread_names
                seen.append({names[n.thread_id] for n in meta.step_stats.node_stats})
    return seen[0], seen[1]


def test_a_chain_the_pool_cannot_speed_up_runs_in_the_calling_thread_once_measured() -> None:
    first, later = _callable_threads(towers=1)
    assert "caller" not in first  # the first run measures the nodes, on the pool
    assert later == {"caller"}  # then the hand-over to a worker and back is saved


def test_towers_the_pool_can_overlap_stay_on_the_pool() -> None:
    _, later = _callable_threads(towers=2)
    assert "caller" not in later


def test_many_threads_share_one_callable() -> None:
    g, x, y = _graph()
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x])
        want = sess.run(y, {x: np.full((4, 2), 0.5, np.float32)})
        bad: list[Any] = []

        def work(k: int) -> None:
            v = np.full((4, 2), 0.5, np.float32)
            for _ in range(200):
                got = call(v)
                if got.tobytes() != want.tobytes():
                    bad.append(got)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert bad == []


def test_new_ops_are_placed_before_a_callable_runs() -> None:
    g, x, y = _graph()
    with ow.Session(graph=g, config=CONFIG) as sess:
        call = sess.make_callable(y, [x])
        call(np.ones((1, 2), np.float32))
        with g.as_default(), g.device("/GPU:0"):
            ow.identity(x, name="elsewhere")
        # As for Session.run, a new op placed on a device that does not exist is an error.
        with pytest.raises(ow.errors.InvalidArgumentError, match="elsewhere"):
            call(np.ones((1, 2), np.float32))
