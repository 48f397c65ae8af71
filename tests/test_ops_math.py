"""The math, comparison and logic ops against NumPy, eagerly, across thread counts, and their
gradients against finite differences: one row per op (op_testing.py), then the edges of
TensorFlow's semantics (signs of floormod, round half to even, argmax ties and NaN, where with one
argument, ...) one test each."""

from __future__ import annotations

from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import given
from hypothesis import strategies as st
from op_testing import (
    FLOATS,
    INTS,
    REALS,
    SETTINGS,
    SMALL_INTS,
    OpCase,
    broadcastable,
    check_case,
    fixed,
    random_values,
    same_shape,
)

SIGNED_SMALL = (np.int8, np.int16)
HALF = (np.float16,)


def _like(fn: Any) -> Any:
    """A NumPy function whose result keeps the input's dtype (NumPy promotes some)."""

    def ref(x: np.ndarray, *rest: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = np.asarray(fn(x, *rest))
        return out if out.dtype == np.bool_ else out.astype(x.dtype)

    return ref


def _with_specials(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]
) -> list[np.ndarray]:
    """Random values with NaN, +-inf and +-0 sprinkled in (for the float predicates)."""
    out = []
    for s, d in zip(shapes, dtypes, strict=True):
        v = rng.uniform(-3, 3, size=s).astype(d)
        pick = rng.random(s)
        v = np.where(pick < 0.15, np.nan, v)
        v = np.where((pick >= 0.15) & (pick < 0.3), np.inf, v)
        v = np.where((pick >= 0.3) & (pick < 0.4), -np.inf, v)
        v = np.where((pick >= 0.4) & (pick < 0.45), -0.0, v)
        out.append(np.asarray(v, dtype=d))
    return out


def _unary_rows(
    op_type: str,
    fn: Any,
    ref: Any,
    dtypes: tuple[Any, ...],
    *,
    half: bool = True,
    **kwargs: Any,
) -> list[OpCase]:
    """A row for the op, and (for ops taking float16) a float16 row with float16's tolerance."""
    rows = [OpCase(op_type, fn, _like(ref), same_shape(), dtypes, **kwargs)]
    if half:
        extra = {k: v for k, v in kwargs.items() if k in ("domain", "values")}
        rows.append(
            OpCase(
                op_type,
                fn,
                _like(ref),
                same_shape(),
                HALF,
                rtol=2e-3,
                grad=False,
                id=f"{op_type}-f16",
                **extra,
            )
        )
    return rows


POSITIVE = (0.25, 4.0)


def _binary_rows(
    op_type: str, fn: Any, ref: Any, dtypes: tuple[Any, ...], *, half: bool = True, **kwargs: Any
) -> list[OpCase]:
    rows = [OpCase(op_type, fn, _like(ref), broadcastable(), dtypes, **kwargs)]
    if half:
        extra = {k: v for k, v in kwargs.items() if k in ("domain", "values")}
        rows.append(
            OpCase(
                op_type,
                fn,
                _like(ref),
                broadcastable(),
                HALF,
                rtol=2e-3,
                grad=False,
                id=f"{op_type}-f16",
                **extra,
            )
        )
    return rows


def _nonzero_divisor(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]
) -> list[np.ndarray]:
    """x anywhere, y away from 0 (and away from x / y near an integer for the gradient)."""
    d = np.dtype(dtypes[0])
    if d.kind == "f":
        x = rng.uniform(-20, 20, size=shapes[0]).astype(d)
        y = rng.uniform(0.5, 4, size=shapes[1]) * rng.choice([-1, 1], size=shapes[1])
        return [np.asarray(x, d), np.asarray(y, d)]
    lo = 0 if d.kind == "u" else -100
    x = rng.integers(lo, 100, size=shapes[0]).astype(d)
    y = rng.integers(1, 9, size=shapes[1]).astype(d)
    if d.kind != "u":
        y = y * rng.choice([-1, 1], size=shapes[1])
    return [np.asarray(x, d), np.asarray(y, d)]


