"""The neural-network ops (activations and their gradient ops, the softmax family and the losses,
bias_add, l2_loss, top_k / in_top_k) against NumPy in a graph and eagerly, 1 against 3 threads
bit for bit, and their gradients (second derivatives where TensorFlow has them) against finite
differences: one row per op (op_testing.py). Then what a row cannot show: extreme logits, the
labels' gradient in TensorFlow 1's cross-entropy, the keyword-only calls, labels out of range,
top_k's ties and unsorted order, NCHW, unknown dimensions and the errors naming shapes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import given
from hypothesis import strategies as st
from op_testing import (
    FLOATS,
    REALS,
    SETTINGS,
    OpCase,
    assert_matches,
    check_case,
    draw_inputs,
    maybe_strided,
    random_values,
    same_shape,
)
from opweave import errors
from opweave.ops import nn_ops
from opweave.ops._op_def import eager_function

SELU_SCALE = 1.0507009873554804934193349852946
SELU_ALPHA = 1.6732632423543772848170429916717


# -- NumPy references ----------------------------------------------------------------------------


def _np_log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    w = x.astype(np.float64)
    shifted = w - w.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


def _np_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.exp(_np_log_softmax(x.astype(np.float64), axis)).astype(x.dtype)


def _axis_arg(kwargs: dict[str, Any]) -> int:
    return int(kwargs.get("axis", kwargs.get("dim", -1)))


def _np_xent(labels: np.ndarray, logits: np.ndarray, **kw: Any) -> np.ndarray:
    axis = _axis_arg(kw)
    return (-(labels * _np_log_softmax(logits.astype(np.float64), axis)).sum(axis)).astype(
        logits.dtype
    )


def _np_sparse_xent(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    ls = _np_log_softmax(logits.astype(np.float64))
    picked = np.take_along_axis(ls, labels[..., None].astype(np.int64), -1)[..., 0]
    return (-picked).astype(logits.dtype)


def _np_sigmoid_xent(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    return (np.maximum(x, 0) - x * labels + np.log1p(np.exp(-np.abs(x)))).astype(logits.dtype)


def _channel_axis(x: np.ndarray, data_format: str) -> int:
    return 1 if data_format == "NCHW" else x.ndim - 1


def _np_bias_add(x: np.ndarray, b: np.ndarray, data_format: str = "NHWC") -> np.ndarray:
    shape = [1] * x.ndim
    shape[_channel_axis(x, data_format)] = b.size
    with np.errstate(over="ignore"):
        return (x + b.reshape(shape)).astype(x.dtype)


def _np_bias_add_grad(g: np.ndarray, data_format: str = "NHWC") -> np.ndarray:
    c = _channel_axis(g, data_format)
    return g.sum(axis=tuple(a for a in range(g.ndim) if a != c)).astype(g.dtype)


def _np_top_k(x: np.ndarray, k: int = 1, sorted: bool = True) -> list[np.ndarray]:
    order = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]
    if not sorted:
        order = np.sort(order, axis=-1)
    return [np.take_along_axis(x, order, -1), order.astype(np.int32)]


def _np_in_top_k(p: np.ndarray, t: np.ndarray, k: int) -> np.ndarray:
    target = np.take_along_axis(p, t[:, None].astype(np.int64), 1)
    return (p > target).sum(1) < k


# -- shapes and arguments ------------------------------------------------------------------------


def _axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    r = len(shapes[0])
    key = draw(st.sampled_from(["axis", "dim", None]))
    return {} if key is None else {key: draw(st.integers(-r, r - 1))}


def _matrix_and_vector(draw: st.DrawFn) -> list[tuple[int, ...]]:
    b, c = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    return [(b,), (b, c)]


def _labels_then_logits(rng: np.random.Generator, shapes: Any, dtypes: Any) -> list[np.ndarray]:
    """Class indices in range for the logits (whose shape the thread check may grow)."""
    logits = random_values(rng, shapes[1], dtypes[1], (-3.0, 3.0))
    labels = rng.integers(0, shapes[1][-1], size=shapes[1][:-1]).astype(dtypes[0])
    return [labels, logits]


def _distributions_then_logits(
    rng: np.random.Generator, shapes: Any, dtypes: Any, axis: int = -1
) -> list[np.ndarray]:
    """Labels that sum to one along the class axis (the backprop output, softmax - labels, is the
    logits' gradient only then, as in TensorFlow), and logits."""
    raw = rng.uniform(0.05, 1.0, size=shapes[0])
    labels = (raw / raw.sum(axis=-1, keepdims=True)).astype(dtypes[0])
    return [labels, random_values(rng, shapes[1], dtypes[1], (-3.0, 3.0))]


def _predictions_then_targets(
    rng: np.random.Generator, shapes: Any, dtypes: Any
) -> list[np.ndarray]:
    p = rng.integers(-3, 4, size=shapes[1]).astype(np.float32)  # small integers: many ties
    t = rng.integers(0, shapes[1][-1], size=shapes[1][:1]).astype(dtypes[1])
    return [p, t]


def _in_top_k_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    b, c = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    return [(b, c), (b,)]


def _bias_shapes(nchw: bool) -> Callable[[st.DrawFn], list[tuple[int, ...]]]:
    def draw_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
        rank = draw(st.integers(3 if nchw else 2, 4))
        s = tuple(draw(st.integers(1, 4)) for _ in range(rank))
        return [s, (s[1] if nchw else s[-1],)]

    return draw_shapes


def _top_k_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {"k": draw(st.integers(0, shapes[0][-1])), "sorted": draw(st.booleans())}


def _labels_dtype(d: Any) -> list[Any]:
    return [np.int64 if np.dtype(d) == np.float64 else np.int32, d]


def _grad_op(op_def: Any, **attrs: Any) -> Callable[..., Any]:
    def fn(g: Any, f: Any) -> Any:
        return op_def(g, f, **attrs)

    fn.__name__ = op_def.type
    return fn


def _v1_xent(labels: Any, logits: Any, **kw: Any) -> Any:
    return ow.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits, **kw)


