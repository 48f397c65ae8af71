"""opweave.layers (TensorFlow 1's tf.layers): variable names, sharing and regularization as
tf.layers makes them, values against NumPy always, and against TensorFlow (whose Keras-3 build
has no tf.compat.v1.layers: the reference is what tf.layers did, get_variable + tensordot /
conv2d + bias_add) when it is installed; a small model trained the same on both."""

from __future__ import annotations

from typing import Any

import numpy as np
import opweave as ow
import pytest

RNG = np.random.default_rng(7)


def _init(value: np.ndarray) -> Any:
    return ow.constant_initializer(value)


def _run(fetches: Any, feed: dict[Any, Any] | None = None) -> Any:
    with ow.Session() as s:
        s.run(ow.global_variables_initializer())
        return s.run(fetches, feed)


# -- dense -----------------------------------------------------------------------------------------


def test_dense_variable_names_and_sharing_are_tensorflow_1s() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [None, 3])
        h = ow.layers.dense(x, 4)
        ow.layers.dense(h, 2)
        ow.layers.dense(x, 4, name="shared")
        y_again = ow.layers.dense(x, 4, name="shared", reuse=True)
        with ow.variable_scope("tower", reuse=ow.AUTO_REUSE):
            ow.layers.dense(x, 5, name="auto")
            ow.layers.dense(x, 5, name="auto")
        ow.layers.dense(x, 1, use_bias=False, trainable=False)
        names = [v.name for v in ow.global_variables()]
        assert names == [
            "dense/kernel:0",
            "dense/bias:0",
            "dense_1/kernel:0",
            "dense_1/bias:0",
            "shared/kernel:0",
            "shared/bias:0",
            "tower/auto/kernel:0",
            "tower/auto/bias:0",
            "dense_2/kernel:0",
        ]
        assert "dense_2/kernel:0" not in [v.name for v in ow.trainable_variables()]
        assert [v.get_shape().as_list() for v in ow.global_variables()[:2]] == [[3, 4], [4]]
        assert h.op.type == "BiasAdd"
        assert h.op.name == "dense/BiasAdd"
        assert y_again.shape.as_list() == [None, 4]
        with pytest.raises(ValueError, match="already exists"):
            ow.layers.dense(x, 4, name="shared")
        with pytest.raises(ValueError, match="does not exist"):
            ow.layers.dense(x, 4, name="missing", reuse=True)
        with pytest.raises(ValueError, match="last dimension"):
            ow.layers.dense(ow.placeholder(ow.float32, [2, None]), 3)
        with pytest.raises(ValueError, match="units"):
            ow.layers.dense(x, 0)


def test_dense_matches_numpy_for_rank_2_and_3() -> None:
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    x2 = RNG.standard_normal((5, 3)).astype(np.float32)
    x3 = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    with ow.Graph().as_default():
        p2 = ow.placeholder(ow.float32, [None, 3])
        p3 = ow.placeholder(ow.float32, [None, 5, 3])
        p3u = ow.placeholder(ow.float32, [None, None, 3])
        kw = {"kernel_initializer": _init(w), "bias_initializer": _init(b)}
        y2 = ow.layers.dense(p2, 4, activation=ow.nn.relu, **kw)
        y3 = ow.layers.dense(p3, 4, **kw)
        y3u = ow.layers.dense(p3u, 4, **kw)
        assert y2.op.name == "dense/Relu"
        assert y3.shape.as_list() == [None, 5, 4]
        assert y3u.shape.as_list()[-1] == 4
        got2, got3, got3u = _run([y2, y3, y3u], {p2: x2, p3: x3, p3u: x3})
    np.testing.assert_allclose(got2, np.maximum(x2 @ w + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got3, x3 @ w + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got3u, x3 @ w + b, rtol=1e-5, atol=1e-6)


def test_dense_default_initializers_are_glorot_uniform_and_zeros() -> None:
    with ow.Graph().as_default():
        ow.layers.dense(ow.placeholder(ow.float32, [None, 30]), 20)
        kernel, bias = _run(ow.global_variables())
    limit = np.sqrt(6.0 / (30 + 20))
    assert np.all(np.abs(kernel) <= limit)
    assert kernel.std() > limit / 3
    assert np.all(bias == 0)


def test_dense_regularizers_go_to_the_regularization_losses() -> None:
    w = RNG.standard_normal((3, 2)).astype(np.float32)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    with ow.Graph().as_default():
        y = ow.layers.dense(
            x,
            2,
            kernel_initializer=_init(w),
            bias_initializer=ow.ones_initializer(),
            kernel_regularizer=lambda v: ow.reduce_sum(ow.square(v)),
            bias_regularizer=lambda v: ow.reduce_sum(v),
            activity_regularizer=lambda out: ow.reduce_sum(ow.abs(out)),
            name="reg",
        )
        ow.layers.dense(x, 2, name="reg", reuse=True, kernel_regularizer=ow.reduce_sum)
        losses = ow.losses.get_regularization_losses()
        assert len(losses) == 3  # the reused layer adds no weight regularization again
        got = _run([y, *losses, ow.losses.get_total_loss()])
    out = x @ w + 1.0
    np.testing.assert_allclose(got[0], out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], (w * w).sum(), rtol=1e-5)
    np.testing.assert_allclose(got[2], 2.0, rtol=1e-6)
    np.testing.assert_allclose(got[3], np.abs(out).sum() / 4, rtol=1e-5)  # / batch size
    np.testing.assert_allclose(got[4], sum(got[1:4]), rtol=1e-5)


