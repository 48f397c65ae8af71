"""The math, comparison and logic ops against TensorFlow 1 itself (``tf.compat.v1``), values and
gradients, on inputs chosen for their edges. Skipped when TensorFlow is not installed; all cases
are built into one TensorFlow graph and run in one call, since importing TensorFlow is the cost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import pytest

tf = pytest.importorskip("tensorflow").compat.v1

nan, inf = np.nan, np.inf
RNG = np.random.default_rng(11)
F32 = np.float32

SPECIALS = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 3.7, -inf, inf, nan], F32)
POSITIVE = RNG.uniform(0.1, 10.0, 50).astype(F32)
MIXED = RNG.uniform(-10.0, 10.0, 50).astype(F32)
X = np.array([-7.0, 7.0, -7.0, 7.0, -0.0, 4.0, 1.0, -1.0, 5.5, -5.5, 1e10], F32)
Y = np.array([2.0, -2.0, -2.0, 2.0, 3.0, -2.0, inf, inf, 0.75, 0.75, 3.0], F32)
IX = np.array([-7, 7, -7, 7, 0, 4, -128, 127, 5], np.int32)
IY = np.array([2, -2, -2, 2, 3, -2, 3, -5, 1], np.int32)
BASES = np.array([-2.0, -2.0, -8.0, 0.0, -0.0, 2.0, 1.0, -1.0, 0.5], F32)
EXPONENTS = np.array([3.0, 2.0, 1 / 3, -1.0, -1.0, 0.5, nan, inf, -inf], F32)
ROWS = np.array([[-inf, -inf, -inf], [1.0, 2.0, 3.0], [inf, 1.0, 0.0], [nan, 1.0, 2.0]], F32)
ARGS = np.array([[3.0, 1.0, 3.0], [1.0, nan, 3.0], [nan, nan, nan], [-inf, -inf, 2.0]], F32)
BOOLS = np.array([[True, False, True], [False, False, False]])
SCAN = RNG.uniform(0.5, 1.5, (3, 5)).astype(F32)
SMALL = np.array([100, 100, 100, -7], np.int8)

# (name, function of a module -- tf or ow -- returning a tensor)
Case = tuple[str, Callable[[Any], Any]]

VALUE_CASES: list[Case] = [
    *[
        (f"{name}(specials)", lambda m, name=name: getattr(m, name)(SPECIALS))
        for name in ("abs", "sign", "square", "floor", "ceil", "round", "is_nan", "is_inf")
    ],
    ("is_finite", lambda m: m.is_finite(SPECIALS)),
    *[
        (f"{name}(positive)", lambda m, name=name: getattr(m, name)(POSITIVE))
        for name in ("sqrt", "rsqrt", "log", "log1p", "reciprocal")
    ],
    *[
        (f"{name}(mixed)", lambda m, name=name: getattr(m, name)(MIXED))
        for name in ("expm1", "sin", "cos", "exp", "abs", "sign", "round")
    ],
    ("floormod float", lambda m: m.floormod(X, Y)),
    ("mod int", lambda m: m.mod(IX, IY)),
    ("floormod int8", lambda m: m.floormod(IX.astype(np.int8), IY.astype(np.int8))),
    ("pow specials", lambda m: m.pow(BASES, EXPONENTS)),
    ("pow int", lambda m: m.pow(IX, np.abs(IY))),
    ("squared_difference", lambda m: m.squared_difference(MIXED, POSITIVE)),
    ("not_equal", lambda m: m.not_equal(SPECIALS, SPECIALS[::-1].copy())),
    ("less", lambda m: m.less(SPECIALS, 0.5)),
    ("greater", lambda m: m.greater(IX, IY)),
    ("logical_and", lambda m: m.logical_and(BOOLS, [True, True, False])),
    ("logical_or", lambda m: m.logical_or(BOOLS, [False, True, False])),
    ("logical_xor", lambda m: m.logical_xor(BOOLS, [True, True, False])),
    ("logical_not", lambda m: m.logical_not(BOOLS)),
    ("clip_by_value", lambda m: m.clip_by_value(SPECIALS, -1.0, 2.0)),
    ("clip_by_value rows", lambda m: m.clip_by_value(SCAN, [[0.7], [0.8], [0.9]], 1.2)),
    ("where 1 arg", lambda m: m.where(BOOLS)),
    ("where 1 arg float", lambda m: m.where(SPECIALS)),
    ("where rows", lambda m: m.where([True, False, True], SCAN, -SCAN)),
    ("where same shape", lambda m: m.where(BOOLS, BOOLS, ~BOOLS)),
    ("where_v2", lambda m: m.where_v2([[True], [False]], [1.0, 2.0], 0.0)),
    ("reduce_prod", lambda m: m.reduce_prod(SCAN, axis=1)),
    ("reduce_prod int8", lambda m: m.reduce_prod(SMALL)),
    ("reduce_sum int8", lambda m: m.reduce_sum(SMALL)),
    ("reduce_mean int8", lambda m: m.reduce_mean(SMALL[:3])),
    ("reduce_any", lambda m: m.reduce_any(BOOLS, axis=1)),
    ("reduce_all", lambda m: m.reduce_all(BOOLS, axis=0, keepdims=True)),
    ("reduce_logsumexp", lambda m: m.reduce_logsumexp(ROWS, axis=1)),
    ("reduce_logsumexp all", lambda m: m.reduce_logsumexp(SCAN)),
    ("argmax", lambda m: m.argmax(ARGS, axis=1)),
    ("argmin", lambda m: m.argmin(ARGS, axis=1)),
    ("argmax default", lambda m: m.argmax(SCAN)),
    ("arg_max int32", lambda m: m.arg_max(SCAN, 1, output_type=m.int32)),
    ("argmin bool", lambda m: m.argmin(BOOLS, 1)),
    *[
        (
            f"{name} e={e} r={r}",
            lambda m, name=name, e=e, r=r: getattr(m, name)(SCAN, 1, exclusive=e, reverse=r),
        )
        for name in ("cumsum", "cumprod")
        for e in (False, True)
        for r in (False, True)
    ],
    ("cumsum int8", lambda m: m.cumsum(SMALL)),
    ("matmul adjoint", lambda m: m.matmul(SCAN[None], SCAN[None], adjoint_b=True)),
]

GRAD_X = np.array([[0.5, -1.5, 2.0], [3.0, 0.0, -0.25]], np.float64)
GRAD_POS = np.array([[0.5, 1.5, 2.0], [3.0, 0.25, 4.0]], np.float64)

# (name, f(module, x) for x a float64 tensor; d sum(f) / dx is compared)
GRAD_CASES: list[tuple[str, np.ndarray, Callable[[Any, Any], Any]]] = [
    ("abs", GRAD_X, lambda m, x: m.abs(x)),
    ("sqrt", GRAD_POS, lambda m, x: m.sqrt(x)),
    ("rsqrt", GRAD_POS, lambda m, x: m.rsqrt(x)),
    ("log1p", GRAD_POS, lambda m, x: m.log1p(x)),
    ("reciprocal", GRAD_POS, lambda m, x: m.reciprocal(x)),
    ("sin*cos", GRAD_X, lambda m, x: m.sin(x) * m.cos(x)),
    ("pow base", GRAD_X, lambda m, x: m.pow(x, 3.0)),
    ("pow exponent", GRAD_X, lambda m, x: m.pow(GRAD_X * 0 - 2.0, x)),
    ("pow both", GRAD_POS, lambda m, x: m.pow(x, x)),
    ("floormod", GRAD_X, lambda m, x: m.floormod(x * 3.0, x + 5.0)),
    ("squared_difference", GRAD_X, lambda m, x: m.squared_difference(x, x * x)),
    ("clip at the bounds", GRAD_X, lambda m, x: m.clip_by_value(x, -0.25, 2.0)),
    ("where", GRAD_X, lambda m, x: m.where([True, False], x, x * x)),
    ("reduce_prod zeros", GRAD_X, lambda m, x: m.reduce_prod(x, axis=1)),
    ("reduce_prod all", GRAD_POS, lambda m, x: m.reduce_prod(x)),
    ("reduce_logsumexp", GRAD_X, lambda m, x: m.reduce_logsumexp(x, axis=0)),
    ("cumsum", GRAD_X, lambda m, x: m.cumsum(x, 1, exclusive=True) * x),
    ("cumprod", GRAD_POS, lambda m, x: m.cumprod(x, 1, reverse=True)),
]


def _run_tf(cases: list[Case], grad_cases: list[Any]) -> tuple[list[Any], list[Any]]:
    with tf.Graph().as_default():
        values = [fn(tf) for _, fn in cases]
        grads = []
        for _, x0, fn in grad_cases:
            x = tf.constant(x0)
            grads.append(tf.gradients(tf.reduce_sum(fn(tf, x)), x)[0])
        with tf.Session() as sess:
            return sess.run(values), sess.run(grads)


def _run_ow(cases: list[Case], grad_cases: list[Any]) -> tuple[list[Any], list[Any]]:
    with ow.Graph().as_default():
        values = [fn(ow) for _, fn in cases]
        grads = []
        for _, x0, fn in grad_cases:
            x = ow.constant(x0)
            grads.append(ow.gradients(ow.reduce_sum(fn(ow, x)), x)[0])
        with ow.Session() as sess:
            return sess.run(values), sess.run(grads)


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    tf_values, tf_grads = _run_tf(VALUE_CASES, GRAD_CASES)
    ow_values, ow_grads = _run_ow(VALUE_CASES, GRAD_CASES)
    return {"tf": (tf_values, tf_grads), "ow": (ow_values, ow_grads)}


def _assert_same(got: Any, want: Any, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("index", range(len(VALUE_CASES)), ids=[c[0] for c in VALUE_CASES])
def test_value_matches_tensorflow(results: dict[str, Any], index: int) -> None:
    _assert_same(results["ow"][0][index], results["tf"][0][index], VALUE_CASES[index][0])


@pytest.mark.parametrize("index", range(len(GRAD_CASES)), ids=[c[0] for c in GRAD_CASES])
def test_gradient_matches_tensorflow(results: dict[str, Any], index: int) -> None:
    _assert_same(results["ow"][1][index], results["tf"][1][index], GRAD_CASES[index][0])


def test_every_name_of_opweave_math_is_in_tensorflow_math() -> None:
    missing = [n for n in ow.math.__all__ if not hasattr(tf.math, n)]
    assert not missing


def test_integer_errors_match_tensorflow() -> None:
    for fn, args, message in [
        ("floormod", ([1, 2], [0, 1]), "Integer division by zero"),
        ("pow", ([2, 3], [-1, 2]), "Integers to negative integer powers are not allowed"),
    ]:
        with tf.Graph().as_default(), tf.Session() as s:
            op = getattr(tf, fn)(*args)
            with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                s.run(op)
        with ow.Graph().as_default(), ow.Session() as s:
            op = getattr(ow, fn)(*args)
            with pytest.raises(ow.errors.InvalidArgumentError, match=message):
                s.run(op)