def _tf_floormod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TensorFlow's FloorMod: C's fmod, moved by one divisor when the signs differ."""
    if x.dtype.kind != "f":
        return np.mod(x, y)
    t = np.fmod(x, y)
    return np.where((t != 0) & ((y < 0) != (t < 0)), t + y, t).astype(x.dtype)


def _int_power(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]
) -> list[np.ndarray]:
    """Integer bases and exponents 0..5 (negative exponents fail, as in TensorFlow)."""
    return [
        rng.integers(-5, 6, size=shapes[0]).astype(dtypes[0]),
        rng.integers(0, 6, size=shapes[1]).astype(dtypes[1]),
    ]


def _clip_values(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]
) -> list[np.ndarray]:
    """t, and bounds lo <= hi (each a scalar or t's shape)."""
    t = random_values(rng, shapes[0], dtypes[0], (-3.0, 3.0))
    a = random_values(rng, shapes[1], dtypes[1], (-2.0, 0.0))
    b = random_values(rng, shapes[2], dtypes[2], (0.0, 2.0))
    return [t, a, b]


def _clip_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    s = tuple(draw(st.integers(1, 5)) for _ in range(draw(st.integers(0, 3))))
    return [s, s if draw(st.booleans()) else (), s if draw(st.booleans()) else ()]


def _select_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    """Select's condition: a scalar, x's shape, or a vector along x's first dimension."""
    s = tuple(draw(st.integers(1, 5)) for _ in range(draw(st.integers(0, 3))))
    kind = draw(st.sampled_from(["same", "scalar", "rows"]))
    cond = () if kind == "scalar" else s[:1] if kind == "rows" and s else s
    return [cond, s, s]


def _select_ref(c: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if c.ndim == 1 and x.ndim > 1:
        c = c.reshape(c.shape + (1,) * (x.ndim - 1))
    return np.where(c, x, y)


def _argwhere(x: np.ndarray) -> np.ndarray:
    return np.argwhere(x).astype(np.int64)


def _axes(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    rank = len(shapes[0])
    if rank == 0 or draw(st.booleans()):
        return {"keepdims": draw(st.booleans())}
    axes = draw(st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank, min_size=1))
    return {"axis": axes, "keepdims": draw(st.booleans())}


def _np_reduce(fn: Any) -> Any:
    def ref(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        ax = None if axis is None else tuple(axis)
        return np.asarray(fn(x, axis=ax, keepdims=keepdims)).astype(x.dtype)

    return ref


def _one_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    rank = len(shapes[0])
    return {"axis": draw(st.integers(-rank, rank - 1))}


def _scan_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {
        **_one_axis(draw, shapes),
        "exclusive": draw(st.booleans()),
        "reverse": draw(st.booleans()),
    }


def _np_scan(fn: Any, identity: int) -> Any:
    def ref(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
        v = np.flip(x, axis) if reverse else x
        out = fn(v.astype(np.float64) if v.dtype.kind == "f" else v, axis=axis)
        if exclusive:
            first = np.full_like(np.take(out, [0], axis), identity)
            out = np.concatenate([first, np.delete(out, -1, axis)], axis)
        return (np.flip(out, axis) if reverse else out).astype(x.dtype)

    return ref


def _np_arg(fn: Any) -> Any:
    def ref(x: np.ndarray, axis: int) -> np.ndarray:
        return np.asarray(fn(x, axis=axis)).astype(np.int64)

    return ref


CASES = [
    *_unary_rows("Abs", ow.abs, np.abs, REALS + SIGNED_SMALL, grad2=True),
    *_unary_rows("Sign", ow.sign, np.sign, REALS + SIGNED_SMALL, grad2=True),
    *_unary_rows("Square", ow.square, np.square, REALS + SIGNED_SMALL + (np.uint8,), grad2=True),
    *_unary_rows("Sqrt", ow.sqrt, np.sqrt, FLOATS, domain=POSITIVE, grad2=True),
    *_unary_rows("Rsqrt", ow.rsqrt, lambda x: 1 / np.sqrt(x), FLOATS, domain=POSITIVE, grad2=True),
    *_unary_rows("Log", ow.log, np.log, FLOATS, domain=POSITIVE, grad2=True),
    *_unary_rows("Log1p", ow.log1p, np.log1p, FLOATS, domain=(-0.75, 3.0), grad2=True),
    *_unary_rows("Expm1", ow.expm1, np.expm1, FLOATS, grad2=True),
    *_unary_rows("Floor", ow.floor, np.floor, FLOATS),
    *_unary_rows("Ceil", ow.ceil, np.ceil, FLOATS),
    *_unary_rows("Round", ow.round, np.rint, FLOATS),
    *_unary_rows("Reciprocal", ow.reciprocal, np.reciprocal, FLOATS, domain=POSITIVE, grad2=True),
    *_unary_rows("Inv", ow.inv, np.reciprocal, FLOATS, domain=POSITIVE, grad2=True, half=False),
    *_unary_rows("Sin", ow.sin, np.sin, FLOATS, domain=(-10.0, 10.0), grad2=True),
    *_unary_rows("Cos", ow.cos, np.cos, FLOATS, domain=(-10.0, 10.0), grad2=True),
    *_unary_rows("Tan", ow.tan, np.tan, FLOATS, domain=(-1.4, 1.4), grad2=True),
    *_unary_rows("IsNan", ow.is_nan, np.isnan, FLOATS, grad=False, values=_with_specials),
    *_unary_rows("IsInf", ow.is_inf, np.isinf, FLOATS, grad=False, values=_with_specials),
    *_unary_rows("IsFinite", ow.is_finite, np.isfinite, FLOATS, grad=False, values=_with_specials),
    OpCase("LogicalNot", ow.logical_not, np.logical_not, same_shape(), (np.bool_,), grad=False),
    *_binary_rows("Pow", ow.pow, np.power, FLOATS, domain=POSITIVE, grad2=True),
    OpCase(
        "Pow",
        ow.pow,
        np.power,
        broadcastable(),
        INTS + SIGNED_SMALL,
        values=_int_power,
        id="Pow-int",
    ),
    *_binary_rows(
        "FloorMod",
        ow.floormod,
        _tf_floormod,
        REALS + SMALL_INTS,
        values=_nonzero_divisor,
        grad2=True,
    ),
    *_binary_rows(
        "SquaredDifference", ow.squared_difference, lambda x, y: np.square(x - y), REALS, grad2=True
    ),
    *_binary_rows("NotEqual", ow.not_equal, np.not_equal, REALS + SMALL_INTS, grad=False),
    OpCase(
        "NotEqual", ow.not_equal, np.not_equal, broadcastable(), (np.bool_,), id="NotEqual-bool"
    ),
    *_binary_rows("Less", ow.less, np.less, REALS + SMALL_INTS, grad=False),
    *_binary_rows("Greater", ow.greater, np.greater, REALS + SMALL_INTS, grad=False),
    OpCase("LogicalAnd", ow.logical_and, np.logical_and, broadcastable(), (np.bool_,)),
    OpCase("LogicalOr", ow.logical_or, np.logical_or, broadcastable(), (np.bool_,)),
    OpCase(
        "ClipByValue",
        ow.clip_by_value,
        lambda t, a, b: np.minimum(np.maximum(t, a), b).astype(t.dtype),
        _clip_shapes,
        REALS + SMALL_INTS + HALF,
        values=_clip_values,
        rtol=1e-3,
        grad2=True,
    ),
    OpCase(
        "Select",
        ow.where,
        _select_ref,
        _select_shapes,
        REALS + HALF,
        input_dtypes=lambda d: [np.bool_, d, d],
        threads=False,
        grad2=True,
    ),
    OpCase(
        "Prod",
        ow.reduce_prod,
        _np_reduce(np.prod),
        same_shape(),
        REALS + SMALL_INTS,
        domain=(0.5, 1.5),
        kwargs=_axes,
    ),
    OpCase(
        "Prod",
        ow.reduce_prod,
        _np_reduce(np.prod),
        same_shape(),
        HALF,
        domain=(0.5, 1.5),
        kwargs=_axes,
        rtol=4e-3,
        grad=False,
        id="Prod-f16",
    ),
    OpCase("Any", ow.reduce_any, _np_reduce(np.any), same_shape(), (np.bool_,), kwargs=_axes),
    OpCase("All", ow.reduce_all, _np_reduce(np.all), same_shape(), (np.bool_,), kwargs=_axes),
    OpCase(
        "ArgMax",
        ow.argmax,
        _np_arg(np.argmax),
        same_shape(min_rank=1),
        (*REALS, *SMALL_INTS, np.bool_, np.float16),
        kwargs=_one_axis,
    ),
    OpCase(
        "ArgMin",
        ow.argmin,
        _np_arg(np.argmin),
        same_shape(min_rank=1),
        (*REALS, *SMALL_INTS, np.bool_, np.float16),
        kwargs=_one_axis,
    ),
    OpCase(
        "Cumsum",
        ow.cumsum,
        _np_scan(np.cumsum, 0),
        same_shape(min_rank=1),
        REALS + SMALL_INTS,
        kwargs=_scan_args,
        grad2=True,
    ),
    OpCase(
        "Cumprod",
        ow.cumprod,
        _np_scan(np.cumprod, 1),
        same_shape(min_rank=1),
        REALS + SMALL_INTS,
        domain=(0.5, 1.5),
        kwargs=_scan_args,
        grad2=True,
    ),
    OpCase(
        "Cumsum",
        ow.cumsum,
        _np_scan(np.cumsum, 0),
        same_shape(min_rank=1),
        HALF,
        kwargs=_scan_args,
        rtol=4e-3,
        grad=False,
        id="Cumsum-f16",
    ),
    OpCase(
        "MatMul",
        ow.matmul,
        np.matmul,
        lambda draw: [(draw(st.integers(1, 6)), 4), (4, draw(st.integers(1, 6)))],
        INTS,
        threads=False,
        eager_name=None,  # opweave.kernels.matmul is NumPy's matmul on floats
        id="MatMul-int",
    ),
    OpCase(
        "BatchMatMulV2",
        ow.matmul,
        np.matmul,
        fixed((3, 2, 4), (1, 4, 5)),
        INTS,
        threads=False,
        eager_name=None,
        id="BMM-int",
    ),
    OpCase(
        "Where",
        ow.where,
        _argwhere,
        same_shape(min_rank=1),
        (np.bool_, *REALS, np.int8, np.float16),
        grad=False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
@SETTINGS
@given(data=st.data())
def test_op_matches_numpy_eagerly_across_threads_and_in_its_gradient(
    case: OpCase, data: st.DataObject
) -> None:
    check_case(case, data)


def _run(fetch: Any, feed: dict[Any, Any] | None = None) -> Any:
    with ow.Session() as s:
        return s.run(fetch, feed)


# -- unary edges ---------------------------------------------------------------------------------


def test_round_is_half_to_even_and_keeps_the_sign_of_zero() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6, 0.49999997, 8388609.0], np.float32)
    got = ow.kernels.round(x)
    np.testing.assert_array_equal(got, np.rint(x))
    assert np.signbit(got[3])


def test_round_of_an_integer_tensor_is_the_tensor_itself() -> None:
    with ow.Graph().as_default():
        x = ow.constant([3, -3])
        assert ow.round(x) is x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_functions_at_their_special_values(dtype: Any) -> None:
    inf, nan = np.inf, np.nan
    x = np.array([0.0, -0.0, inf, -inf, nan, -1.0, 1.0], dtype)
    k = ow.kernels
    with np.errstate(all="ignore"):
        for got, want in [
            (k.sqrt(x), np.sqrt(x)),
            (k.rsqrt(x), 1 / np.sqrt(x)),
            (k.log(x), np.log(x)),
            (k.log1p(x), np.log1p(x)),
            (k.expm1(x), np.expm1(x)),
            (k.floor(x), np.floor(x)),
            (k.ceil(x), np.ceil(x)),
            (k.sign(x), np.where(x == 0, 0.0, np.sign(x))),
            (k.reciprocal(x), 1 / x),
            (k.sin(x), np.sin(x)),
            (k.cos(x), np.cos(x)),
            (k.tan(x), np.tan(x)),
        ]:
            np.testing.assert_allclose(got, want.astype(dtype), rtol=2 * np.finfo(dtype).eps)
            real = ~np.isnan(want)  # a NaN's sign bit means nothing
            np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transcendentals_are_accurate_over_the_whole_range(dtype: Any) -> None:
    rng = np.random.default_rng(3)
    big = 700 if dtype == np.float64 else 87
    x = np.concatenate(
        [
            np.exp(rng.uniform(-big, big, 20000)),
            rng.uniform(-1e-6, 1e-6, 2000),
            np.array([np.finfo(dtype).tiny / 8, np.finfo(dtype).max]),
        ]
    ).astype(dtype)
    ulp = np.finfo(dtype).eps
    for name, fn in [("log", np.log), ("log1p", np.log1p), ("sqrt", np.sqrt)]:
        got = getattr(ow.kernels, name)(np.abs(x))
        want = fn(np.abs(x).astype(np.longdouble))
        err = np.abs((got - want) / want)
        assert np.nanmax(err[want != 0]) < 2 * ulp, name
    small = np.clip(x, -big, big) * np.sign(rng.uniform(-1, 1, x.size)).astype(dtype)
    for name, fn in [("expm1", np.expm1), ("exp", np.exp)]:
        got = getattr(ow.kernels, name)(small)
        want = fn(small.astype(np.longdouble))
        ok = np.isfinite(want) & (np.abs(want) > np.finfo(dtype).tiny)
        err = np.abs((got[ok] - want[ok]) / want[ok])
        assert err.max() < 3 * ulp, name
    angles = rng.uniform(-1e4, 1e4, 20000).astype(dtype)
    for name, fn in [("sin", np.sin), ("cos", np.cos)]:
        got = getattr(ow.kernels, name)(angles)
        want = fn(angles.astype(np.longdouble))
        assert np.max(np.abs(got - want)) < 2 * ulp, name


def test_float32_log_is_within_085_ulp_of_the_exact_log() -> None:
    # Every third float in [0.5, 2), where the reduction leaves k in {-1, 0, 1} and the error is
    # largest (0.84 ulp), and the same mantissas scaled far up and down (there k ln2 dominates).
    bits = np.arange(0x3F000000, 0x40000000, 3, dtype=np.uint32)
    x = bits.view(np.float32)
    for scale in (1.0, 2.0**-100, 2.0**90):
        xs = (x.astype(np.float64) * scale).astype(np.float32)
        got = ow.kernels.log(xs).astype(np.float64)
        want = np.log(xs.astype(np.float64))
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(got - want) / ulp) < 0.85, scale


def test_sin_and_cos_of_huge_float32_arguments_match_the_c_library() -> None:
    x = np.array([1e7, -3.3e20, 1e38, 2.0**20 + 1.0], np.float32)
    np.testing.assert_allclose(ow.kernels.sin(x), np.sin(x.astype(np.float64)), atol=1e-6)
    np.testing.assert_allclose(ow.kernels.cos(x), np.cos(x.astype(np.float64)), atol=1e-6)
    np.testing.assert_allclose(ow.kernels.tan(x), np.tan(x.astype(np.float64)), rtol=1e-6)


def test_float32_tan_is_within_an_ulp_next_to_its_poles() -> None:
    # The floats nearest the odd multiples of pi/2 below 2^20, and random angles: the quotient of
    # the reduced sine and cosine, in double, rounds to the float nearest tan(x) within an ulp.
    k = np.arange(-300000, 300000, 7)
    near = (k * (np.pi / 2)).astype(np.float32)
    x = np.concatenate(
        [
            near,
            np.nextafter(near, np.float32(np.inf)),
            np.nextafter(near, np.float32(-np.inf)),
            np.random.default_rng(5).uniform(-1e5, 1e5, 20000).astype(np.float32),
        ]
    )
    want = np.tan(x.astype(np.float64))
    got = ow.kernels.tan(x).astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 1.0


def test_integer_abs_and_square_wrap() -> None:
    x = np.array([-128, -3, 127], np.int8)
    np.testing.assert_array_equal(ow.kernels.abs(x), np.array([-128, 3, 127], np.int8))
    np.testing.assert_array_equal(ow.kernels.square(x), np.square(x))


def test_abs_and_invert_operators() -> None:
    with ow.Graph().as_default():
        x = ow.constant([-1.0, 2.0])
        b = ow.constant([True, False])
        assert abs(x).op.type == "Abs"
        assert (~b).op.type == "LogicalNot"
        got = _run([abs(x), ~b])
    np.testing.assert_array_equal(got[0], [1.0, 2.0])
    np.testing.assert_array_equal(got[1], [False, True])


def test_invert_of_a_number_tensor_is_a_type_error() -> None:
    with ow.Graph().as_default(), pytest.raises(TypeError, match="LogicalNot"):
        _ = ~ow.constant([1, 2])


def test_float_only_ops_reject_integers_at_build_time() -> None:
    with ow.Graph().as_default():
        for fn in (ow.sqrt, ow.log, ow.floor, ow.reciprocal, ow.is_nan):
            with pytest.raises(TypeError, match="not in list of allowed values"):
                fn(ow.constant([1, 2]))


# -- binary edges --------------------------------------------------------------------------------


def test_floormod_takes_the_sign_of_the_divisor_as_tensorflow() -> None:
    got = ow.kernels.floormod(np.array([-7, 7, -7, 7]), np.array([2, -2, -2, 2]))
    np.testing.assert_array_equal(got, [1, -1, -1, 1])
    x = np.array([-7.0, 7.0, -7.0, 7.0, -0.0, 4.0, 1.0, -1.0, np.inf, 5.0, 1.0])
    y = np.array([2.0, -2.0, -2.0, 2.0, 3.0, -2.0, np.inf, np.inf, 2.0, -np.inf, 0.0])
    for dtype in (np.float32, np.float64):
        got = ow.kernels.floormod(x.astype(dtype), y.astype(dtype))
        want = [1.0, -1.0, -1.0, 1.0, -0.0, 0.0, 1.0, np.inf, np.nan, -np.inf, np.nan]
        np.testing.assert_array_equal(got, np.array(want, dtype))
        np.testing.assert_array_equal(np.signbit(got[:6]), [False, True, True, False, True, False])


def test_floormod_of_huge_quotients_is_exact() -> None:
    x = np.array([2.0**30, -(2.0**30), 3.0e38, 1e10], np.float32)
    y = np.array([3.0, 3.0, 7.0, -0.3], np.float32)
    np.testing.assert_array_equal(ow.kernels.floormod(x, y), _tf_floormod(x, y))


def test_floormod_of_the_lowest_integer_by_minus_one_is_zero() -> None:
    low = np.array([np.iinfo(np.int32).min], np.int32)
    np.testing.assert_array_equal(ow.kernels.floormod(low, np.array([-1], np.int32)), [0])


@pytest.mark.parametrize("fn", [ow.floormod, ow.floordiv])
def test_integer_division_by_zero_is_invalid_argument(fn: Any) -> None:
    with ow.Graph().as_default():
        z = fn(ow.constant([1, 2]), ow.constant([0, 1]))
        with pytest.raises(ow.errors.InvalidArgumentError, match="Integer division by zero"):
            _run(z)


def test_integer_pow_by_a_negative_exponent_is_invalid_argument() -> None:
    with ow.Graph().as_default():
        z = ow.pow(ow.constant([2, 3]), ow.constant([-1, 2]))
        with pytest.raises(ow.errors.InvalidArgumentError, match="negative integer powers"):
            _run(z)


def test_integer_pow_wraps() -> None:
    got = ow.kernels.pow(np.array([2, -3, 0], np.int32), np.array([31, 3, 0], np.int32))
    np.testing.assert_array_equal(got, [-(2**31), -27, 1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_of_negative_bases_zeros_and_infinities_follows_c(dtype: Any) -> None:
    inf, nan = np.inf, np.nan
    x = np.array([-2.0, -2.0, -8.0, 0.0, -0.0, 0.0, 1.0, nan, -1.0, -1.0, 0.5, -inf, -inf, inf])
    y = np.array([3.0, 2.0, 1 / 3, -1.0, -1.0, 0.0, nan, 0.0, inf, -inf, -inf, 3.0, 2.0, -1.0])
    got = ow.kernels.pow(x.astype(dtype), y.astype(dtype))
    want = [-8.0, 4.0, nan, inf, -inf, 1.0, 1.0, 1.0, 1.0, 1.0, inf, -inf, inf, 0.0]
    np.testing.assert_array_equal(got, np.array(want, dtype))


def test_pow_of_float32_is_within_half_an_ulp_or_so() -> None:
    rng = np.random.default_rng(5)
    x = np.exp(rng.uniform(-20, 20, 50000)).astype(np.float32)
    y = rng.uniform(-4, 4, 50000).astype(np.float32)
    want = np.power(x.astype(np.float64), y.astype(np.float64))
    ok = (want > 1e-37) & (want < 3e38)
    got = ow.kernels.pow(x, y).astype(np.float64)
    err = np.abs(got[ok] - want[ok]) / want[ok]
    assert err.max() < 0.6 * np.finfo(np.float32).eps


def test_pow_gradient_is_zero_in_the_exponent_for_non_positive_bases() -> None:
    with ow.Graph().as_default():
        x = ow.constant([-2.0, 0.0, 2.0])
        y = ow.constant([2.0, 2.0, 2.0])
        gx, gy = ow.gradients(ow.reduce_sum(ow.pow(x, y)), [x, y])
        got = _run([gx, gy])
    np.testing.assert_allclose(got[0], [-4.0, 0.0, 4.0])
    np.testing.assert_allclose(got[1], [0.0, 0.0, 4.0 * np.log(2.0)])


def test_comparison_operators_build_less_and_greater_and_equality_stays_identity() -> None:
    with ow.Graph().as_default():
        a = ow.constant([1.0, 2.0, 3.0])
        assert (a < 2).op.type == "Less"
        assert (a > 2).op.type == "Greater"
        assert (a > 2).op.type == "Greater"  # Python reflects the comparison
        b = ow.constant([1.0, 2.0, 3.0])
        assert (a == b) is False
        assert (a != b) is True
        assert a == a
        assert {a: 1, b: 2}[a] == 1
        got = _run([a < 2, a > 2])
    np.testing.assert_array_equal(got[0], [True, False, False])
    np.testing.assert_array_equal(got[1], [False, False, True])


def test_arithmetic_operators_mod_and_pow() -> None:
    with ow.Graph().as_default():
        a = ow.constant([-7.0, 7.0])
        m, p, rp = a % 2, a**2, 2**a
        assert (m.op.type, p.op.type, rp.op.type) == ("FloorMod", "Pow", "Pow")
        assert m.op.name == "mod"
        assert p.op.name == "pow"
        got = _run([m, p, rp])
    np.testing.assert_array_equal(got[0], [1.0, 1.0])
    np.testing.assert_array_equal(got[1], [49.0, 49.0])
    np.testing.assert_allclose(got[2], [2.0**-7, 2.0**7])


def test_logical_operators_on_bool_tensors() -> None:
    with ow.Graph().as_default():
        a = ow.constant([True, True, False, False])
        b = ow.constant([True, False, True, False])
        got = _run([a & b, a | b, a ^ b, ow.logical_xor(a, b)])
    np.testing.assert_array_equal(got[0], [True, False, False, False])
    np.testing.assert_array_equal(got[1], [True, True, True, False])
    np.testing.assert_array_equal(got[2], [False, True, True, False])
    np.testing.assert_array_equal(got[3], got[2])


def test_logical_operators_on_numbers_are_type_errors() -> None:
    with ow.Graph().as_default(), pytest.raises(TypeError, match="LogicalAnd"):
        _ = ow.constant([1, 2]) & ow.constant([1, 0])


# -- where, select, clip -------------------------------------------------------------------------


def test_where_with_the_condition_alone_lists_coordinates_of_true_elements() -> None:
    with ow.Graph().as_default():
        c = ow.placeholder(ow.bool, shape=[None, None])
        w = ow.where(c)
        assert w.dtype == ow.int64
        assert w.op.type == "Where"
        assert w.shape.as_list() == [None, 2]
        got = _run(w, {c: [[True, False], [False, True]]})
    np.testing.assert_array_equal(got, [[0, 0], [1, 1]])
    np.testing.assert_array_equal(ow.kernels.where(np.array([1.0, 0.0, np.nan, -0.0])), [[0], [2]])
    assert ow.kernels.where(np.zeros((3, 0), bool)).shape == (0, 2)


def test_where_of_a_large_condition_is_the_same_on_any_thread_count() -> None:
    c = np.random.default_rng(0).random((300, 1000)) < 0.3
    one = ow.kernels.where(c, _num_threads=1)
    three = ow.kernels.where(c, _num_threads=3)
    np.testing.assert_array_equal(one, np.argwhere(c))
    np.testing.assert_array_equal(one, three)


def test_where_of_a_scalar_condition_is_invalid_argument() -> None:
    with ow.Graph().as_default():
        w = ow.where(ow.constant(True))
        with pytest.raises(ow.errors.InvalidArgumentError, match="Unhandled input dimensions: 0"):
            _run(w)


def test_where_with_one_of_x_and_y_is_a_value_error() -> None:
    with ow.Graph().as_default(), pytest.raises(ValueError, match="both be non-None"):
        ow.where([True], x=[1])


def test_where_picks_whole_rows_by_a_vector_and_rejects_broadcasting() -> None:
    x, y = [[1, 2], [3, 4]], [[5, 6], [7, 8]]
    with ow.Graph().as_default():
        got = _run([ow.where([True, False], x, y), ow.where(True, x, y)])
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
            ow.where([True, False, True], x, y)
        with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
            ow.where([[True], [False]], x, y)
        np.testing.assert_array_equal(_run(ow.where_v2([[True], [False]], x, y)), [[1, 2], [7, 8]])
    np.testing.assert_array_equal(got[0], [[1, 2], [7, 8]])
    np.testing.assert_array_equal(got[1], x)


def test_select_gradient_goes_to_the_chosen_branch() -> None:
    with ow.Graph().as_default():
        x = ow.constant([[1.0, 2.0], [3.0, 4.0]])
        y = ow.constant([[5.0, 6.0], [7.0, 8.0]])
        gx, gy = ow.gradients(ow.reduce_sum(ow.where([True, False], x, y)), [x, y])
        got = _run([gx, gy])
    np.testing.assert_array_equal(got[0], [[1, 1], [0, 0]])
    np.testing.assert_array_equal(got[1], [[0, 0], [1, 1]])


def test_clip_by_value_gradient_passes_inside_the_range_bounds_included() -> None:
    with ow.Graph().as_default():
        t = ow.constant([-2.0, 0.0, 0.5, 1.0, 3.0])
        lo, hi = ow.constant(0.0), ow.constant(1.0)
        y = ow.clip_by_value(t, lo, hi)
        assert y.op.type == "ClipByValue"
        gt, glo, ghi = ow.gradients(ow.reduce_sum(y), [t, lo, hi])
        got = _run([y, gt, glo, ghi])
    np.testing.assert_array_equal(got[0], [0.0, 0.0, 0.5, 1.0, 1.0])
    np.testing.assert_array_equal(got[1], [0.0, 1.0, 1.0, 1.0, 0.0])
    assert got[2] == 1.0
    assert got[3] == 1.0


def test_clip_by_value_keeps_nan_and_rejects_bounds_that_would_grow_t() -> None:
    np.testing.assert_array_equal(
        ow.kernels.clip_by_value(np.array([np.nan, 1.0], np.float32), 0.0, 0.5), [np.nan, 0.5]
    )
    with ow.Graph().as_default():
        t = ow.placeholder(ow.float32, [3])
        with pytest.raises(ValueError, match="broadcast"):
            ow.clip_by_value(t, ow.placeholder(ow.float32, [2, 1]), 5.0)
        rows = ow.clip_by_value(ow.placeholder(ow.float32, [2, 3]), [[0.0], [1.0]], 5.0)
        assert rows.shape.as_list() == [2, 3]


# -- reductions, arg, scans ----------------------------------------------------------------------


def test_argmax_ties_pick_the_first_index_and_nan_never_wins() -> None:
    k, nan, inf = ow.kernels, np.nan, np.inf
    assert k.argmax(np.array([3.0, 1.0, 3.0])) == 0
    assert k.argmin(np.array([1.0, 1.0, 3.0])) == 0
    assert k.argmax(np.array([1.0, nan, 3.0])) == 2
    assert k.argmax(np.array([nan, 5.0, nan])) == 1
    assert k.argmin(np.array([1.0, nan, 0.0])) == 2
    assert k.argmin(np.array([nan, 2.0, nan, 1.0])) == 3
    # Nothing beats the starting value: TensorFlow's CPU kernel gives 0.
    assert k.argmax(np.array([nan, nan])) == 0
    assert k.argmax(np.array([-inf, -inf])) == 0
    assert k.argmin(np.array([inf, inf])) == 0


def test_argmax_of_long_rows_is_the_same_on_any_thread_count() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 1000, size=(3, 300_001)).astype(np.float32)
    x[1, 250_000] = x[1, 5] = 5000.0  # a tie across blocks: the first wins
    x[2, :] = np.nan
    x[2, 200_000] = 1.0
    for fn, ref in ((ow.kernels.argmax, np.argmax), (ow.kernels.argmin, np.argmin)):
        one = fn(x, axis=1, _num_threads=1)
        three = fn(x, axis=1, _num_threads=3)
        np.testing.assert_array_equal(one, three)
        np.testing.assert_array_equal(one[:2], ref(x[:2], axis=1))
        assert one[2] == 200_000
    np.testing.assert_array_equal(
        ow.kernels.argmax(x[:2].T, axis=0, _num_threads=3), np.argmax(x[:2], axis=1)
    )


def test_argmax_arguments_as_tensorflow_1() -> None:
    x = np.array([[1, 5], [7, 2]])
    np.testing.assert_array_equal(ow.kernels.argmax(x), [1, 0])  # axis defaults to 0
    np.testing.assert_array_equal(ow.kernels.argmax(x, dimension=1), [1, 0])
    np.testing.assert_array_equal(ow.kernels.arg_min(x, 1), [0, 1])
    with ow.Graph().as_default():
        p = ow.placeholder(ow.float32, [2, 3])
        assert ow.argmax(p, 1).dtype == ow.int64
        assert ow.argmax(p, 1, output_type=ow.int32).dtype == ow.int32
        assert ow.arg_max(p, 0).shape.as_list() == [3]
        with pytest.raises(ValueError, match="both 'axis' and 'dimension'"):
            ow.argmax(p, axis=0, dimension=1)
        with pytest.raises(ValueError, match=r"Expected dimension in the range \[-2, 2\)"):
            ow.argmax(p, 2)
        with pytest.raises(TypeError, match="output_type"):
            ow.argmin(p, 0, output_type=ow.int16)


def test_argmax_over_an_empty_axis_is_invalid_argument() -> None:
    with ow.Graph().as_default():
        a = ow.argmax(ow.placeholder(ow.float32, [None, 3]), 0)
        with pytest.raises(ow.errors.InvalidArgumentError, match="Reduction axis 0 is empty"):
            _run(a, {a.op.inputs[0]: np.zeros((0, 3), np.float32)})
    assert ow.kernels.argmax(np.zeros((3, 0)), axis=0).shape == (0,)


def test_reduce_logsumexp_is_stable_and_handles_infinite_and_empty_rows() -> None:
    inf, nan = np.inf, np.nan
    x = np.array([[-inf, -inf], [1.0, 2.0], [inf, 1.0], [nan, 1.0], [1000.0, 1000.0]])
    got = ow.kernels.reduce_logsumexp(x, axis=1)
    want = [-inf, np.logaddexp(1.0, 2.0), inf, nan, 1000.0 + np.log(2.0)]
    np.testing.assert_allclose(got, want)
    np.testing.assert_array_equal(ow.kernels.reduce_logsumexp(np.zeros((2, 0)), axis=1), [-inf] * 2)
    assert ow.kernels.reduce_logsumexp(np.float32([[1.0, 2.0]]), keepdims=True).shape == (1, 1)


def test_reduce_logsumexp_gradient_is_the_softmax() -> None:
    with ow.Graph().as_default():
        x = ow.constant([[1.0, 2.0, 3.0], [-1.0, 0.0, 50.0]], ow.float64)
        y = ow.reduce_logsumexp(x, axis=1)
        assert y.op.type == "Add"
        assert y.op.name.startswith("ReduceLogSumExp")
        (g,) = ow.gradients(ow.reduce_sum(y), x)
        got = _run(g)
    v = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 50.0]])
    e = np.exp(v - v.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True))