def _sparse_xent(labels: Any, logits: Any) -> Any:
    return ow.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def _sigmoid_xent(labels: Any, logits: Any) -> Any:
    return ow.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)


def _bias_add_grad(data_format: str) -> Callable[..., Any]:
    def fn(g: Any) -> Any:
        return nn_ops._BIAS_ADD_GRAD(g, data_format=data_format)

    return fn


CASES = [
    OpCase(
        "Relu",
        ow.nn.relu,
        lambda x: np.maximum(x, 0).astype(x.dtype),
        same_shape(),
        FLOATS,
        grad2=True,
        id="Relu_grad2",
    ),
    OpCase(
        "Relu6",
        ow.nn.relu6,
        lambda x: np.clip(x, 0, 6).astype(x.dtype),
        same_shape(),
        REALS,
        domain=(-3, 9),
        grad2=True,
    ),
    OpCase(
        "Elu",
        ow.nn.elu,
        lambda x: np.where(x < 0, np.expm1(x), x).astype(x.dtype),
        same_shape(),
        grad2=True,
    ),
    OpCase(
        "Selu",
        ow.nn.selu,
        lambda x: (SELU_SCALE * np.where(x < 0, SELU_ALPHA * np.expm1(x), x)).astype(x.dtype),
        same_shape(),
        grad2=True,
    ),
    OpCase(
        "LeakyRelu",
        ow.nn.leaky_relu,
        lambda x, alpha: np.where(x > 0, x, x * alpha).astype(x.dtype),
        same_shape(),
        kwargs=lambda draw, s: {"alpha": draw(st.sampled_from([0.2, 0.01, 1.5]))},
        grad2=True,
    ),
    OpCase(
        "Softplus",
        ow.nn.softplus,
        lambda x: np.logaddexp(0, x).astype(x.dtype),
        same_shape(),
        domain=(-30, 30),
        grad2=True,
    ),
    OpCase(
        "Softsign", ow.nn.softsign, lambda x: (x / (1 + np.abs(x))).astype(x.dtype), same_shape()
    ),
    OpCase(
        "ReluGrad",
        _grad_op(nn_ops._RELU_GRAD),
        lambda g, f: np.where(f > 0, g, 0),
        same_shape(2),
        REALS,
        grad2=True,
    ),
    OpCase(
        "Relu6Grad",
        _grad_op(nn_ops._RELU6_GRAD),
        lambda g, f: np.where((f > 0) & (f < 6), g, 0).astype(g.dtype),
        same_shape(2),
        REALS,
        domain=(-3, 9),
        grad2=True,
    ),
    OpCase(
        "EluGrad",
        _grad_op(nn_ops._ELU_GRAD),
        lambda g, y: np.where(y < 0, g * (y + 1), g),
        same_shape(2),
        grad2=True,
    ),
    OpCase(
        "SeluGrad",
        _grad_op(nn_ops._SELU_GRAD),
        lambda g, y: np.where(y < 0, g * (y + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE),
        same_shape(2),
        grad2=True,
    ),
    OpCase(
        "LeakyReluGrad",
        _grad_op(nn_ops._LEAKY_RELU_GRAD, alpha=0.3),
        lambda g, f: np.where(f > 0, g, g * np.asarray(0.3, g.dtype)),
        same_shape(2),
        grad2=True,
    ),
    OpCase(
        "SoftplusGrad",
        _grad_op(nn_ops._SOFTPLUS_GRAD),
        lambda g, f: (g / (1 + np.exp(-f))).astype(g.dtype),
        same_shape(2),
        grad2=True,
    ),
    OpCase(
        "SoftsignGrad",
        _grad_op(nn_ops._SOFTSIGN_GRAD),
        lambda g, f: (g / (1 + np.abs(f)) ** 2).astype(g.dtype),
        same_shape(2),
        grad=False,
    ),
    OpCase(
        "Softmax",
        ow.nn.softmax,
        lambda x, **kw: _np_softmax(x, _axis_arg(kw)),
        same_shape(min_rank=1),
        kwargs=_axis,
        grad2=True,
    ),
    OpCase(
        "LogSoftmax",
        ow.nn.log_softmax,
        lambda x, **kw: _np_log_softmax(x, _axis_arg(kw)),
        same_shape(min_rank=1),
        kwargs=_axis,
        grad2=True,
    ),
    OpCase(
        "SoftmaxCrossEntropyWithLogits",
        ow.nn.softmax_cross_entropy_with_logits_v2,
        _np_xent,
        same_shape(2, min_rank=1),
        values=_distributions_then_logits,
        grad2=True,
    ),
    OpCase(
        "SoftmaxCrossEntropyWithLogits",
        _v1_xent,
        _np_xent,
        same_shape(2, min_rank=1),
        int_inputs=frozenset({0}),
        values=_distributions_then_logits,
        grad2=True,
        id="SoftmaxXent_v1",
    ),
    OpCase(
        "SoftmaxCrossEntropyWithLogits",
        _v1_xent,
        _np_xent,
        same_shape(2, min_rank=2),
        kwargs=lambda draw, s: {"dim": draw(st.integers(-len(s[0]), len(s[0]) - 2))},
        grad=False,
        id="SoftmaxXent_v1_dim",
    ),
    OpCase(
        "SparseSoftmaxCrossEntropyWithLogits",
        _sparse_xent,
        _np_sparse_xent,
        _matrix_and_vector,
        input_dtypes=_labels_dtype,
        int_inputs=frozenset({0}),
        values=_labels_then_logits,
        grad2=True,
    ),
    OpCase(
        "SigmoidCrossEntropyWithLogits",
        _sigmoid_xent,
        _np_sigmoid_xent,
        same_shape(2),
        domain=(-20, 20),
        grad2=True,
    ),
    OpCase(
        "L2Loss",
        ow.nn.l2_loss,
        lambda x: (0.5 * (x.astype(np.float64) ** 2).sum()).astype(x.dtype),
        same_shape(),
        grad2=True,
    ),
    OpCase("BiasAdd", ow.nn.bias_add, _np_bias_add, _bias_shapes(False), REALS, grad2=True),
    OpCase(
        "BiasAdd",
        ow.nn.bias_add,
        _np_bias_add,
        _bias_shapes(True),
        REALS,
        kwargs={"data_format": "NCHW"},
        grad2=True,
        id="BiasAdd_NCHW",
    ),
    OpCase(
        "BiasAddGrad",
        _bias_add_grad("NHWC"),
        _np_bias_add_grad,
        same_shape(min_rank=2),
        REALS,
        grad2=True,
    ),
    OpCase(
        "BiasAddGrad",
        _bias_add_grad("NCHW"),
        lambda g: _np_bias_add_grad(g, "NCHW"),
        same_shape(min_rank=3),
        REALS,
        grad2=True,
        id="BiasAddGrad_NCHW",
    ),
    OpCase(
        "TopKV2",
        ow.nn.top_k,
        _np_top_k,
        same_shape(min_rank=1),
        REALS,
        kwargs=_top_k_args,
        grad2=True,
    ),
    OpCase(
        "InTopKV2",
        ow.nn.in_top_k,
        _np_in_top_k,
        _in_top_k_shapes,
        [np.float32],
        input_dtypes=lambda d: [np.float32, np.int32],
        values=lambda rng, s, d: _predictions_then_targets(rng, s[::-1], d),
        kwargs=lambda draw, s: {"k": draw(st.integers(0, s[0][1] + 1))},
        grad=False,
    ),
]


def _eager_check(case: OpCase, data: st.DataObject) -> None:
    """The row's own function run eagerly (on arrays, maybe strided) against NumPy, and on 1 and
    3 threads on inputs grown to be split: every row, keyword-only losses and gradient ops too."""
    eager = eager_function(case.fn, case.id)
    arrays, kwargs, dtype = draw_inputs(case, data.draw)
    rng = np.random.default_rng(len(arrays))
    want = case.ref(*arrays, **kwargs)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    got = eager(*[maybe_strided(rng, a) for a in arrays], **kwargs)
    assert_matches(list(got) if isinstance(got, (list, tuple)) else [got], want, case.rtol, dtype)
    arrays, kwargs, _ = draw_inputs(case, data.draw, large=True)
    one = eager(*arrays, **kwargs, _num_threads=1)
    three = eager(*arrays, **kwargs, _num_threads=3)
    one = list(one) if isinstance(one, (list, tuple)) else [one]
    three = list(three) if isinstance(three, (list, tuple)) else [three]
    for a, b in zip(one, three, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("case", CASES, ids=repr)
@SETTINGS
@given(data=st.data())
def test_op_matches_numpy_eagerly_across_threads_and_in_its_gradient(
    case: OpCase, data: st.DataObject
) -> None:
    check_case(dataclasses.replace(case, eager_name=None), data)
    _eager_check(case, data)


# -- numerics ------------------------------------------------------------------------------------


def _run(fetches: Any, feed: dict[Any, Any] | None = None) -> Any:
    with ow.Session() as s:
        return s.run(fetches, feed)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_logits_give_finite_exact_results(dtype: Any) -> None:
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, -1e4]], dtype)
    labels = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]], dtype)
    with ow.Graph().as_default():
        x = ow.constant(logits)
        out = _run(
            {
                "softmax": ow.nn.softmax(x),
                "log_softmax": ow.nn.log_softmax(x),
                "xent": ow.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x),
                "sparse": ow.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=[1, 0, 2], logits=x
                ),
                "sigmoid": ow.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x),
                "softplus": ow.nn.softplus(x),
                "log_sigmoid": ow.nn.log_sigmoid(x),
            }
        )
    for name, v in out.items():
        assert np.all(np.isfinite(v)), (name, v)
    np.testing.assert_allclose(out["softmax"][0], [1, 0, 0])
    np.testing.assert_allclose(out["softmax"][1], [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_allclose(out["log_softmax"][0], [0, -2e4, -1e4])
    np.testing.assert_allclose(out["xent"], [2e4, np.log(3), np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(out["sparse"], [2e4, np.log(3), 2e4 + np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(out["sigmoid"][0], [1e4, 1e4, np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(out["sigmoid"][2], [5e3, 5e3, 0], atol=1e-6)
    np.testing.assert_allclose(out["softplus"][0], [1e4, 0, np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(out["log_sigmoid"][1], [-1e4] * 3)


def test_extreme_logits_give_finite_gradients() -> None:
    with ow.Graph().as_default():
        x = ow.constant(np.array([[1e4, -1e4, 0.0]], np.float32))
        losses = [
            ow.nn.softmax_cross_entropy_with_logits_v2(labels=[[0.0, 1.0, 0.0]], logits=x),
            ow.nn.sparse_softmax_cross_entropy_with_logits(labels=[1], logits=x),
            ow.reduce_sum(
                ow.nn.sigmoid_cross_entropy_with_logits(labels=[[0.0, 1.0, 0.0]], logits=x)
            ),
            ow.reduce_sum(ow.nn.log_softmax(x)),
        ]
        grads = _run([ow.gradients(loss, [x])[0] for loss in losses])
    for g in grads:
        assert np.all(np.isfinite(g))
    np.testing.assert_allclose(grads[0], [[1, -1, 0]])
    np.testing.assert_allclose(grads[1], [[1, -1, 0]])
    np.testing.assert_allclose(grads[2], [[1, -1, 0.5]])


def test_nan_in_a_row_makes_that_row_nan_only() -> None:
    x = np.array([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], np.float32)
    out = ow.kernels.softmax(x)
    assert np.all(np.isnan(out[0]))
    np.testing.assert_allclose(out[1], _np_softmax(x[1:])[0], rtol=1e-6)


def test_softmax_float16_is_computed_in_float32() -> None:
    x = np.array([[1.0, 2.0, 3.0]], np.float16)
    out = ow.kernels.softmax(x)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, _np_softmax(x.astype(np.float32)), rtol=1e-3)


def test_softmax_on_long_rows_matches_numpy_and_sums_to_one() -> None:
    x = np.random.default_rng(3).standard_normal((3, 5000)).astype(np.float32) * 20
    out = ow.kernels.softmax(x)
    np.testing.assert_allclose(out, _np_softmax(x), rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(out.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(ow.kernels.log_softmax(x), _np_log_softmax(x), rtol=1e-5, atol=1e-4)


# -- the labels' gradient and TensorFlow 1's keyword-only calls ----------------------------------


def test_xent_v1_gives_no_gradient_to_labels_but_v2_does() -> None:
    logits = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    labels = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    with ow.Graph().as_default():
        x, z = ow.constant(logits), ow.constant(labels)
        v1 = ow.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
        v2 = ow.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x)
        g1_z, g1_x = ow.gradients(v1, [z, x])
        g2_z, g2_x = ow.gradients(v2, [z, x])
        assert g1_z is None
        got = _run([g1_x, g2_z, g2_x])
    np.testing.assert_allclose(got[0], _np_softmax(logits) - labels)
    np.testing.assert_allclose(got[1], -_np_log_softmax(logits))
    np.testing.assert_allclose(got[2], got[0])


def test_xent_v1_names_its_ops_as_tensorflow_1() -> None:
    # TensorFlow 1 wraps v1 in a scope softmax_cross_entropy_with_logits_sg and names the loss
    # after it (the deep MNIST tutorial's loss is loss/softmax_cross_entropy_with_logits_sg).
    z, x = [[0.0, 1.0]], [[1.0, 2.0]]
    with ow.Graph().as_default():
        with ow.name_scope("loss"):
            first = ow.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
            second = ow.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
        named = ow.nn.softmax_cross_entropy_with_logits(labels=z, logits=x, name="xent")
        assert first.name == "loss/softmax_cross_entropy_with_logits_sg:0"
        assert first.op.type == "SoftmaxCrossEntropyWithLogits"
        stop = first.op.inputs[1].op
        assert stop.name == "loss/softmax_cross_entropy_with_logits_sg/labels_stop_gradient"
        assert second.name == "loss/softmax_cross_entropy_with_logits_sg_1:0"
        assert named.name == "xent:0"
        assert named.op.inputs[1].op.name == "xent/labels_stop_gradient"


@pytest.mark.parametrize(
    "fn",
    [
        ow.nn.softmax_cross_entropy_with_logits,
        ow.nn.sparse_softmax_cross_entropy_with_logits,
        ow.nn.sigmoid_cross_entropy_with_logits,
    ],
)
def test_positional_labels_are_the_sentinel_error(fn: Any) -> None:
    name = fn.__name__
    with ow.Graph().as_default():
        labels = ow.constant([1]) if "sparse" in name else ow.constant([[0.0, 1.0]])
        logits = ow.constant([[1.0, 2.0]])
        with pytest.raises(ValueError, match=f"Only call `{name}` with named arguments"):
            fn(labels, logits)
        with pytest.raises(ValueError, match="Both labels and logits must be provided"):
            fn(logits=logits)


def test_v2_takes_labels_and_logits_by_position_and_casts_labels() -> None:
    with ow.Graph().as_default():
        x = ow.constant([[1.0, 2.0]], ow.float64)
        loss = ow.nn.softmax_cross_entropy_with_logits_v2([[0.0, 1.0]], x)
        assert loss.dtype == ow.float64
        np.testing.assert_allclose(_run(loss), _np_xent(np.array([[0.0, 1.0]]), _run(x)))


def test_axis_and_dim_are_one_argument() -> None:
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(ow.kernels.softmax(x, dim=0), _np_softmax(x, 0), rtol=1e-6)
    np.testing.assert_allclose(ow.kernels.log_softmax(x, axis=0), _np_log_softmax(x, 0), rtol=1e-5)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        ow.kernels.softmax(x, axis=0, dim=0)
    with (
        ow.Graph().as_default(),
        pytest.raises(errors.InvalidArgumentError, match=r"Dimension \(2\) must be in"),
    ):
        ow.nn.softmax(ow.constant(x), axis=2)


# -- sparse labels -------------------------------------------------------------------------------


@pytest.mark.parametrize("label_dtype", [ow.int32, ow.int64])
@pytest.mark.parametrize("bad", [3, -1])
def test_sparse_label_out_of_range_is_invalid_argument_naming_it(
    label_dtype: Any, bad: int
) -> None:
    with ow.Graph().as_default():
        labels = ow.placeholder(label_dtype, [2])
        loss = ow.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=ow.constant(np.zeros((2, 3), np.float32))
        )
        with pytest.raises(errors.InvalidArgumentError) as info:
            _run(loss, {labels: np.array([0, bad])})
    message = str(info.value)
    assert f"Received a label value of {bad} which is outside the valid range of [0, 3)" in message
    assert "Label values: 0 " + str(bad) in message
    with pytest.raises(errors.InvalidArgumentError, match=f"label value of {bad}"):
        ow.kernels.sparse_softmax_cross_entropy_with_logits(
            labels=np.array([bad], label_dtype.as_numpy_dtype), logits=np.zeros((1, 3), np.float32)
        )


def test_sparse_xent_of_higher_rank_keeps_the_labels_shape() -> None:
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 3, 4)).astype(np.float32)
    labels = rng.integers(0, 4, (2, 3)).astype(np.int64)
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [None, 3, 4])
        loss = ow.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)
        assert loss.shape.as_list() == [2, 3]
        got = _run(loss, {x: logits})
    np.testing.assert_allclose(got, _np_sparse_xent(labels, logits), rtol=1e-6)


def test_sparse_xent_rank_and_shape_mismatches_are_tensorflows_errors() -> None:
    with ow.Graph().as_default():
        logits = ow.constant(np.zeros((2, 3), np.float32))
        with pytest.raises(ValueError, match="Rank mismatch: Rank of labels"):
            ow.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0, 1]], logits=logits)
        with pytest.raises(ValueError, match="Shape mismatch: The shape of labels"):
            ow.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1, 2], logits=logits)
        with pytest.raises(ValueError, match="Logits cannot be scalars"):
            ow.nn.sparse_softmax_cross_entropy_with_logits(labels=0, logits=1.0)


