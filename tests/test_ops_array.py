"""The array-manipulation ops (concat, stack, split, slicing, gather, pad, tile, ...) against
NumPy in a graph and eagerly, 1 against 3 threads bit for bit, and their gradients against finite
differences: one row per op (op_testing.py). Then the behaviours a row cannot show: TensorFlow's
strided-slice masks, ``x[...]`` against NumPy indexing, errors at build time and at run time,
string tensors, static shapes kept through shape arithmetic, buffers shared with inputs."""

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
    REALS,
    SETTINGS,
    SMALL_INTS,
    OpCase,
    assert_matches,
    check_case,
    draw_inputs,
    fixed,
    maybe_strided,
    random_values,
    same_shape,
)
from opweave import errors
from opweave.ops import array_ops
from opweave.ops._op_def import eager_function

ALL_NUMBERS = (*REALS, *SMALL_INTS, np.float16, np.bool_)
MOVERS = (*REALS, *SMALL_INTS, np.bool_)  # ops that only move elements: every element size


def _shape(draw: st.DrawFn, min_rank: int = 1, max_rank: int = 3, max_side: int = 4) -> list[int]:
    return [draw(st.integers(1, max_side)) for _ in range(draw(st.integers(min_rank, max_rank)))]


def _axis(draw: st.DrawFn, rank: int) -> int:
    return draw(st.integers(-rank, rank - 1))


# -- concat / stack / unstack / split ------------------------------------------------------------


def _concat_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    base = _shape(draw)
    axis = draw(st.integers(0, len(base) - 1))
    out = []
    for _ in range(draw(st.integers(2, 4))):
        s = list(base)
        s[axis] = draw(st.integers(0 if axis else 1, 3))
        out.append(tuple(s))
    return out


def _concat_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    rank = len(shapes[0])
    axes = [a for a in range(rank) if len({s[a] for s in shapes}) > 1] or list(range(rank))
    a = draw(st.sampled_from(axes))
    return {"axis": a - rank if draw(st.booleans()) else a}


def _stack_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    s = tuple(_shape(draw, 0, 3))
    return [s] * draw(st.integers(1, 4))


def _stack_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    r = len(shapes[0]) + 1
    return {"axis": draw(st.integers(-r, r - 1))}


def _unstack_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    # Not the leftmost axis: the thread check grows that one 4096-fold (4096 outputs).
    r = len(shapes[0])
    return {"axis": draw(st.sampled_from([a for a in range(-r, r) if a % r != 0]))}


def _split_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    return [tuple(_shape(draw, 1, 3, 6))]


def _split_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    s = shapes[0]
    axis = _axis(draw, len(s))
    dim = s[axis]
    n = draw(st.sampled_from([k for k in range(1, dim + 1) if dim % k == 0]))
    return {"num_or_size_splits": n, "axis": axis}


def _split_v_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    s = shapes[0]
    axis = _axis(draw, len(s))
    dim = s[axis]
    cuts = sorted(draw(st.lists(st.integers(0, dim), min_size=1, max_size=3)))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, dim], strict=True)]
    # The leftmost axis grows in the thread check: a -1 there keeps the sizes valid.
    if axis % len(s) == 0 or draw(st.booleans()):
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    return {"num_or_size_splits": sizes, "axis": axis}


def _np_split(x: np.ndarray, num_or_size_splits: Any, axis: int) -> list[np.ndarray]:
    if isinstance(num_or_size_splits, int):
        return np.split(x, num_or_size_splits, axis)
    sizes = list(num_or_size_splits)
    if -1 in sizes:
        sizes[sizes.index(-1)] = x.shape[axis] - sum(v for v in sizes if v != -1)
    return np.split(x, np.cumsum(sizes)[:-1], axis)


# -- slicing --------------------------------------------------------------------------------------


def _slice_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    begin, size = [], []
    for d in shapes[0]:
        b = draw(st.integers(0, d))
        begin.append(b)
        size.append(-1 if draw(st.booleans()) else draw(st.integers(0, d - b)))
    return {"begin": begin, "size": size}


def _np_slice(x: np.ndarray, begin: list[int], size: list[int]) -> np.ndarray:
    return x[tuple(slice(b, None if z == -1 else b + z) for b, z in zip(begin, size, strict=True))]


