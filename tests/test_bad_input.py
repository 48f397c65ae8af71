"""Bad input: each is a clear error, and the same session still runs after."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import opweave as ow
import pytest
from opweave import errors


@pytest.fixture
def graph() -> Iterator[ow.Graph]:
    g = ow.Graph()
    with g.as_default():
        yield g


def _session_still_works(sess: ow.Session, x: ow.Tensor, y: ow.Tensor) -> None:
    got = sess.run(y, feed_dict={x: np.array([1.0, 2.0, 3.0], np.float32)})
    np.testing.assert_array_equal(got, np.array([2.0, 4.0, 6.0], np.float32))


def _xy() -> tuple[ow.Tensor, ow.Tensor]:
    x = ow.placeholder(ow.float32, shape=(3,), name="x")
    return x, x * 2.0


def test_feeding_a_value_that_does_not_convert_to_the_dtype_is_type_error(graph: ow.Graph) -> None:
    x, y = _xy()
    with ow.Session() as sess:
        with pytest.raises(TypeError, match="Cannot feed value for Tensor 'x:0'"):
            sess.run(y, feed_dict={x: ["a", "b", "c"]})
        _session_still_works(sess, x, y)


@pytest.mark.parametrize(
    ("dtype", "value", "described"),
    [
        (ow.float32, {"a": 1}, "a dict value"),
        (ow.float32, object(), "an object value"),
        (ow.float32, ["a", "b", "c"], "a str value"),
        (ow.float32, np.array([1 + 2j]), "a complex128 value"),
        (ow.bool, np.arange(3), "an int64 value"),
        (ow.int32, np.ones(3, np.float64), "a float64 value"),
    ],
)
def test_a_value_that_does_not_convert_is_described_in_plain_words(
    graph: ow.Graph, dtype: ow.DType, value: object, described: str
) -> None:
    x = ow.placeholder(dtype, shape=None, name="x")
    with ow.Session() as sess, pytest.raises(TypeError) as info:
        sess.run(x, feed_dict={x: value})
    assert str(info.value).endswith(f": {described} does not convert implicitly"), info.value


def test_feeding_the_wrong_shape_is_value_error_naming_both_shapes(graph: ow.Graph) -> None:
    x, y = _xy()
    with ow.Session() as sess:
        with pytest.raises(ValueError, match=r"shape \(2,\).*'x:0'.*\(3,\)"):
            sess.run(y, feed_dict={x: np.zeros(2, np.float32)})
        with pytest.raises(ValueError, match="shape"):
            sess.run(y, feed_dict={x: np.zeros((3, 1), np.float32)})
        _session_still_works(sess, x, y)


@pytest.mark.parametrize("value", [object(), {"a": 1}, None, [[1.0], [2.0, 3.0]]])
def test_feeding_a_non_array_is_a_clear_error(graph: ow.Graph, value: object) -> None:
    x, y = _xy()
    with ow.Session() as sess:
        with pytest.raises((TypeError, ValueError), match="'x:0'"):
            sess.run(y, feed_dict={x: value})
        _session_still_works(sess, x, y)


def test_feeding_a_tensor_as_a_value_is_type_error(graph: ow.Graph) -> None:
    x, y = _xy()
    with ow.Session() as sess:
        with pytest.raises(TypeError, match=r"value of a feed cannot be an opweave\.Tensor"):
            sess.run(y, feed_dict={x: y})
        _session_still_works(sess, x, y)


def test_fetching_a_tensor_of_another_graph_is_value_error(graph: ow.Graph) -> None:
    x, y = _xy()
    other = ow.Graph()
    with other.as_default():
        foreign = ow.constant(1.0, name="foreign")
    with ow.Session(graph=graph) as sess:
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run(foreign)
        with pytest.raises(ValueError, match="not an element of this graph"):
            sess.run([y, foreign], feed_dict={x: np.zeros(3, np.float32)})
        with pytest.raises(TypeError, match="feed_dict key"):
            sess.run(y, feed_dict={foreign: 1.0})
        _session_still_works(sess, x, y)


def test_a_control_dependency_cycle_is_refused_at_graph_build(graph: ow.Graph) -> None:
    # Control inputs (like data inputs) can only name ops that already exist, so the graph is a
    # DAG by construction and the executor never sees a cycle. The core checks it too: a node
    # naming itself or a later node as a control input is refused, and the graph stays usable.
    x, y = _xy()
    a = ow.identity(x, name="a")
    n = graph._core.num_nodes()
    for bad in ([n], [n + 1]):
        with pytest.raises(Exception, match="control input that does not exist"):
            graph._core.add_node("cycle", "NoOp", [], bad, {}, "", 0)
    with graph.control_dependencies([a]):
        b = ow.identity(a, name="b")
    with ow.Session() as sess:
        np.testing.assert_array_equal(sess.run(b, feed_dict={x: np.ones(3, np.float32)}), 1.0)
        _session_still_works(sess, x, y)


def test_py_function_raising_reaches_the_caller_as_itself(graph: ow.Graph) -> None:
    x, y = _xy()

    def boom(v: np.ndarray) -> np.ndarray:
        raise ZeroDivisionError("boom")

    z = ow.py_function(boom, [x], ow.float32, name="boom")
    with ow.Session() as sess:
        for _ in range(3):
            with pytest.raises(ZeroDivisionError, match="boom"):
                sess.run(z, feed_dict={x: np.ones(3, np.float32)})
        _session_still_works(sess, x, y)


def test_py_function_returning_an_unconvertible_value_is_type_error(graph: ow.Graph) -> None:
    x, y = _xy()
    z = ow.py_function(lambda v: "not a number", [x], ow.float32, name="bad_dtype")
    with ow.Session() as sess:
        with pytest.raises(TypeError, match="returned a value for output 0 that is not float32"):
            sess.run(z, feed_dict={x: np.ones(3, np.float32)})
        _session_still_works(sess, x, y)


def test_py_function_returning_floats_for_an_int_output_is_type_error(graph: ow.Graph) -> None:
    x, y = _xy()
    z = ow.py_function(lambda v: v * 1.5, [x], ow.int32, name="truncating")
    w = ow.py_function(lambda v: v.astype(np.float64), [x], ow.float32, name="narrowing")
    with ow.Session() as sess:
        with pytest.raises(TypeError, match="not int32: a float32 value") as info:
            sess.run(z, feed_dict={x: np.ones(3, np.float32)})
        if sys.version_info >= (3, 11):  # exception notes name the node
            assert "raised inside node 'truncating'" in "".join(info.value.__notes__)
        # float64 -> float32 is the same kind: converted, as for feeds.
        got = sess.run(w, feed_dict={x: np.ones(3, np.float32)})
        assert got.dtype == np.float32
        _session_still_works(sess, x, y)


def test_py_function_returning_the_wrong_count_is_value_error(graph: ow.Graph) -> None:
    x, y = _xy()
    z = ow.py_function(lambda v: (v, v), [x], [ow.float32], name="two")
    with ow.Session() as sess:
        with pytest.raises(ValueError, match="returned 2 values; Tout has 1"):
            sess.run(z, feed_dict={x: np.ones(3, np.float32)})
        _session_still_works(sess, x, y)


def test_py_function_returning_the_wrong_shape_fails_in_the_consumer(graph: ow.Graph) -> None:
    x, y = _xy()
    z = ow.py_function(lambda v: np.ones(5, np.float32), [x], ow.float32, name="wrong_shape")
    w = ow.add(z, x, name="consumer")
    with ow.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(w, feed_dict={x: np.ones(3, np.float32)})
        assert info.value.node_name == "consumer"
        _session_still_works(sess, x, y)


def test_py_function_outputs_declare_no_shape_so_any_returned_shape_flows_downstream() -> None:
    # py_function has no way to declare an output shape (TensorFlow's neither: its outputs have
    # unknown shape until set_shape, which opweave lacks); a (2, 2) result for a (3,) input is
    # legal and a consumer that accepts it runs.
    g = ow.Graph()
    with g.as_default():
        x, y = _xy()
        z = ow.py_function(lambda v: np.ones((2, 2), np.float32), [x], ow.float32)
        assert z.shape.ndims is None
        w = ow.reshape(z, [4]) + 1.0
        with ow.Session() as sess:
            got = sess.run(w, feed_dict={x: np.ones(3, np.float32)})
            np.testing.assert_array_equal(got, np.full(4, 2.0, np.float32))
            _session_still_works(sess, x, y)


@pytest.mark.parametrize("reduce", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
def test_nan_and_inf_in_reductions_follow_numpy(graph: ow.Graph, reduce: str) -> None:
    x = ow.placeholder(ow.float64, shape=(None, None), name="x")
    op = getattr(ow, reduce)
    outs = [op(x), op(x, axis=0), op(x, axis=1)]
    ref = {
        "reduce_sum": np.sum,
        "reduce_mean": np.mean,
        "reduce_max": np.max,
        "reduce_min": np.min,
    }[reduce]
    cases = [
        np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]]),
        np.array([[np.inf, 1.0], [2.0, -np.inf]]),
        np.array([[np.inf, np.inf], [1.0, 2.0]]),
        np.array([[np.nan, np.inf], [-np.inf, 0.0]]),
        np.full((70, 130), np.nan),
    ]
    with ow.Session() as sess:
        for value in cases:
            got = sess.run(outs, feed_dict={x: value})
            with np.errstate(invalid="ignore"):
                want = [ref(value), ref(value, axis=0), ref(value, axis=1)]
            for g_, w_ in zip(got, want, strict=True):
                np.testing.assert_array_equal(g_, w_)


def test_zero_size_arrays_flow_through_ops(graph: ow.Graph) -> None:
    x = ow.placeholder(ow.float32, shape=(None, None), name="x")
    m = ow.placeholder(ow.float32, shape=(None, None), name="m")
    outs = {
        "add": x + 1.0,
        "neg": -x,
        "exp": ow.exp(x),
        "sum0": ow.reduce_sum(x, axis=0),
        "sum1": ow.reduce_sum(x, axis=1),
        "sum": ow.reduce_sum(x),
        "mean1": ow.reduce_mean(x, axis=1),
        "t": ow.transpose(x),
        "mm": ow.matmul(x, m),
        "cast": ow.cast(x, ow.float64),
    }
    with ow.Session() as sess:
        for xs, ms in [((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0, 0), (0, 0)), ((3, 2), (2, 0))]:
            xv, mv = np.zeros(xs, np.float32), np.zeros(ms, np.float32)
            got = sess.run(outs, feed_dict={x: xv, m: mv})
            assert got["add"].shape == xs
            assert got["neg"].shape == xs
            assert got["exp"].shape == xs
            np.testing.assert_array_equal(got["sum0"], xv.sum(axis=0))
            np.testing.assert_array_equal(got["sum1"], xv.sum(axis=1))
            assert got["sum"] == 0.0
            assert got["mean1"].shape == (xs[0],)
            assert got["t"].shape == xs[::-1]
            np.testing.assert_array_equal(got["mm"], xv @ mv)
            assert got["cast"].dtype == np.float64


def test_zero_size_max_and_min_are_the_identities_as_in_tensorflow(graph: ow.Graph) -> None:
    # TensorFlow's reduce_max of nothing is the lowest value (-inf for floats, the smallest
    # integer for ints) and reduce_min the highest, where NumPy raises.
    x, y = _xy()
    e = ow.placeholder(ow.float32, shape=(None,), name="e")
    i = ow.placeholder(ow.int32, shape=(None,), name="i")
    fetches = [ow.reduce_max(e), ow.reduce_min(e), ow.reduce_max(i), ow.reduce_min(i)]
    with ow.Session() as sess:
        got = sess.run(fetches, feed_dict={e: np.zeros(0, np.float32), i: np.zeros(0, np.int32)})
        assert got == [-np.inf, np.inf, np.iinfo(np.int32).min, np.iinfo(np.int32).max]
        _session_still_works(sess, x, y)


def test_a_shape_too_large_to_allocate_is_resource_exhausted(graph: ow.Graph) -> None:
    x, y = _xy()
    a = ow.placeholder(ow.float32, shape=(None, 1), name="a")
    b = ow.placeholder(ow.float32, shape=(1, None), name="b")
    huge = ow.add(a, b, name="huge")  # broadcasts to (2**31, 2**31): 16 EiB
    col = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (2**31, 1), (0, 0))
    row = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (1, 2**31), (0, 0))
    with ow.Session() as sess:
        with pytest.raises(errors.ResourceExhaustedError) as info:
            sess.run(huge, feed_dict={a: col, b: row})
        assert info.value.node_name == "huge"
        _session_still_works(sess, x, y)


def test_a_shape_too_large_for_memory_is_resource_exhausted(graph: ow.Graph) -> None:
    x, y = _xy()
    a = ow.placeholder(ow.float64, shape=(None, 1), name="a")
    b = ow.placeholder(ow.float64, shape=(1, None), name="b")
    huge = ow.add(a, b, name="huge")  # (2**24, 2**24) float64: 2 PiB, fits in size_t
    col = np.lib.stride_tricks.as_strided(np.zeros(1), (2**24, 1), (0, 0))
    row = np.lib.stride_tricks.as_strided(np.zeros(1), (1, 2**24), (0, 0))
    with ow.Session() as sess:
        with pytest.raises(errors.ResourceExhaustedError):
            sess.run(huge, feed_dict={a: col, b: row})
        _session_still_works(sess, x, y)


@pytest.mark.parametrize("inter", [2, -1], ids=["pool", "caller-thread"])
@pytest.mark.parametrize("per_session", [False, True])
def test_closing_a_session_during_a_run_cancels_it(
    graph: ow.Graph, per_session: bool, inter: int
) -> None:
    x, y = _xy()
    started, release = threading.Event(), threading.Event()

    def first(v: np.ndarray) -> np.ndarray:
        started.set()
        release.wait(30)
        return v

    # The run is inside `first` when close() comes, and 50 more ops (~1 s) follow it: the run
    # sees the close long before it could finish.
    slow = ow.py_function(first, [x], ow.float32, name="first")
    for i in range(50):
        slow = ow.py_function(lambda v: (time.sleep(0.02), v)[1], [slow], ow.float32, name=f"s{i}")
    config = ow.ConfigProto(inter_op_parallelism_threads=inter, use_per_session_threads=per_session)
    sess = ow.Session(config=config)
    outcome: list[object] = []

    def runner() -> None:
        try:
            outcome.append(sess.run(slow, feed_dict={x: np.ones(3, np.float32)}))
        except BaseException as e:
            outcome.append(e)

    t = threading.Thread(target=runner)
    t.start()
    assert started.wait(30)
    sess.close()
    release.set()
    t.join(timeout=60)
    assert not t.is_alive(), "the run did not end after close()"
    [result] = outcome
    assert isinstance(result, errors.CancelledError), repr(result)
    assert "session was closed" in str(result)
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y, feed_dict={x: np.ones(3, np.float32)})
    # The graph is not harmed: a new session runs it.
    with ow.Session(config=config) as again:
        _session_still_works(again, x, y)


def test_running_after_close_is_runtime_error_and_close_is_idempotent(graph: ow.Graph) -> None:
    x, y = _xy()
    sess = ow.Session()
    _session_still_works(sess, x, y)
    sess.close()
    sess.close()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="closed Session"):
            sess.run(y, feed_dict={x: np.ones(3, np.float32)})
    call = sess.make_callable(y, [x])
    with pytest.raises(RuntimeError, match="closed Session"):
        call(np.ones(3, np.float32))


def test_feeding_floats_to_an_int_placeholder_is_type_error_not_truncation(
    graph: ow.Graph,
) -> None:
    x, y = _xy()
    i = ow.placeholder(ow.int32, shape=(None,), name="i")
    j = i * 2
    with ow.Session() as sess:
        with pytest.raises(TypeError, match="Cannot feed value for Tensor 'i:0' of dtype int32"):
            sess.run(j, feed_dict={i: [1.5, 2.0]})
        with pytest.raises(TypeError, match="'i:0'"):
            sess.run(j, feed_dict={i: [2**80]})
        np.testing.assert_array_equal(sess.run(j, feed_dict={i: np.array([1, 2])}), [2, 4])
        np.testing.assert_array_equal(sess.run(j, feed_dict={i: []}), np.zeros(0, np.int32))
        # float64 -> float32 stays implicit (same kind), as in TensorFlow.
        _session_still_works(sess, x, y)
        np.testing.assert_array_equal(sess.run(y, feed_dict={x: np.ones(3)}), 2.0)


def test_big_endian_arrays_are_converted_everywhere(graph: ow.Graph) -> None:
    # A byte-swapped array is the same type with another layout: constants took it for an
    # unsupported dtype; feeds, py_function results and kernels must read the values, not bytes.
    v32 = np.array([1.5, -2.5, 3.0], ">f4")
    v64 = np.array([1.5, -2.5, 3.0], ">f8")
    assert ow.as_dtype(v32.dtype) is ow.float32
    c = ow.constant(v32, name="c")
    x = ow.placeholder(ow.float64, shape=(3,), name="x")
    p = ow.py_function(lambda a: v64 * 2, [x], ow.float64, name="p")
    with ow.Session() as sess:
        got_c, got_x, got_p = sess.run([c, x + 0.0, p], feed_dict={x: v64})
    np.testing.assert_array_equal(got_c, v32.astype(np.float32))
    np.testing.assert_array_equal(got_x, v64.astype(np.float64))
    np.testing.assert_array_equal(got_p, v64.astype(np.float64) * 2)
    np.testing.assert_array_equal(ow.kernels.add(v32, v32), v32.astype(np.float32) * 2)


def test_a_py_function_result_too_large_to_materialize_is_resource_exhausted() -> None:
    # A 16 TiB broadcast view costs nothing in Python; its copy cannot be allocated.
    def huge(_: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.float32(0), (2**42,))

    with ow.Graph().as_default():
        y = ow.py_function(huge, [ow.constant(1.0)], ow.float32)
        with ow.Session() as sess:
            with pytest.raises(errors.ResourceExhaustedError, match=r"shape \[4398046511104\]"):
                sess.run(ow.reduce_sum(y))
            assert sess.run(ow.constant(2.0)) == 2.0


_ONE_COPY = """
import resource, numpy as np, opweave as ow
n = 1 << 27  # 512 MiB of float32
with ow.Graph().as_default():
    y = ow.py_function(lambda _: np.broadcast_to(np.float32(1), (n,)), [ow.constant(1.0)],
                       ow.float32)
    total = ow.reduce_sum(y)
    with ow.Session() as sess:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        value = sess.run(total)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(value, (peak - before) / (n * 4))
"""


def test_a_broadcast_py_function_result_is_copied_once() -> None:
    # Making the view contiguous before copying it into the result doubled the peak memory.
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", _ONE_COPY], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert float(out[0]) == pytest.approx(1 << 27, rel=1e-6)
    assert float(out[1]) < 1.5, f"peak memory grew by {out[1]} x the result's size"
