"""opweave.losses (TensorFlow 1's tf.losses): values against NumPy always, against
tf.compat.v1.losses when TensorFlow is installed; weights as scalars and per-example tensors,
every reduction, the collections and get_total_loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import opweave.compat.v1 as owv1
import pytest

RNG = np.random.default_rng(5)
B, C = 6, 4
LOGITS = (RNG.standard_normal((B, C)) * 2).astype(np.float32)
CLASSES = RNG.integers(0, C, B).astype(np.int32)
ONEHOT = np.eye(C, dtype=np.float32)[CLASSES]
MULTI = (RNG.uniform(size=(B, C)) > 0.5).astype(np.float32)
PRED = RNG.standard_normal((B, C)).astype(np.float32) * 2
LAB = RNG.standard_normal((B, C)).astype(np.float32)
W_EXAMPLE = np.array([1.0, 0.0, 2.0, 0.5, 0.0, 3.0], np.float32)
W_EXAMPLE_COL = W_EXAMPLE[:, None]
W_FULL = RNG.uniform(size=(B, C)).astype(np.float32) * (RNG.uniform(size=(B, C)) > 0.3)

R = ow.losses.Reduction
REDUCTIONS = [R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE, R.SUM_BY_NONZERO_WEIGHTS]


def _run(build: Callable[[], Any]) -> Any:
    with ow.Graph().as_default():
        out = build()
        with ow.Session() as s:
            return s.run(out)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    m = x64.max(-1, keepdims=True)
    return x64 - m - np.log(np.exp(x64 - m).sum(-1, keepdims=True))


def _reduce(losses: np.ndarray, weights: Any, reduction: str) -> np.ndarray:
    w = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * w
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    denom = {
        R.SUM: 1.0,
        R.MEAN: w.sum(),
        R.SUM_OVER_BATCH_SIZE: float(losses.size),
        R.SUM_BY_NONZERO_WEIGHTS: float(np.count_nonzero(w)),
    }[reduction]
    return np.asarray(0.0 if denom == 0 else total / denom)


# -- NumPy references (always run) ---------------------------------------------------------------


def test_reduction_constants_are_tensorflow_1s() -> None:
    assert R.NONE == "none"
    assert R.SUM == "weighted_sum"
    assert R.MEAN == "weighted_mean"
    assert R.SUM_OVER_BATCH_SIZE == "weighted_sum_over_batch_size"
    assert R.SUM_BY_NONZERO_WEIGHTS == R.SUM_OVER_NONZERO_WEIGHTS
    assert R.SUM_BY_NONZERO_WEIGHTS == "weighted_sum_by_nonzero_weights"
    assert owv1.losses is ow.losses
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        _run(lambda: ow.losses.mean_squared_error(LAB, PRED, reduction="mean"))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", [1.0, 0.5, W_EXAMPLE], ids=["1", "half", "per_example"])
def test_softmax_cross_entropy_matches_numpy(reduction: str, weights: Any) -> None:
    got = _run(
        lambda: ow.losses.softmax_cross_entropy(ONEHOT, LOGITS, weights, reduction=reduction)
    )
    per_example = -(ONEHOT * _log_softmax(LOGITS)).sum(-1)
    np.testing.assert_allclose(got, _reduce(per_example, weights, reduction), rtol=2e-5, atol=1e-6)


def test_softmax_cross_entropy_label_smoothing_and_per_example_weights() -> None:
    got = _run(
        lambda: ow.losses.softmax_cross_entropy(ONEHOT, LOGITS, W_EXAMPLE, label_smoothing=0.1)
    )
    smooth = ONEHOT * 0.9 + 0.1 / C
    want = _reduce(-(smooth * _log_softmax(LOGITS)).sum(-1), W_EXAMPLE, R.SUM_BY_NONZERO_WEIGHTS)
    np.testing.assert_allclose(got, want, rtol=2e-5)


@pytest.mark.parametrize("labels", [CLASSES, CLASSES[:, None]], ids=["vector", "column"])
@pytest.mark.parametrize("weights", [1.0, W_EXAMPLE, W_EXAMPLE_COL], ids=["1", "vector", "column"])
def test_sparse_softmax_cross_entropy_squeezes_columns(labels: Any, weights: Any) -> None:
    got = _run(lambda: ow.losses.sparse_softmax_cross_entropy(labels, LOGITS, weights))
    per_example = -_log_softmax(LOGITS)[np.arange(B), CLASSES]
    want = _reduce(
        per_example,
        np.reshape(weights, -1) if np.ndim(weights) else weights,
        R.SUM_BY_NONZERO_WEIGHTS,
    )
    np.testing.assert_allclose(got, want, rtol=2e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_sigmoid_cross_entropy_matches_numpy(smoothing: float) -> None:
    got = _run(
        lambda: ow.losses.sigmoid_cross_entropy(MULTI, LOGITS, W_FULL, label_smoothing=smoothing)
    )
    z = MULTI * (1 - smoothing) + 0.5 * smoothing
    x = LOGITS.astype(np.float64)
    per = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(got, _reduce(per, W_FULL, R.SUM_BY_NONZERO_WEIGHTS), rtol=2e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_numpy(reduction: str) -> None:
    e = PRED.astype(np.float64) - LAB
    a = np.abs(e)
    q = np.minimum(a, 1.5)
    cases = {
        "mse": (
            lambda: ow.losses.mean_squared_error(LAB, PRED, W_EXAMPLE_COL, reduction=reduction),
            e * e,
        ),
        "abs": (
            lambda: ow.losses.absolute_difference(LAB, PRED, W_EXAMPLE_COL, reduction=reduction),
            a,
        ),
        "huber": (
            lambda: ow.losses.huber_loss(LAB, PRED, W_EXAMPLE_COL, delta=1.5, reduction=reduction),
            0.5 * q * q + 1.5 * (a - q),
        ),
    }
    for build, per in cases.values():
        np.testing.assert_allclose(
            _run(build), _reduce(per, W_EXAMPLE_COL, reduction), rtol=2e-5, atol=1e-6
        )


def test_all_zero_weights_give_zero_not_nan() -> None:
    for reduction in (R.MEAN, R.SUM_BY_NONZERO_WEIGHTS):
        got = _run(lambda r=reduction: ow.losses.mean_squared_error(LAB, PRED, 0.0, reduction=r))
        assert got == 0.0


def test_float64_losses_are_computed_in_float32_and_cast_back() -> None:
    with ow.Graph().as_default():
        loss = ow.losses.mean_squared_error(LAB.astype(np.float64), PRED.astype(np.float64))
        assert loss.dtype == ow.float32  # TF1 casts the regression inputs to float32
        xent = ow.losses.softmax_cross_entropy(ONEHOT.astype(np.float64), LOGITS.astype(np.float64))
        assert xent.dtype == ow.float64


def test_collections_and_total_loss() -> None:
    with ow.Graph().as_default():
        a = ow.losses.mean_squared_error(LAB, PRED)
        b = ow.losses.absolute_difference(LAB, PRED, scope="second")
        c = ow.losses.huber_loss(LAB, PRED, loss_collection=None)
        assert ow.losses.get_losses() == [a, b]
        assert ow.losses.get_losses(scope="second") == [b]
        reg = ow.multiply(2.0, ow.constant(3.0))
        ow.add_to_collection(ow.GraphKeys.REGULARIZATION_LOSSES, reg)
        assert ow.losses.get_regularization_losses() == [reg]
        total = ow.losses.get_total_loss()
        bare = ow.losses.get_total_loss(add_regularization_losses=False, name="bare")
        assert total.op.name == "total_loss"
        with ow.Session() as s:
            va, vb, vc, vt, vbare = s.run([a, b, c, total, bare])
        np.testing.assert_allclose(vt, va + vb + 6.0, rtol=1e-6)
        np.testing.assert_allclose(vbare, va + vb, rtol=1e-6)
        assert vc > 0
    with ow.Graph().as_default(), pytest.raises(ValueError, match="No losses"):
        ow.losses.get_total_loss()


def test_none_arguments_are_value_errors() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="onehot_labels"):
            ow.losses.softmax_cross_entropy(None, LOGITS)
        with pytest.raises(ValueError, match="predictions"):
            ow.losses.mean_squared_error(LAB, None)
        with pytest.raises(ValueError, match="incompatible"):
            ow.losses.mean_squared_error(LAB, PRED[:, :2])
        # TensorFlow's broadcast rule for weights: a scalar, or the losses' rank with 1s.
        for bad in (W_EXAMPLE, np.ones(C, np.float32), np.ones((B, 2), np.float32)):
            with pytest.raises(ValueError, match="weights can not be broadcast"):
                ow.losses.mean_squared_error(LAB, PRED, bad)


def test_gradient_flows_to_logits_not_labels() -> None:
    with ow.Graph().as_default():
        logits = ow.constant(LOGITS)
        labels = ow.constant(ONEHOT)
        loss = ow.losses.softmax_cross_entropy(labels, logits, W_EXAMPLE)
        g_logits, g_labels = ow.gradients(loss, [logits, labels])
        assert g_labels is None
        with ow.Session() as s:
            got = s.run(g_logits)
    p = np.exp(_log_softmax(LOGITS))
    want = (p - ONEHOT) * W_EXAMPLE[:, None] / np.count_nonzero(W_EXAMPLE)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- tf.compat.v1.losses (when TensorFlow is installed) -----------------------------------------


@pytest.fixture(scope="module")
def v1() -> Any:
    tf = pytest.importorskip("tensorflow")
    return tf.compat.v1


def _tf_run(v1: Any, build: Callable[[], Any]) -> Any:
    with v1.Graph().as_default():
        out = build()
        with v1.Session() as s:
            return s.run(out)


TF_CASES: dict[str, tuple[str, tuple[np.ndarray, ...], dict[str, Any]]] = {
    "softmax": ("softmax_cross_entropy", (ONEHOT, LOGITS), {"label_smoothing": 0.1}),
    "sparse": ("sparse_softmax_cross_entropy", (CLASSES, LOGITS), {}),
    "sparse_col": ("sparse_softmax_cross_entropy", (CLASSES[:, None], LOGITS), {}),
    "sigmoid": ("sigmoid_cross_entropy", (MULTI, LOGITS), {"label_smoothing": 0.2}),
    "mse": ("mean_squared_error", (LAB, PRED), {}),
    "abs": ("absolute_difference", (LAB, PRED), {}),
    "huber": ("huber_loss", (LAB, PRED), {"delta": 0.7}),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", sorted(TF_CASES))
def test_losses_match_tensorflow(v1: Any, case: str, reduction: str) -> None:
    fn, args, kwargs = TF_CASES[case]
    weights: list[Any] = [1.0, 0.0]
    if case.startswith(("softmax", "sparse")):
        weights.append(W_EXAMPLE)
    if case != "softmax":
        weights.append(W_EXAMPLE_COL)
    if case in ("sigmoid", "mse", "abs", "huber"):
        weights.append(W_FULL)
    for w in weights:
        kw = dict(kwargs, weights=w, reduction=reduction)
        got = _run(lambda kw=kw: getattr(ow.losses, fn)(*args, **kw))
        want = _tf_run(v1, lambda kw=kw: getattr(v1.losses, fn)(*args, **kw))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{fn} weights={w!r}")


def test_collections_match_tensorflow(v1: Any) -> None:
    def build(m: Any) -> list[str]:
        m.losses.mean_squared_error(LAB, PRED)
        m.losses.softmax_cross_entropy(ONEHOT, LOGITS)
        return [t.name for t in m.losses.get_losses()]

    with v1.Graph().as_default():
        want = build(v1)
    with ow.Graph().as_default():
        got = build(ow)
    assert len(got) == len(want) == 2
    assert [n.split("/")[0] for n in got] == [n.split("/")[0] for n in want]


def test_unbroadcastable_weights_fail_as_in_tensorflow(v1: Any) -> None:
    for bad in (W_EXAMPLE, np.ones(C, np.float32)):
        with v1.Graph().as_default(), pytest.raises(ValueError, match="can not be broadcast"):
            v1.losses.mean_squared_error(LAB, PRED, bad)
        with ow.Graph().as_default(), pytest.raises(ValueError, match="can not be broadcast"):
            ow.losses.mean_squared_error(LAB, PRED, bad)
