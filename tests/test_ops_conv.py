"""Convolutions and pooling against NumPy references written as direct loops, in a graph and
eagerly, and their gradients against finite differences (one row per op, op_testing.py); then
1 against 3 threads bit for bit on shapes large enough to split (the rows' own thread check would
grow the filter with the batch), NCHW, static shapes with unknown dimensions, and the errors
TensorFlow reports for bad arguments."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import pytest
from hypothesis import given
from hypothesis import strategies as st
from op_testing import (
    FLOATS,
    INTS,
    SETTINGS,
    OpCase,
    check_case,
    numeric_jacobian_check,
)
from opweave.ops import nn_conv

# -- NumPy references (NHWC, direct loops over output pixels and taps) ---------------------------


def _window(size: int, k: int, stride: int, dilation: int, padding: Any, pads: tuple[int, int]):
    """(output size, padding before) of one spatial dimension, TensorFlow's rules."""
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + eff - size, 0) // 2
    if padding == "VALID":
        return (size - eff) // stride + 1, 0
    return (size + pads[0] + pads[1] - eff) // stride + 1, pads[0]


def _hw(v: Any, nchw: bool = False) -> tuple[int, int]:
    if isinstance(v, int):
        return v, v
    v = list(v)
    if len(v) == 1:
        return v[0], v[0]
    if len(v) == 2:
        return v[0], v[1]
    return (v[2], v[3]) if nchw else (v[1], v[2])


def _pads(padding: Any) -> tuple[Any, tuple[int, int], tuple[int, int]]:
    if isinstance(padding, str):
        return padding, (0, 0), (0, 0)
    return "EXPLICIT", tuple(padding[1]), tuple(padding[2])


def _geometry(x_shape, k_h, k_w, strides, padding, dilations):
    sh, sw = _hw(strides)
    dh, dw = _hw(dilations)
    mode, ph, pw = _pads(padding)
    oh, pt = _window(x_shape[1], k_h, sh, dh, mode, ph)
    ow_, pl = _window(x_shape[2], k_w, sw, dw, mode, pw)
    return sh, sw, dh, dw, oh, ow_, pt, pl


def _taps(x_shape, k_h, k_w, strides, padding, dilations):
    """(i, j, a, b, h, w) for every output pixel (i, j) and tap (a, b) inside the image."""
    sh, sw, dh, dw, oh, ow_, pt, pl = _geometry(x_shape, k_h, k_w, strides, padding, dilations)
    for i, j, a, b in itertools.product(range(oh), range(ow_), range(k_h), range(k_w)):
        h, w = i * sh + a * dh - pt, j * sw + b * dw - pl
        if 0 <= h < x_shape[1] and 0 <= w < x_shape[2]:
            yield i, j, a, b, h, w


def ref_conv2d(x, f, strides, padding, dilations=1, depthwise=False, **_: Any) -> np.ndarray:
    _, _, _, _, oh, ow_, _, _ = _geometry(
        x.shape, f.shape[0], f.shape[1], strides, padding, dilations
    )
    n, c = x.shape[0], x.shape[3]
    out = np.zeros((n, oh, ow_, c * f.shape[3] if depthwise else f.shape[3]))
    xd, fd = x.astype(np.float64), f.astype(np.float64)
    for i, j, a, b, h, w in _taps(x.shape, f.shape[0], f.shape[1], strides, padding, dilations):
        if depthwise:
            out[:, i, j, :] += (xd[:, h, w, :, None] * fd[a, b]).reshape(n, -1)
        else:
            out[:, i, j, :] += xd[:, h, w, :] @ fd[a, b]
    return out.astype(x.dtype)


def ref_conv2d_backprop_input(sizes, f, dy, strides, padding, dilations=1, depthwise=False):
    dx = np.zeros(sizes)
    fd, gd = f.astype(np.float64), dy.astype(np.float64)
    for i, j, a, b, h, w in _taps(sizes, f.shape[0], f.shape[1], strides, padding, dilations):
        if depthwise:
            dx[:, h, w, :] += (gd[:, i, j, :].reshape(sizes[0], sizes[3], -1) * fd[a, b]).sum(-1)
        else:
            dx[:, h, w, :] += gd[:, i, j, :] @ fd[a, b].T
    return dx.astype(dy.dtype)


def ref_conv2d_backprop_filter(x, sizes, dy, strides, padding, dilations=1, depthwise=False):
    df = np.zeros(sizes)
    xd, gd = x.astype(np.float64), dy.astype(np.float64)
    for i, j, a, b, h, w in _taps(x.shape, sizes[0], sizes[1], strides, padding, dilations):
        if depthwise:
            g = gd[:, i, j, :].reshape(x.shape[0], x.shape[3], -1)
            df[a, b] += (xd[:, h, w, :, None] * g).sum(0)
        else:
            df[a, b] += xd[:, h, w, :].T @ gd[:, i, j, :]
    return df.astype(dy.dtype)


def _pool_windows(x_shape, ksize, strides, padding):
    kh, kw = _hw(ksize)
    sh, sw = _hw(strides)
    oh, pt = _window(x_shape[1], kh, sh, 1, padding, (0, 0))
    ow_, pl = _window(x_shape[2], kw, sw, 1, padding, (0, 0))
    for i, j in itertools.product(range(oh), range(ow_)):
        h0, w0 = i * sh - pt, j * sw - pl
        rows = range(max(h0, 0), min(h0 + kh, x_shape[1]))
        cols = range(max(w0, 0), min(w0 + kw, x_shape[2]))
        yield i, j, oh, ow_, [(h, w) for h in rows for w in cols]