# -- shapes and errors ---------------------------------------------------------------------------


def test_shape_inference_keeps_unknown_dimensions() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [None, 5])
        xr = ow.placeholder(ow.float32, [None, None, 5])
        unknown = ow.placeholder(ow.float32)
        assert ow.nn.softmax(x).shape.as_list() == [None, 5]
        assert ow.nn.log_softmax(xr, axis=1).shape.as_list() == [None, None, 5]
        assert ow.nn.softmax(unknown).shape.ndims is None
        xent = ow.nn.softmax_cross_entropy_with_logits_v2(labels=x, logits=x)
        assert xent.shape.as_list() == [None]
        assert ow.nn.softmax_cross_entropy_with_logits_v2(labels=xr, logits=xr).shape.as_list() == [
            None,
            None,
        ]
        sparse = ow.nn.sparse_softmax_cross_entropy_with_logits(
            labels=ow.placeholder(ow.int32, [None]), logits=x
        )
        assert sparse.shape.as_list() == [None]
        assert ow.nn.bias_add(xr, ow.placeholder(ow.float32, [None])).shape.as_list() == [
            None,
            None,
            5,
        ]
        nchw = ow.nn.bias_add(
            ow.placeholder(ow.float32, [None, None, 7]), ow.zeros([3]), data_format="NCHW"
        )
        assert nchw.shape.as_list() == [None, 3, 7]
        values, indices = ow.nn.top_k(ow.placeholder(ow.float32, [None, None]), k=3)
        assert values.shape.as_list() == [None, 3]
        assert indices.dtype == ow.int32
        assert ow.nn.in_top_k(x, ow.placeholder(ow.int64, [None]), 2).shape.as_list() == [None]
        assert ow.nn.l2_loss(unknown).shape.as_list() == []


