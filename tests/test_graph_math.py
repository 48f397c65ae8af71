"""Graph math ops run through the executor give NumPy's answers; run-time failures name the node."""

from __future__ import annotations

import numpy as np
import opweave as ow
import pytest

RNG = np.random.default_rng(7)


def run(fetches: object, feed_dict: dict[object, object] | None = None) -> object:
    with ow.Session(graph=ow.get_default_graph()) as sess:
        return sess.run(fetches, feed_dict=feed_dict)


def test_elementwise_ops_broadcast_like_numpy() -> None:
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4,)).astype(np.float32) + 3.0
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, shape=(None, 4))
        y = ow.constant(b)
        fetches = {
            "add": x + y,
            "sub": x - y,
            "mul": x * y,
            "div": x / y,
            "max": ow.maximum(x, y),
            "neg": -x,
            "relu": ow.relu(x),
            "exp": ow.exp(x),
            "tanh": ow.tanh(x),
            "sigmoid": ow.sigmoid(x),
            "radd": 1.0 + x,
        }
        got = run(fetches, {x: a})
    expected = {
        "add": a + b,
        "sub": a - b,
        "mul": a * b,
        "div": a / b,
        "max": np.maximum(a, b),
        "neg": -a,
        "relu": np.maximum(a, 0),
        "exp": np.exp(a),
        "tanh": np.tanh(a),
        "sigmoid": 1 / (1 + np.exp(-a)),
        "radd": 1.0 + a,
    }
    assert isinstance(got, dict)
    for k, v in expected.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-6, err_msg=k)


def test_matmul_reductions_and_shape_ops_match_numpy() -> None:
    a = RNG.standard_normal((5, 3))
    b = RNG.standard_normal((4, 3))
    with ow.Graph().as_default():
        ta, tb = ow.constant(a), ow.constant(b)
        prod = ow.matmul(ta, tb, transpose_b=True)
        fetches = [
            prod,
            ta @ ow.transpose(tb),
            ow.reduce_sum(prod, axis=1),
            ow.reduce_mean(prod, axis=0, keepdims=True),
            ow.reduce_max(prod),
            ow.reduce_min(prod, axis=[0, 1]),
            ow.add_n([ta, ta, ta]),
            ow.reshape(ta, [3, -1]),
            ow.cast(ta, ow.int32),
        ]
        got = run(fetches)
    p = a @ b.T
    expected = [
        p,
        p,
        p.sum(axis=1),
        p.mean(axis=0, keepdims=True),
        p.max(),
        p.min(),
        3 * a,
        a.reshape(3, -1),
        a.astype(np.int32),
    ]
    assert isinstance(got, list)
    for g_, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g_, e, rtol=1e-10, atol=1e-12)


def test_run_time_shape_error_names_the_node_and_op() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, shape=(None, None), name="x")
        w = ow.constant(np.ones((3, 2), np.float32), name="w")
        y = ow.matmul(x, w, name="project")
        with pytest.raises(ow.errors.InvalidArgumentError) as info:
            run(y, {x: np.ones((2, 4), np.float32)})
        assert info.value.node_name == "project"
        assert info.value.op_type == "MatMul"
        assert "project" in str(info.value)
        np.testing.assert_allclose(run(y, {x: np.ones((2, 3), np.float32)}), np.full((2, 2), 3.0))


def test_integer_division_by_zero_is_invalid_argument() -> None:
    with ow.Graph().as_default():
        a = ow.constant([4, 5], name="a")
        z = ow.placeholder(ow.int32, shape=(2,), name="z")
        q = ow.div(a, z, name="q")
        with pytest.raises(ow.errors.InvalidArgumentError, match="division by zero") as info:
            run(q, {z: [1, 0]})
        assert info.value.node_name == "q"
        assert list(run(q, {z: [2, 2]})) == [2, 2]  # type: ignore[call-overload]