def ref_max_pool(x, ksize, strides, padding, **_: Any) -> np.ndarray:
    out = None
    for i, j, oh, ow_, cells in _pool_windows(x.shape, ksize, strides, padding):
        if out is None:
            out = np.zeros((x.shape[0], oh, ow_, x.shape[3]), x.dtype)
        out[:, i, j, :] = np.max([x[:, h, w, :] for h, w in cells], axis=0)
    return out


def ref_avg_pool(x, ksize, strides, padding, **_: Any) -> np.ndarray:
    out = None
    for i, j, oh, ow_, cells in _pool_windows(x.shape, ksize, strides, padding):
        if out is None:
            out = np.zeros((x.shape[0], oh, ow_, x.shape[3]))
        out[:, i, j, :] = np.mean([x[:, h, w, :].astype(np.float64) for h, w in cells], axis=0)
    return out.astype(x.dtype)


def ref_max_pool_grad(x, y, g, ksize, strides, padding, **_: Any) -> np.ndarray:
    """The gradient goes to the first cell of the window (row-major) holding the maximum."""
    dx = np.zeros(x.shape)
    for i, j, _, _, cells in _pool_windows(x.shape, ksize, strides, padding):
        for n, c in itertools.product(range(x.shape[0]), range(x.shape[3])):
            best = cells[0]
            for cell in cells[1:]:
                if x[n, best[0], best[1], c] < x[n, cell[0], cell[1], c]:
                    best = cell
            dx[n, best[0], best[1], c] += g[n, i, j, c]
    return dx.astype(g.dtype)


def ref_avg_pool_grad(g, orig_input_shape, ksize, strides, padding, **_: Any) -> np.ndarray:
    dx = np.zeros(orig_input_shape)
    for i, j, _, _, cells in _pool_windows(orig_input_shape, ksize, strides, padding):
        for h, w in cells:
            dx[:, h, w, :] += g[:, i, j, :] / len(cells)
    return dx.astype(g.dtype)


# -- shape and argument strategies ---------------------------------------------------------------


def _conv_config(draw: st.DrawFn, depthwise: bool = False) -> dict[str, Any]:
    """A valid small convolution: shapes (x, f, dy) and its arguments."""
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    co = draw(st.integers(1, 2))
    strides = draw(st.sampled_from([1, 2, [1, 2], [2, 1], [1, 1, 1, 1], [1, 3, 2, 1]]))
    dilations = draw(st.sampled_from([1, 1, 2, [1, 2, 1, 1]]))
    dh, dw = _hw(dilations)
    if depthwise and (dh > 1 or dw > 1):
        strides = 1  # TensorFlow's depthwise_conv2d: a rate above 1 needs strides of 1
    kind = draw(st.sampled_from(["SAME", "VALID", "EXPLICIT"]))
    pads = (
        (0, 0),
        (draw(st.integers(0, 2)), draw(st.integers(0, 2))),
        (draw(st.integers(0, 2)), draw(st.integers(0, 2))),
        (0, 0),
    )
    eff_h, eff_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    lo_h = 1 if kind == "SAME" else max(1, eff_h - (sum(pads[1]) if kind == "EXPLICIT" else 0))
    lo_w = 1 if kind == "SAME" else max(1, eff_w - (sum(pads[2]) if kind == "EXPLICIT" else 0))
    h, w = draw(st.integers(lo_h, lo_h + 3)), draw(st.integers(lo_w, lo_w + 3))
    padding: Any = [list(p) for p in pads] if kind == "EXPLICIT" else kind
    x_shape = (n, h, w, c)
    _, _, _, _, oh, ow_, _, _ = _geometry(x_shape, kh, kw, strides, padding, dilations)
    f_shape = (kh, kw, c, co)
    return {
        "x": x_shape,
        "f": f_shape,
        "dy": (n, oh, ow_, c * co if depthwise else co),
        "strides": strides,
        "padding": padding,
        "dilations": dilations,
    }


def _configs(depthwise: bool, names: tuple[str, ...]) -> Callable[[st.DrawFn], list[Any]]:
    """Input shapes of a config; its arguments are redrawn by _conv_kwargs from the same draw."""

    def draw_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
        cfg = _conv_config(draw, depthwise)
        _LAST_CONFIG[names] = cfg
        return [cfg[k] for k in names]

    return draw_shapes


# The config drawn with the shapes of a row, for its kwargs (drawn right after, same example).
_LAST_CONFIG: dict[tuple[str, ...], dict[str, Any]] = {}