def test_unknown_shapes_run_with_fed_values() -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    z = _np_softmax(rng.standard_normal((2, 3, 4)).astype(np.float32))
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32)
        y = ow.placeholder(ow.float32)
        xent = ow.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x)
        sparse = ow.nn.sparse_softmax_cross_entropy_with_logits(
            labels=ow.placeholder_with_default(np.array([[0, 1, 2], [3, 0, 1]]), [None, None]),
            logits=x,
        )
        got = _run([xent, sparse], {x: a, y: z})
    np.testing.assert_allclose(got[0], _np_xent(z, a), rtol=1e-5)
    np.testing.assert_allclose(
        got[1], _np_sparse_xent(np.array([[0, 1, 2], [3, 0, 1]]), a), rtol=1e-5
    )


def test_logits_and_labels_of_different_shapes_name_node_op_and_shapes() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [2, 3], name="logits")
        z = ow.placeholder(ow.float32, [2, 4], name="labels")
        with pytest.raises(ValueError, match="must be equal") as info:
            ow.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x, name="xent")
        message = str(info.value)
        assert "'xent'" in message
        assert "SoftmaxCrossEntropyWithLogits" in message
        assert "[2,3], [2,4]" in message
        with pytest.raises(ValueError, match=r"must have the same shape \(\(2, 3\) vs \(2, 4\)\)"):
            ow.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
        with pytest.raises(TypeError, match="float64"):
            ow.nn.sigmoid_cross_entropy_with_logits(
                labels=ow.placeholder(ow.float64, [2, 3]), logits=x
            )
    # Shapes known only at run time: the kernel's check, with both shapes.
    with ow.Graph().as_default():
        a = ow.placeholder(ow.float32, [None, None])
        b = ow.placeholder(ow.float32, [None, None])
        loss = ow.nn.softmax_cross_entropy_with_logits_v2(labels=b, logits=a)
        with pytest.raises(
            errors.InvalidArgumentError, match=r"logits_size=\[2, 3\] labels_size=\[2, 4\]"
        ):
            _run(loss, {a: np.zeros((2, 3)), b: np.zeros((2, 4))})