def test_reduce_prod_gradient_with_zeros_in_the_input() -> None:
    x0 = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    want = {
        1: [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [8.0, 4.0, 2.0]],
        None: np.zeros((3, 3)),
    }
    with ow.Graph().as_default():
        x = ow.constant(x0)
        for axis, w in want.items():
            (g,) = ow.gradients(ow.reduce_prod(x, axis), x)
            np.testing.assert_allclose(_run(g), w)
        (g,) = ow.gradients(ow.reduce_prod(x, [0, 1]), x)
        np.testing.assert_allclose(_run(g), np.zeros((3, 3)))


def test_reduce_prod_gradient_over_axes_known_only_at_run_time() -> None:
    x0 = np.random.default_rng(2).uniform(0.5, 2.0, (2, 3, 4))
    with ow.Graph().as_default():
        x = ow.constant(x0)
        axes = ow.placeholder(ow.int32, [None])
        (dynamic,) = ow.gradients(ow.reduce_sum(ow.reduce_prod(x, axes)), x)
        (static,) = ow.gradients(ow.reduce_sum(ow.reduce_prod(x, [2, 0])), x)
        got = _run([dynamic, static], {axes: [2, 0]})
    np.testing.assert_allclose(got[0], got[1])


def test_small_integer_reductions_wrap_like_tensorflow_and_means_do_not_overflow() -> None:
    k = ow.kernels
    x = np.array([100, 100, 100], np.int8)
    assert k.reduce_sum(x) == 44
    assert k.reduce_prod(x) == np.prod(x, dtype=np.int8)
    assert k.reduce_mean(x) == 100
    assert k.reduce_max(np.array([3, 200], np.uint8)) == 200
    assert k.reduce_mean(np.array([2**30] * 3, np.int32)) == 2**30
    assert k.reduce_mean(np.array([-7, 0], np.int8)) == -3