def index_expressions(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A NumPy basic index for ``shape``: ints (negative too), slices with any steps, at most
    one ``...`` and ``None`` (new axes) anywhere."""
    dims = list(shape)
    use_ellipsis = draw(st.booleans())
    n_index = draw(st.integers(0, len(dims)))
    if use_ellipsis:
        at = draw(st.integers(0, n_index))
        consumed = dims[:at] + dims[len(dims) - (n_index - at) :]
    else:
        at = -1
        consumed = dims[:n_index]
    key: list[Any] = []
    for i, d in enumerate(consumed):
        if i == at:
            key.append(Ellipsis)
        kind = draw(st.sampled_from(["int", "slice", "slice", "full"]))
        if kind == "int":
            key.append(draw(st.integers(-d, d - 1)))
        elif kind == "full":
            key.append(slice(None))
        else:
            bound = st.one_of(st.none(), st.integers(-d - 2, d + 2))
            step = draw(st.one_of(st.none(), st.integers(-3, 3).filter(lambda v: v != 0)))
            key.append(slice(draw(bound), draw(bound), step))
        if draw(st.integers(0, 5)) == 0:
            key.append(None)
    if at == len(consumed):
        key.append(Ellipsis)
    if draw(st.integers(0, 4)) == 0:
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def _getitem_key(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {"key": index_expressions(draw, shapes[0])}


def _getitem(x: Any, key: Any) -> Any:
    return array_ops._slice_helper(x, key)  # what Tensor.__getitem__ calls, eager-capable


def _strided_slice_grad(dy: Any) -> Any:
    # dy is the gradient of x[::2, ::-1] for x of shape (2 * d0, d1).
    d0, d1 = array_ops._static(dy)
    return array_ops.strided_slice_grad(
        [2 * d0, d1], [0, 0], [0, 0], [2, -1], dy, begin_mask=3, end_mask=3
    )


def _np_strided_slice_grad(dy: np.ndarray) -> np.ndarray:
    out = np.zeros((2 * dy.shape[0], dy.shape[1]), dy.dtype)
    out[::2, ::-1] = dy
    return out


# -- gather / segment sum / one_hot ---------------------------------------------------------------


def _gather_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    return [tuple(_shape(draw, 1, 3)), tuple(_shape(draw, 0, 2))]


def _gather_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {"axis": _axis(draw, len(shapes[0]))}


def _gather_values(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]
) -> list[np.ndarray]:
    params = random_values(rng, shapes[0], dtypes[0], (-3, 3))
    # The axis is drawn after the values: indices valid for the smallest dimension are valid
    # whatever it is.
    limit = min(shapes[0])
    return [params, rng.integers(0, limit, size=shapes[1]).astype(dtypes[1])]


def _segment_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    data = tuple(_shape(draw, 1, 3))
    return [data, data[: draw(st.integers(1, len(data)))]]


def _segment_values(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]
) -> list[np.ndarray]:
    data = random_values(rng, shapes[0], dtypes[0], (-3, 3))
    return [data, rng.integers(-1, 4, size=shapes[1]).astype(dtypes[1])]


def _np_segment_sum(data: np.ndarray, ids: np.ndarray, num_segments: int) -> np.ndarray:
    wide = np.float64 if data.dtype.kind == "f" else data.dtype  # float16 sums in float32 here
    out = np.zeros((num_segments, *data.shape[ids.ndim :]), wide)
    keep = ids >= 0
    np.add.at(out, ids[keep], data[keep].astype(wide))
    return out.astype(data.dtype)


def _one_hot_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    r = len(shapes[0])
    return {
        "depth": draw(st.integers(0, 5)),
        "axis": draw(st.integers(-1, r)),
        "on_value": draw(st.sampled_from([1.0, 5.0])),
        "off_value": draw(st.sampled_from([0.0, -1.0])),
    }


def _np_one_hot(
    idx: np.ndarray, depth: int, axis: int, on_value: float, off_value: float
) -> np.ndarray:
    hot = idx[..., None] == np.arange(depth)
    out = np.where(hot, on_value, off_value).astype(np.float32)
    return np.moveaxis(out, -1, axis if axis != -1 else out.ndim - 1)


# -- shapes, tile, pad, reverse -------------------------------------------------------------------


def _expand_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    r = len(shapes[0])
    return {"axis": draw(st.integers(-r - 1, r))}


def _squeeze_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    return [tuple(draw(st.sampled_from([1, 1, 2, 3])) for _ in range(draw(st.integers(0, 4))))]


def _squeeze_axis(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    ones_ = [i for i, d in enumerate(shapes[0]) if d == 1]
    if not ones_ or draw(st.booleans()):
        return {}
    picked = draw(st.lists(st.sampled_from(ones_), min_size=1, unique=True))
    return {"axis": [a - len(shapes[0]) if draw(st.booleans()) else a for a in picked]}


def _np_squeeze(x: np.ndarray, axis: Any = None) -> np.ndarray:
    return np.squeeze(x, axis=None if axis is None else tuple(axis))


def _tile_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {"multiples": [draw(st.integers(0 if i else 1, 3)) for i in range(len(shapes[0]))]}


def _pad_args(mode: str) -> Callable[[st.DrawFn, list[tuple[int, ...]]], dict[str, Any]]:
    def draw_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
        pads = []
        for d in shapes[0]:
            limit = {"CONSTANT": 3, "REFLECT": d - 1, "SYMMETRIC": d}[mode]
            pads.append([draw(st.integers(0, limit)), draw(st.integers(0, limit))])
        return {"paddings": pads, "mode": mode}

    return draw_args


def _np_pad(
    x: np.ndarray, paddings: list[list[int]], mode: str, constant_values: Any = 0
) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    if mode == "CONSTANT":
        return np.pad(x, paddings, mode="constant", constant_values=constant_values)
    return np.pad(x, paddings, mode=mode.lower())


def _mirror_grad_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    return [tuple(_shape(draw, 1, 3, 4))]


def _mirror_grad_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    # shapes[0] is the padded gradient's shape: split each dimension into before + n + after.
    mode = draw(st.sampled_from(["REFLECT", "SYMMETRIC"]))
    pads = []
    for d in shapes[0]:
        shift = 1 if mode == "REFLECT" else 0
        n = draw(st.integers(max(1, (d + 2 * shift + 2) // 3), d))
        rest = d - n
        before = draw(st.integers(max(0, rest - (n - shift)), min(rest, n - shift)))
        pads.append([before, rest - before])
    return {"paddings": pads, "mode": mode}


def _mirror_pad_grad(g: Any, paddings: Any, mode: str) -> Any:
    return array_ops._MIRROR_PAD_GRAD(g, np.array(paddings, np.int32), mode=mode)


def _np_mirror_pad_grad(g: np.ndarray, paddings: list[list[int]], mode: str) -> np.ndarray:
    in_shape = tuple(d - a - b for d, (a, b) in zip(g.shape, paddings, strict=True))
    where = np.pad(np.arange(int(np.prod(in_shape))).reshape(in_shape), paddings, mode.lower())
    out = np.zeros(int(np.prod(in_shape)), np.float64)
    np.add.at(out, where.reshape(-1), g.reshape(-1).astype(np.float64))
    return out.reshape(in_shape).astype(g.dtype)


def _reverse_axes(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    r = len(shapes[0])
    axes = draw(st.lists(st.integers(0, r - 1), unique=True)) if r else []
    return {"axis": [a - r if draw(st.booleans()) else a for a in axes]}


# -- diagonals ------------------------------------------------------------------------------------


def _np_diag(x: np.ndarray) -> np.ndarray:
    return np.diag(x.reshape(-1)).reshape(x.shape + x.shape)


def _np_diag_part(x: np.ndarray) -> np.ndarray:
    h = x.ndim // 2
    n = int(np.prod(x.shape[:h]))
    return np.diagonal(x.reshape(n, n)).reshape(x.shape[:h]).copy()


def _diag_part_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    s = tuple(_shape(draw, 1, 2, 3))
    return [s + s]


def _np_matrix_diag(x: np.ndarray) -> np.ndarray:
    out = np.zeros((*x.shape, x.shape[-1]), x.dtype)
    k = x.shape[-1]
    out[..., np.arange(k), np.arange(k)] = x
    return out


def _np_matrix_diag_part(x: np.ndarray) -> np.ndarray:
    return np.diagonal(x, axis1=-2, axis2=-1).copy()


def _matrix_set_diag_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
    s = tuple(_shape(draw, 2, 3))
    return [s, (*s[:-2], min(s[-2:]))]


def _np_matrix_set_diag(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    out = x.copy()
    k = d.shape[-1]
    out[..., np.arange(k), np.arange(k)] = d
    return out


def _linspace_args(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
    return {"num": draw(st.integers(1, 7))}


def _np_linspace(start: np.ndarray, stop: np.ndarray, num: int) -> np.ndarray:
    if num == 1:
        return np.array([start], start.dtype)
    step = (stop - start) / start.dtype.type(num - 1)
    out = start + step * np.arange(num, dtype=start.dtype)
    out[-1] = stop
    return out.astype(start.dtype)


CASES = [
    OpCase(
        "ConcatV2",
        lambda *xs, axis: ow.concat(list(xs), axis),
        lambda *xs, axis: np.concatenate(xs, axis),
        _concat_shapes,
        MOVERS,
        kwargs=_concat_axis,
    ),
    OpCase(
        "Pack",
        lambda *xs, axis: array_ops._PACK(list(xs), axis=axis),
        lambda *xs, axis: np.stack(xs, axis),
        _stack_shapes,
        MOVERS,
        kwargs=_stack_axis,
    ),
    OpCase(
        "Unpack",
        lambda x, axis: ow.unstack(x, axis=axis),
        lambda x, axis: [np.take(x, i, axis) for i in range(x.shape[axis])],
        same_shape(1, 2, 3),
        MOVERS,
        kwargs=_unstack_axis,
    ),
    OpCase("Split", ow.split, _np_split, _split_shapes, MOVERS, kwargs=_split_args),
    OpCase("SplitV", ow.split, _np_split, _split_shapes, MOVERS, kwargs=_split_v_args),
    OpCase("Slice", ow.slice, _np_slice, same_shape(1, 1, 3), MOVERS, kwargs=_slice_args),
    OpCase(
        "StridedSlice",
        _getitem,
        lambda x, key: np.asarray(x[key]),
        same_shape(1, 0, 4),
        MOVERS,
        kwargs=_getitem_key,
    ),
    OpCase(
        "StridedSliceGrad",
        _strided_slice_grad,
        _np_strided_slice_grad,
        same_shape(1, 2, 2),
        REALS,
    ),
    OpCase(
        "GatherV2",
        ow.gather,
        lambda p, i, axis: np.take(p, i, axis),
        _gather_shapes,
        MOVERS,
        kwargs=_gather_axis,
        input_dtypes=lambda d: [d, np.int32 if np.dtype(d).itemsize != 8 else np.int64],
        int_inputs=frozenset({1}),
        values=_gather_values,
    ),
    OpCase(
        "UnsortedSegmentSum",
        ow.unsorted_segment_sum,
        _np_segment_sum,
        _segment_shapes,
        (*REALS, np.float16),
        kwargs={"num_segments": 4},
        input_dtypes=lambda d: [d, np.int64 if d == np.int64 else np.int32],
        int_inputs=frozenset({1}),
        values=_segment_values,
        rtol=1e-3,
    ),
    OpCase(
        "OneHot",
        lambda i, depth, axis, on_value, off_value: ow.one_hot(
            i, depth, on_value, off_value, axis=axis
        ),
        _np_one_hot,
        same_shape(1, 0, 2),
        (np.int32, np.int64, np.uint8),
        domain=(-1, 5),
        kwargs=_one_hot_args,
        grad=False,
    ),
    OpCase(
        "ExpandDims",
        ow.expand_dims,
        np.expand_dims,
        same_shape(1, 0, 3),
        MOVERS,
        kwargs=_expand_axis,
    ),
    OpCase("Squeeze", ow.squeeze, _np_squeeze, _squeeze_shapes, MOVERS, kwargs=_squeeze_axis),
    OpCase(
        "Tile",
        ow.tile,
        lambda x, multiples: np.tile(x, multiples),
        same_shape(1, 1, 3),
        MOVERS,
        kwargs=_tile_args,
    ),
    OpCase(
        "Pad", ow.pad, _np_pad, same_shape(1, 0, 3), MOVERS, kwargs=_pad_args("CONSTANT"), id="Pad"
    ),
    OpCase(
        "PadV2",
        lambda x, paddings, mode, constant_values=2: ow.pad(
            x, paddings, mode, constant_values=constant_values
        ),
        lambda x, paddings, mode, constant_values=2: _np_pad(x, paddings, mode, constant_values),
        same_shape(1, 1, 3),
        REALS,
        # constant_values is an input of x's dtype (2 fits every dtype drawn), not an integer
        # argument, so it stays out of kwargs, which the hostile walk treats as integers.
        kwargs=_pad_args("CONSTANT"),
    ),
    OpCase(
        "MirrorPad",
        ow.pad,
        _np_pad,
        same_shape(1, 1, 3),
        MOVERS,
        kwargs=lambda draw, shapes: _pad_args(draw(st.sampled_from(["REFLECT", "SYMMETRIC"])))(
            draw, shapes
        ),
    ),
    OpCase(
        "MirrorPadGrad",
        _mirror_pad_grad,
        _np_mirror_pad_grad,
        _mirror_grad_shapes,
        (*REALS, np.float16),
        kwargs=_mirror_grad_args,
        rtol=1e-3,
    ),
    OpCase(
        "ReverseV2",
        ow.reverse,
        lambda x, axis: np.flip(x, tuple(axis)),
        same_shape(1, 0, 3),
        MOVERS,
        kwargs=_reverse_axes,
    ),
    OpCase(
        "LinSpace",
        ow.linspace,
        _np_linspace,
        fixed((), ()),
        (np.float32, np.float64),
        kwargs=_linspace_args,
        grad=False,
        threads=False,
        rtol=1e-6,
    ),
    OpCase("Diag", ow.diag, _np_diag, same_shape(1, 1, 2), ALL_NUMBERS, threads=False),
    OpCase("DiagPart", ow.diag_part, _np_diag_part, _diag_part_shapes, ALL_NUMBERS, threads=False),
    OpCase(
        "MatrixDiag",
        ow.matrix_diag,
        _np_matrix_diag,
        same_shape(1, 1, 3),
        ALL_NUMBERS,
        threads=False,
    ),
    OpCase(
        "MatrixDiagPart",
        ow.matrix_diag_part,
        _np_matrix_diag_part,
        same_shape(1, 2, 4),
        ALL_NUMBERS,
        threads=False,
    ),
    OpCase(
        "MatrixSetDiag",
        ow.matrix_set_diag,
        _np_matrix_set_diag,
        _matrix_set_diag_shapes,
        ALL_NUMBERS,
        threads=False,
    ),
    OpCase(
        "IdentityN",
        lambda *xs: ow.identity_n(list(xs)),
        lambda *xs: list(xs),
        lambda draw: [tuple(_shape(draw, 0, 2)) for _ in range(draw(st.integers(1, 3)))],
        REALS,
    ),
]


# How the thread check grows the inputs of rows whose inputs are related otherwise than by
# broadcasting: a segment sum's data and ids share their leftmost dimension (grow both); gather's
# indices are independent of params (grow params only, or the result would be their product).
GROW = {"UnsortedSegmentSum": "all", "GatherV2": "first"}


def _draw_inputs(
    case: OpCase, draw: st.DrawFn, large: bool = False
) -> tuple[list[np.ndarray], dict[str, Any], Any]:
    how = GROW.get(case.id)
    if not large or how is None:
        return draw_inputs(case, draw, large)

    def grown(d: st.DrawFn) -> list[tuple[int, ...]]:
        shapes = case.shapes(d)
        return [
            (s[0] * 4096, *s[1:]) if (how == "all" or i == 0) and s else s
            for i, s in enumerate(shapes)
        ]

    return draw_inputs(dataclasses.replace(case, shapes=grown), draw)


def _eager_check(case: OpCase, data: st.DataObject) -> None:
    """The row's own function run eagerly (on arrays, maybe strided) against NumPy, and on 1 and
    3 threads on inputs grown to be split: every row, list-input ops included (op_testing's
    eager check needs an ``opweave.kernels`` function with the row's signature)."""
    eager = eager_function(case.fn, case.id)
    arrays, kwargs, dtype = _draw_inputs(case, data.draw)
    rng = np.random.default_rng(len(arrays))
    want = case.ref(*arrays, **kwargs)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    got = eager(*[maybe_strided(rng, a) for a in arrays], **kwargs)
    assert_matches(list(got) if isinstance(got, (list, tuple)) else [got], want, case.rtol, dtype)
    if not case.threads:
        return
    arrays, kwargs, _ = _draw_inputs(case, data.draw, large=True)
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


# -- x[...] against NumPy -------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_getitem_matches_numpy_basic_indexing(data: st.DataObject) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=0, max_size=4)))
    keys = [index_expressions(data.draw, shape) for _ in range(8)]
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    with ow.Graph().as_default():
        ph = ow.placeholder(ow.int32, shape=shape)
        unknown = ow.placeholder(ow.int32, shape=[None] * len(shape))
        outs = [ph[k] for k in keys] + [unknown[k] for k in keys]
        for k, out in zip(keys, outs, strict=False):
            assert tuple(out.shape.as_list()) == x[k].shape, k  # static shape as NumPy's
        with ow.Session() as s:
            got = s.run(outs, {ph: x, unknown: x})
    for k, g in zip(keys + keys, got, strict=True):
        np.testing.assert_array_equal(g, x[k], err_msg=str(k))


def test_getitem_accepts_scalar_tensors_in_indices_and_slices() -> None:
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    with ow.Graph().as_default(), ow.Session() as s:
        t = ow.constant(x)
        i = ow.placeholder(ow.int32, shape=[])
        j = ow.placeholder(ow.int64, shape=[])
        outs = [t[i], t[i:], t[:, j], t[1:j:2], t[-i], t[..., i], t[i + 2, ow.newaxis]]
        got = s.run(outs, {i: 1, j: 5})
    want = [x[1], x[1:], x[:, 5], x[1:5:2], x[-1], x[..., 1], x[3, None]]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_getitem_with_an_index_out_of_range_fails_at_build_or_run_time() -> None:
    with ow.Graph().as_default():
        x = ow.constant(np.zeros((3, 2)))
        with pytest.raises(ValueError, match="slice index 3 of dimension 0 out of bounds"):
            x[3]
        with pytest.raises(ValueError, match="Index out of range using input dim 2"):
            x[0, 0, 0]
        p = ow.placeholder(ow.float32, shape=None)
        with ow.Session() as s, pytest.raises(errors.InvalidArgumentError) as info:
            s.run(p[5], {p: np.zeros(3, np.float32)})
        assert "out of bounds" in str(info.value)
        assert info.value.op_type == "StridedSlice"


@pytest.mark.parametrize("bad", [1.5, "a", [0.5], ow.float32])
def test_getitem_rejects_what_tensorflow_rejects(bad: Any) -> None:
    with ow.Graph().as_default():
        x = ow.constant(np.zeros((3, 2)))
        with pytest.raises(TypeError, match="Only integers, slices"):
            x[bad]
        with pytest.raises(TypeError, match="Only integers, slices"):
            x[ow.constant([0, 1])]  # a vector tensor is not an index (gather is)


def test_iterating_over_a_tensor_of_known_first_dimension_unstacks_it() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        rows = list(ow.constant([[1, 2], [3, 4]]))
        np.testing.assert_array_equal(s.run(rows[1]), [3, 4])


# -- strided_slice: TensorFlow's documented examples ----------------------------------------------

_T = np.array([[[1, 1, 1], [2, 2, 2]], [[3, 3, 3], [4, 4, 4]], [[5, 5, 5], [6, 6, 6]]])


@pytest.mark.parametrize(
    ("args", "masks", "want"),
    [
        (([1, 0, 0], [2, 1, 3], [1, 1, 1]), {}, [[[3, 3, 3]]]),
        (([1, 0, 0], [2, 2, 3], [1, 1, 1]), {}, [[[3, 3, 3], [4, 4, 4]]]),
        (([1, -1, 0], [2, -3, 3], [1, -1, 1]), {}, [[[4, 4, 4], [3, 3, 3]]]),
        # t[1:, :, :2]: bits 1 and 2 of begin_mask, 0 and 1 of end_mask ignore those bounds
        (([1, 9, 9], [9, 9, 2], [1, 1, 1]), {"begin_mask": 6, "end_mask": 3}, _T[1:, :, :2]),
        # t[::-1]: a negative stride with both bounds masked walks the whole dimension back
        (([0], [0], [-1]), {"begin_mask": 1, "end_mask": 1}, _T[::-1]),
        # t[..., 1]: the ellipsis expands to the dimensions the other entries do not name
        (([0, 1], [0, 2], [1, 1]), {"ellipsis_mask": 1, "shrink_axis_mask": 2}, _T[..., 1]),
        # t[1, tf.newaxis, :, 2]
        (
            ([1, 0, 0, 2], [2, 0, 0, 3], [1, 1, 1, 1]),
            {"new_axis_mask": 2, "shrink_axis_mask": 9, "begin_mask": 4, "end_mask": 4},
            _T[1, None, :, 2],
        ),
        # t[-1]: shrinking with a negative index counts from the end (end is ignored)
        (([-1], [0], [1]), {"shrink_axis_mask": 1}, _T[-1]),
        # bounds beyond the dimension are clamped, as in Python
        (([-10, 0, 1], [10, 5, 100], [2, 1, 1]), {}, _T[-10:10:2, 0:5, 1:100]),
        # new axes after the ellipsis: t[..., tf.newaxis]
        (([0, 0], [0, 0], [1, 1]), {"ellipsis_mask": 1, "new_axis_mask": 2}, _T[..., None]),
    ],
)
def test_strided_slice_masks_match_tensorflows_examples(
    args: tuple[list[int], ...], masks: dict[str, int], want: Any
) -> None:
    want = np.asarray(want)
    with ow.Graph().as_default(), ow.Session() as s:
        y = ow.strided_slice(ow.constant(_T), *args, **masks)
        assert tuple(y.shape.as_list()) == want.shape
        np.testing.assert_array_equal(s.run(y), want)
    np.testing.assert_array_equal(ow.kernels.strided_slice(_T, *args, **masks), want)


def test_strided_slice_errors_are_tensorflows() -> None:
    with ow.Graph().as_default():
        t = ow.constant(_T)
        with pytest.raises(ValueError, match="strides\\[0\\] must be non-zero"):
            ow.strided_slice(t, [0], [1], [0])
        with pytest.raises(ValueError, match="Multiple ellipses in slice spec not allowed"):
            ow.strided_slice(t, [0, 0], [0, 0], [1, 1], ellipsis_mask=3)
        with pytest.raises(ValueError, match="only stride 1 allowed on non-range indexing"):
            ow.strided_slice(t, [0], [1], [-1], shrink_axis_mask=1)
        with pytest.raises(ValueError, match="'StridedSlice'"):
            t[0, 0, 0, 0]


def test_strided_slice_gradient_of_negative_strides_and_new_axes() -> None:
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    with ow.Graph().as_default(), ow.Session() as s:
        t = ow.placeholder(ow.float64, shape=None)  # the gradient's shape computed at run time
        y = t[::-1, None, 1:, ::-2]
        g = ow.gradients(ow.reduce_sum(y * 3.0), t)[0]
        got = s.run(g, {t: x})
    want = np.zeros_like(x)
    want[::-1, 1:, ::-2] = 3.0
    np.testing.assert_array_equal(got, want)


# -- gather ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [-1, 3, 100])
def test_gather_with_an_index_out_of_range_is_invalid_argument_naming_the_node(index: int) -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        i = ow.placeholder(ow.int32, shape=[None])
        y = ow.gather(ow.constant([1.0, 2.0, 3.0]), i, name="lookup")
        with pytest.raises(errors.InvalidArgumentError) as info:
            s.run(y, {i: [0, index]})
        assert info.value.node_name == "lookup"
        assert f"indices[1] = {index} is not in [0, 3)" in str(info.value)
    with pytest.raises(errors.InvalidArgumentError, match="is not in"):
        ow.kernels.gather(np.zeros((3, 2)), np.array([[0], [index]]))


def test_gather_along_an_inner_axis_and_its_dense_gradient() -> None:
    p = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    idx = np.array([[2, 0], [2, 2]])
    with ow.Graph().as_default(), ow.Session() as s:
        t = ow.placeholder(ow.float64, shape=None)
        ax = ow.placeholder(ow.int32, shape=[])
        y = ow.gather(t, idx, axis=ax)
        g = ow.gradients(ow.reduce_sum(y), t)[0]
        got_y, got_g = s.run([y, g], {t: p, ax: -2})
    np.testing.assert_array_equal(got_y, np.take(p, idx, axis=1))
    want = np.zeros_like(p)
    np.add.at(want, (slice(None), idx.reshape(-1)), 1.0)
    np.testing.assert_array_equal(got_g, want)


def test_gather_accepts_validate_indices_and_rejects_batch_dims() -> None:
    with ow.Graph().as_default():
        assert ow.gather([1, 2, 3], [0], validate_indices=True).shape.as_list() == [1]
        with pytest.raises(ValueError, match="batch_dims"):
            ow.gather([[1, 2]], [[0]], batch_dims=1)


def test_unsorted_segment_sum_rejects_ids_past_num_segments() -> None:
    with pytest.raises(errors.InvalidArgumentError, match=r"segment_ids\[1\] = 3 is out of range"):
        ow.kernels.unsorted_segment_sum(np.ones(2), np.array([0, 3]), 3)


# -- concat / split / stack / unstack -------------------------------------------------------------


def test_concat_of_mismatched_shapes_is_a_build_time_error_naming_op_and_shapes() -> None:
    with ow.Graph().as_default():
        a = ow.zeros([2, 3])
        b = ow.zeros([2, 4])
        with pytest.raises(ValueError, match="Dimension 1 in both shapes") as info:
            ow.concat([a, b], 0, name="joined")
        text = str(info.value)
        assert "Dimension 1 in both shapes must be equal, but are 3 and 4" in text
        assert "'joined' (op: 'ConcatV2')" in text
        assert "[2,3], [2,4]" in text
        with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1"):
            ow.concat([a, ow.zeros([3])], 0)
        with pytest.raises(ValueError, match="range \\[-2, 2\\), but got 2"):
            ow.concat([a, a], 2)


def test_concat_mismatch_known_only_at_run_time_is_invalid_argument() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        a = ow.placeholder(ow.float32, shape=[None, None])
        y = ow.concat([a, ow.zeros([2, 3])], 1, name="c")
        with pytest.raises(errors.InvalidArgumentError, match="shape\\[0\\] = \\[3, 1\\]"):
            s.run(y, {a: np.zeros((3, 1), np.float32)})


def test_concat_of_one_tensor_is_an_identity_and_of_empty_pieces_works() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        x = ow.constant([[1, 2]])
        assert ow.concat([x], 0).op.type == "Identity"
        y = ow.concat([ow.zeros([0, 2], ow.int32), x, ow.zeros([0, 2], ow.int32)], 0)
        np.testing.assert_array_equal(s.run(y), [[1, 2]])


def test_split_with_uneven_sizes_and_minus_one() -> None:
    x = np.arange(14).reshape(2, 7)
    with ow.Graph().as_default(), ow.Session() as s:
        parts = ow.split(ow.constant(x), [1, -1, 2], axis=1)
        assert [p.shape.as_list() for p in parts] == [[2, 1], [2, 4], [2, 2]]
        got = s.run(parts)
    for g, w in zip(got, np.split(x, [1, 5], axis=1), strict=True):
        np.testing.assert_array_equal(g, w)


def test_split_errors() -> None:
    with ow.Graph().as_default():
        x = ow.zeros([5, 2])
        with pytest.raises(ValueError, match="evenly divisible by 2 but is 5"):
            ow.split(x, 2)
        with pytest.raises(ValueError, match="Determined shape must either match"):
            ow.split(x, [1, 2])
        with pytest.raises(ValueError, match="more than one -1"):
            ow.split(x, [-1, -1])
        with pytest.raises(ValueError, match="Cannot infer num"):
            ow.split(x, ow.placeholder(ow.int32, shape=None))
        p = ow.placeholder(ow.float32, shape=None)
        with ow.Session() as s, pytest.raises(errors.InvalidArgumentError, match="evenly divide"):
            s.run(ow.split(p, 2), {p: np.zeros(3, np.float32)})


def test_unstack_with_unknown_num_is_an_error() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, shape=[None, 2])
        with pytest.raises(ValueError, match="Cannot infer num from shape"):
            ow.unstack(x)
        assert len(ow.unstack(x, axis=1)) == 2
        with pytest.raises(ValueError, match="axis = 2 not in"):
            ow.unstack(x, axis=2)


def test_stack_of_constants_is_one_constant_and_of_mismatched_shapes_an_error() -> None:
    with ow.Graph().as_default():
        assert ow.stack([1, 2]).op.type == "Const"
        with pytest.raises(ValueError, match="Dimension 0 in both shapes must be equal"):
            ow.stack([ow.zeros([2]), ow.zeros([3])])
        with pytest.raises(ValueError, match="axis = 2 not in \\[-2, 2\\)"):
            ow.stack([ow.zeros([2])], axis=2)


# -- pad / squeeze / one_hot / tile / reverse -----------------------------------------------------


@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric", "Reflect"])
def test_pad_modes_match_numpy_pad(mode: str) -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    pads = [[2, 1], [3, 2]]
    kw = {"constant_values": 7.5} if mode == "constant" else {}
    with ow.Graph().as_default(), ow.Session() as s:
        got = s.run(ow.pad(x, pads, mode.upper() if mode != "Reflect" else mode, **kw))
    np.testing.assert_array_equal(got, np.pad(x, pads, mode=mode.lower(), **kw))


def test_pad_errors() -> None:
    with ow.Graph().as_default():
        x = ow.zeros([2, 3])
        with pytest.raises(ValueError, match="less than the dimension size"):
            ow.pad(x, [[2, 0], [0, 0]], "REFLECT")
        with pytest.raises(ValueError, match="no greater than the dimension size"):
            ow.pad(x, [[3, 0], [0, 0]], "SYMMETRIC")
        with pytest.raises(ValueError, match="Paddings must be non-negative"):
            ow.pad(x, [[-1, 0], [0, 0]])
        with pytest.raises(ValueError, match="Unknown padding mode"):
            ow.pad(x, [[0, 0], [0, 0]], "WRAP")
        with pytest.raises(ValueError, match="rank of inputs"):
            ow.pad(x, [[0, 0]])


def test_squeeze_of_a_dimension_that_is_not_1_is_an_error() -> None:
    with ow.Graph().as_default():
        with pytest.raises(
            ValueError, match="Can not squeeze dim\\[1\\], expected a dimension of 1"
        ):
            ow.squeeze(ow.zeros([1, 3]), [1])
        with pytest.raises(ValueError, match="Cannot specify both"):
            ow.squeeze(ow.zeros([1]), axis=0, squeeze_dims=[0])
        assert ow.squeeze(ow.zeros([1, 3, 1]), squeeze_dims=[-1]).shape.as_list() == [1, 3]
        p = ow.placeholder(ow.float32, shape=[None, 3])
        assert ow.squeeze(p).shape.ndims is None  # TensorFlow: unknown when a dim is unknown
        with ow.Session() as s, pytest.raises(errors.InvalidArgumentError, match="Can not squeeze"):
            s.run(ow.squeeze(p, [0]), {p: np.zeros((2, 3), np.float32)})


def test_expand_dims_takes_axis_or_dim() -> None:
    with ow.Graph().as_default():
        x = ow.zeros([2])
        assert ow.expand_dims(x, dim=0).shape.as_list() == [1, 2]
        with pytest.raises(ValueError, match="Must specify an axis"):
            ow.expand_dims(x)
        with pytest.raises(ValueError, match="Tried to expand dim index 3"):
            ow.expand_dims(x, 3)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_with_on_off_values_and_axis(axis: int) -> None:
    idx = np.array([[0, 2], [1, -1]])
    hot = idx[..., None] == np.arange(3)
    want = np.moveaxis(np.where(hot, 5, -2), -1, axis if axis >= 0 else 2).astype(np.int32)
    with ow.Graph().as_default(), ow.Session() as s:
        y = ow.one_hot(idx, 3, on_value=5, off_value=-2, axis=axis)
        assert y.dtype == ow.int32
        assert tuple(y.shape.as_list()) == want.shape
        np.testing.assert_array_equal(s.run(y), want)


def test_one_hot_dtypes_follow_tensorflow() -> None:
    with ow.Graph().as_default():
        assert ow.one_hot([0], 2).dtype == ow.float32
        assert ow.one_hot([0], 2, dtype=ow.float64).dtype == ow.float64
        assert ow.one_hot([0], 2, on_value=1.0, dtype=ow.float64).dtype == ow.float64
        with pytest.raises(TypeError, match="does not match dtype"):
            ow.one_hot([0], 2, on_value=ow.constant(1.0), off_value=ow.constant(0.0, ow.float64))
        with pytest.raises(TypeError, match="does not match dtype parameter"):
            ow.one_hot([0], 2, on_value=ow.constant(1.0), dtype=ow.float64)


def test_tile_and_reverse_errors() -> None:
    with ow.Graph().as_default():
        with pytest.raises(ValueError, match="vector of length 2 but got length 1"):
            ow.tile(ow.zeros([2, 2]), [2])
        with pytest.raises(ValueError, match="specified more than once"):
            ow.reverse(ow.zeros([2, 2]), [0, -2])


def test_linspace_and_eye() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        np.testing.assert_array_equal(s.run(ow.lin_space(1.0, 2.0, 3)), [1.0, 1.5, 2.0])
        with pytest.raises(ValueError, match="Requires num > 0"):
            ow.linspace(0.0, 1.0, 0)
        np.testing.assert_array_equal(s.run(ow.eye(3)), np.eye(3, dtype=np.float32))
        e = ow.eye(2, 3, batch_shape=[2], dtype=ow.int32)
        np.testing.assert_array_equal(
            s.run(e), np.broadcast_to(np.eye(2, 3, dtype=np.int32), (2, 2, 3))
        )
        n = ow.placeholder(ow.int32, shape=[])
        np.testing.assert_array_equal(s.run(ow.eye(n, 2), {n: 3}), np.eye(3, 2, dtype=np.float32))
    np.testing.assert_array_equal(ow.kernels.eye(2, dtype=ow.float64), np.eye(2))


def test_identity_n_passes_each_gradient_through() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        a, b = ow.constant(2.0), ow.constant(3.0)
        c, d = ow.identity_n([a, b])
        g = ow.gradients(c * d, [a, b])
        assert s.run(g) == [3.0, 2.0]


# -- strings --------------------------------------------------------------------------------------


def test_string_tensors_through_the_data_movement_ops() -> None:
    words = np.array([[b"a", b"bb"], [b"ccc", b""], [b"e", b"ff"]], dtype=object)
    with ow.Graph().as_default(), ow.Session() as s:
        w = ow.constant(words)
        outs = {
            "concat": ow.concat([w, w], 1),
            "stack": ow.stack([w, w], 1),
            "gather": ow.gather(w, [2, 0, 2]),
            "slice": ow.slice(w, [1, 0], [2, 1]),
            "getitem": w[::-1, 1],
            "reshape": ow.reshape(w, [-1]),
            "identity": ow.identity(w),
            "expand_dims": ow.expand_dims(w, 0),
            "squeeze": ow.squeeze(ow.expand_dims(w, 1), [1]),
            "tile": ow.tile(w, [2, 3]),
            "split": ow.split(w, 3)[1],
            "unstack": ow.unstack(w, axis=1)[0],
            "reverse": ow.reverse(w, [0]),
            "pad": ow.pad(w, [[1, 0], [0, 1]], constant_values=b"x"),
            "one_hot": ow.one_hot([1, 0], 2, on_value=b"on", off_value=b"off"),
        }
        got = dict(zip(outs, s.run(list(outs.values())), strict=True))
    want = {
        "concat": np.concatenate([words, words], 1),
        "stack": np.stack([words, words], 1),
        "gather": words[[2, 0, 2]],
        "slice": words[1:3, 0:1],
        "getitem": words[::-1, 1],
        "reshape": words.reshape(-1),
        "identity": words,
        "expand_dims": words[None],
        "squeeze": words,
        "tile": np.tile(words, [2, 3]),
        "split": words[1:2],
        "unstack": words[:, 0],
        "reverse": words[::-1],
        "pad": np.pad(words, [[1, 0], [0, 1]], constant_values=b"x"),
        "one_hot": np.array([[b"off", b"on"], [b"on", b"off"]], dtype=object),
    }
    for k, v in want.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)


