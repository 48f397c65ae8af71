"""opweave.kernels agrees with NumPy, is deterministic across thread counts, and rejects bad
arguments with clear TypeError / ValueError."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import numpy as np
import opweave
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opweave import _opweave_core, kernels

RNG = np.random.default_rng(1234)
FLOATS = [np.float32, np.float64]
ALL_DTYPES = [np.float32, np.float64, np.int32, np.int64]


def _random(shape: tuple[int, ...], dtype: Any, rng: np.random.Generator = RNG) -> Any:
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(-1000, 1000, size=shape).astype(dtype)


def _tol(dtype: Any, k: int = 1) -> dict[str, float]:
    eps = float(np.finfo(dtype).eps)
    return {"rtol": 50 * eps * max(1.0, np.sqrt(k)), "atol": 50 * eps * max(1.0, np.sqrt(k))}


# --- matmul ---------------------------------------------------------------------------------


# 1, primes, and sizes just below/above MR (6), NR (8/16/32), MC (72/144) and KC (256).
SIZES = [1, 2, 5, 6, 7, 13, 17, 31, 33, 71, 73, 143, 145, 255, 257]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("m", "n", "k"), [(s, SIZES[-1 - i], SIZES[(i * 5) % len(SIZES)]) for i, s in enumerate(SIZES)]
)
def test_matmul_matches_numpy_on_edge_sizes(dtype: Any, m: int, n: int, k: int) -> None:
    a, b = _random((m, k), dtype), _random((k, n), dtype)
    np.testing.assert_allclose(kernels.matmul(a, b), a @ b, **_tol(dtype, k))


# NC (the columns of one packed B panel) is 4080 or 4096, 1024 for the AVX-512 float64 kernel:
# these span several N blocks of whichever kernel this CPU selects, the last one ragged. (Each
# kernel with a small NC: tests/cpp/test_kernels.cpp.)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [4081, 4097, 8200])
def test_matmul_wider_than_one_nc_block_matches_numpy(dtype: Any, n: int) -> None:
    a, b = _random((13, 37), dtype), _random((37, n), dtype)
    np.testing.assert_allclose(kernels.matmul(a, b), a @ b, **_tol(dtype, 37))


# Fewer rows than the micro-kernel's MR (6 with AVX2, 12 with AVX-512) run the few-rows (GEMV)
# kernel, reading B in place or packing a transposed one; rows of a larger batch run the packed
# micro-kernels. Both compute each element as the same FMA chain over the same K blocks, so a row
# gets the same bits whatever batch it is in, and any thread count.
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("m", [1, 2, 3, 5, 7, 11])
def test_matmul_with_few_rows_matches_numpy_and_the_rows_of_a_larger_batch(
    dtype: Any, m: int
) -> None:
    for n, k in [(3, 5), (33, 300), (1030, 17), (4100, 9)]:
        big_a = _random((64, k), dtype)
        for ta, tb in itertools.product([False, True], repeat=2):
            b = _random((n, k) if tb else (k, n), dtype)
            a = np.ascontiguousarray(big_a[:m].T) if ta else big_a[:m]
            got = kernels.matmul(a, b, transpose_a=ta, transpose_b=tb)
            want = big_a[:m] @ (b.T if tb else b)
            np.testing.assert_allclose(got, want, **_tol(dtype, k))
            one = kernels.matmul(a, b, transpose_a=ta, transpose_b=tb, _num_threads=1)
            np.testing.assert_array_equal(got, one)
            if n > 3:  # large enough for the packed path at 64 rows
                batch = kernels.matmul(big_a, b, transpose_b=tb)
                np.testing.assert_array_equal(got, batch[:m])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("order", ["CC", "CF", "FC", "FF"])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_layouts_and_transposes(dtype: Any, order: str, ta: bool, tb: bool) -> None:
    m, n, k = 37, 150, 70
    a = np.asarray(_random((k, m) if ta else (m, k), dtype), order=order[0])
    b = np.asarray(_random((n, k) if tb else (k, n), dtype), order=order[1])
    expected = (a.T if ta else a) @ (b.T if tb else b)
    got = kernels.matmul(a, b, transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(got, expected, **_tol(dtype, k))
    assert got.flags.c_contiguous


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_with_a_transposed_weight_packs_the_same_panels(dtype: Any) -> None:
    # dy @ w.T, a dense layer's input gradient: B is column-major, packed in 8 x 8 blocks. K
    # blocks of 1029 / 5 are not multiples of 8, 300 columns end in a ragged panel. The packed
    # panels hold the same values as from w.T in C order: the same bits.
    a, w = _random((50, 1029), dtype), _random((300, 1029), dtype)
    got = kernels.matmul(a, w, transpose_b=True)
    np.testing.assert_array_equal(got, kernels.matmul(a, np.ascontiguousarray(w.T)))
    np.testing.assert_allclose(got, a @ w.T, **_tol(dtype, 1029))


def test_matmul_reads_views_with_negative_and_odd_strides() -> None:
    base = _random((90, 80), np.float64)
    a = base[::-2, 1::3]  # (45, 27), negative row stride
    b = _random((40, 27), np.float64).T[:, ::-1]  # (27, 40), Fortran-like and reversed
    np.testing.assert_allclose(kernels.matmul(a, b), a @ b, **_tol(np.float64, 27))


@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((4,), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((7, 1, 4), (1, 4, 9)),
        ((0, 3, 4), (4, 2)),
        ((3, 0), (0, 2)),
    ],
)
def test_batched_matmul_broadcasts_like_numpy(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = _random(sa, np.float32), _random(sb, np.float32)
    expected = np.matmul(a, b)
    got = kernels.matmul(a, b)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, **_tol(np.float32, 4))


def test_matmul_out_is_written_and_returned() -> None:
    a, b = _random((20, 30), np.float64), _random((30, 10), np.float64)
    out = np.empty((20, 10))
    assert kernels.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, **_tol(np.float64, 30))


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 80),
    n=st.integers(1, 80),
    k=st.integers(1, 300),
    dtype=st.sampled_from(FLOATS),
    fortran=st.booleans(),
)
def test_matmul_random_shapes(m: int, n: int, k: int, dtype: Any, fortran: bool) -> None:
    rng = np.random.default_rng(m * 10007 + n * 101 + k)
    a = np.asarray(_random((m, k), dtype, rng), order="F" if fortran else "C")
    b = _random((k, n), dtype, rng)
    np.testing.assert_allclose(kernels.matmul(a, b), a @ b, **_tol(dtype, k))


def test_matmul_rejects_mismatched_shapes_and_dtypes() -> None:
    a32, b32 = np.ones((3, 4), np.float32), np.ones((5, 6), np.float32)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(5, 6\)"):
        kernels.matmul(a32, b32)
    with pytest.raises(TypeError, match=r"float32.*float64"):
        kernels.matmul(a32, np.ones((4, 2)))
    with pytest.raises(TypeError, match="int32"):
        kernels.matmul(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32))
    with pytest.raises(TypeError, match="complex128"):
        kernels.matmul(np.ones((2, 2), complex), np.ones((2, 2), complex))
    with pytest.raises(ValueError, match="batch"):
        kernels.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="rank"):
        kernels.matmul(np.float64(1.0), np.ones(2))


def test_matmul_rejects_unsuitable_out() -> None:
    a, b = np.ones((4, 6)), np.ones((6, 4))
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.matmul(a, b, out=np.empty((4, 4), order="F")[:, :])
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.matmul(a, b, out=np.empty((4, 8))[:, ::2])
    with pytest.raises(ValueError, match="shape"):
        kernels.matmul(a, b, out=np.empty((4, 5)))
    with pytest.raises(ValueError, match="dtype"):
        kernels.matmul(a, b, out=np.empty((4, 4), np.float32))
    with pytest.raises(TypeError, match="ndarray"):
        kernels.matmul(a, b, out=[[0.0] * 4] * 4)  # type: ignore[arg-type]
    sq = np.ones((6, 6))
    with pytest.raises(ValueError, match="overlap"):
        kernels.matmul(sq, sq, out=sq)


# --- reductions -----------------------------------------------------------------------------

REDUCE = {
    "sum": (kernels.reduce_sum, np.sum),
    "mean": (kernels.reduce_mean, np.mean),
    "max": (kernels.reduce_max, np.max),
    "min": (kernels.reduce_min, np.min),
}


def _numpy_reduce(op: str, x: Any, axis: Any, keepdims: bool) -> Any:
    if op == "mean" and x.dtype.kind == "i":
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        count = x.size // max(1, np.asarray(s).size) if x.size else 1
        return (np.trunc(s / count)).astype(x.dtype)
    return REDUCE[op][1](x, axis=axis, keepdims=keepdims).astype(x.dtype)


@pytest.mark.parametrize("op", list(REDUCE))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1), (0, 1, 2), ()])
@pytest.mark.parametrize("layout", ["C", "F", "view"])
def test_reductions_match_numpy(op: str, dtype: Any, axis: Any, layout: str) -> None:
    base = _random((7, 66, 129), dtype)
    x = {"C": base, "F": np.asfortranarray(base), "view": base[::-1, 1::2, ::3]}[layout]
    for keepdims in (False, True):
        got = REDUCE[op][0](x, axis=axis, keepdims=keepdims)
        expected = _numpy_reduce(op, x, axis, keepdims)
        assert got.shape == expected.shape
        assert got.dtype == x.dtype
        if dtype in FLOATS and op in ("sum", "mean"):
            # A sum's rounding error scales with the sum of magnitudes, not with the result: an
            # output near zero that cancels thousands of terms differs from NumPy's (which sums
            # in another order) by far more than eps times itself. Blocked summation stays
            # within a few eps of the magnitudes' sum.
            magnitude = REDUCE[op][1](np.abs(x.astype(np.float64)), axis=axis, keepdims=keepdims)
            eps = float(np.finfo(dtype).eps)
            assert np.all(np.abs(got.astype(np.float64) - expected) <= 16 * eps * magnitude + 1e-30)
        elif dtype in FLOATS:
            np.testing.assert_allclose(got, expected, **_tol(dtype, 64))
        elif op != "sum" or dtype == np.int64:
            np.testing.assert_array_equal(got, expected)
        else:  # int32 sums wrap like int32 arithmetic
            np.testing.assert_array_equal(
                got, np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int32)
            )


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    data=st.data(),
    op=st.sampled_from(list(REDUCE)),
)
def test_reductions_random_shapes_and_axes(shape: list[int], data: Any, op: str) -> None:
    x = _random(tuple(shape), np.float64, np.random.default_rng(len(shape)))
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    got = REDUCE[op][0](x, axis=tuple(axes), keepdims=False)
    np.testing.assert_allclose(got, REDUCE[op][1](x, axis=tuple(axes)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 15, 16, 17, 255, 256, 257, 65535, 65536, 65537, 200_003])
def test_full_sum_of_long_runs_matches_numpy(n: int) -> None:
    x = _random((n,), np.float32)
    np.testing.assert_allclose(kernels.reduce_sum(x), np.sum(x), rtol=1e-5, atol=1e-4)
    assert kernels.reduce_max(x) == np.max(x)


# Zero-mean data, so that the rounding errors of the partial sums are not hidden under one
# rounding of a large total. Errors are taken against a float64 sum of the same float32 values
# (its own error is ~1e-9 of theirs) and compared without slack, as means over thousands of sums
# of one length: one sum's error is luck, the mean shows the algorithm. Left out: lengths at which
# opweave's tree has the shape of NumPy's (8, 16, 24: a tie in distribution, which no finite
# sample decides) and runs of 64K values and more (both pairwise with the same depth; measured
# at parity, a sample mean falls either side).
@pytest.mark.parametrize(
    ("shape", "axis"),
    [
        ((20_000, 13), 1),
        ((20_000, 31), 1),
        ((10_000, 63), 1),
        ((8_000, 127), 1),
        ((8_000, 200), 1),
        ((4_000, 255), 1),
        ((4_000, 1000), 1),
        ((1_000, 4127), 1),
        ((4096, 512), 0),  # a strided axis: NumPy adds the rows one after another
    ],
)
def test_float32_sum_is_at_least_as_accurate_as_numpy(shape: tuple[int, int], axis: int) -> None:
    x = np.random.default_rng(5).standard_normal(shape, dtype=np.float32)
    exact = x.sum(axis=axis, dtype=np.float64)
    ours = np.abs(kernels.reduce_sum(x, axis=axis) - exact).mean()
    numpys = np.abs(x.sum(axis=axis) - exact).mean()
    assert ours <= numpys


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_max_and_min_propagate_nan_like_numpy(op: str, axis: Any) -> None:
    x = _random((40, 300), np.float32)
    x[3, 7] = np.nan
    x[20, 299] = np.nan
    np.testing.assert_array_equal(REDUCE[op][0](x, axis=axis), REDUCE[op][1](x, axis=axis))


def test_sum_propagates_nan_and_inf() -> None:
    x = np.ones((5, 5))
    x[1, 1] = np.inf
    x[2, 2] = np.nan
    np.testing.assert_array_equal(kernels.reduce_sum(x, axis=1), np.sum(x, axis=1))


def test_bool_max_is_any_and_min_is_all() -> None:
    x = _random((30, 17), np.bool_)
    x[0] = True
    np.testing.assert_array_equal(kernels.reduce_max(x, axis=1), np.any(x, axis=1))
    np.testing.assert_array_equal(kernels.reduce_min(x, axis=0), np.all(x, axis=0))
    with pytest.raises(TypeError, match="bool"):
        kernels.reduce_sum(x)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reductions_of_reversed_dense_views_keep_the_index_order(op: str) -> None:
    # A reversed (negative-stride) but dense view is reduced in place; the kept axis must come
    # back in the view's order, not memory order (it came back reversed).
    a = np.arange(24.0).reshape(2, 3, 4)
    ours, ref = getattr(kernels, f"reduce_{op}"), getattr(np, op)
    for view in (a[::-1], a[:, ::-1], a[:, :, ::-1], a[::-1, :, ::-1].transpose(2, 0, 1)):
        for axis in (0, 1, 2, (0, 2)):
            np.testing.assert_array_equal(ours(view, axis=axis), ref(view, axis=axis))


def test_empty_reductions() -> None:
    e = np.zeros((0, 4), np.float32)
    np.testing.assert_array_equal(kernels.reduce_sum(e, axis=0), np.zeros(4, np.float32))
    assert np.isnan(kernels.reduce_mean(e, axis=0)).all()
    assert kernels.reduce_max(e, axis=1).shape == (0,)
    # TensorFlow's max / min of nothing are the identities (NumPy raises instead).
    np.testing.assert_array_equal(kernels.reduce_max(e, axis=0), np.full(4, -np.inf, np.float32))
    np.testing.assert_array_equal(kernels.reduce_min(e, axis=0), np.full(4, np.inf, np.float32))


def test_reduction_axis_errors() -> None:
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="Invalid reduction dimension 2 for input with 2"):
        kernels.reduce_sum(x, axis=2)
    with pytest.raises(ValueError, match="duplicate dimension"):
        kernels.reduce_sum(x, axis=(0, -2))
    with pytest.raises(TypeError, match=r"unsupported dtype.*uint16"):
        kernels.reduce_sum(np.ones(3, np.uint16))
    # float16 is summed in float32 and rounded back, as TensorFlow does on CPUs.
    half = kernels.reduce_sum(np.full(3, 0.5, np.float16))
    assert half.dtype == np.float16
    assert half == np.float16(1.5)


# --- element-wise ---------------------------------------------------------------------------

BINARY = {
    "add": (kernels.add, np.add),
    "sub": (kernels.sub, np.subtract),
    "mul": (kernels.mul, np.multiply),
    "div": (kernels.div, None),
    "maximum": (kernels.maximum, np.maximum),
    "minimum": (kernels.minimum, np.minimum),
}


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize(
    ("sa", "sb"),
    [((1000,), (1000,)), ((50, 1), (1, 70)), ((3, 1, 5), (4, 5)), ((), (6,)), ((200, 300), (300,))],
)
def test_binary_ops_match_numpy(op: str, dtype: Any, sa: Any, sb: Any) -> None:
    a, b = _random(sa, dtype), _random(sb, dtype)
    if op == "div" and np.dtype(dtype).kind == "i":
        b = np.where(b == 0, 1, b).astype(dtype)
        expected = np.floor_divide(a, b)
    elif op == "div":
        expected = np.true_divide(a, b)
    else:
        expected = BINARY[op][1](a, b)  # type: ignore[misc]
    got = BINARY[op][0](a, b)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)


def test_binary_ops_on_strided_views_and_large_arrays() -> None:
    a = _random((400, 300), np.float32).T  # Fortran view
    b = _random((600, 400), np.float32)[::-2]
    np.testing.assert_array_equal(kernels.add(a, b), a + b)
    big = _random((1 << 18,), np.float64)
    np.testing.assert_array_equal(kernels.mul(big, 3.0), big * 3.0)


def test_maximum_propagates_nan_and_scalars_take_the_array_dtype() -> None:
    a = np.array([1.0, np.nan, -1.0], np.float32)
    got = kernels.maximum(a, 0.0)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.maximum(a, np.float32(0)))


def test_binary_errors() -> None:
    with pytest.raises(TypeError, match=r"float64 that does not match type float32"):
        kernels.add(np.ones(3, np.float32), np.ones(3))
    with pytest.raises(ValueError, match=r"input shapes: \[3\], \[4\]"):
        kernels.add(np.ones(3), np.ones(4))
    with pytest.raises(opweave.errors.InvalidArgumentError, match="division by zero"):
        kernels.div(np.ones(3, np.int32), np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="bool"):
        kernels.sub(np.ones(3, bool), np.ones(3, bool))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("scalar", [1.5, 2.0, float("nan")])
def test_a_python_float_with_an_integer_array_is_a_type_error_not_a_truncation(
    dtype: Any, scalar: float
) -> None:
    # NumPy would promote to float64; opweave does not promote, and truncating 1.5 to 1 (what
    # happened before) is silent data loss.
    x = np.array([1, 2, 3], dtype)
    for a, b in ((x, scalar), (scalar, x)):
        name = np.dtype(dtype).name
        with pytest.raises(TypeError, match=rf"'Add' Op.*(float32.*{name}|{name}.*float32)"):
            kernels.add(a, b)


@pytest.mark.parametrize(
    ("dtype", "scalar"),
    [(np.int32, 2**31), (np.int32, -(2**31) - 1), (np.int64, 2**63), (np.int32, 10**30)],
)
def test_a_python_int_outside_the_array_dtype_is_a_type_error_not_a_wraparound(
    dtype: Any, scalar: int
) -> None:
    x = np.array([1, 2, 3], dtype)
    name = np.dtype(dtype).name
    with pytest.raises(
        TypeError, match=rf"'Mul' Op.*int64 that does not match type {name}|Expected {name}"
    ):
        kernels.mul(x, scalar)


def test_a_python_bool_with_a_number_array_is_a_type_error_as_in_tensorflow() -> None:
    for dtype in (np.int32, np.float64):
        with pytest.raises(TypeError, match="got True of type 'bool'"):
            kernels.maximum(np.array([1, 0], dtype), True)


def test_a_number_with_a_bool_array_is_a_type_error() -> None:
    for scalar in (1, 1.5):
        with pytest.raises(TypeError, match="bool"):
            kernels.maximum(np.array([True, False]), scalar)


@pytest.mark.parametrize(
    ("dtype", "scalar"),
    [
        (np.int32, 2**31 - 1),
        (np.int32, -(2**31)),
        (np.int64, 2**63 - 1),
        (np.float32, 1.5),
        (np.float32, 3),
        (np.float32, 2**40 + 1),  # rounds, as NumPy's weak scalars do
    ],
)
def test_python_scalars_that_fit_take_the_array_dtype_like_numpy(dtype: Any, scalar: Any) -> None:
    x = np.array([1, 0, 1], dtype)
    got = kernels.maximum(x, scalar)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, np.maximum(x, scalar))


UNARY = {
    "neg": (kernels.neg, np.negative),
    "relu": (kernels.relu, lambda x: np.where(x < 0, 0, x).astype(x.dtype)),
    "exp": (kernels.exp, np.exp),
    "tanh": (kernels.tanh, np.tanh),
    "sigmoid": (
        kernels.sigmoid,
        lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype),
    ),
}


@pytest.mark.parametrize("op", list(UNARY))
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unary_ops_match_numpy(op: str, dtype: Any) -> None:
    x = _random((70, 90), dtype)[:, ::2]
    if op in ("exp", "tanh", "sigmoid") and np.dtype(dtype).kind == "i":
        with pytest.raises(TypeError, match=rf"(?i)'{op}' Op.*not in list of allowed values"):
            UNARY[op][0](x)
        return
    if op == "exp":
        x = x / 4
    np.testing.assert_allclose(
        UNARY[op][0](x), UNARY[op][1](x), **_tol(dtype if dtype in FLOATS else np.float64)
    )


def test_sigmoid_does_not_overflow() -> None:
    x = np.array([-1000.0, 0.0, 1000.0])
    np.testing.assert_array_equal(kernels.sigmoid(x), [0.0, 0.5, 1.0])


def test_add_n_cast_and_transpose() -> None:
    xs = [_random((30, 40), np.float32) for _ in range(4)]
    np.testing.assert_array_equal(kernels.add_n(xs), ((xs[0] + xs[1]) + xs[2]) + xs[3])
    with pytest.raises(ValueError, match="all inputs must have the same shape"):
        kernels.add_n([np.ones(2), np.ones(3)])
    f = np.array([1.7, -1.7, 0.0, np.nan, 2.5])
    np.testing.assert_array_equal(kernels.cast(f, bool), f.astype(bool))
    np.testing.assert_array_equal(kernels.cast(f[:3], np.int64), f[:3].astype(np.int64))
    np.testing.assert_array_equal(kernels.cast(np.array([True, False]), np.float32), [1.0, 0.0])
    x = _random((3, 4, 5), np.int64)
    np.testing.assert_array_equal(kernels.transpose(x), x.T)
    np.testing.assert_array_equal(kernels.transpose(x, (1, 0, 2)), x.transpose(1, 0, 2))
    with pytest.raises(ValueError, match="permutation"):
        kernels.transpose(x, (0, 0, 1))


# --- determinism and threads ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_results_are_bit_identical_for_1_2_3_and_8_threads(dtype: Any) -> None:
    a, b = _random((301, 257), dtype), _random((257, 170), dtype)
    x = _random((700, 1100), dtype)
    ref_mm = kernels.matmul(a, b, _num_threads=1)
    ref_sum = [kernels.reduce_sum(x, axis=ax, _num_threads=1) for ax in (None, 0, 1)]
    ref_mean = kernels.reduce_mean(x.T, axis=0, _num_threads=1)
    for threads in (2, 3, 8):
        assert kernels.matmul(a, b, _num_threads=threads).tobytes() == ref_mm.tobytes()
        for ax, ref in zip((None, 0, 1), ref_sum, strict=True):
            got = kernels.reduce_sum(x, axis=ax, _num_threads=threads)
            assert got.tobytes() == ref.tobytes()
        got_mean = kernels.reduce_mean(x.T, axis=0, _num_threads=threads)
        assert got_mean.tobytes() == ref_mean.tobytes()
    # The global pool gives the same bits as well.
    assert kernels.matmul(a, b).tobytes() == ref_mm.tobytes()


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_few_long_rows_give_the_same_bits_for_1_2_3_and_8_threads(dtype: Any, op: str) -> None:
    # Fewer rows than twice the threads, each at least two blocks long: from 2 threads on each
    # row is reduced in parallel inside (reduce.cpp, "few long rows"), with 1 thread the rows go
    # one per task. The bits must not change with that choice.
    x = _random((3, 200_003), dtype)
    reduce = getattr(kernels, f"reduce_{op}")
    ref = reduce(x, axis=1, _num_threads=1)
    for threads in (2, 3, 8):
        assert reduce(x, axis=1, _num_threads=threads).tobytes() == ref.tobytes()


def test_num_threads_hook_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="_num_threads"):
        kernels.reduce_sum(np.ones(3), _num_threads=0)
    for bad in (True, 2.0, "2", np.float64(2.0)):
        with pytest.raises(TypeError, match="_num_threads"):
            kernels.reduce_sum(np.ones(3), _num_threads=bad)  # type: ignore[arg-type]
    for bad_int in (-1, 10**12, 4097):
        with pytest.raises(ValueError, match="_num_threads"):
            kernels.reduce_sum(np.ones(3), _num_threads=bad_int)
    np.testing.assert_array_equal(kernels.reduce_sum(np.ones(3), _num_threads=np.int64(2)), 3.0)


@pytest.mark.parametrize("axis", [True, False, (0, True), np.bool_(True)])
def test_a_bool_axis_is_a_type_error_like_numpy(axis: Any) -> None:
    with pytest.raises(TypeError, match=r"reduce_sum: axis(\[\d\])? must be an integer"):
        kernels.reduce_sum(np.ones((2, 3)), axis=axis)


@pytest.mark.parametrize("axis", [1.0, 1.5, "1", (0, 1.0), object()])
def test_a_non_integer_axis_is_a_clear_type_error(axis: Any) -> None:
    with pytest.raises(
        TypeError, match=r"reduce_max: axis(\[\d\])? must be (an integer|a list of integers)"
    ):
        kernels.reduce_max(np.ones((2, 3)), axis=axis)


def test_kernels_release_the_gil() -> None:
    # Another Python thread must make progress in the middle of one long kernel call: with the GIL
    # held for the whole call, no tick could land inside it.
    a = _random((1500, 1500), np.float64)
    ticks: list[float] = []
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            stop.wait(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        kernels.matmul(a, a, _num_threads=1)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    margin = 0.2 * (end - start)
    inside = [x for x in ticks if start + margin < x < end - margin]
    assert inside, f"no tick during the {1e3 * (end - start):.0f} ms call"


def test_isa_dispatch_reports_a_known_kernel() -> None:
    assert _opweave_core.gemm_isa("float32") in ("avx512", "avx2+fma", "portable")


@pytest.mark.parametrize("dtype", FLOATS)
def test_exp_is_within_one_ulp_and_handles_special_values(dtype: Any) -> None:
    x = np.concatenate(
        [np.linspace(-800, 800, 20001), [np.nan, np.inf, -np.inf, 0.0, 88.73, -103.9, 709.79]]
    ).astype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        ref = np.exp(x.astype(np.longdouble)).astype(dtype)
    got = kernels.exp(x)
    finite = np.isfinite(ref) & (ref != 0)
    ulps = np.abs(got[finite] - ref[finite]) / np.spacing(np.abs(ref[finite]))
    assert ulps.max() <= 1.0
    np.testing.assert_array_equal(got[~finite], ref[~finite])


@pytest.mark.parametrize("dtype", FLOATS)
def test_tanh_is_within_four_ulp_and_handles_special_values(dtype: Any) -> None:
    tiny = np.ldexp(1.37, -np.arange(1, 120))
    x = np.concatenate([np.linspace(-30, 30, 20001), tiny, -tiny, [0.0, -0.0, np.inf, -np.inf]])
    x = x.astype(dtype)
    ref = np.tanh(x.astype(np.longdouble)).astype(dtype)
    got = kernels.tanh(x)
    ulps = np.abs(got - ref) / np.spacing(np.abs(ref).astype(dtype))
    assert ulps.max() <= 4.0
    np.testing.assert_array_equal(np.signbit(got), np.signbit(x))
    assert np.isnan(kernels.tanh(np.array([np.nan], dtype)))[0]


# -- eager call plans (OpDef caches one per call signature) ----------------------------------------


def test_cached_calls_key_python_values_exactly() -> None:
    a = np.arange(4, dtype=np.float32)
    for s in (2.0, 3.0, -0.0, 0.0, 2.0):
        for _ in range(2):  # the second call of each signature runs the cached plan
            np.testing.assert_array_equal(kernels.add(a, s), a + np.float32(s))
    i = np.arange(4, dtype=np.int32)
    np.testing.assert_array_equal(kernels.add(i, 2), i + 2)
    np.testing.assert_array_equal(kernels.add(i, 2), i + 2)
    # The same value as a float or a bool is still refused after an int was accepted.
    with pytest.raises(TypeError):
        kernels.add(i, 2.0)
    with pytest.raises(TypeError):
        kernels.add(i, True)


def test_cached_calls_key_the_values_a_shape_function_reads() -> None:
    x = np.arange(6, dtype=np.float32)
    for shape in ([2, 3], [3, 2], [2, 3], [6], [3, 2]):
        for s in (shape, np.array(shape, dtype=np.int32)):
            assert kernels.reshape(x, s).shape == tuple(shape)
    with pytest.raises(ValueError, match="Cannot reshape"):
        kernels.reshape(x, np.array([4, 2], dtype=np.int32))


def test_cached_calls_key_lists_of_ints_apart_from_lists_of_other_values() -> None:
    # A list of plain ints has a key of its own; the same numbers as floats or bools, or as
    # a tuple, are other signatures, which the whole path accepts or refuses as it should.
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    for _ in range(2):
        np.testing.assert_array_equal(kernels.slice(x, [1, 1], [2, 2]), x[1:3, 1:3])
        np.testing.assert_array_equal(kernels.slice(x, (1, 0), (2, 3)), x[1:3, 0:3])
        np.testing.assert_array_equal(kernels.pad(x, [[1, 0], [0, 1]]), np.pad(x, [[1, 0], [0, 1]]))
        with pytest.raises((TypeError, ValueError)):
            kernels.slice(x, [1.0, 1], [2, 2])
        with pytest.raises((TypeError, ValueError)):
            kernels.slice(x, [True, 1], [2, 2])


def test_cached_calls_still_check_attrs_and_threads() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(kernels.reduce_sum(x, 1), x.sum(1))
    np.testing.assert_array_equal(kernels.reduce_sum(x, 1), x.sum(1))
    for bad in (5, -3, 1.0, True, "1", 2**70):
        with pytest.raises((TypeError, ValueError, opweave.errors.InvalidArgumentError)):
            kernels.reduce_sum(x, bad)
    np.testing.assert_array_equal(kernels.reduce_sum(x, 1, _num_threads=2), x.sum(1))
    for bad_threads in (0, -1, True, 1.5, "2"):
        with pytest.raises((TypeError, ValueError)):
            kernels.reduce_sum(x, 1, _num_threads=bad_threads)


def test_cached_calls_take_views_byte_swapped_and_foreign_operands() -> None:
    a = np.arange(12, dtype=np.float64)
    b = np.ones(6, dtype=np.float64)
    kernels.add(a[:6], b)
    kernels.add(a[:6], b)
    np.testing.assert_array_equal(kernels.add(a[::2], b), a[::2] + 1)
    np.testing.assert_array_equal(kernels.add(a[::-2], b), a[::-2] + 1)
    swapped = a[:6].astype(">f8")
    np.testing.assert_array_equal(kernels.add(swapped, b), a[:6] + 1)
    np.testing.assert_array_equal(kernels.add(a[:6].tolist(), b), a[:6] + 1)
    for bad in (a[:6].astype(np.complex128), np.array([object()] * 6), object()):
        with pytest.raises((TypeError, ValueError)):
            kernels.add(bad, b)
    with pytest.raises((TypeError, ValueError)):
        kernels.add(a[:6], b.astype(np.float32))
    # Kernel-time errors still come from the run of a cached plan.
    idx = np.array([0, 1], dtype=np.int32)
    kernels.gather(a, idx)
    kernels.gather(a, idx)
    with pytest.raises(opweave.errors.InvalidArgumentError):
        kernels.gather(a, np.array([0, 99], dtype=np.int32))


def test_cached_stub_calls_bind_arguments_as_the_whole_path_does() -> None:
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    want = np.cumsum(x, axis=1)
    for _ in range(2):  # the second round runs cached plans
        np.testing.assert_array_equal(kernels.cumsum(x, 1), want)
        np.testing.assert_array_equal(kernels.cumsum(x, axis=1), want)
        np.testing.assert_array_equal(kernels.cumsum(x=x, axis=1, reverse=False), want)
        np.testing.assert_array_equal(kernels.cumsum(x), np.cumsum(x, axis=0))
        reverse = np.flip(np.cumsum(np.flip(x, 1), axis=1), 1)
        np.testing.assert_array_equal(kernels.cumsum(x, 1, False, True), reverse)
        np.testing.assert_array_equal(kernels.sin(x, name="s"), np.sin(x))
    with pytest.raises(TypeError):
        kernels.cumsum(x, 1, axis=1)
    with pytest.raises(TypeError):
        kernels.cumsum(x, bogus=1)
    with pytest.raises(TypeError):
        kernels.cumsum()
    with pytest.raises(TypeError):
        kernels.sin(x, name=5)
    with pytest.raises(TypeError):
        kernels.cumsum(x, 1, False, False, "n", "extra")


_COMPARISONS = [
    ("equal", np.equal),
    ("not_equal", np.not_equal),
    ("less", np.less),
    ("less_equal", np.less_equal),
    ("greater", np.greater),
    ("greater_equal", np.greater_equal),
]


@pytest.mark.parametrize(("op", "ref"), _COMPARISONS)
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.int32, np.int64, np.int8, np.int16, np.uint8]
)
def test_flat_comparisons_match_numpy_at_every_vector_tail(op: str, ref: Any, dtype: Any) -> None:
    # Lengths around the 16- and 32-byte vector widths (the baseline and AVX2 loops), NaN among
    # the floats, and a one-element operand on either side.
    rng = np.random.default_rng(7)
    fn = getattr(kernels, op)
    for n in (1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129, 1000):
        a = rng.integers(-3, 4, n).astype(dtype)
        b = rng.integers(-3, 4, n).astype(dtype)
        if np.dtype(dtype).kind == "f":
            a[::5] = np.nan
            b[::7] = np.inf
        s = np.asarray(b[0])
        np.testing.assert_array_equal(fn(a, b), ref(a, b))
        np.testing.assert_array_equal(fn(a, s), ref(a, s))
        np.testing.assert_array_equal(fn(s, b), ref(s, b))
    big_a = rng.standard_normal(300_000).astype(np.float32).astype(dtype)
    big_b = rng.standard_normal(300_000).astype(np.float32).astype(dtype)
    one = fn(big_a, big_b, _num_threads=1)
    np.testing.assert_array_equal(one, ref(big_a, big_b))
    np.testing.assert_array_equal(fn(big_a, big_b, _num_threads=3), one)


def test_the_micro_kernel_ceiling_is_measured_and_checks_its_arguments() -> None:
    from opweave import _opweave_core as core

    # A measurement, so only its sign and scale are asserted: any CPU does more than 0.1 GFLOP/s
    # and no core does a thousand.
    for dtype in ("float32", "float64"):
        assert 0.1 < core.gemm_ceiling_gflops(dtype, 0.01) < 1000
    with pytest.raises(ValueError, match="dtype"):
        core.gemm_ceiling_gflops("int32", 0.01)
    with pytest.raises(ValueError, match="seconds"):
        core.gemm_ceiling_gflops("float32", 0.0)