def test_empty_reductions_give_the_identities() -> None:
    k = ow.kernels
    np.testing.assert_array_equal(k.reduce_prod(np.zeros((2, 0)), axis=1), [1.0, 1.0])
    np.testing.assert_array_equal(k.reduce_any(np.zeros((2, 0), bool), axis=1), [False] * 2)
    np.testing.assert_array_equal(k.reduce_all(np.zeros((2, 0), bool), axis=1), [True] * 2)


def test_cumsum_and_cumprod_flags() -> None:
    k = ow.kernels
    x = np.array([1, 2, 3])
    np.testing.assert_array_equal(k.cumsum(x), [1, 3, 6])
    np.testing.assert_array_equal(k.cumsum(x, exclusive=True), [0, 1, 3])
    np.testing.assert_array_equal(k.cumsum(x, reverse=True), [6, 5, 3])
    np.testing.assert_array_equal(k.cumsum(x, exclusive=True, reverse=True), [5, 3, 0])
    np.testing.assert_array_equal(k.cumprod(x, exclusive=True), [1, 1, 2])
    np.testing.assert_array_equal(k.cumprod(x, exclusive=True, reverse=True), [6, 3, 1])
    np.testing.assert_array_equal(k.cumsum(np.array([100, 100], np.int8)), [100, -56])
    with ow.Graph().as_default(), pytest.raises(ValueError, match="Expected scan axis"):
        ow.cumsum(ow.constant([[1, 2]]), 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_scans_of_long_rows_are_the_same_on_any_thread_count(dtype: Any) -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, size=(2, 200_003)).astype(dtype)
    if x.dtype.kind == "f":
        x = rng.uniform(0.999, 1.001, size=x.shape).astype(dtype)
    for fn, ref in ((ow.kernels.cumsum, np.cumsum), (ow.kernels.cumprod, np.cumprod)):
        for flags in ({}, {"exclusive": True}, {"reverse": True}):
            one = fn(x, axis=1, **flags, _num_threads=1)
            three = fn(x, axis=1, **flags, _num_threads=3)
            np.testing.assert_array_equal(one, three)
        want = ref(x.astype(np.float64) if x.dtype.kind == "f" else x, axis=1).astype(dtype)
        np.testing.assert_allclose(fn(x, axis=1), want, rtol=1e-3 if dtype == np.float32 else 1e-9)


