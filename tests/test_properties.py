"""Property-based tests: random graphs against the NumPy reference evaluator
(tests/reference.py), and the kernels on random shapes, strides and axes against NumPy.

Modest example counts and no deadline: they run in the default suite on a loaded machine. The
small arrays never reach the kernels' multi-threaded paths; one test repeats the kernel checks on
arrays large enough to split over the intra-op pool, and checks that they did.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_testing import OpCase, all_cases, draw_inputs
from opweave import _pool, kernels
from reference import (
    ARITY,
    BINARY,
    OPTIMIZABLE,
    InjectedFailure,
    Node,
    RowCall,
    Spec,
    build,
    check,
    evaluate,
)

# OPWEAVE_HYPOTHESIS_EXAMPLES raises the count for a longer bug hunt.
SETTINGS = settings(
    max_examples=int(os.environ.get("OPWEAVE_HYPOTHESIS_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# "fail" is one choice in ~40, so most graphs run to the end and some fail on purpose. The
# patterns the graph optimizer rewrites (OPTIMIZABLE) are in the mix, so its passes fire here too.
_UNARY = ["neg", "tanh", "sigmoid", "relu", "identity", "rowmean", "py"]
_OPS = _UNARY * 3 + BINARY * 2 + OPTIMIZABLE + ["fail"]


def _row_dtype(case: OpCase) -> Any:
    """The dtype a row node runs its op in: float64 (the reference matches it to ~1e-15), else an
    integer or bool dtype (exact), else None (a float32/float16-only row: its op has other rows,
    or its outputs must be exact, which _row_call checks)."""
    kinds = [np.dtype(d) for d in case.dtypes]
    if np.dtype(np.float64) in kinds:
        return np.float64
    exact = [d for d in kinds if d.kind in "iub"]
    return exact[0] if exact else (kinds[0] if len(kinds) == 1 else None)


# Every op's rows but the stateful ones (random ops: the reference cannot predict their values).
_ROW_CASES = [
    c
    for c in all_cases()
    if not ow.ops.REGISTRY[c.op_type].stateful
    and _row_dtype(c) is not None
    and not c.id.endswith("-f16")
]


def _row_call(draw: st.DrawFn) -> RowCall | None:
    """An op row with inputs drawn as its own tests draw them; None when its outputs would not
    compare exactly enough (floating outputs of float32 inputs, empty outputs, strings)."""
    case = draw(st.sampled_from(_ROW_CASES))
    dtype = _row_dtype(case)
    arrays, kwargs, _ = draw_inputs(dataclasses.replace(case, dtypes=[dtype]), draw)
    outputs = case.ref(*arrays, **kwargs)
    for o in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
        o = np.asarray(o)
        if o.size == 0 or o.dtype.kind in "SUO" or (o.dtype.kind == "f" and o.dtype != np.float64):
            return None
    return RowCall(case, tuple(arrays), kwargs)


@st.composite
def graph_specs(draw: st.DrawFn, ops: list[str] | None = None) -> Spec:
    n = draw(st.sampled_from([1, 2, 5, 17]))
    nodes = [Node("input"), Node("input")]
    for i in range(2, 2 + draw(st.integers(1, 30))):
        if draw(st.integers(0, 3)) == 0:  # a quarter of the nodes run an op of the op surface
            row = _row_call(draw)
            if row is not None:
                nodes.append(Node("row", (draw(st.integers(0, i - 1)),), row))
                continue
        op = draw(st.sampled_from(ops or _OPS))
        arity = ARITY.get(op, 1)
        nodes.append(Node(op, tuple(draw(st.integers(0, i - 1)) for _ in range(arity))))
    fetches = draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=4, unique=True))
    return Spec(n, tuple(nodes), tuple(sorted(fetches)))


CONFIGS = {
    "global": ow.ConfigProto(),
    "per-session": ow.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True),
    "caller-thread": ow.ConfigProto(inter_op_parallelism_threads=-1),
}


@SETTINGS
@given(
    spec=graph_specs(),
    seed=st.integers(0, 2**32 - 1),
    config=st.sampled_from(sorted(CONFIGS)),
    data=st.data(),
)
def test_random_graphs_match_the_numpy_reference(
    spec: Spec, seed: int, config: str, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    feeds = (rng.uniform(-1, 1, (spec.n, spec.n)), rng.uniform(-1, 1, (spec.n, spec.n)))
    # Sometimes feed an intermediate tensor too: whatever lies only upstream of it must not run.
    overrides: dict[int, np.ndarray] = {}
    if len(spec.nodes) > 2 and data.draw(st.booleans()):
        overrides[data.draw(st.integers(2, len(spec.nodes) - 1))] = rng.uniform(
            -1, 1, (spec.n, spec.n)
        )
    built = build(spec)
    feed_dict = dict(zip(built.inputs, feeds, strict=True))
    feed_dict.update({built.tensors[i]: v for i, v in overrides.items()})
    try:
        want: list[np.ndarray] | None = evaluate(spec, feeds, overrides)
    except InjectedFailure:
        want = None
    with ow.Session(graph=built.graph, config=CONFIGS[config]) as sess:
        for _ in range(2):  # the second run uses the cached compiled graph
            if want is None:
                with pytest.raises(InjectedFailure):
                    sess.run(built.fetches, feed_dict=feed_dict)
            else:
                check(spec, sess.run(built.fetches, feed_dict=feed_dict), feeds, overrides)


# --- kernels ------------------------------------------------------------------------------------

DTYPES = [np.float32, np.float64, np.int32, np.int64]


@st.composite
def strided_arrays(
    draw: st.DrawFn,
    dtype: Any,
    min_dims: int = 1,
    max_dims: int = 3,
    min_side: int = 0,
    max_side: int = 9,
) -> np.ndarray:
    """An array of random shape seen through random steps (negative too), order and axis
    permutation: contiguous, Fortran, sliced and transposed views alike."""
    ndim = draw(st.integers(min_dims, max_dims))
    shape = [draw(st.integers(min_side, max_side)) for _ in range(ndim)]
    steps = [draw(st.sampled_from([1, 1, 2, 3, -1, -2])) for _ in range(ndim)]
    base_shape = tuple(s * abs(k) for s, k in zip(shape, steps, strict=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if np.dtype(dtype).kind == "f":
        base = rng.standard_normal(base_shape).astype(dtype)
    else:
        base = rng.integers(-1000, 1000, size=base_shape).astype(dtype)
    base = np.asarray(base, order=draw(st.sampled_from("CF")))
    view = base[tuple(slice(None, None, k) for k in steps)]
    return view.transpose(draw(st.permutations(range(ndim))))


def _close(got: np.ndarray, want: np.ndarray, exact: bool = False) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    if exact or got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-4 if got.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@SETTINGS
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    op=st.sampled_from(["sum", "mean", "max", "min"]),
    keepdims=st.booleans(),
)
def test_reductions_of_strided_views_over_random_axes_match_numpy(
    data: st.DataObject, dtype: Any, op: str, keepdims: bool
) -> None:
    if op == "mean" and np.dtype(dtype).kind != "f":
        dtype = np.float64  # integer means truncate (TensorFlow's rule); tested in test_kernels
    _check_reduction(data, data.draw(strided_arrays(dtype)), op, keepdims)


def _reduced_shape(shape: tuple[int, ...], reduced: Any, keepdims: bool) -> tuple[int, ...]:
    return tuple(
        1 if i in reduced else d for i, d in enumerate(shape) if keepdims or i not in reduced
    )


def _check_reduction(data: st.DataObject, x: np.ndarray, op: str, keepdims: bool) -> None:
    axes = data.draw(
        st.none() | st.lists(st.integers(-x.ndim, x.ndim - 1), unique_by=lambda a: a % x.ndim)
    )
    axis = None if axes is None else tuple(axes)
    ours = getattr(kernels, f"reduce_{op}")
    reduced = range(x.ndim) if axis is None else [a % x.ndim for a in axis]
    if op in ("max", "min") and any(x.shape[a] == 0 for a in reduced):
        # TensorFlow's max / min of nothing is the identity: the lowest value for max, the
        # highest for min (NumPy raises instead).
        if x.dtype.kind == "f":
            lowest, highest = -np.inf, np.inf
        else:
            lowest, highest = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
        want = np.full(
            _reduced_shape(x.shape, reduced, keepdims), lowest if op == "max" else highest, x.dtype
        )
        np.testing.assert_array_equal(ours(x, axis=axis, keepdims=keepdims), want)
        return
    # NumPy's sum of int32 promotes to int64; ours stays int32 (wrapping), as TensorFlow does.
    kwargs = {"dtype": x.dtype} if op in ("sum", "mean") else {}
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
        want = getattr(np, op)(x, axis=axis, keepdims=keepdims, **kwargs)
    _close(ours(x, axis=axis, keepdims=keepdims), np.asarray(want, dtype=x.dtype))


@st.composite
def broadcast_pairs(draw: st.DrawFn, dtype: Any, **array_kw: int) -> tuple[np.ndarray, np.ndarray]:
    a = draw(strided_arrays(dtype, **array_kw))
    # b: a suffix of a's shape (maybe none: a 0-d array), each dimension kept or made 1, and
    # sometimes a strided view.
    keep = draw(st.integers(0, a.ndim))
    shape_b = tuple(s if draw(st.booleans()) else 1 for s in a.shape[a.ndim - keep :])
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    step = draw(st.sampled_from([1, 2, -1]))
    big = (
        (rng.standard_normal((*shape_b[:-1], shape_b[-1] * abs(step))) * 10).astype(dtype)
        if shape_b
        else None
    )
    b = np.asarray(rng.standard_normal() * 10).astype(dtype) if big is None else big[..., ::step]
    return (b, a) if draw(st.booleans()) else (a, b)


@SETTINGS
@given(
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
    op=st.sampled_from(["add", "sub", "mul", "maximum", "minimum", "div"]),
)
def test_broadcasting_binary_ops_on_strided_views_match_numpy(
    data: st.DataObject, dtype: Any, op: str
) -> None:
    if op == "div":
        dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    _check_binary(*data.draw(broadcast_pairs(dtype)), op, dtype)


def _check_binary(a: np.ndarray, b: np.ndarray, op: str, dtype: Any) -> None:
    ref = {"div": np.true_divide, "sub": np.subtract, "mul": np.multiply, "add": np.add}
    with np.errstate(all="ignore"):
        want = getattr(np, op, None) if op in ("maximum", "minimum") else ref[op]
        expected = np.asarray(want(a, b), dtype=dtype)  # type: ignore[misc]
        got = getattr(kernels, op)(a, b)
    # Elementwise IEEE arithmetic is exact: the same bits as NumPy.
    _close(got, expected, exact=op != "div")


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_matmul_of_strided_views_matches_numpy(data: st.DataObject, dtype: Any) -> None:
    _check_matmul(data, data.draw(strided_arrays(dtype, min_dims=2, max_dims=2, min_side=1)))


def _check_matmul(data: st.DataObject, a: np.ndarray) -> None:
    dtype = a.dtype
    n = data.draw(st.integers(1, 40))
    rng = np.random.default_rng(a.shape[0] * 131 + n)
    b_base = rng.standard_normal((n * 2, a.shape[1])).astype(dtype)
    b = b_base[::2].T if data.draw(st.booleans()) else np.ascontiguousarray(b_base[::2].T)
    got = kernels.matmul(a, b)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * a.shape[1])


@SETTINGS
@given(data=st.data(), dtype=st.sampled_from(DTYPES))
def test_transpose_and_cast_of_strided_views_match_numpy(data: st.DataObject, dtype: Any) -> None:
    _check_transpose_and_cast(data, data.draw(strided_arrays(dtype)))


def _check_transpose_and_cast(data: st.DataObject, x: np.ndarray) -> None:
    perm = data.draw(st.permutations(range(x.ndim)))
    _close(kernels.transpose(x, perm), np.transpose(x, perm).copy(), exact=True)
    to = data.draw(st.sampled_from(DTYPES))
    with np.errstate(invalid="ignore"):
        _close(kernels.cast(x, to), x.astype(to), exact=True)


@SETTINGS
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
    op=st.sampled_from(["neg", "relu", "exp", "tanh", "sigmoid"]),
)
def test_unary_ops_on_strided_views_match_numpy(data: st.DataObject, dtype: Any, op: str) -> None:
    _check_unary(data.draw(strided_arrays(dtype)), op)


def _check_unary(x: np.ndarray, op: str) -> None:
    dtype = x.dtype
    ref = {
        "neg": np.negative,
        "relu": lambda v: np.maximum(v, 0),
        "exp": np.exp,
        "tanh": np.tanh,
        "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    }[op]
    _close(getattr(kernels, op)(x), np.asarray(ref(x), dtype=dtype), exact=op in ("neg", "relu"))


# --- the same checks on arrays large enough for the intra-op pool -------------------------------

# Sides 64..300 (2-D; steps up to 3 make the base up to 900 x 900): big enough that kernels
# split their loops over the intra-op pool (elementwise math and matmul from 64 x 64, the other
# families from about 200 x 200). Few examples: each costs milliseconds, not microseconds.
LARGE_SETTINGS = settings(
    max_examples=int(os.environ.get("OPWEAVE_HYPOTHESIS_LARGE_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
_LARGE = {"min_dims": 2, "max_dims": 2, "min_side": 64, "max_side": 300}
_FAMILIES = ["reduce", "binary", "unary", "transpose_cast", "matmul"]


def test_kernels_on_large_strided_views_match_numpy_on_the_intra_op_pool() -> None:
    tasks_run: dict[str, int] = dict.fromkeys(_FAMILIES, 0)

    @LARGE_SETTINGS
    @given(data=st.data(), family=st.sampled_from(_FAMILIES))
    def check(data: st.DataObject, family: str) -> None:
        before = _pool.pool_stats("intra").tasks_run
        if family == "reduce":
            op = data.draw(st.sampled_from(["sum", "mean", "max", "min"]))
            dtype = data.draw(st.sampled_from([np.float32, np.float64] if op == "mean" else DTYPES))
            x = data.draw(strided_arrays(dtype, **_LARGE))
            _check_reduction(data, x, op, data.draw(st.booleans()))
        elif family == "binary":
            op = data.draw(st.sampled_from(["add", "sub", "mul", "maximum", "minimum", "div"]))
            dtype = data.draw(st.sampled_from([np.float32, np.float64] if op == "div" else DTYPES))
            _check_binary(*data.draw(broadcast_pairs(dtype, **_LARGE)), op, dtype)
        elif family == "unary":
            dtype = data.draw(st.sampled_from([np.float32, np.float64]))
            op = data.draw(st.sampled_from(["neg", "relu", "exp", "tanh", "sigmoid"]))
            _check_unary(data.draw(strided_arrays(dtype, **_LARGE)), op)
        elif family == "transpose_cast":
            dtype = data.draw(st.sampled_from(DTYPES))
            _check_transpose_and_cast(data, data.draw(strided_arrays(dtype, **_LARGE)))
        else:
            dtype = data.draw(st.sampled_from([np.float32, np.float64]))
            _check_matmul(data, data.draw(strided_arrays(dtype, **_LARGE)))
        tasks_run[family] += _pool.pool_stats("intra").tasks_run - before

    with ow.threads(intra=max(2, ow.get_num_threads())):  # at least one worker to split for
        check()
    # The examples really ran split loops on the pool's workers (the small ones above never do).
    assert sum(tasks_run.values()) > 0, tasks_run


def test_random_graphs_may_hold_every_op_that_has_a_row_except_random_ones() -> None:
    # Ops without a row are listed in test_op_coverage.py; the random ops are left out of random
    # graphs because the reference cannot predict their numbers (their rows check statistics).
    rows = {c.op_type for c in all_cases()}
    stateful = {t for t in rows if ow.ops.REGISTRY[t].stateful}
    assert {c.op_type for c in _ROW_CASES} == rows - stateful
