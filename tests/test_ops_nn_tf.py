"""opweave.nn against TensorFlow's own tf.compat.v1.nn on the same inputs: values, the gradients
TensorFlow defines, and its semantics where a NumPy reference would be our guess (top_k's order,
in_top_k's ties, NCHW, the activations' constants). Skipped where TensorFlow is not installed;
importing it takes seconds, so every comparison lives in this one module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import pytest

tf = pytest.importorskip("tensorflow")
v1 = tf.compat.v1

RNG = np.random.default_rng(11)
X = (RNG.standard_normal((4, 6)) * 3).astype(np.float32)
X4 = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
P = RNG.uniform(0.1, 1.0, (4, 6)).astype(np.float32)
Z = P / P.sum(-1, keepdims=True)
LABELS = np.array([0, 5, 2, 3], np.int32)
B3 = RNG.standard_normal(3).astype(np.float32)
B5 = RNG.standard_normal(5).astype(np.float32)


def _ours(fn: Callable[[Any], Any], *arrays: np.ndarray) -> list[np.ndarray]:
    with ow.Graph().as_default():
        out = fn(*[ow.constant(a) for a in arrays])
        with ow.Session() as s:
            got = s.run(out)
    return list(got) if isinstance(got, (list, tuple)) else [got]


def _theirs(fn: Callable[[Any], Any], *arrays: np.ndarray) -> list[np.ndarray]:
    got = fn(*[tf.constant(a) for a in arrays])
    return [np.asarray(g) for g in (got if isinstance(got, (list, tuple)) else [got])]


# (name, opweave function, TensorFlow function, inputs): the same call on both sides.
VALUE_CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("relu6", ow.nn.relu6, v1.nn.relu6, (X,)),
    ("elu", ow.nn.elu, v1.nn.elu, (X,)),
    ("selu", ow.nn.selu, v1.nn.selu, (X,)),
    ("leaky_relu", lambda x: ow.nn.leaky_relu(x, 0.3), lambda x: v1.nn.leaky_relu(x, 0.3), (X,)),
    ("softplus", ow.nn.softplus, v1.nn.softplus, (X * 10,)),
    ("softsign", ow.nn.softsign, v1.nn.softsign, (X,)),
    ("log_sigmoid", ow.nn.log_sigmoid, v1.math.log_sigmoid, (X * 10,)),
    ("softmax", ow.nn.softmax, v1.nn.softmax, (X,)),
    ("softmax dim=0", lambda x: ow.nn.softmax(x, dim=0), lambda x: v1.nn.softmax(x, dim=0), (X,)),
    ("log_softmax", ow.nn.log_softmax, v1.nn.log_softmax, (X,)),
    (
        "log_softmax axis=1 rank 4",
        lambda x: ow.nn.log_softmax(x, axis=1),
        lambda x: v1.nn.log_softmax(x, axis=1),
        (X4,),
    ),
    (
        "xent",
        lambda z, x: ow.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
        lambda z, x: v1.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
        (Z, X),
    ),
    (
        "xent_v2 dim=0",
        lambda z, x: ow.nn.softmax_cross_entropy_with_logits_v2(z, x, dim=0),
        lambda z, x: v1.nn.softmax_cross_entropy_with_logits_v2(z, x, dim=0),
        (Z, X),
    ),
    (
        "sparse xent",
        lambda y, x: ow.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
        lambda y, x: v1.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
        (LABELS, X),
    ),
    (
        "sigmoid xent",
        lambda z, x: ow.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        lambda z, x: v1.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        (Z, X * 10),
    ),
    (
        "weighted xent",
        lambda z, x: ow.nn.weighted_cross_entropy_with_logits(z, x, 2.5),
        lambda z, x: v1.nn.weighted_cross_entropy_with_logits(z, x, 2.5),
        (Z, X),
    ),
    ("l2_loss", ow.nn.l2_loss, v1.nn.l2_loss, (X,)),
    ("bias_add", ow.nn.bias_add, v1.nn.bias_add, (X4, B5)),
    (
        "bias_add NCHW",
        lambda x, b: ow.nn.bias_add(x, b, data_format="NCHW"),
        lambda x, b: v1.nn.bias_add(x, b, data_format="NCHW"),
        (X4, B3),
    ),
    ("moments", lambda x: ow.nn.moments(x, [0, 2]), lambda x: v1.nn.moments(x, [0, 2]), (X4,)),
    (
        "l2_normalize dim=1",
        lambda x: ow.nn.l2_normalize(x, dim=1),
        lambda x: v1.nn.l2_normalize(x, dim=1),
        (X,),
    ),
    (
        "batch_normalization",
        lambda x, b: ow.nn.batch_normalization(x, 0.5, 2.0, b, None, 1e-3),
        lambda x, b: v1.nn.batch_normalization(x, 0.5, 2.0, b, None, 1e-3),
        (X4, B5),
    ),
    (
        "top_k ties",
        lambda x: ow.nn.top_k(x, 4),
        lambda x: v1.nn.top_k(x, 4),
        (np.round(X).astype(np.float32),),
    ),
    (
        "in_top_k ties",
        lambda x, y: ow.nn.in_top_k(x, y, 2),
        lambda x, y: v1.nn.in_top_k(x, y, 2),
        (np.round(X).astype(np.float32), LABELS),
    ),
]


@pytest.mark.parametrize("case", VALUE_CASES, ids=lambda c: c[0])
def test_values_match_tensorflow(case: Any) -> None:
    _, ours, theirs, arrays = case
    got, want = _ours(ours, *arrays), _theirs(theirs, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


# Gradients of sum(w * f(x)) with respect to every float input, both sides.
GRAD_CASES: list[tuple[str, Callable[..., Any], Callable[..., Any], tuple[np.ndarray, ...]]] = [
    ("elu", ow.nn.elu, v1.nn.elu, (X,)),
    ("selu", ow.nn.selu, v1.nn.selu, (X,)),
    ("softplus", ow.nn.softplus, v1.nn.softplus, (X,)),
    ("softmax", ow.nn.softmax, v1.nn.softmax, (X,)),
    ("log_softmax", ow.nn.log_softmax, v1.nn.log_softmax, (X,)),
    (
        "xent v1 (labels get none)",
        lambda z, x: ow.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
        lambda z, x: v1.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
        (Z, X),
    ),
    (
        "xent v2",
        lambda z, x: ow.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
        lambda z, x: v1.nn.softmax_cross_entropy_with_logits_v2(labels=z, logits=x),
        (Z, X),
    ),
    (
        "sigmoid xent",
        lambda z, x: ow.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        lambda z, x: v1.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        (Z, X),
    ),
    (
        "bias_add NCHW",
        lambda x, b: ow.nn.bias_add(x, b, "NCHW"),
        lambda x, b: v1.nn.bias_add(x, b, "NCHW"),
        (X4, B3),
    ),
    ("top_k", lambda x: ow.nn.top_k(x, 3)[0], lambda x: v1.nn.top_k(x, 3)[0], (X,)),
    ("l2_normalize", lambda x: ow.nn.l2_normalize(x, 0), lambda x: v1.nn.l2_normalize(x, 0), (X,)),
    (
        "moments variance",
        lambda x: ow.nn.moments(x, [0, 1])[1],
        lambda x: v1.nn.moments(x, [0, 1])[1],
        (X4,),
    ),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c[0])
def test_gradients_match_tensorflow(case: Any) -> None:
    _, ours, theirs, arrays = case
    with ow.Graph().as_default():
        inputs = [ow.constant(a) for a in arrays]
        out = ours(*inputs)
        w = np.random.default_rng(1).standard_normal(out.shape.as_list()).astype(np.float32)
        grads = ow.gradients(ow.reduce_sum(out * w), inputs)
        with ow.Session() as s:
            got = [None if g is None else s.run(g) for g in grads]
    tf_inputs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        for t in tf_inputs:
            tape.watch(t)
        loss = tf.reduce_sum(theirs(*tf_inputs) * w)
    want = tape.gradient(loss, tf_inputs)
    for g, t in zip(got, want, strict=True):
        assert (g is None) == (t is None)
        if g is not None:
            np.testing.assert_allclose(g, np.asarray(t), rtol=1e-5, atol=1e-5)