# -- matmul --------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["transpose", "adjoint"])
def test_batch_matmul_with_transposed_operands_as_tensorflow_1(flag: str) -> None:
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 5, 6))
    with ow.Graph().as_default():
        for ta in (False, True):
            for tb in (False, True):
                x = ow.constant(a.transpose(0, 2, 1) if ta else a)
                y = ow.constant(b.transpose(0, 2, 1) if tb else b)
                z = ow.matmul(x, y, **{f"{flag}_a": ta, f"{flag}_b": tb})
                assert z.op.type == "BatchMatMulV2"
                assert z.shape.as_list() == [3, 4, 6]
                np.testing.assert_allclose(_run(z), a @ b)
        with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a"):
            ow.matmul(ow.constant(a), ow.constant(a), transpose_a=True, adjoint_a=True)


def test_matmul_of_a_matrix_and_a_batch_broadcasts_and_differentiates() -> None:
    rng = np.random.default_rng(7)
    a, w = rng.standard_normal((3, 4, 5)), rng.standard_normal((5, 2))
    with ow.Graph().as_default():
        x, y = ow.constant(a), ow.constant(w)
        z = ow.matmul(x, y)
        gx, gy = ow.gradients(ow.reduce_sum(z), [x, y])
        got = _run([z, gx, gy])
    np.testing.assert_allclose(got[0], a @ w)
    np.testing.assert_allclose(got[1], np.broadcast_to(w.sum(axis=1), a.shape))
    np.testing.assert_allclose(got[2], np.broadcast_to(a.sum(axis=(0, 1))[:, None], w.shape))


