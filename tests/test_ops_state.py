"""The variable ops and the optimizers' fused updates against NumPy: one row per op
(op_testing.py), each building variables from the drawn inputs, running the op after their
initializers and fetching the variables afterwards; and the updates' bits on 1 and 3 threads.

These ops keep state in a session, so they have no eager form and no gradient to check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import given
from hypothesis import strategies as st
from op_testing import FLOATS, REALS, SETTINGS, OpCase, check_case, same_shape

# -- helpers building a variable from an input, then the op after its initializer ----------------


def _vars(*initial: Any) -> list[ow.Variable]:
    return [ow.Variable(x) for x in initial]


def _after_init(variables: Sequence[ow.Variable]) -> Any:
    return ow.control_dependencies([v.initializer for v in variables])


def variable_read(x: Any) -> Any:
    (v,) = _vars(x)
    with _after_init([v]):
        return v.read_value()


def assign_row(x: Any, value: Any, validate_shape: bool = True, use_locking: bool = True) -> Any:
    (v,) = _vars(x)
    with _after_init([v]):
        return ow.assign(v, value, validate_shape=validate_shape, use_locking=use_locking)


def assign_add_row(x: Any, value: Any, use_locking: bool = False) -> Any:
    (v,) = _vars(x)
    with _after_init([v]):
        return ow.assign_add(v, value, use_locking=use_locking)


def assign_sub_row(x: Any, value: Any, use_locking: bool = False) -> Any:
    (v,) = _vars(x)
    with _after_init([v]):
        return ow.assign_sub(v, value, use_locking=use_locking)


def _scatter_row(fn: Callable[..., Any]) -> Callable[..., Any]:
    def row(x: Any, indices: Any, updates: Any, use_locking: bool = False) -> Any:
        (v,) = _vars(x)
        with _after_init([v]):
            return fn(v, indices, updates, use_locking=use_locking)

    row.__name__ = f"{fn.__name__}_row"
    return row


def is_initialized_row(x: Any) -> Any:
    a, b = _vars(x, x)
    with _after_init([a]):
        return [ow.is_variable_initialized(a), ow.is_variable_initialized(b)]


def _apply_row(fn: Callable[..., Any], n_slots: int) -> Callable[..., Any]:
    """A row running ``fn(var, *slots, *hyper, grad)`` once, fetching var (the op's output) and
    the slots, read after it."""

    def row(*tensors: Any, **hyper: Any) -> Any:
        var_and_slots = _vars(*tensors[: 1 + n_slots])
        grad = tensors[1 + n_slots]
        with _after_init(var_and_slots):
            out = fn(*var_and_slots, grad=grad, **hyper)
        with ow.control_dependencies([out]):
            return [out, *[s.read_value() for s in var_and_slots[1:]]]

    row.__name__ = f"{fn.__name__}_row"
    return row


training = ow.ops.training_ops


def gd(var: Any, grad: Any, alpha: float) -> Any:
    return training.apply_gradient_descent(var, alpha, grad)


def momentum(var: Any, accum: Any, grad: Any, lr: float, momentum: float, nesterov: bool) -> Any:
    return training.apply_momentum(var, accum, lr, grad, momentum, use_nesterov=nesterov)


def adam(var: Any, m: Any, v: Any, grad: Any, **h: Any) -> Any:
    return training.apply_adam(
        var,
        m,
        v,
        h["b1p"],
        h["b2p"],
        h["lr"],
        h["b1"],
        h["b2"],
        h["eps"],
        grad,
        use_nesterov=h["nesterov"],
    )


def rmsprop(var: Any, ms: Any, mom: Any, grad: Any, **h: Any) -> Any:
    return training.apply_rms_prop(var, ms, mom, h["lr"], h["rho"], h["momentum"], h["eps"], grad)


def centered(var: Any, mg: Any, ms: Any, mom: Any, grad: Any, **h: Any) -> Any:
    return training.apply_centered_rms_prop(
        var, mg, ms, mom, h["lr"], h["rho"], h["momentum"], h["eps"], grad
    )


def adagrad(var: Any, accum: Any, grad: Any, lr: float) -> Any:
    return training.apply_adagrad(var, accum, lr, grad)


# -- NumPy references: TensorFlow 1's update formulas, in the variable's dtype -------------------


def ref_gd(var: np.ndarray, grad: np.ndarray, alpha: float) -> list[np.ndarray]:
    t = var.dtype.type
    return [var - grad * t(alpha)]


def ref_momentum(
    var: np.ndarray,
    accum: np.ndarray,
    grad: np.ndarray,
    lr: float,
    momentum: float,
    nesterov: bool,
) -> list[np.ndarray]:
    t = var.dtype.type
    a = accum * t(momentum) + grad
    if nesterov:
        return [var - (grad * t(lr) + a * t(momentum) * t(lr)), a]
    return [var - a * t(lr), a]


def ref_adam(
    var: np.ndarray, m: np.ndarray, v: np.ndarray, grad: np.ndarray, **h: Any
) -> list[np.ndarray]:
    t = var.dtype.type
    alpha = t(h["lr"]) * np.sqrt(t(1) - t(h["b2p"])) / (t(1) - t(h["b1p"]))
    m2 = m + (grad - m) * (t(1) - t(h["b1"]))
    v2 = v + (grad * grad - v) * (t(1) - t(h["b2"]))
    if h["nesterov"]:
        step = ((grad * (t(1) - t(h["b1"])) + t(h["b1"]) * m2) * alpha) / (
            np.sqrt(v2) + t(h["eps"])
        )
    else:
        step = (m2 * alpha) / (np.sqrt(v2) + t(h["eps"]))
    return [var - step, m2, v2]


def ref_rmsprop(
    var: np.ndarray, ms: np.ndarray, mom: np.ndarray, grad: np.ndarray, **h: Any
) -> list[np.ndarray]:
    t = var.dtype.type
    ms2 = ms + (grad * grad - ms) * (t(1) - t(h["rho"]))
    mom2 = mom * t(h["momentum"]) + (grad * t(h["lr"])) / np.sqrt(ms2 + t(h["eps"]))
    return [var - mom2, ms2, mom2]


def ref_centered(
    var: np.ndarray, mg: np.ndarray, ms: np.ndarray, mom: np.ndarray, grad: np.ndarray, **h: Any
) -> list[np.ndarray]:
    t = var.dtype.type
    ms2 = ms + (grad * grad - ms) * (t(1) - t(h["rho"]))
    mg2 = mg + (grad - mg) * (t(1) - t(h["rho"]))
    mom2 = mom * t(h["momentum"]) + (grad * t(h["lr"])) / np.sqrt(ms2 - mg2 * mg2 + t(h["eps"]))
    return [var - mom2, mg2, ms2, mom2]


def ref_adagrad(
    var: np.ndarray, accum: np.ndarray, grad: np.ndarray, lr: float
) -> list[np.ndarray]:
    t = var.dtype.type
    a = accum + grad * grad
    return [var - grad * t(lr) * (t(1) / np.sqrt(a)), a]


def _positive_slots(*positive: int) -> Callable[..., list[np.ndarray]]:
    """Values for an update row: the inputs at ``positive`` (second moments, accumulators) in
    (0.5, 2), the others in (-2, 2)."""

    def values(rng: np.random.Generator, shapes: Any, dtypes: Any) -> list[np.ndarray]:
        out = []
        for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True)):
            lo = 0.5 if i in positive else -2.0
            out.append(rng.uniform(lo, 2.0, size=s).astype(d))
        return out

    return values


def _scatter_values(rng: np.random.Generator, shapes: Any, dtypes: Any) -> list[np.ndarray]:
    rows = shapes[0][0]
    x = (rng.uniform(-3, 3, size=shapes[0]) * 4).round().astype(dtypes[0])
    indices = rng.integers(0, rows, size=shapes[1]).astype(dtypes[1])
    updates = (rng.uniform(-3, 3, size=shapes[2]) * 4).round().astype(dtypes[2])
    return [x, indices, updates]


def _scatter_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    rows = draw(st.integers(1, 5))
    tail = tuple(draw(st.lists(st.integers(1, 4), max_size=2)))
    n = draw(st.integers(0, 6))
    return [(rows, *tail), (n,), (n, *tail)]


def _ref_scatter(kind: str) -> Callable[..., np.ndarray]:
    def ref(x: np.ndarray, indices: np.ndarray, updates: np.ndarray, **_: Any) -> np.ndarray:
        out = x.copy()
        for k, r in enumerate(indices):
            if kind == "update":
                out[r] = updates[k]
            elif kind == "add":
                out[r] += updates[k]
            else:
                out[r] -= updates[k]
        return out

    return ref


def _locking(draw: st.DrawFn, shapes: Any) -> dict[str, Any]:
    return {"use_locking": draw(st.booleans())}


_ADAM_HYPER = {"b1p": 0.9**3, "b2p": 0.999**3, "lr": 0.01, "b1": 0.9, "b2": 0.999, "eps": 1e-8}
_RMS_HYPER = {"lr": 0.01, "rho": 0.9, "momentum": 0.5, "eps": 1e-10}

CASES = [
    OpCase(
        "VariableV2", variable_read, lambda x: x, same_shape(1), REALS, grad=False, eager_name=None
    ),
    OpCase(
        "Assign",
        assign_row,
        lambda x, v, **_: v,
        same_shape(2),
        REALS,
        grad=False,
        eager_name=None,
        kwargs=_locking,
    ),
    OpCase(
        "AssignAdd",
        assign_add_row,
        lambda x, v, **_: x + v,
        same_shape(2),
        REALS,
        grad=False,
        eager_name=None,
        kwargs=_locking,
    ),
    OpCase(
        "AssignSub",
        assign_sub_row,
        lambda x, v, **_: x - v,
        same_shape(2),
        REALS,
        grad=False,
        eager_name=None,
        kwargs=_locking,
    ),
    OpCase(
        "ScatterUpdate",
        _scatter_row(ow.scatter_update),
        _ref_scatter("update"),
        _scatter_shapes,
        REALS,
        grad=False,
        eager_name=None,
        kwargs=_locking,
        input_dtypes=lambda d: [d, np.int32, d],
        values=_scatter_values,
    ),
    OpCase(
        "ScatterAdd",
        _scatter_row(ow.scatter_add),
        _ref_scatter("add"),
        _scatter_shapes,
        REALS,
        grad=False,
        eager_name=None,
        kwargs=_locking,
        input_dtypes=lambda d: [d, np.int64, d],
        values=_scatter_values,
    ),
    OpCase(
        "ScatterSub",
        _scatter_row(ow.scatter_sub),
        _ref_scatter("sub"),
        _scatter_shapes,
        REALS,
        grad=False,
        eager_name=None,
        kwargs=_locking,
        input_dtypes=lambda d: [d, np.int32, d],
        values=_scatter_values,
    ),
    OpCase(
        "IsVariableInitialized",
        is_initialized_row,
        lambda x: [np.array(True), np.array(False)],
        same_shape(1),
        REALS,
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "ApplyGradientDescent",
        _apply_row(gd, 0),
        ref_gd,
        same_shape(2),
        FLOATS,
        grad=False,
        eager_name=None,
        kwargs={"alpha": 0.25},
    ),
    OpCase(
        "ApplyMomentum",
        _apply_row(momentum, 1),
        ref_momentum,
        same_shape(3),
        FLOATS,
        grad=False,
        eager_name=None,
        kwargs=lambda draw, s: {"lr": 0.1, "momentum": 0.9, "nesterov": draw(st.booleans())},
    ),
    OpCase(
        "ApplyAdam",
        _apply_row(adam, 2),
        ref_adam,
        same_shape(4),
        FLOATS,
        grad=False,
        eager_name=None,
        values=_positive_slots(2),
        rtol=1e-5,
        kwargs=lambda draw, s: {**_ADAM_HYPER, "nesterov": draw(st.booleans())},
    ),
    OpCase(
        "ApplyRMSProp",
        _apply_row(rmsprop, 2),
        ref_rmsprop,
        same_shape(4),
        FLOATS,
        grad=False,
        eager_name=None,
        values=_positive_slots(1),
        rtol=1e-5,
        kwargs=_RMS_HYPER,
    ),
    OpCase(
        "ApplyCenteredRMSProp",
        _apply_row(centered, 3),
        ref_centered,
        same_shape(5),
        FLOATS,
        grad=False,
        eager_name=None,
        rtol=1e-5,
        kwargs=_RMS_HYPER,
        # ms - mg^2 stays positive: ms in (4.5, 6), mg in (-2, 2)
        values=lambda rng, shapes, dtypes: [
            rng.uniform(lo, hi, size=s).astype(d)
            for (lo, hi), s, d in zip(
                [(-2, 2), (-2, 2), (4.5, 6), (-2, 2), (-2, 2)], shapes, dtypes, strict=True
            )
        ],
    ),
    OpCase(
        "ApplyAdagrad",
        _apply_row(adagrad, 1),
        ref_adagrad,
        same_shape(3),
        FLOATS,
        grad=False,
        eager_name=None,
        values=_positive_slots(1),
        rtol=1e-5,
        kwargs={"lr": 0.1},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
@SETTINGS
@given(data=st.data())
def test_op_matches_numpy(case: OpCase, data: st.DataObject) -> None:
    check_case(case, data)


# -- the same bits for any thread count ----------------------------------------------------------

_UPDATES = [c for c in CASES if c.op_type.startswith(("Apply", "AssignAdd", "ScatterAdd"))]


@pytest.mark.parametrize("case", _UPDATES, ids=repr)
def test_update_gives_the_same_bits_on_one_and_three_threads(case: OpCase) -> None:
    # 100003 elements: split over threads (and over 13 lock blocks, the last one partial).
    n = 100_003
    if case.op_type.startswith("Scatter"):
        shapes = [(n // 7, 7), (500,), (500, 7)]
        dtypes = [np.float32, np.int32, np.float32]
    else:
        shapes = [(n,)] * _arity(case)
        dtypes = [np.float32] * len(shapes)
    rng = np.random.default_rng(3)
    arrays = (
        case.values(rng, shapes, dtypes)
        if case.values
        else [rng.uniform(-2, 2, size=s).astype(d) for s, d in zip(shapes, dtypes, strict=True)]
    )
    kwargs = case.kwargs(_FirstDraw(), shapes) if callable(case.kwargs) else dict(case.kwargs)
    results = []
    saved = ow.get_num_threads()
    try:
        for threads in (1, 3):
            ow.set_num_threads(threads)
            with ow.Graph().as_default():
                phs = [ow.placeholder(ow.as_dtype(a.dtype), a.shape) for a in arrays]
                out = case.fn(*phs, **kwargs)
                with ow.Session() as s:
                    results.append(s.run(out, dict(zip(phs, arrays, strict=True))))
    finally:
        ow.set_num_threads(saved)
    for a, b in zip(results[0], results[1], strict=True):
        np.testing.assert_array_equal(a, b)


def _arity(case: OpCase) -> int:
    return {
        "ApplyGradientDescent": 2,
        "ApplyMomentum": 3,
        "ApplyAdagrad": 3,
        "ApplyAdam": 4,
        "ApplyRMSProp": 4,
        "ApplyCenteredRMSProp": 5,
        "AssignAdd": 2,
    }[case.op_type]


class _FirstDraw:
    """A draw function returning the first value of every strategy (booleans: False)."""

    def __call__(self, strategy: Any) -> Any:
        return False