def _conv_kwargs(
    names: tuple[str, ...], extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None
):
    def draw_kwargs(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
        cfg = _LAST_CONFIG[names]
        assert [cfg[k] for k in names] == list(shapes)
        kw = {"strides": cfg["strides"], "padding": cfg["padding"], "dilations": cfg["dilations"]}
        if extra is not None:
            kw.update(extra(cfg))
        return kw

    return draw_kwargs


def _pool_config(draw: st.DrawFn) -> dict[str, Any]:
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    ksize = draw(st.sampled_from([1, 2, 3, [2, 3], [1, 3, 2, 1]]))
    strides = draw(st.sampled_from([1, 2, [2, 1], [1, 3, 3, 1]]))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    kh, kw = _hw(ksize)
    h = draw(st.integers(kh if padding == "VALID" else 1, 5))
    w = draw(st.integers(kw if padding == "VALID" else 1, 5))
    oh, _ = _window(h, kh, _hw(strides)[0], 1, padding, (0, 0))
    ow_, _ = _window(w, kw, _hw(strides)[1], 1, padding, (0, 0))
    return {
        "x": (n, h, w, c),
        "y": (n, oh, ow_, c),
        "ksize": ksize,
        "strides": strides,
        "padding": padding,
    }


def _pool_shapes(names: tuple[str, ...]) -> Callable[[st.DrawFn], list[Any]]:
    def draw_shapes(draw: st.DrawFn) -> list[tuple[int, ...]]:
        cfg = _pool_config(draw)
        _LAST_CONFIG[("pool", *names)] = cfg
        return [cfg[k] for k in names]

    return draw_shapes


def _pool_kwargs(names: tuple[str, ...], with_shape: bool = False):
    def draw_kwargs(draw: st.DrawFn, shapes: list[tuple[int, ...]]) -> dict[str, Any]:
        cfg = _LAST_CONFIG[("pool", *names)]
        assert [cfg[k] for k in names] == list(shapes)
        kw = {k: cfg[k] for k in ("ksize", "strides", "padding")}
        if with_shape:
            kw["orig_input_shape"] = list(cfg["x"])
        return kw

    return draw_kwargs


def _distinct(rng: np.random.Generator, shapes: list[tuple[int, ...]], dtypes: list[Any]):
    """Values without ties (max pooling picks one of equal maxima: finite differences would see
    both), spread so that a finite-difference step never reorders two of them."""
    out = []
    for s, d in zip(shapes, dtypes, strict=True):
        size = int(np.prod(s))
        v = rng.permutation(size).reshape(s) - size // 2
        out.append((v * (0.5 if np.dtype(d).kind == "f" else 1)).astype(d))
    return out


# -- the rows ------------------------------------------------------------------------------------

X_F = ("x", "f")
DY_F = ("dy", "f")
X_DY = ("x", "dy")


def _backprop_filter(x: Any, dy: Any, filter_sizes: Any, **kw: Any) -> Any:
    return ow.nn.conv2d_backprop_filter(x, filter_sizes, dy, **kw)


def _depthwise_backprop_input(f: Any, dy: Any, input_sizes: Any, **kw: Any) -> Any:
    return ow.nn.depthwise_conv2d_native_backprop_input(input_sizes, f, dy, **kw)


def _depthwise_backprop_filter(x: Any, dy: Any, filter_sizes: Any, **kw: Any) -> Any:
    return ow.nn.depthwise_conv2d_native_backprop_filter(x, filter_sizes, dy, **kw)


def _max_pool_grad(x: Any, g: Any, **kw: Any) -> Any:
    return nn_conv.max_pool_grad(x, ow.nn.max_pool(x, **kw), g, **kw)


def _avg_pool_grad(g: Any, orig_input_shape: Any, **kw: Any) -> Any:
    return nn_conv.avg_pool_grad(orig_input_shape, g, **kw)


CASES = [
    OpCase(
        "Conv2D",
        ow.nn.conv2d,
        ref_conv2d,
        _configs(False, X_F),
        kwargs=_conv_kwargs(X_F),
        threads=False,
        rtol=1e-4,
    ),
    OpCase(
        "Conv2DBackpropInput",
        ow.nn.conv2d_transpose,
        lambda dy, f, output_shape, **kw: ref_conv2d_backprop_input(output_shape, f, dy, **kw),
        _configs(False, ("dy", "f")),
        kwargs=_conv_kwargs(("dy", "f"), lambda cfg: {"output_shape": list(cfg["x"])}),
        threads=False,
        rtol=1e-4,
        id="conv2d_transpose",
    ),
    OpCase(
        "Conv2DBackpropFilter",
        _backprop_filter,
        lambda x, dy, filter_sizes, **kw: ref_conv2d_backprop_filter(x, filter_sizes, dy, **kw),
        _configs(False, X_DY),
        kwargs=_conv_kwargs(X_DY, lambda cfg: {"filter_sizes": list(cfg["f"])}),
        threads=False,
        eager_name=None,
        rtol=1e-4,
    ),
    OpCase(
        "DepthwiseConv2dNative",
        ow.nn.depthwise_conv2d_native,
        lambda x, f, **kw: ref_conv2d(x, f, depthwise=True, **kw),
        _configs(True, ("x", "f")),
        kwargs=_conv_kwargs(("x", "f")),
        threads=False,
        rtol=1e-4,
    ),
    OpCase(
        "DepthwiseConv2dNative",
        ow.nn.depthwise_conv2d,
        lambda x, f, strides, padding, rate: ref_conv2d(
            x, f, strides, padding, dilations=rate, depthwise=True
        ),
        _configs(True, ("x", "f")),
        kwargs=lambda draw, shapes: {
            k if k != "dilations" else "rate": (list(_hw(v)) if k == "dilations" else v)
            for k, v in _conv_kwargs(("x", "f"))(draw, shapes).items()
        },
        threads=False,
        rtol=1e-4,
        id="depthwise_conv2d",
    ),
    OpCase(
        "DepthwiseConv2dNativeBackpropInput",
        _depthwise_backprop_input,
        lambda f, dy, input_sizes, **kw: ref_conv2d_backprop_input(
            input_sizes, f, dy, depthwise=True, **kw
        ),
        _configs(True, ("f", "dy")),
        kwargs=_conv_kwargs(("f", "dy"), lambda cfg: {"input_sizes": list(cfg["x"])}),
        threads=False,
        eager_name=None,
        rtol=1e-4,
    ),
    OpCase(
        "DepthwiseConv2dNativeBackpropFilter",
        _depthwise_backprop_filter,
        lambda x, dy, filter_sizes, **kw: ref_conv2d_backprop_filter(
            x, filter_sizes, dy, depthwise=True, **kw
        ),
        _configs(True, X_DY),
        kwargs=_conv_kwargs(X_DY, lambda cfg: {"filter_sizes": list(cfg["f"])}),
        threads=False,
        eager_name=None,
        rtol=1e-4,
    ),
    OpCase(
        "MaxPool",
        ow.nn.max_pool,
        ref_max_pool,
        _pool_shapes(("x",)),
        dtypes=FLOATS + INTS + (np.int8, np.uint8, np.int16),
        kwargs=_pool_kwargs(("x",)),
        values=_distinct,
        threads=False,
    ),
    OpCase(
        "AvgPool",
        ow.nn.avg_pool,
        ref_avg_pool,
        _pool_shapes(("x",)),
        kwargs=_pool_kwargs(("x",)),
        threads=False,
    ),
    OpCase(
        "MaxPoolGrad",
        _max_pool_grad,
        lambda x, g, **kw: ref_max_pool_grad(x, None, g, **kw),
        _pool_shapes(("x", "y")),
        kwargs=_pool_kwargs(("x", "y")),
        values=_distinct,
        threads=False,
        eager_name=None,
        grad=False,  # MaxPoolGrad has no gradient of its own (as in TensorFlow 1)
    ),
    OpCase(
        "AvgPoolGrad",
        _avg_pool_grad,
        lambda g, orig_input_shape, **kw: ref_avg_pool_grad(g, orig_input_shape, **kw),
        _pool_shapes(("y",)),
        kwargs=_pool_kwargs(("y",), with_shape=True),
        threads=False,
        eager_name=None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
@SETTINGS
@given(data=st.data())
def test_op_matches_the_direct_loop_reference_and_its_gradient_finite_differences(
    case: OpCase, data: st.DataObject
) -> None:
    check_case(case, data)


# -- gradients on fixed small shapes (the rows skip draws too large for finite differences) -------

GRADIENT_CASES = [
    ("conv2d stride 2 SAME", (1, 4, 3, 2), (3, 2, 2, 2), {"strides": 2, "padding": "SAME"}),
    (
        "conv2d dilated VALID",
        (1, 5, 4, 1),
        (2, 2, 1, 2),
        {"strides": 1, "padding": "VALID", "dilations": 2},
    ),
    (
        "conv2d explicit",
        (2, 3, 3, 1),
        (2, 2, 1, 2),
        {"strides": [1, 2, 1, 1], "padding": [[0, 0], [1, 0], [0, 2], [0, 0]]},
    ),
]


@pytest.mark.parametrize(
    ("label", "xs", "fs", "kw"), GRADIENT_CASES, ids=[c[0] for c in GRADIENT_CASES]
)
def test_conv2d_gradients_match_finite_differences(label: str, xs: Any, fs: Any, kw: Any) -> None:
    case = OpCase("Conv2D", ow.nn.conv2d, ref_conv2d, lambda d: [xs, fs])
    rng = np.random.default_rng(3)
    numeric_jacobian_check(case, [rng.uniform(-1, 1, xs), rng.uniform(-1, 1, fs)], kw)
    numeric_jacobian_check(case, [rng.uniform(-1, 1, xs), rng.uniform(-1, 1, fs)], kw, order=2)


def test_depthwise_and_pool_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(4)
    dw = OpCase("DepthwiseConv2dNative", ow.nn.depthwise_conv2d_native, ref_conv2d, lambda d: [])
    kw = {"strides": [1, 2, 2, 1], "padding": "SAME"}
    numeric_jacobian_check(
        dw, [rng.uniform(-1, 1, (1, 4, 3, 2)), rng.uniform(-1, 1, (2, 2, 2, 2))], kw
    )
    mp = OpCase("MaxPool", ow.nn.max_pool, ref_max_pool, lambda d: [])
    x = (rng.permutation(24).reshape(1, 4, 3, 2) - 12) * 0.5
    numeric_jacobian_check(mp, [x], {"ksize": 3, "strides": 2, "padding": "SAME"})
    ap = OpCase("AvgPool", ow.nn.avg_pool, ref_avg_pool, lambda d: [], grad2=True)
    numeric_jacobian_check(ap, [x], {"ksize": 3, "strides": 2, "padding": "SAME"}, order=2)


# -- threads ------------------------------------------------------------------------------------


def _thread_cases() -> list[tuple[str, Callable[..., Any], list[np.ndarray], dict[str, Any]]]:
    rng = np.random.default_rng(5)

    def r(*s: int) -> np.ndarray:
        return rng.standard_normal(s).astype(np.float32)

    x = r(3, 17, 19, 40)  # K = 3 * 3 * 40 = 360: two K blocks; M = 3 * 9 * 10: several row tiles
    f = r(3, 3, 40, 37)  # 37 columns: a ragged last micro-panel
    conv = {"strides": 2, "padding": "SAME"}
    dy = ow.kernels.conv2d(x, f, **conv)
    k = ow.kernels
    return [
        ("conv2d", k.conv2d, [x, f], conv),
        ("conv2d 1x1", k.conv2d, [x, r(1, 1, 40, 33)], {"strides": 1, "padding": "VALID"}),
        ("conv2d dilated", k.conv2d, [x, f], {"strides": 1, "padding": "SAME", "dilations": 2}),
        ("conv2d float64", k.conv2d, [x.astype(np.float64), f.astype(np.float64)], conv),
        ("backprop input", k.conv2d_backprop_input, [list(x.shape), f, dy], conv),
        ("backprop filter", k.conv2d_backprop_filter, [x, list(f.shape), dy], conv),
        (
            # One input channel: the weight gradient is summed over slices of the 4800 pixels.
            "backprop filter one channel",
            k.conv2d_backprop_filter,
            [r(3, 40, 40, 1), [5, 5, 1, 8], r(3, 40, 40, 8)],
            {"strides": 1, "padding": "SAME"},
        ),
        ("depthwise", k.depthwise_conv2d_native, [x, r(3, 3, 40, 2)], conv),
        (
            "depthwise backprop input",
            k.depthwise_conv2d_native_backprop_input,
            [list(x.shape), r(3, 3, 40, 2), r(3, 9, 10, 80)],
            conv,
        ),
        (
            "depthwise backprop filter",
            k.depthwise_conv2d_native_backprop_filter,
            [x, [3, 3, 40, 2], r(3, 9, 10, 80)],
            conv,
        ),
        ("max_pool", k.max_pool, [x], {"ksize": 3, "strides": 2, "padding": "SAME"}),
        ("avg_pool", k.avg_pool, [x], {"ksize": 3, "strides": 2, "padding": "SAME"}),
        (
            "max_pool_grad",
            k.max_pool_grad,
            [x, k.max_pool(x, 3, 2, "SAME"), r(3, 9, 10, 40)],
            {"ksize": 3, "strides": 2, "padding": "SAME"},
        ),
        (
            "avg_pool_grad",
            k.avg_pool_grad,
            [list(x.shape), r(3, 9, 10, 40)],
            {"ksize": 3, "strides": 2, "padding": "SAME"},
        ),
    ]


@pytest.mark.parametrize("label", [c[0] for c in _thread_cases()])
def test_the_same_bits_on_1_and_3_threads(label: str) -> None:
    _, fn, args, kw = next(c for c in _thread_cases() if c[0] == label)
    one = fn(*args, **kw, _num_threads=1)
    three = fn(*args, **kw, _num_threads=3)
    np.testing.assert_array_equal(one, three)


def test_larger_convolutions_match_the_reference() -> None:
    """Shapes that take every path of the GEMM: several K blocks, row tiles, ragged edges."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 13, 11, 40)).astype(np.float32)
    f = rng.standard_normal((3, 3, 40, 37)).astype(np.float32)
    for kw in [
        {"strides": 1, "padding": "SAME"},
        {"strides": [1, 2, 3, 1], "padding": "VALID", "dilations": [1, 1, 2, 1]},
    ]:
        y = ow.kernels.conv2d(x, f, **kw)
        np.testing.assert_allclose(y, ref_conv2d(x, f, **kw), rtol=2e-4, atol=2e-4)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        np.testing.assert_allclose(
            ow.kernels.conv2d_backprop_input(list(x.shape), f, dy, **kw),
            ref_conv2d_backprop_input(x.shape, f, dy, **kw),
            rtol=2e-4,
            atol=2e-4,
        )
        np.testing.assert_allclose(
            ow.kernels.conv2d_backprop_filter(x, list(f.shape), dy, **kw),
            ref_conv2d_backprop_filter(x, f.shape, dy, **kw),
            rtol=2e-4,
            atol=1e-3,
        )


def test_convolutions_of_few_channels_match_the_reference() -> None:
    """A first layer's one or two input channels: each filter row's taps are one run of the patch
    matrix (cut at the image's edges, not with dilation), and the weight gradient is summed over
    slices of the pixels (5 x 30 x 28 = 4200: two slices)."""
    rng = np.random.default_rng(7)
    for xs, fs, kw in [
        ((5, 30, 28, 1), (5, 5, 1, 8), {"strides": 1, "padding": "SAME"}),  # deep MNIST's conv1
        ((2, 9, 11, 2), (5, 5, 2, 3), {"strides": 1, "padding": "SAME"}),
        ((2, 9, 11, 1), (3, 3, 1, 3), {"strides": 2, "padding": "SAME", "dilations": 1}),
        ((2, 9, 11, 1), (3, 3, 1, 3), {"strides": 1, "padding": "SAME", "dilations": 2}),
        ((1, 8, 9, 1), (17, 16, 1, 2), {"strides": 1, "padding": "SAME"}),  # K = 272: 2 blocks
        ((1, 20, 19, 1), (17, 3, 1, 2), {"strides": 1, "padding": "VALID"}),
    ]:
        x = rng.standard_normal(xs).astype(np.float32)
        f = rng.standard_normal(fs).astype(np.float32)
        y = ow.kernels.conv2d(x, f, **kw)
        np.testing.assert_allclose(y, ref_conv2d(x, f, **kw), rtol=2e-4, atol=2e-4)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        np.testing.assert_allclose(
            ow.kernels.conv2d_backprop_input(list(xs), f, dy, **kw),
            ref_conv2d_backprop_input(xs, f, dy, **kw),
            rtol=2e-4,
            atol=2e-4,
        )
        np.testing.assert_allclose(
            ow.kernels.conv2d_backprop_filter(x, list(fs), dy, **kw),
            ref_conv2d_backprop_filter(x, fs, dy, **kw),
            rtol=2e-4,
            atol=2e-3,
        )


# -- data formats, static shapes, helpers ---------------------------------------------------------


def test_nchw_is_the_nhwc_result_transposed() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    f = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    to_nchw = (0, 3, 1, 2)
    xc = x.transpose(to_nchw)
    k = ow.kernels
    y = k.conv2d(x, f, [1, 2, 1, 1], "SAME")
    yc = k.conv2d(xc, f, [1, 1, 2, 1], "SAME", data_format="NCHW")
    np.testing.assert_array_equal(yc, y.transpose(to_nchw))
    for pool in (k.max_pool, k.avg_pool):
        want = pool(x, [1, 3, 2, 1], [1, 2, 2, 1], "SAME").transpose(to_nchw)
        got = pool(xc, [1, 1, 3, 2], [1, 1, 2, 2], "SAME", data_format="NCHW")
        np.testing.assert_array_equal(got, want)
    with ow.Graph().as_default():
        xp = ow.placeholder(ow.float32, (None, 3, 7, 6))
        out = ow.nn.conv2d(xp, f, [1, 1, 2, 1], "SAME", data_format="NCHW")
        assert out.shape.as_list() == [None, 4, 4, 6]
        g = ow.gradients(ow.reduce_sum(out * out), xp)[0]
        assert g.shape.as_list() == [None, 3, 7, 6]
        with ow.Session() as s:
            got_g = s.run(g, {xp: xc})
    with ow.Graph().as_default():
        xn = ow.constant(x)
        out = ow.nn.conv2d(xn, f, [1, 2, 1, 1], "SAME")
        (g_nhwc,) = ow.gradients(ow.reduce_sum(out * out), [xn])
        with ow.Session() as s:
            np.testing.assert_allclose(got_g, s.run(g_nhwc).transpose(to_nchw), rtol=1e-5)


def test_static_shapes_with_unknown_batch_and_spatial_dimensions() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, (None, 28, 28, 1))
        h = ow.nn.conv2d(x, ow.ones([5, 5, 1, 32]), [1, 1, 1, 1], "SAME")
        assert h.shape.as_list() == [None, 28, 28, 32]
        p = ow.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        assert p.shape.as_list() == [None, 14, 14, 32]
        v = ow.nn.conv2d(p, ow.ones([5, 5, 32, 8]), 2, "VALID")
        assert v.shape.as_list() == [None, 5, 5, 8]
        u = ow.placeholder(ow.float32, (4, None, None, 3))
        assert ow.nn.conv2d(u, ow.ones([3, 3, 3, 2]), 2, "SAME").shape.as_list() == [
            4,
            None,
            None,
            2,
        ]
        assert ow.nn.avg_pool(u, 2, 2, "VALID").shape.as_list() == [4, None, None, 3]
        assert ow.nn.depthwise_conv2d(u, ow.ones([3, 3, 3, 2]), 1, "SAME").shape.as_list() == [
            4,
            None,
            None,
            6,
        ]
        unknown_rank = ow.placeholder(ow.float32)
        assert ow.nn.conv2d(unknown_rank, ow.ones([3, 3, 3, 2]), 1, "SAME").shape.as_list() == [
            None,
            None,
            None,
            2,
        ]
        flat = ow.layers.flatten(p)
        assert flat.shape.as_list() == [None, 14 * 14 * 32]
        with ow.Session() as s:
            out = s.run(flat, {x: np.ones((2, 28, 28, 1), np.float32)})
        assert out.shape == (2, 6272)
        ones = np.ones((2, 28, 28, 1), np.float32)
        conv = ref_conv2d(ones, np.ones((5, 5, 1, 32), np.float32), 1, "SAME")
        np.testing.assert_array_equal(out, ref_max_pool(conv, 2, 2, "SAME").reshape(2, -1))


def test_gradient_shapes_follow_unknown_batch() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, (None, 8, 8, 3))
        w = ow.constant(np.ones((3, 3, 3, 4), np.float32))
        y = ow.nn.avg_pool(ow.nn.conv2d(x, w, 1, "SAME"), 2, 2, "VALID")
        gx, gw = ow.gradients(ow.reduce_sum(y), [x, w])
        assert gx.shape.as_list() == [None, 8, 8, 3]
        assert gw.shape.as_list() == [3, 3, 3, 4]
        with ow.Session() as s:
            vx, vw = s.run([gx, gw], {x: np.ones((5, 8, 8, 3), np.float32)})
        assert vx.shape == (5, 8, 8, 3)
        assert vw.shape == (3, 3, 3, 4)


def test_max_pool_skips_nan_and_its_gradient_goes_to_the_first_maximum() -> None:
    k = ow.kernels
    x = np.array([1.0, 3.0, 3.0, 2.0, np.nan, 1.0, 2.0, 3.0], np.float32).reshape(2, 2, 2, 1)
    np.testing.assert_array_equal(k.max_pool(x, 2, 2, "VALID").ravel(), [3.0, 3.0])
    grad = k.max_pool_grad(
        x, k.max_pool(x, 2, 2, "VALID"), np.ones((2, 1, 1, 1), np.float32), 2, 2, "VALID"
    )
    # First maximum of [1, 3, 3, 2] is cell 1; a NaN first keeps the gradient (TensorFlow's CPU).
    np.testing.assert_array_equal(grad.ravel(), [0, 1, 0, 0, 1, 0, 0, 0])


def test_overlapping_max_pool_windows_add_their_gradients() -> None:
    x = np.zeros((1, 3, 3, 1), np.float32)
    x[0, 1, 1, 0] = 5.0
    with ow.Graph().as_default():
        xt = ow.constant(x)
        y = ow.nn.max_pool(xt, 2, 1, "VALID")
        (g,) = ow.gradients(ow.reduce_sum(y), [xt])
        with ow.Session() as s:
            assert s.run(g)[0, 1, 1, 0] == 4.0


def test_conv2d_transpose_is_the_adjoint_of_conv2d() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 9, 8, 3))
    f = rng.standard_normal((3, 3, 3, 5))
    y = ow.kernels.conv2d(x, f, 2, "SAME")
    v = rng.standard_normal(y.shape)
    t = ow.kernels.conv2d_transpose(v, f, list(x.shape), 2, "SAME")
    np.testing.assert_allclose(np.sum(y * v), np.sum(x * t), rtol=1e-10)


def test_empty_batches_and_zero_channels() -> None:
    k = ow.kernels
    assert k.conv2d(
        np.zeros((0, 5, 5, 3), np.float32), np.ones((3, 3, 3, 2), np.float32), 1, "SAME"
    ).shape == (0, 5, 5, 2)
    out = k.conv2d(np.zeros((2, 5, 5, 0), np.float32), np.ones((3, 3, 0, 2), np.float32), 1, "SAME")
    np.testing.assert_array_equal(out, np.zeros((2, 5, 5, 2)))
    assert k.max_pool(np.zeros((0, 4, 4, 2), np.float32), 2, 2, "SAME").shape == (0, 2, 2, 2)


# -- errors -------------------------------------------------------------------------------------

BAD = [
    ("rank 3 input", (None, 5, 5), (3, 3, 3, 8), {}, "Shape must be rank 4 but is rank 3"),
    ("depth mismatch", (None, 5, 5, 3), (3, 3, 4, 8), {}, "Depth of input (3)"),
    ("zero stride", (None, 5, 5, 3), (3, 3, 3, 8), {"strides": [1, 0, 1, 1]}, "Stride must be > 0"),
    ("batch stride", (None, 5, 5, 3), (3, 3, 3, 8), {"strides": [2, 1, 1, 1]}, "batch and depth"),
    ("depth stride", (None, 5, 5, 3), (3, 3, 3, 8), {"strides": [1, 1, 1, 2]}, "batch and depth"),
    (
        "zero dilation",
        (None, 5, 5, 3),
        (3, 3, 3, 8),
        {"dilations": [1, 0, 1, 1]},
        "Dilation must be > 0",
    ),
    ("padding name", (None, 5, 5, 3), (3, 3, 3, 8), {"padding": "FULL"}, "padding"),
    ("lowercase padding", (None, 5, 5, 3), (3, 3, 3, 8), {"padding": "same"}, "padding"),
    (
        "window too big",
        (None, 2, 2, 3),
        (3, 3, 3, 8),
        {"padding": "VALID"},
        "Negative dimension size",
    ),
    ("3 strides", (None, 5, 5, 3), (3, 3, 3, 8), {"strides": [1, 1, 1]}, "length 1, 2 or 4"),
    ("3 pads", (None, 5, 5, 3), (3, 3, 3, 8), {"padding": [[0, 0], [1, 1], [1, 1]]}, "size 4"),
    (
        "negative pad",
        (None, 5, 5, 3),
        (3, 3, 3, 8),
        {"padding": [[0, 0], [1, 1], [1, -1], [0, 0]]},
        "padding[2][1]",
    ),
    (
        "batch pad",
        (None, 5, 5, 3),
        (3, 3, 3, 8),
        {"padding": [[1, 0], [1, 1], [1, 1], [0, 0]]},
        "batch and channel",
    ),
]


@pytest.mark.parametrize(("label", "xs", "fs", "kw", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_conv2d_arguments_are_value_errors_naming_op_and_shapes(
    label: str, xs: Any, fs: Any, kw: dict[str, Any], message: str
) -> None:
    args = {"strides": [1, 1, 1, 1], "padding": "SAME", **kw}
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, xs)
        f = ow.placeholder(ow.float32, fs)
        with pytest.raises(ValueError, match=re.escape(message)) as info:
            ow.nn.conv2d(x, f, **args)
    text = str(info.value)
    if "Conv2D" in text and "input shapes" in text:
        assert "[?,5,5" in text or "[?,2,2" in text


def test_bad_pool_and_transpose_arguments() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, (None, 5, 5, 3))
        with pytest.raises(ValueError, match="ksize in the batch and depth"):
            ow.nn.max_pool(x, [1, 2, 2, 2], [1, 2, 2, 1], "SAME")
        with pytest.raises(
            ValueError, match="Negative dimension size caused by subtracting 6 from 5"
        ):
            ow.nn.max_pool(x, 6, 1, "VALID")
        with pytest.raises(ValueError, match="padding"):
            ow.nn.avg_pool(x, 2, 2, "EXPLICIT")
        with pytest.raises(TypeError, match="padding"):
            ow.nn.max_pool(x, 2, 2, [[0, 0], [1, 1], [1, 1], [0, 0]])
        with pytest.raises(
            ValueError, match="input channels does not match filter's input channels"
        ):
            ow.nn.conv2d_transpose(x, ow.ones([3, 3, 8, 4]), [4, 10, 10, 8], 2)
        with pytest.raises(
            ValueError, match="output_shape does not match filter's output channels"
        ):
            ow.nn.conv2d_transpose(x, ow.ones([3, 3, 8, 3]), [4, 10, 10, 7], 2)
        with pytest.raises(ValueError, match="does not match the convolution's output shape"):
            ow.nn.conv2d_transpose(x, ow.ones([3, 3, 8, 3]), [4, 11, 11, 8], 2)
        with pytest.raises(ValueError, match="rate > 1"):
            ow.nn.depthwise_conv2d(x, ow.ones([3, 3, 3, 2]), 2, "SAME", rate=2)
        with pytest.raises(TypeError, match="float"):
            ow.nn.conv2d(
                ow.placeholder(ow.int32, (1, 5, 5, 3)), ow.ones([3, 3, 3, 2], ow.int32), 1, "SAME"
            )


def test_run_time_shape_errors_are_invalid_argument_naming_the_node() -> None:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.float32, (None, None, None, None))
        y = ow.nn.conv2d(x, ow.ones([3, 3, 3, 2]), 1, "VALID", name="my_conv")
        with ow.Session() as s:
            with pytest.raises(ow.errors.InvalidArgumentError, match="my_conv") as info:
                s.run(y, {x: np.ones((1, 5, 5, 4), np.float32)})
            assert "depth" in str(info.value)
            with pytest.raises(
                ow.errors.InvalidArgumentError, match="output size would be negative"
            ):
                s.run(y, {x: np.ones((1, 2, 5, 3), np.float32)})
            assert s.run(y, {x: np.ones((1, 3, 3, 3), np.float32)}).shape == (1, 1, 1, 2)


def test_float16_is_computed_in_float32_and_rounded() -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 6, 5, 3)).astype(np.float16)
    f = rng.standard_normal((3, 3, 3, 4)).astype(np.float16)
    k = ow.kernels
    y = k.conv2d(x, f, 1, "SAME")
    assert y.dtype == np.float16
    want = k.conv2d(x.astype(np.float32), f.astype(np.float32), 1, "SAME").astype(np.float16)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(k.max_pool(x, 2, 2, "SAME"), ref_max_pool(x, 2, 2, "SAME"))
    assert k.avg_pool(x, 2, 2, "VALID").dtype == np.float16


def test_a_deep_mnist_shaped_network_learns_with_its_gradients() -> None:
    """Two conv + max-pool layers, a dense layer with dropout and a readout, trained with Adam (in
    NumPy) on synthetic MNIST through opweave.gradients, the weights fed as placeholders (the
    TensorFlow 1 program with Variables and tf.train.AdamOptimizer waits for those). Every seed
    is fixed and the kernels give the same bits on any thread count: a deterministic run (loss
    0.92 -> 0.41, test accuracy 0.74 after 110 steps of 25 images)."""
    from opweave.examples.tutorials.mnist import input_data

    mnist = input_data.read_data_sets("/nonexistent", one_hot=True, synthetic_size=800, seed=0)
    rng = np.random.default_rng(10)
    shapes = {
        "w1": (5, 5, 1, 8),
        "b1": (8,),
        "w2": (5, 5, 8, 16),
        "b2": (16,),
        "w3": (7 * 7 * 16, 64),
        "b3": (64,),
        "w4": (64, 10),
        "b4": (10,),
    }
    params = {
        k: (
            rng.standard_normal(s) * (0.1 if k[0] == "w" else 0.0) + (0.1 if k[0] == "b" else 0)
        ).astype(np.float32)
        for k, s in shapes.items()
    }
    with ow.Graph().as_default():
        p = {k: ow.placeholder(ow.float32, s) for k, s in shapes.items()}
        x = ow.placeholder(ow.float32, (None, 784))
        y_ = ow.placeholder(ow.float32, (None, 10))
        keep = ow.placeholder(ow.float32, ())
        h = ow.reshape(x, [-1, 28, 28, 1])
        for w, b in (("w1", "b1"), ("w2", "b2")):
            h = ow.nn.relu(ow.nn.conv2d(h, p[w], [1, 1, 1, 1], "SAME") + p[b])
            h = ow.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        h = ow.nn.relu(ow.matmul(ow.layers.flatten(h), p["w3"]) + p["b3"])
        h = ow.nn.dropout(h, keep_prob=keep, seed=1)
        logits = ow.matmul(h, p["w4"]) + p["b4"]
        # The Brier score of the softmax (opweave has no log yet for a cross-entropy).
        e = ow.exp(logits - ow.reduce_max(logits, axis=1, keepdims=True))
        err = e / ow.reduce_sum(e, axis=1, keepdims=True) - y_
        loss = ow.reduce_mean(ow.reduce_sum(err * err, axis=1))
        grads = ow.gradients(loss, [p[k] for k in shapes])
        with ow.Session() as sess:
            losses = []
            m = {k: np.zeros(s) for k, s in shapes.items()}
            v = {k: np.zeros(s) for k, s in shapes.items()}
            for step in range(1, 111):
                bx, by = mnist.train.next_batch(25)
                feed = {x: bx, y_: by, keep: 0.75, **{p[k]: v for k, v in params.items()}}
                value, *g = sess.run([loss, *grads], feed)
                losses.append(float(value))
                for k, gk in zip(shapes, g, strict=True):  # Adam (learning rate 5e-3), in NumPy
                    m[k] = 0.9 * m[k] + 0.1 * gk
                    v[k] = 0.999 * v[k] + 0.001 * gk * gk
                    lr = 5e-3 * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
                    params[k] -= (lr * m[k] / (np.sqrt(v[k]) + 1e-8)).astype(np.float32)
            test = {x: mnist.test.images[:200], keep: 1.0, **{p[k]: v for k, v in params.items()}}
            predicted = sess.run(logits, test).argmax(1)
    accuracy = float(np.mean(predicted == mnist.test.labels[:200].argmax(1)))
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5]), losses
    assert accuracy > 0.3, accuracy  # ten classes: chance is 0.1


@pytest.mark.parametrize(
    ("ksize", "strides", "padding", "shape"),
    [
        (2, 2, "SAME", (2, 7, 6, 70)),  # windows tile the image; channels past one block of 64
        (2, 3, "VALID", (1, 8, 7, 5)),  # gaps between windows: those cells get zeros
        ([1, 3, 2, 1], [1, 3, 2, 1], "SAME", (2, 5, 5, 3)),  # clipped windows at the edges
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_gradient_of_windows_that_do_not_overlap(
    ksize: Any, strides: Any, padding: str, shape: tuple[int, ...], dtype: Any
) -> None:
    # Such windows write their cells directly (no scatter into zeros): ties go to the first cell,
    # a -0 gradient lands as +0 (TensorFlow adds into zeros), NaN only when it comes first.
    k = ow.kernels
    rng = np.random.default_rng(9)
    x = rng.integers(-2, 3, shape).astype(dtype)  # many ties
    x.flat[::17] = np.nan
    y = k.max_pool(x, ksize, strides, padding)
    g = rng.standard_normal(y.shape).astype(dtype)
    g.flat[::5] = -0.0
    got = k.max_pool_grad(x, y, g, ksize, strides, padding)
    want = ref_max_pool_grad(x, y, g, ksize, strides, padding)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(
        got, k.max_pool_grad(x, y, g, ksize, strides, padding, _num_threads=3)
    )