def test_repeated_runs_reuse_one_compiled_signature() -> None:
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float64, shape=(2,))
        y = ow.reduce_sum(x * 2.0)
    with ow.Session(graph=g) as sess:
        for i in range(5):
            assert sess.run(y, feed_dict={x: [i, i]}) == 4 * i
        assert sess._executor.num_compiled() == 1
        sess.run([y, x], feed_dict={x: [1.0, 1.0]})
        assert sess._executor.num_compiled() == 2


def test_a_reversed_feed_is_reduced_in_index_order() -> None:
    # Feeds are used without copying, so a negative-stride view reaches the kernel as is.
    a = np.arange(12.0).reshape(4, 3)
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float64, shape=(4, 3))
        fetches = [ow.reduce_sum(x, axis=1), ow.reduce_max(x, axis=0), ow.reduce_mean(x, axis=1)]
        got = run(fetches, {x: a[::-1, ::-1]})
    v = a[::-1, ::-1]
    for g, w in zip(got, [v.sum(axis=1), v.max(axis=0), v.mean(axis=1)], strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_batched_and_transposed_matmul_match_numpy(transpose_a: bool, transpose_b: bool) -> None:
    a = RNG.standard_normal((4, 1, 3, 5))
    b = RNG.standard_normal((2, 5, 6))
    a_in = a.swapaxes(-1, -2) if transpose_a else a
    b_in = b.swapaxes(-1, -2) if transpose_b else b
    with ow.Graph().as_default():
        y = ow.matmul(
            ow.constant(a_in), ow.constant(b_in), transpose_a=transpose_a, transpose_b=transpose_b
        )
        assert y.shape == (4, 2, 3, 6)
        got = run(y)
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)  # type: ignore[arg-type]


def test_slash_on_integer_tensors_is_truediv_in_float64_and_div_floors() -> None:
    with ow.Graph().as_default():
        i32 = ow.constant([-7, 7])
        i64 = ow.constant(np.array([-7, 7], np.int64))
        f32 = ow.constant([-7.0, 7.0])
        slash = [i32 / 2, i64 / 2, 14 / i32, i32 / 0, f32 / 2, ow.truediv(i32, i32)]
        assert [t.dtype for t in slash] == [ow.float64] * 4 + [ow.float32, ow.float64]
        floor = ow.div(i32, 2)
        assert floor.dtype is ow.int32
        got = run([slash, floor])
    assert isinstance(got, list)
    assert [v.tolist() for v in got[0]] == [
        [-3.5, 3.5],
        [-3.5, 3.5],
        [-2.0, 2.0],
        [-np.inf, np.inf],
        [-3.5, 3.5],
        [1.0, 1.0],
    ]
    assert got[1].tolist() == [-4, 3]


def test_element_wise_chains_never_write_into_feeds_constants_or_fetched_values() -> None:
    # Element-wise kernels may compute into an input's buffer when nothing else can see it; a fed
    # array, a constant and a fetched intermediate must come out of every run untouched.
    feed = RNG.standard_normal((8,)).astype(np.float32)
    before = feed.copy()
    k = np.float32(1.5)
    with ow.Graph().as_default() as g:
        x = ow.placeholder(ow.float32, shape=(8,))
        c = ow.constant(k)
        y1 = x + c
        y2 = ow.tanh(y1 * c)
        y3 = ow.sigmoid(-(y2 - c))
    with ow.Session(graph=g) as sess:
        run_y1_y3 = sess.make_callable([y1, y3], [x])
        for _ in range(3):
            got1, got3 = run_y1_y3(feed)
            np.testing.assert_array_equal(feed, before)
            np.testing.assert_allclose(got1, before + k, rtol=1e-6)
            expected3 = 1.0 / (1.0 + np.exp(np.tanh((before + k) * k) - k))
            np.testing.assert_allclose(got3, expected3, rtol=1e-5)
        assert sess.run(c) == k