def test_bias_of_the_wrong_length_names_both_shapes() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, [2, 3])
        with pytest.raises(ValueError, match="must be equal") as info:
            ow.nn.bias_add(x, ow.zeros([4]), name="b")
        assert "Dimensions must be equal, but are 3 and 4" in str(info.value)
        assert "'b' (op: 'BiasAdd')" in str(info.value)
        assert "[2,3], [4]" in str(info.value)
        v = ow.placeholder(ow.float32, [None, None])
        bias = ow.placeholder(ow.float32, [None])
        with pytest.raises(errors.InvalidArgumentError, match=r"\[4\] vs. \[2, 3\]"):
            _run(ow.nn.bias_add(v, bias), {v: np.zeros((2, 3)), bias: np.zeros(4)})
        with pytest.raises(ValueError, match="at least rank 3"):
            ow.nn.bias_add(x, ow.zeros([3]), data_format="NCHW")


def test_k_larger_than_the_last_dimension_is_an_error_naming_both() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="input must have last dimension >= k = 5 but is 3"):
            ow.nn.top_k(ow.zeros([2, 3]), k=5)
        x = ow.placeholder(ow.float32, [None, None])
        k = ow.placeholder(ow.int32, [])
        out = ow.nn.top_k(x, k)
        with pytest.raises(errors.InvalidArgumentError, match="Had 3, needed 5"):
            _run(out, {x: np.zeros((2, 3)), k: 5})
        with pytest.raises(errors.InvalidArgumentError, match="Need k >= 0, got -1"):
            _run(out, {x: np.zeros((2, 3)), k: -1})
    with pytest.raises(ValueError, match="k must be in"):
        ow.kernels.top_k(np.zeros(3), k=-1)