def test_large_string_concat_and_gather_are_the_same_on_any_thread_count() -> None:
    words = np.array([str(i).encode() for i in range(50_000)], dtype=object)
    for fn in (
        lambda t: ow.kernels.concat([words, words], 0, _num_threads=t),
        lambda t: ow.kernels.gather(words, np.arange(49_999, -1, -7), _num_threads=t),
    ):
        np.testing.assert_array_equal(fn(1), fn(3))


# -- static shapes through shape arithmetic -------------------------------------------------------


def test_static_shapes_survive_pack_concat_and_slices_of_shape() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, shape=[None, 6, 4])
        assert ow.reshape(x, [-1, ow.shape(x)[1]]).shape.as_list() == [None, 6]
        assert ow.zeros(ow.stack([ow.shape(x)[0], 10])).shape.as_list() == [None, 10]
        assert ow.zeros([ow.shape(x)[0], 10]).shape.as_list() == [None, 10]
        s = ow.shape(x)
        assert ow.reshape(x, ow.concat([s[:1], [24]], 0)).shape.as_list() == [None, 24]
        assert ow.reshape(x, s[1:]).shape.as_list() == [6, 4]  # a slice of Shape
        assert ow.fill(ow.shape(x)[::-1], 0.0).shape.as_list() == [4, 6, None]
        assert ow.ops._op_def.constant_value(ow.shape(x)[1]) == 6
        assert ow.ops._op_def.constant_value(ow.shape(x)[0]) is None
        y = ow.placeholder(ow.float32, shape=None)
        assert ow.shape(y).shape.as_list() == [None]  # the shape of an unknown rank: a vector
        assert ow.reshape(x, ow.cast(ow.shape(x)[1:], ow.int64)).shape.as_list() == [6, 4]