# -- conv2d, pooling ---------------------------------------------------------------------------


def _conv_ref(x: np.ndarray, k: np.ndarray, stride: int, dilation: int, same: bool) -> np.ndarray:
    """NHWC cross-correlation in float64."""
    kh, kw = k.shape[:2]
    eh, ew = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    n, h, w, _ = x.shape
    if same:
        oh, ow_ = -(-h // stride), -(-w // stride)
        ph = max((oh - 1) * stride + eh - h, 0)
        pw = max((ow_ - 1) * stride + ew - w, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow_ = (h - eh) // stride + 1, (w - ew) // stride + 1
    out = np.zeros((n, oh, ow_, k.shape[3]))
    for i in range(oh):
        for j in range(ow_):
            patch = x[
                :, i * stride : i * stride + eh : dilation, j * stride : j * stride + ew : dilation
            ]
            out[:, i, j] = np.einsum("nhwc,hwcf->nf", patch, k)
    return out


@pytest.mark.parametrize(
    ("stride", "dilation", "padding"), [(1, 1, "valid"), (2, 1, "same"), (1, 2, "same")]
)
def test_conv2d_matches_numpy(stride: int, dilation: int, padding: str) -> None:
    x = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    k = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    with ow.Graph().as_default():
        y = ow.layers.conv2d(
            x,
            4,
            (3, 2),
            strides=stride,
            padding=padding,
            dilation_rate=dilation,
            activation=ow.nn.relu,
            kernel_initializer=_init(k),
            bias_initializer=_init(b),
        )
        assert [v.name for v in ow.global_variables()] == ["conv2d/kernel:0", "conv2d/bias:0"]
        got = _run(y)
    want = np.maximum(_conv_ref(x, k, stride, dilation, padding == "same") + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_conv2d_channels_first_and_pooling_match_channels_last() -> None:
    x = RNG.standard_normal((2, 8, 8, 3)).astype(np.float32)
    k = RNG.standard_normal((3, 3, 3, 5)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    with ow.Graph().as_default():
        outs = []
        for fmt, xin in (("channels_last", x), ("channels_first", x.transpose(0, 3, 1, 2))):
            kw = {"kernel_initializer": _init(k), "bias_initializer": _init(b)}
            h = ow.layers.conv2d(xin, 5, 3, padding="same", data_format=fmt, **kw)
            m = ow.layers.max_pooling2d(h, 2, 2, data_format=fmt)
            a = ow.layers.average_pooling2d(h, [3, 3], (2, 2), padding="same", data_format=fmt)
            outs.append([h, m, a])
        assert m.op.name.startswith("max_pooling2d_1/")
        (h1, m1, a1), (h2, m2, a2) = _run(outs)
    np.testing.assert_allclose(h2.transpose(0, 2, 3, 1), h1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m2.transpose(0, 2, 3, 1), m1, rtol=1e-6)
    np.testing.assert_allclose(a2.transpose(0, 2, 3, 1), a1, rtol=1e-5, atol=1e-6)
    want_max = h1.reshape(2, 4, 2, 4, 2, 5).max(axis=(2, 4))
    np.testing.assert_array_equal(m1, want_max)
    # SAME average pooling counts only the cells inside the image: 8 = 3 + 2 * 3 - 1 pads one
    # row and column at the end, so the last window holds 2x2 cells, the first 3x3.
    np.testing.assert_allclose(a1[:, 3, 3], h1[:, 6:, 6:].mean(axis=(1, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a1[:, 0, 0], h1[:, :3, :3].mean(axis=(1, 2)), rtol=1e-5, atol=1e-6)


def test_layer_arguments_are_checked() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [None, 8, 8, 3])
        with pytest.raises(ValueError, match="padding"):
            ow.layers.conv2d(x, 4, 3, padding="full")
        with pytest.raises(ValueError, match="data_format"):
            ow.layers.max_pooling2d(x, 2, 2, data_format="NHWC")
        with pytest.raises(ValueError, match="kernel_size"):
            ow.layers.conv2d(x, 4, (3, 3, 3))
        with pytest.raises(ValueError, match="ndim=4"):
            ow.layers.conv2d(ow.placeholder(ow.float32, [None, 8, 3]), 4, 3)


# -- dropout -------------------------------------------------------------------------------------


def test_dropout_training_bool_and_tensor() -> None:
    x = np.ones((50, 40), np.float32)
    with ow.Graph().as_default():
        off = ow.layers.dropout(x, 0.25)
        on = ow.layers.dropout(x, 0.25, training=True, seed=3)
        flag = ow.placeholder_with_default(False, [])
        switched = ow.layers.dropout(x, rate=0.25, training=flag, seed=4)
        with ow.Session() as s:
            v_off, v_on, v_default = s.run([off, on, switched])
            v_fed = s.run(switched, {flag: True})
        with pytest.raises(ValueError, match="training"):
            ow.layers.dropout(x, training=ow.constant([True, False]))
    np.testing.assert_array_equal(v_off, x)
    np.testing.assert_array_equal(v_default, x)
    for v in (v_on, v_fed):
        assert set(np.unique(v).tolist()) == {0.0, np.float32(1 / 0.75)}
        assert 0.15 < np.mean(v == 0) < 0.35


def test_dropout_gradient_flows_through_the_selected_branch() -> None:
    x = np.ones((10, 10), np.float32)
    with ow.Graph().as_default():
        v = ow.Variable(x)
        flag = ow.placeholder_with_default(True, [])
        y = ow.layers.dropout(v, 0.5, training=flag, seed=1)
        (g,) = ow.gradients(ow.reduce_sum(y), [v])
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            yv, gv = s.run([y, g])
            gv_off = s.run(g, {flag: False})
    np.testing.assert_array_equal(gv, yv)  # d(sum(mask * 2 * v))/dv = mask * 2 = y at v = 1
    np.testing.assert_array_equal(gv_off, np.ones_like(x))


# -- against TensorFlow ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def v1() -> Any:
    tf = pytest.importorskip("tensorflow")
    return tf.compat.v1


def _tf_dense(v1: Any, x: Any, units: int, w: np.ndarray, b: np.ndarray, act: Any = None) -> Any:
    """What tf.layers.dense built in TensorFlow 1."""
    with v1.variable_scope(None, default_name="dense"):
        kernel = v1.get_variable("kernel", initializer=v1.constant_initializer(w), shape=w.shape)
        bias = v1.get_variable("bias", initializer=v1.constant_initializer(b), shape=b.shape)
        y = v1.nn.bias_add(v1.tensordot(x, kernel, [[x.shape.ndims - 1], [0]]), bias)
        return act(y) if act is not None else y


def test_dense_and_conv2d_match_tensorflow(v1: Any) -> None:
    x3 = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    w = RNG.standard_normal((5, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    xi = RNG.standard_normal((2, 9, 9, 2)).astype(np.float32)
    k = RNG.standard_normal((3, 3, 2, 3)).astype(np.float32)
    kb = RNG.standard_normal(3).astype(np.float32)
    with v1.Graph().as_default():
        y = _tf_dense(v1, v1.constant(x3), 4, w, b, v1.nn.tanh)
        c = v1.nn.bias_add(
            v1.nn.conv2d(xi, k, strides=[1, 2, 2, 1], padding="SAME"), v1.constant(kb)
        )
        p = v1.nn.max_pool(c, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        names = [v.name for v in v1.global_variables()]
        with v1.Session() as s:
            s.run(v1.global_variables_initializer())
            want = s.run([y, c, p])
    with ow.Graph().as_default():
        oy = ow.layers.dense(
            x3, 4, ow.nn.tanh, kernel_initializer=_init(w), bias_initializer=_init(b)
        )
        oc = ow.layers.conv2d(
            xi, 3, 3, 2, "same", kernel_initializer=_init(k), bias_initializer=_init(kb)
        )
        op_ = ow.layers.max_pooling2d(oc, 2, 2)
        assert [v.name for v in ow.global_variables()][:2] == names
        got = _run([oy, oc, op_])
    for g, t in zip(got, want, strict=True):
        np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-5)


def test_training_a_dense_model_matches_tensorflow(v1: Any) -> None:
    x = RNG.standard_normal((16, 6)).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 16)]
    w1 = (RNG.standard_normal((6, 8)) * 0.5).astype(np.float32)
    b1 = (RNG.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (RNG.standard_normal((8, 3)) * 0.5).astype(np.float32)
    b2 = (RNG.standard_normal(3) * 0.1).astype(np.float32)
    weights = RNG.uniform(0.5, 1.5, 16).astype(np.float32)
    steps = 5

    with v1.Graph().as_default():
        h = _tf_dense(v1, v1.constant(x), 8, w1, b1, v1.nn.relu)
        logits = _tf_dense(v1, h, 3, w2, b2)
        loss = v1.losses.softmax_cross_entropy(labels, logits, weights)
        train = v1.train.GradientDescentOptimizer(0.5).minimize(loss)
        with v1.Session() as s:
            s.run(v1.global_variables_initializer())
            want = [s.run([loss, train])[0] for _ in range(steps)]

    with ow.Graph().as_default():
        h = ow.layers.dense(
            x, 8, ow.nn.relu, kernel_initializer=_init(w1), bias_initializer=_init(b1)
        )
        logits = ow.layers.dense(h, 3, kernel_initializer=_init(w2), bias_initializer=_init(b2))
        loss = ow.losses.softmax_cross_entropy(labels, logits, weights)
        train = ow.train.GradientDescentOptimizer(0.5).minimize(loss)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            got = [s.run([loss, train])[0] for _ in range(steps)]

    assert want[-1] < want[0]  # the model learns: the comparison is not of constants
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