# -- top_k and in_top_k --------------------------------------------------------------------------


def test_top_k_ties_go_to_the_lower_index_and_unsorted_keeps_input_order() -> None:
    x = np.array([[3, 1, 3, 2, 3, 0, 5, 5]], np.float32)
    values, indices = ow.kernels.top_k(x, 4)
    np.testing.assert_array_equal(values, [[5, 5, 3, 3]])
    np.testing.assert_array_equal(indices, [[6, 7, 0, 2]])
    values, indices = ow.kernels.top_k(x, 4, sorted=False)
    np.testing.assert_array_equal(indices, [[0, 2, 6, 7]])
    np.testing.assert_array_equal(values, [[3, 3, 5, 5]])
    values, indices = ow.kernels.top_k(x, 1)
    np.testing.assert_array_equal(indices, [[6]])
    ints = np.array([7, 7, 7], np.int64)
    np.testing.assert_array_equal(ow.kernels.top_k(ints, 2).indices, [0, 1])


def test_top_k_counts_nan_as_the_largest() -> None:
    x = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    values, indices = ow.kernels.top_k(x, 3)
    np.testing.assert_array_equal(indices, [1, 3, 2])
    assert np.isnan(values[:2]).all()
    assert values[2] == 3


def test_top_k_gradient_scatters_into_the_selected_positions() -> None:
    x = np.array([[0.5, 2.0, 1.0, -1.0], [3.0, 0.0, 4.0, 1.0]])
    with ow.Graph().as_default():
        t = ow.constant(x)
        values, _ = ow.nn.top_k(t, 2)
        (g,) = ow.gradients(ow.reduce_sum(values * np.array([[1.0, 10.0]])), [t])
        np.testing.assert_array_equal(_run(g), [[0, 1, 10, 0], [10, 0, 1, 0]])