def test_integer_matmul_wraps() -> None:
    a = np.array([[2**20, 1]], np.int32)
    b = np.array([[2**12], [3]], np.int32)
    with ow.Graph().as_default():
        got = _run(ow.matmul(a, b))
    np.testing.assert_array_equal(got, (a.astype(np.int64) @ b).astype(np.int32))


def test_float16_gradients_run_through_float32_kernels() -> None:
    x0 = np.array([1.0, 2.0, 0.5], np.float16)
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float16, [3])
        # Two paths from x to the loss: their gradients meet in an AddN.
        (g,) = ow.gradients(ow.reduce_sum(ow.sqrt(x) * ow.log(x)), x)
        got = _run(g, {x: x0})
    v = x0.astype(np.float64)
    want = np.log(v) / (2 * np.sqrt(v)) + np.sqrt(v) / v
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=2e-3)


def test_ops_computed_into_their_input_buffer_keep_the_library_fallbacks() -> None:
    # Huge sin arguments and floormod quotients take the C library; an intermediate input's buffer
    # may receive the result, so the range must be read before it is overwritten.
    x0 = np.array([1e7, 3.0e20, 0.5, -1e30] * 2048, np.float32)
    y0 = np.array([3.0, 7.0, 0.25, -0.3] * 2048, np.float32)
    with ow.Graph().as_default():
        x, y = ow.placeholder(ow.float32, x0.shape), ow.placeholder(ow.float32, y0.shape)
        got = _run([ow.sin(x * 1.0), ow.cos(x * 1.0), ow.floormod(x * 1.0, y)], {x: x0, y: y0})
    np.testing.assert_allclose(got[0], np.sin(x0.astype(np.float64)), atol=1e-6)
    np.testing.assert_allclose(got[1], np.cos(x0.astype(np.float64)), atol=1e-6)
    np.testing.assert_array_equal(got[2], _tf_floormod(x0, y0))


