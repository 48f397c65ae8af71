"""The core ops (arithmetic, reductions, matmul, shapes, casts) against NumPy, eagerly, across
thread counts, and their gradients against finite differences: one row per op (op_testing.py)."""

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
    OpCase,
    broadcastable,
    check_case,
    fixed,
    same_shape,
)


def _axes(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    rank = len(shapes[0])
    if rank == 0 or draw(st.booleans()):
        return {"keepdims": draw(st.booleans())}
    axes = draw(st.lists(st.integers(-rank, rank - 1), unique_by=lambda a: a % rank, min_size=1))
    return {"axis": axes, "keepdims": draw(st.booleans())}


def _np_reduce(fn: Any) -> Any:
    def ref(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
        ax = None if axis is None else tuple(axis)
        out = fn(x, axis=ax, keepdims=keepdims)
        return (
            np.asarray(out, dtype=x.dtype)
            if x.dtype.kind == "f"
            else np.asarray(out).astype(x.dtype)
        )

    return ref


def _int_mean(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    axis = None if axis is None else tuple(axis)
    if x.dtype.kind == "f":
        return np.mean(x, axis=axis, keepdims=keepdims).astype(x.dtype)
    s = np.sum(x.astype(np.int64), axis=axis, keepdims=keepdims)
    n = x.size // max(np.asarray(s).size, 1)
    return np.trunc(s / n).astype(x.dtype)


def _matmul_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    return [(m, k), (k, n)]


def _batch_matmul_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    m, k, n, b = (draw(st.integers(1, 4)) for _ in range(4))
    return [(b, m, k), (1, k, n) if draw(st.booleans()) else (k, n)]


def _nonzero(rng: np.random.Generator, shapes: Any, dtypes: Any) -> list[np.ndarray]:
    out = []
    for s, d in zip(shapes, dtypes, strict=True):
        v = rng.integers(-20, 20, size=s).astype(d)
        out.append(np.where(v == 0, 3, v).astype(d) if len(out) else v)
    return out


def _floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.floor_divide(x, y).astype(x.dtype)


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":
        return (x / y).astype(x.dtype)
    return np.trunc(x / y).astype(x.dtype)


def _reshape_case(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    n = int(np.prod(shapes[0]))
    target = [n] if draw(st.booleans()) else [-1]
    return {"shape": target + ([1] if draw(st.booleans()) else [])}


def _perm(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {"perm": draw(st.permutations(range(len(shapes[0]))))}


CASES = [
    OpCase("Add", ow.add, np.add, broadcastable(), REALS, grad2=True),
    OpCase(
        "AddV2",
        lambda x, y: ow.ops.math_ops._ADD_V2(x, y),
        np.add,
        broadcastable(),
        REALS,
        eager_name=None,
    ),
    OpCase("Sub", ow.subtract, np.subtract, broadcastable(), REALS, grad2=True),
    OpCase("Mul", ow.multiply, np.multiply, broadcastable(), REALS, grad2=True),
    OpCase("RealDiv", ow.realdiv, np.divide, broadcastable(), FLOATS, domain=(0.5, 3), grad2=True),
    OpCase("FloorDiv", ow.floordiv, _floor_div, broadcastable(), INTS, values=_nonzero, grad=False),
    OpCase(
        "Div",
        lambda x, y: ow.ops.math_ops._DIV(x, y),
        _trunc_div,
        broadcastable(),
        INTS,
        values=_nonzero,
        eager_name=None,
        id="Div",
    ),
    OpCase("Maximum", ow.maximum, np.maximum, broadcastable(), REALS),
    OpCase("Minimum", ow.minimum, np.minimum, broadcastable(), REALS),
    OpCase("Neg", ow.negative, np.negative, same_shape(), REALS, grad2=True),
    OpCase("Exp", ow.exp, np.exp, same_shape(), FLOATS, grad2=True),
    OpCase("Tanh", ow.tanh, np.tanh, same_shape(), FLOATS, rtol=1e-5, grad2=True),
    OpCase(
        "Sigmoid",
        ow.sigmoid,
        lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype),
        same_shape(),
        FLOATS,
        grad2=True,
    ),
    OpCase("Relu", ow.nn.relu, lambda x: np.maximum(x, 0).astype(x.dtype), same_shape(), REALS),
    OpCase(
        "AddN",
        lambda *xs: ow.add_n(list(xs)),
        lambda *xs: sum(xs[1:], xs[0]),
        same_shape(3),
        REALS,
        eager_name=None,
    ),
    OpCase("Sum", ow.reduce_sum, _np_reduce(np.sum), same_shape(), REALS, kwargs=_axes),
    OpCase("Mean", ow.reduce_mean, _int_mean, same_shape(), REALS, kwargs=_axes),
    OpCase("Max", ow.reduce_max, _np_reduce(np.max), same_shape(), REALS, kwargs=_axes),
    OpCase("Min", ow.reduce_min, _np_reduce(np.min), same_shape(), REALS, kwargs=_axes),
    # Thread determinism of matmul has its own tests (test_kernels.py).
    OpCase(
        "MatMul",
        ow.matmul,
        np.matmul,
        _matmul_shapes,
        FLOATS,
        rtol=1e-4,
        grad2=True,
        threads=False,
    ),
    OpCase(
        "BatchMatMulV2",
        ow.matmul,
        np.matmul,
        _batch_matmul_shapes,
        FLOATS,
        rtol=1e-4,
        threads=False,
        id="BMM",
    ),
    OpCase(
        "Reshape",
        ow.reshape,
        lambda x, shape: x.reshape(shape),
        same_shape(),
        REALS,
        kwargs=_reshape_case,
    ),
    OpCase(
        "Transpose",
        ow.transpose,
        lambda x, perm: np.transpose(x, perm),
        same_shape(),
        REALS,
        kwargs=_perm,
    ),
    OpCase(
        "Cast",
        lambda x: ow.cast(x, ow.float64),
        lambda x: x.astype(np.float64),
        same_shape(),
        (np.float32, np.int32, np.int64, np.int8, np.uint8, np.int16),
        eager_name=None,
    ),
    OpCase("Identity", ow.identity, lambda x: x, same_shape(), REALS),
    OpCase("StopGradient", ow.stop_gradient, lambda x: x, same_shape(), REALS, grad=False),
    OpCase(
        "Shape", ow.shape, lambda x: np.array(x.shape, np.int32), same_shape(), REALS, grad=False
    ),
    OpCase("Size", ow.size, lambda x: np.array(x.size, np.int32), same_shape(), REALS, grad=False),
    OpCase("Rank", ow.rank, lambda x: np.array(x.ndim, np.int32), same_shape(), REALS, grad=False),
    OpCase(
        "ZerosLike",
        ow.zeros_like,
        np.zeros_like,
        same_shape(),
        REALS,
        grad=False,
        eager_name="zeros_like",
    ),
    OpCase("OnesLike", ow.ones_like, np.ones_like, same_shape(), REALS, grad=False),
    OpCase(
        "Fill",
        lambda v: ow.fill([2, 3], v),
        lambda v: np.full((2, 3), v, v.dtype),
        fixed(()),
        REALS,
        eager_name=None,
    ),
    OpCase(
        "BroadcastTo",
        lambda x: ow.broadcast_to(x, [2, *x.shape.as_list()]),
        lambda x: np.broadcast_to(x, (2, *x.shape)).copy(),
        same_shape(),
        REALS,
        eager_name=None,
    ),
    OpCase("Equal", ow.equal, np.equal, broadcastable(), REALS, grad=False),
    OpCase("GreaterEqual", ow.greater_equal, np.greater_equal, broadcastable(), REALS, grad=False),
    OpCase("LessEqual", ow.less_equal, np.less_equal, broadcastable(), REALS, grad=False),
    OpCase(
        "SelectV2",
        ow.select_v2,
        np.where,
        broadcastable(3),
        FLOATS,
        input_dtypes=lambda d: [np.bool_, d, d],
    ),
    OpCase(
        "PlaceholderWithDefault",
        lambda x: ow.placeholder_with_default(x, x.shape) * 1,
        lambda x: x,
        same_shape(),
        FLOATS,
        eager_name=None,
    ),
    OpCase(
        "Range",
        lambda n: ow.range(0, n, 1),
        lambda n: np.arange(0, int(n), 1, dtype=n.dtype),
        fixed(()),
        INTS,
        domain=(0, 9),
        grad=False,
        eager_name=None,
    ),
    OpCase(
        "InvertPermutation",
        ow.invert_permutation,
        lambda p: np.argsort(p).astype(p.dtype),
        fixed((6,)),
        INTS,
        values=lambda rng, shapes, dtypes: [rng.permutation(6).astype(dtypes[0])],
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


def test_broadcast_gradient_args_lists_the_broadcast_axes() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        r0, r1 = ow.ops.math_ops.broadcast_gradient_args([2, 1, 3], [4, 3])
        got = s.run([r0, r1])
    np.testing.assert_array_equal(got[0], [1])
    np.testing.assert_array_equal(got[1], [0])


def test_reduced_shape_sets_the_reduced_axes_to_one() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        x = ow.placeholder(ow.float32, shape=None)
        rs = ow.ops._grad_util.reduced_shape(x, ow.constant([0, -1]))
        np.testing.assert_array_equal(s.run(rs, {x: np.zeros((2, 3, 4))}), [1, 3, 1])