def test_reshape_and_transpose_with_tensors() -> None:
    with ow.Graph().as_default(), ow.Session() as s:
        x = ow.placeholder(ow.float32, shape=None)
        p = ow.placeholder(ow.int32, shape=[3])
        t = ow.transpose(x, p)
        assert t.shape.as_list() == [None, None, None]
        sq = ow.transpose(ow.zeros([3, 3]), ow.placeholder(ow.int32, shape=[2]))
        assert sq.shape.as_list() == [3, 3]  # any permutation of equal dimensions
        r = ow.reshape(x, [ow.size(x) // 2, -1])
        v = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        got_t, got_r = s.run([t, r], {x: v, p: [2, 0, 1]})
    np.testing.assert_array_equal(got_t, v.transpose(2, 0, 1))
    np.testing.assert_array_equal(got_r, v.reshape(12, 2))


# -- shared buffers -------------------------------------------------------------------------------


def test_views_of_inputs_never_let_an_op_write_into_its_input() -> None:
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    keep = x.copy()
    with ow.Graph().as_default(), ow.Session() as s:
        t = ow.placeholder(ow.float32, shape=[4, 5])
        a, b = ow.split(t, 2)  # views of the fed array
        c = ow.slice(t, [1, 0], [2, -1]) * 2.0
        outs = s.run([a + 1.0, ow.nn.relu(b), c, ow.unstack(t)[3] - 1.0], {t: x})
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(outs[0], keep[:2] + 1)
    np.testing.assert_array_equal(outs[2], keep[1:3] * 2)
    for out in outs:
        assert not np.shares_memory(out, x)
    eager = ow.kernels.split(x, 2)
    assert not any(np.shares_memory(e, x) for e in eager)


def test_the_slicing_module_examples_hold() -> None:
    import doctest

    from opweave.ops import _slicing

    result = doctest.testmod(_slicing)
    assert result.attempted > 0
    assert result.failed == 0