def test_in_top_k_ties_non_finite_and_out_of_range_targets() -> None:
    p = np.array(
        [[1.0, 2.0, 2.0], [1.0, 2.0, 2.0], [np.inf, 0.0, 1.0], [0.0, 1.0, 2.0], [3.0, 1.0, 2.0]],
        np.float32,
    )
    t = np.array([1, 0, 2, 5, -1], np.int64)
    np.testing.assert_array_equal(ow.kernels.in_top_k(p, t, 1), [True, False, False, False, False])
    np.testing.assert_array_equal(ow.kernels.in_top_k(p, t, 3)[:2], [True, True])
    with ow.Graph().as_default():
        out = ow.nn.in_top_k(p, t.astype(np.int32), 1)
        assert out.dtype == ow.bool
        assert ow.gradients(ow.cast(out, ow.float32), [ow.constant(p)]) == [None]


# -- bias_add ------------------------------------------------------------------------------------


def test_bias_add_nchw_adds_along_dimension_one() -> None:
    x = np.zeros((2, 3, 2, 2), np.float32)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    for fmt in ["NCHW", "NCW", "NCDHW"]:
        got = ow.kernels.bias_add(x[..., 0] if fmt == "NCW" else x, b, data_format=fmt)
        assert np.all(got[:, 1] == 2)
        assert np.all(got[:, 2] == 3)
    got = ow.kernels.bias_add(x.transpose(0, 2, 3, 1), b, data_format="NHWC")
    assert np.all(got[..., 2] == 3)
    with pytest.raises(ValueError, match="data_format must be of the form"):
        ow.kernels.bias_add(x, b, data_format="HWCN")
    with ow.Graph().as_default():
        v = ow.constant(np.random.default_rng(0).standard_normal((2, 3, 4)))
        bias = ow.constant(np.ones(3))
        out = ow.nn.bias_add(v, bias, data_format="NCHW")
        assert out.op.attrs["data_format"] == "NCHW"
        (gb,) = ow.gradients(ow.reduce_sum(out * out), [bias])
        np.testing.assert_allclose(_run(gb), (2 * (_run(v) + 1)).sum(axis=(0, 2)), rtol=1e-12)


def test_xw_plus_b_is_matmul_then_bias_add() -> None:
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(2)
    with ow.Graph().as_default():
        y = ow.nn.xw_plus_b(x, w, b, name="dense")
        assert y.op.type == "BiasAdd"
        assert y.op.name == "dense"
        np.testing.assert_allclose(_run(y), x @ w + b)


# -- compositions --------------------------------------------------------------------------------


def test_weighted_cross_entropy_matches_tensorflows_formula() -> None:
    rng = np.random.default_rng(5)
    x, z = rng.standard_normal((3, 4)) * 10, rng.random((3, 4))
    w = 3.0
    want = (1 - z) * x + (1 + (w - 1) * z) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    with ow.Graph().as_default():
        got = _run(ow.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=w))
        old = _run(ow.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=w))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(old, want, rtol=1e-12)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_of_shards_reads_the_partitioned_rows(strategy: str) -> None:
    table = np.arange(7 * 2, dtype=np.float32).reshape(7, 2)
    if strategy == "mod":
        shards = [table[s::3] for s in range(3)]
    else:
        shards = [table[0:3], table[3:5], table[5:7]]
    ids = np.array([[6, 0], [3, 4]])
    with ow.Graph().as_default():
        params = [ow.constant(s) for s in shards]
        out = ow.nn.embedding_lookup(params, ids, partition_strategy=strategy)
        grads = ow.gradients(ow.reduce_sum(out), params)
        got, got_grads = _run([out, grads])
    np.testing.assert_array_equal(got, table[ids])
    counts = np.bincount(ids.reshape(-1), minlength=7)[:, None] * np.ones((1, 2))
    for shard, g in zip(shards, got_grads, strict=True):
        rows = [int(r[0]) // 2 for r in shard]
        np.testing.assert_array_equal(g, counts[rows])
    with pytest.raises(errors.InvalidArgumentError, match="7 is not in"):
        ow.kernels.embedding_lookup(shards, np.array([7]), partition_strategy=strategy)
    np.testing.assert_array_equal(ow.kernels.embedding_lookup(table, ids), table[ids])


def test_softsign_has_no_second_derivative_as_in_tensorflow() -> None:
    with ow.Graph().as_default():
        x = ow.constant([0.5])
        (g,) = ow.gradients(ow.nn.softsign(x), [x])
        with pytest.raises(LookupError, match="SoftsignGrad"):
            ow.gradients(g, [x])


def test_leaky_relu_casts_integers_to_float32() -> None:
    with ow.Graph().as_default():
        y = ow.nn.leaky_relu(ow.constant([-2, 3]), alpha=np.array(0.5))
        assert y.dtype == ow.float32
        np.testing.assert_array_equal(_run(y), [-1.0, 3.0])


@pytest.mark.parametrize("keep", [False, True])
def test_moments_are_tensorflows_mean_and_population_variance(keep: bool) -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 5))
    with ow.Graph().as_default():
        t = ow.constant(x)
        mean, variance = ow.nn.moments(t, axes=[0, 2], keep_dims=keep)
        assert mean.shape.as_list() == ([1, 4, 1] if keep else [4])
        (g,) = ow.gradients(ow.reduce_sum(variance), [t])
        got_mean, got_var, got_g = _run([mean, variance, g])
    np.testing.assert_allclose(got_mean, x.mean(axis=(0, 2), keepdims=keep), rtol=1e-12)
    np.testing.assert_allclose(got_var, x.var(axis=(0, 2), keepdims=keep), rtol=1e-12)
    # d/dx of mean((x - m)^2) = 2 (x - m) / n: the stop_gradient on the mean changes nothing.
    np.testing.assert_allclose(got_g, 2 * (x - x.mean(axis=(0, 2), keepdims=True)) / 15)
    half_mean, half_var = ow.kernels.moments(x.astype(np.float16), [0], keepdims=True)
    assert half_mean.dtype == np.float16
    np.testing.assert_allclose(
        half_var, x.astype(np.float16).astype(np.float32).var(0, keepdims=True), rtol=2e-3
    )