@st.composite
def _broadcast_pair_with_unknowns(draw: st.DrawFn) -> tuple[Any, ...]:
    """Two shapes that broadcast, and each with some dimensions hidden (None) from the graph."""
    rank = draw(st.integers(1, 3))
    out = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    shapes = []
    for _ in range(2):
        r = draw(st.integers(0, rank))
        shapes.append(tuple(draw(st.sampled_from([d, 1])) for d in out[rank - r :]))
    hidden = [tuple(None if draw(st.booleans()) else d for d in s) for s in shapes]
    return shapes[0], shapes[1], hidden[0], hidden[1]


@SETTINGS
@given(pair=_broadcast_pair_with_unknowns(), which=st.sampled_from(["add", "multiply", "maximum"]))
def test_broadcast_gradients_with_unknown_dimensions_match_the_static_ones(
    pair: tuple[Any, ...], which: str
) -> None:
    # With every dimension known, the reduction axes of a broadcast gradient are decided in Python;
    # hidden dimensions leave some of them to BroadcastGradientArgs at run time. Both must agree.
    sx, sy, hx, hy = pair
    rng = np.random.default_rng(len(sx) * 7 + len(sy))
    xv, yv = rng.standard_normal(sx), rng.standard_normal(sy)
    out_shape = np.broadcast_shapes(sx, sy)
    v = rng.standard_normal(out_shape)
    results = []
    for shx, shy in ((sx, sy), (hx, hy)):
        with ow.Graph().as_default(), ow.Session() as sess:
            x = ow.placeholder(ow.float64, shape=shx)
            y = ow.placeholder(ow.float64, shape=shy)
            z = getattr(ow, which)(x, y)
            gx, gy = ow.gradients(ow.reduce_sum(z * v), [x, y])
            results.append(sess.run([gx, gy], {x: xv, y: yv}))
    (sgx, sgy), (hgx, hgy) = results
    assert sgx.shape == sx
    assert sgy.shape == sy
    np.testing.assert_allclose(hgx, sgx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hgy, sgy, rtol=1e-12, atol=1e-12)
    if which == "add":  # each input's gradient is v summed over the axes it was broadcast along
        lead = len(out_shape) - len(sx)
        want = v.sum(axis=tuple(range(lead))) if lead else v
        want = want.sum(axis=tuple(i for i, d in enumerate(sx) if d == 1), keepdims=True)
        np.testing.assert_allclose(sgx, want.reshape(sx), rtol=1e-12, atol=1e-12)
