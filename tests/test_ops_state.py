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
from op_testing import REALS, SETTINGS, OpCase, check_case, same_shape

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
    return {"AssignAdd": 2}[case.op_type]


class _FirstDraw:
    """A draw function returning the first value of every strategy (booleans: False)."""

    def __call__(self, strategy: Any) -> Any:
        return False