def test_l2_normalize_is_x_over_its_clipped_norm() -> None:
    x = np.random.default_rng(7).standard_normal((3, 4))
    np.testing.assert_allclose(
        ow.kernels.l2_normalize(x, dim=1), x / np.linalg.norm(x, axis=1, keepdims=True)
    )
    np.testing.assert_allclose(ow.kernels.l2_normalize(x), x / np.linalg.norm(x))
    tiny = np.array([1e-8, 0.0])
    np.testing.assert_allclose(ow.kernels.l2_normalize(tiny, 0, epsilon=1e-4), tiny / 1e-2)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        ow.kernels.l2_normalize(x, axis=0, dim=0)


def test_batch_normalization_is_tensorflows_formula() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    mean, var = x.mean(0), x.var(0)
    offset, scale = rng.standard_normal(3).astype(np.float32), rng.random(3).astype(np.float32)
    got = ow.kernels.batch_normalization(x, mean, var, offset, scale, 1e-3)
    np.testing.assert_allclose(got, scale * (x - mean) / np.sqrt(var + 1e-3) + offset, rtol=1e-5)
    bare = ow.kernels.batch_normalization(x, mean, var, None, None, 1e-3)
    np.testing.assert_allclose(bare, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-6)


# Composed functions (no op of their own, so no row): their gradients and (grad2) second
# derivatives against finite differences, through the row harness's checker. moments has no
# second derivative to check: as in TensorFlow, the variance's mean is behind stop_gradient, which
# keeps the first derivative exact but drops the mean's term from the second.
COMPOSED = [
    OpCase(
        "", lambda x: ow.nn.moments(x, [0]), lambda x: None, same_shape(), grad2=False, id="moments"
    ),
    OpCase(
        "",
        lambda x: ow.nn.l2_normalize(x, 1),
        lambda x: None,
        same_shape(),
        grad2=True,
        id="l2_normalize",
    ),
    OpCase(
        "",
        lambda x, m, v, o, s: ow.nn.batch_normalization(x, m, v, o, s, 1e-3),
        lambda *a: None,
        same_shape(),
        grad2=True,
        id="batch_normalization",
    ),
    OpCase("", ow.nn.log_sigmoid, lambda x: None, same_shape(), grad2=True, id="log_sigmoid"),
    OpCase(
        "",
        lambda z, x, w: ow.nn.weighted_cross_entropy_with_logits(z, x, w),
        lambda *a: None,
        same_shape(),
        grad2=True,
        id="weighted_cross_entropy_with_logits",
    ),
    OpCase("", ow.nn.xw_plus_b, lambda *a: None, same_shape(), grad2=True, id="xw_plus_b"),
]
COMPOSED_INPUTS = {
    "moments": [np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])],
    "l2_normalize": [np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])],
    "batch_normalization": [
        np.array([[0.5, -1.0], [1.5, 0.3]]),
        np.array([0.2, -0.1]),
        np.array([0.7, 1.3]),
        np.array([0.1, 0.4]),
        np.array([1.2, 0.8]),
    ],
    "log_sigmoid": [np.array([-3.0, 0.2, 4.0])],
    "weighted_cross_entropy_with_logits": [
        np.array([0.1, 0.9, 0.5]),
        np.array([-2.0, 0.5, 3.0]),
        np.array([1.5, 2.0, 0.5]),
    ],
    "xw_plus_b": [
        np.array([[0.5, -1.0]]),
        np.array([[1.0, 2.0], [0.3, -0.4]]),
        np.array([0.1, 0.2]),
    ],
}


@pytest.mark.parametrize("case", COMPOSED, ids=repr)
def test_composed_functions_differentiate_twice(case: OpCase) -> None:
    from op_testing import numeric_jacobian_check

    arrays = COMPOSED_INPUTS[case.id]
    numeric_jacobian_check(case, arrays, {})
    if case.grad2:
        numeric_jacobian_check(case, arrays, {}, order=2)
