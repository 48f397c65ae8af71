"""Convolutions and pooling (``opweave.nn``): conv2d, depthwise_conv2d, conv2d_transpose,
max_pool, avg_pool, and the gradient ops TensorFlow builds for them.

Images are NHWC by default (``data_format="NCHW"`` is accepted and computed through a transpose);
filters are ``[height, width, in_channels, out_channels]``. ``padding`` is ``"SAME"``,
``"VALID"`` or, for the convolutions, explicit pads ``[[0, 0], [top, bottom], [left, right],
[0, 0]]``. The kernels run on the intra-op pool and give the same bits for any thread count.

>>> import numpy as np
>>> import opweave as ow
>>> with ow.Graph().as_default():
...     x = ow.placeholder(ow.float32, (None, 28, 28, 1))
...     w = ow.constant(np.ones((5, 5, 1, 32), np.float32))
...     h = ow.nn.max_pool(ow.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), [1, 2, 2, 1], [1, 2, 2, 1],
...                        "SAME")
>>> h.shape
TensorShape([Dimension(None), Dimension(14), Dimension(14), Dimension(32)])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..dtypes import FLOATS, REALS
from ..framework import Operation, Shape, Tensor
from . import _checks
from ._op_def import Attr, OpDef, ShapeContext, memoizable, public
from .array_ops import shape as _shape_of

__all__ = [
    "avg_pool",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
    "max_pool",
]

TensorLike = Any
Shapes = Sequence[Sequence[int]]

_FORMATS = ("NHWC", "NCHW")


# -- attributes ----------------------------------------------------------------------------------


def _conv_attrs(explicit: bool = True) -> dict[str, Attr]:
    attrs = {
        "strides": Attr("list(int)"),
        "use_cudnn_on_gpu": Attr("bool", True),
        "padding": Attr(
            "string", allowed=("SAME", "VALID", "EXPLICIT") if explicit else ("SAME", "VALID")
        ),
        "explicit_paddings": Attr("list(int)", []),
        "data_format": Attr("string", "NHWC", allowed=_FORMATS),
        "dilations": Attr("list(int)", [1, 1, 1, 1]),
    }
    return attrs


def _depthwise_attrs() -> dict[str, Attr]:
    attrs = _conv_attrs()
    del attrs["use_cudnn_on_gpu"]
    return attrs


_POOL_ATTRS = {
    "ksize": Attr("list(int)"),
    "strides": Attr("list(int)"),
    "padding": Attr("string", allowed=("SAME", "VALID")),
    "data_format": Attr("string", "NHWC", allowed=_FORMATS),
}


def _spatial(ctx: ShapeContext, name: str) -> tuple[int, int]:
    """A 4-element window attribute (strides, dilations, ksize) checked as TensorFlow does; its
    (height, width) entries."""
    v = ctx.attrs[name]
    nchw = ctx.attrs.get("data_format") == "NCHW"
    if len(v) != 4:
        raise ctx.error(
            f"{ctx.op.type} requires the {name} attribute to contain 4 values, but got: {len(v)}"
        )
    for x in v:
        if x <= 0:
            what = "Stride" if name == "strides" else "Dilation" if name == "dilations" else "ksize"
            raise ctx.error(f"{what} must be > 0, but got {x}")
    c = 1 if nchw else 3
    if v[0] != 1 or v[c] != 1:
        raise ctx.error(
            f"Current implementation does not yet support {name} in the batch and depth "
            f"dimensions (got {name}={list(v)})"
        )
    return (v[2], v[3]) if nchw else (v[1], v[2])


def _explicit_pads(ctx: ShapeContext) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of explicit padding; zeros for SAME / VALID."""
    pads = ctx.attrs.get("explicit_paddings") or []
    if ctx.attrs["padding"] != "EXPLICIT":
        if pads:
            raise ctx.error(
                f"explicit_paddings must be empty unless padding is EXPLICIT, got {list(pads)}"
            )
        return (0, 0, 0, 0)
    if len(pads) != 8:
        raise ctx.error(
            f"explicit_paddings attribute must contain 8 values (a (before, after) pair per "
            f"dimension), but got: {len(pads)}"
        )
    if any(p < 0 for p in pads):
        raise ctx.error(f"All elements of explicit_paddings must be nonnegative, got {list(pads)}")
    nchw = ctx.attrs.get("data_format") == "NCHW"
    c = 2 if nchw else 6
    if pads[0] or pads[1] or pads[c] or pads[c + 1]:
        raise ctx.error(
            "Nonzero explicit padding in the batch or depth dimensions is not supported"
        )
    h = 4 if nchw else 2
    w = 6 if nchw else 4
    return (pads[h], pads[h + 1], pads[w], pads[w + 1])


def _rank4(ctx: ShapeContext, i: int) -> tuple[int | None, ...]:
    s = ctx.shape(i)
    if s is None:
        return (None, None, None, None)
    if len(s) != 4:
        raise ctx.error(f"Shape must be rank 4 but is rank {len(s)}")
    return tuple(s)


def _to_nhwc(ctx: ShapeContext, s: Sequence[int | None]) -> tuple[int | None, ...]:
    return (s[0], s[2], s[3], s[1]) if ctx.attrs.get("data_format") == "NCHW" else tuple(s)


def _from_nhwc(ctx: ShapeContext, s: Sequence[int | None]) -> tuple[int | None, ...]:
    return (s[0], s[3], s[1], s[2]) if ctx.attrs.get("data_format") == "NCHW" else tuple(s)


def _out_size(
    ctx: ShapeContext,
    size: int | None,
    k: int | None,
    stride: int,
    dilation: int,
    before: int,
    after: int,
) -> int | None:
    """TensorFlow's windowed output size (GetWindowedOutputSize) of one spatial dimension."""
    padding = ctx.attrs["padding"]
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)
    if k is None:
        return None
    eff = (k - 1) * dilation + 1
    padded = size + before + after
    if padded < eff:
        raise ctx.error(f"Negative dimension size caused by subtracting {eff} from {padded}")
    return (padded - eff) // stride + 1


def _conv_output(
    ctx: ShapeContext, x: Sequence[int | None], f: Sequence[int | None], depthwise: bool
) -> tuple[int | None, ...]:
    """The NHWC output shape of a convolution of NHWC ``x`` with filter ``f``; checks attrs."""
    sh, sw = _spatial(ctx, "strides")
    dh, dw = _spatial(ctx, "dilations")
    pt, pb, pl, pr = _explicit_pads(ctx)
    n, h, w, c = x
    kh, kw, fi, fo = f
    if c is not None and fi is not None and c != fi:
        raise ctx.error(
            f"Depth of input ({c}) does not match the input depth of filter ({fi}) "
            "(grouped convolutions are not supported)"
        )
    if depthwise:
        depth = c if c is not None else fi
        out_c = None if depth is None or fo is None else depth * fo
    else:
        out_c = fo
    return (
        n,
        _out_size(ctx, h, kh, sh, dh, pt, pb),
        _out_size(ctx, w, kw, sw, dw, pl, pr),
        out_c,
    )


def _conv_shape(ctx: ShapeContext) -> Shape:
    x = _to_nhwc(ctx, _rank4(ctx, 0))
    f = _rank4(ctx, 1)
    return _from_nhwc(ctx, _conv_output(ctx, x, f, ctx.op.type.startswith("Depthwise")))


def _sizes_value(ctx: ShapeContext, i: int, what: str) -> tuple[int | None, ...]:
    """The 4 sizes of integer input ``i`` (input_sizes / filter_sizes), None where unknown."""
    s = ctx.shape(i)
    if s is not None and (len(s) != 1 or (s[0] is not None and s[0] != 4)):
        raise ctx.error(f"{what} must be a vector of 4 sizes, got shape {list(s)}")
    v = ctx.shape_value(i)
    if v is None:
        return (None, None, None, None)
    if len(v) != 4:
        raise ctx.error(f"{what} must be a vector of 4 sizes, got {list(v)}")
    if any(d is not None and d < 0 for d in v):
        raise ctx.error(f"{what} must be sizes >= 0, got {list(v)}")
    return tuple(v)


def _check_out_backprop(
    ctx: ShapeContext, want: Sequence[int | None], got: Sequence[int | None]
) -> None:
    for a, b in zip(want, got, strict=True):
        if a is not None and b is not None and a != b:
            raise ctx.error(
                "out_backprop's shape "
                + _fmt(got)
                + " does not match the convolution's output shape "
                + _fmt(want)
            )


def _fmt(s: Sequence[int | None]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in s) + "]"


def _backprop_input_shape(ctx: ShapeContext) -> Shape:
    sizes = _sizes_value(ctx, 0, "input_sizes")
    f = _rank4(ctx, 1)
    dy = _to_nhwc(ctx, _rank4(ctx, 2))
    x = _to_nhwc(ctx, sizes)
    out = _conv_output(ctx, x, f, ctx.op.type.startswith("Depthwise"))
    _check_out_backprop(ctx, out, dy)
    return sizes


def _backprop_filter_shape(ctx: ShapeContext) -> Shape:
    x = _to_nhwc(ctx, _rank4(ctx, 0))
    sizes = _sizes_value(ctx, 1, "filter_sizes")
    dy = _to_nhwc(ctx, _rank4(ctx, 2))
    out = _conv_output(ctx, x, sizes, ctx.op.type.startswith("Depthwise"))
    _check_out_backprop(ctx, out, dy)
    return sizes


def _conv_flops(inputs: Shapes, outputs: Shapes, attrs: Mapping[str, Any]) -> int | None:
    """2 x the multiply-adds of the forward convolution (the same for both gradients)."""
    if len(inputs) != 3 and len(inputs) != 2:
        return None
    if len(inputs) == 2:  # forward: (input, filter) -> output
        f, out = inputs[1], outputs[0]
    elif len(inputs[1]) == 4:  # backprop input: (sizes, filter, out_backprop)
        f, out = inputs[1], inputs[2]
    else:  # backprop filter: (input, sizes, out_backprop) -> filter
        f, out = outputs[0], inputs[2]
    if len(f) != 4 or len(out) != 4:
        return None
    return 2 * math.prod(out) * f[0] * f[1] * f[2]


def _depthwise_flops(inputs: Shapes, outputs: Shapes, attrs: Mapping[str, Any]) -> int | None:
    if len(inputs) == 2:
        f, out = inputs[1], outputs[0]
    elif len(inputs[1]) == 4:
        f, out = inputs[1], inputs[2]
    else:
        f, out = outputs[0], inputs[2]
    if len(f) != 4 or len(out) != 4:
        return None
    return 2 * math.prod(out) * f[0] * f[1]


def _same_attrs(op_: Operation, keys: Sequence[str]) -> dict[str, Any]:
    return {k: op_.attrs[k] for k in keys if k in op_.attrs}


_CONV_KEYS = (
    "strides",
    "use_cudnn_on_gpu",
    "padding",
    "explicit_paddings",
    "data_format",
    "dilations",
)


# -- Conv2D and its gradients --------------------------------------------------------------------


class _ConvFamily:
    """The gradients of a convolution and its two backprops, which are each other's: the
    forward op's are the two backprops; each backprop's are the other backprop and the forward
    op. Conv2D and DepthwiseConv2dNative differ only in their three ops and attributes; the
    ops are filled in once they are defined (each op's definition names its gradient)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self.forward: OpDef
        self.backprop_input: OpDef
        self.backprop_filter: OpDef

    def grad(self, op_: Operation, grad: Tensor) -> list[Any]:
        x, f = op_.inputs
        attrs = _same_attrs(op_, self.keys)
        return [
            self.backprop_input(_shape_of(x), f, grad, **attrs),
            self.backprop_filter(x, _shape_of(f), grad, **attrs),
        ]

    def backprop_input_grad(self, op_: Operation, grad: Tensor) -> list[Any]:
        _, f, dy = op_.inputs
        attrs = _same_attrs(op_, self.keys)
        return [
            None,
            self.backprop_filter(grad, _shape_of(f), dy, **attrs),
            self.forward(grad, f, **attrs),
        ]

    def backprop_filter_grad(self, op_: Operation, grad: Tensor) -> list[Any]:
        x, _, dy = op_.inputs
        attrs = _same_attrs(op_, self.keys)
        return [
            self.backprop_input(_shape_of(x), grad, dy, **attrs),
            None,
            self.forward(x, grad, **attrs),
        ]


_CONV_FAMILY = _ConvFamily(_CONV_KEYS)
_CONV2D = OpDef(
    "Conv2D",
    inputs=["input: T", "filter: T"],
    attrs=_conv_attrs(),
    types={"T": FLOATS},
    shape=_conv_shape,
    grad=_CONV_FAMILY.grad,
    flops=_conv_flops,
)
_CONV2D_BACKPROP_INPUT = OpDef(
    "Conv2DBackpropInput",
    inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
    attrs=_conv_attrs(),
    types={"T": FLOATS},
    shape=_backprop_input_shape,
    grad=_CONV_FAMILY.backprop_input_grad,
    flops=_conv_flops,
)
_CONV2D_BACKPROP_FILTER = OpDef(
    "Conv2DBackpropFilter",
    inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
    attrs=_conv_attrs(),
    types={"T": FLOATS},
    shape=_backprop_filter_shape,
    grad=_CONV_FAMILY.backprop_filter_grad,
    flops=_conv_flops,
)
_CONV_FAMILY.forward = _CONV2D
_CONV_FAMILY.backprop_input = _CONV2D_BACKPROP_INPUT
_CONV_FAMILY.backprop_filter = _CONV2D_BACKPROP_FILTER


def _sequence(value: Any, name: str, data_format: Any, op_name: str) -> list[int]:
    """TensorFlow's ``_get_sequence`` for 2-D windows: an int or a list of 1, 2 or 4 ints as the
    4-element attribute (1 in the batch and channel positions)."""
    if value is None:
        raise TypeError(f"{op_name}: {name} is required")
    v = _checks.check_int_list(value, name, op=op_name)
    nchw = data_format == "NCHW"
    if len(v) == 1:
        v = [v[0], v[0]]
    if len(v) == 2:
        return [1, 1, *v] if nchw else [1, *v, 1]
    if len(v) == 4:
        return v
    raise ValueError(
        f"{op_name}: {name} should be of length 1, 2 or 4. Received: {name}={v} of length {len(v)}"
    )


def _padding(padding: Any, data_format: Any, op_name: str) -> tuple[str, list[int]]:
    """``padding`` as (the padding attr, explicit_paddings): a string, or explicit pads given as
    4 (before, after) pairs in the data format's dimension order."""
    if isinstance(padding, (str, bytes)):
        return padding.decode() if isinstance(padding, bytes) else padding, []
    if padding is None:
        raise TypeError(f"{op_name}: padding is required")
    if not isinstance(padding, (list, tuple)):
        raise TypeError(
            f"{op_name}: padding must be 'SAME', 'VALID' or a list of 4 (before, after) pairs, "
            f"got {padding!r}"
        )
    if len(padding) != 4:
        raise ValueError(
            f"{op_name}: When padding is a list, it must be of size 4 (a (before, after) pair "
            f"per dimension). Received: padding={padding!r} of size {len(padding)}"
        )
    flat: list[int] = []
    for i, pair in enumerate(padding):
        pair_ints = _checks.check_int_list(
            pair, f"padding[{i}]", op=op_name, minimum=0, allow_scalar=False
        )
        if len(pair_ints) != 2:
            raise ValueError(
                f"{op_name}: padding[{i}] must be a (before, after) pair, got {pair!r}"
            )
        flat.extend(pair_ints)
    c = 2 if data_format == "NCHW" else 6
    if flat[0] or flat[1] or flat[c] or flat[c + 1]:
        raise ValueError(
            f"{op_name}: explicit padding of the batch and channel dimensions must be 0, got "
            f"{[list(p) for p in padding]}"
        )
    return "EXPLICIT", flat


@memoizable
@public
def conv2d(
    input: TensorLike,
    filter: TensorLike = None,
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: TensorLike = None,
) -> Tensor:
    """2-D convolution (TensorFlow's cross-correlation): ``output[b, i, j, k] = sum over di, dj,
    q of input[b, strides[1] * i + dilations[1] * di - pad_top, strides[2] * j + dilations[2] *
    dj - pad_left, q] * filter[di, dj, q, k]``.

    Parameters
    ----------
    input : Tensor
        ``[batch, height, width, in_channels]`` (NHWC) or ``[batch, in_channels, height,
        width]`` (NCHW); float16, float32 or float64.
    filter, filters : Tensor
        ``[filter_height, filter_width, in_channels, out_channels]`` (``filters`` is TensorFlow
        2's name; give one of them).
    strides : int or list of 1, 2 or 4 ints
        Step of the window per dimension of ``data_format`` (1 in batch and channels).
    padding : {"SAME", "VALID"} or list of 4 (before, after) pairs
        ``"SAME"``: output size ``ceil(in / stride)``, the padding split with the odd element
        after; ``"VALID"``: no padding; explicit pairs per dimension (0 for batch and channels).
    use_cudnn_on_gpu : bool
        Accepted for compatibility; ignored.
    data_format : {"NHWC", "NCHW"}
    dilations : int or list of 1, 2 or 4 ints
        Spacing of the filter taps (atrous convolution).

    Returns
    -------
    Tensor
        ``[batch, out_height, out_width, out_channels]`` in ``data_format``. The same bits on
        any number of threads.

    Raises
    ------
    ValueError
        Naming the op and the input shapes: ranks other than 4, an input depth other than the
        filter's, strides or dilations < 1 or != 1 in the batch and channel dimensions, a VALID
        window larger than the (padded) input, a padding name other than SAME / VALID.

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    >>> w = np.ones((2, 2, 1, 1), np.float32)
    >>> ow.kernels.conv2d(x, w, strides=2, padding="VALID")[0, :, :, 0]
    array([[10., 18.],
           [42., 50.]], dtype=float32)
    """
    if filter is not None and filters is not None:
        raise ValueError("conv2d: give filter or filters, not both")
    f = filters if filter is None else filter
    if f is None:
        raise TypeError("conv2d: filter is required")
    fmt = _checks.check_string(data_format, "data_format", op="Conv2D", allowed=_FORMATS)
    pad, explicit = _padding(padding, fmt, "Conv2D")
    return _CONV2D(  # type: ignore[no-any-return]
        input,
        f,
        strides=_sequence(strides, "strides", fmt, "Conv2D"),
        use_cudnn_on_gpu=use_cudnn_on_gpu,
        padding=pad,
        explicit_paddings=explicit,
        data_format=fmt,
        dilations=_sequence(dilations, "dilations", fmt, "Conv2D"),
        name=name,
    )


@public
def conv2d_backprop_input(
    input_sizes: TensorLike,
    filter: TensorLike = None,
    out_backprop: TensorLike = None,
    strides: Any = None,
    padding: Any = None,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
    filters: TensorLike = None,
) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its input, of shape ``input_sizes``.

    ``out_backprop`` has the convolution's output shape. Computed per output phase as a GEMM of
    the gradient's patches with the filter (the same bits for any thread count).

    >>> import numpy as np
    >>> import opweave as ow
    >>> dy = np.ones((1, 2, 2, 1), np.float32)
    >>> w = np.ones((2, 2, 1, 1), np.float32)
    >>> ow.kernels.conv2d_backprop_input([1, 3, 3, 1], w, dy, [1, 1, 1, 1], "VALID")[0, :, :, 0]
    array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]], dtype=float32)
    """
    if filter is not None and filters is not None:
        raise ValueError("conv2d_backprop_input: give filter or filters, not both")
    f = filters if filter is None else filter
    fmt = _checks.check_string(
        data_format, "data_format", op="Conv2DBackpropInput", allowed=_FORMATS
    )
    pad, explicit = _padding(padding, fmt, "Conv2DBackpropInput")
    return _CONV2D_BACKPROP_INPUT(  # type: ignore[no-any-return]
        input_sizes,
        f,
        out_backprop,
        strides=_sequence(strides, "strides", fmt, "Conv2DBackpropInput"),
        use_cudnn_on_gpu=use_cudnn_on_gpu,
        padding=pad,
        explicit_paddings=explicit,
        data_format=fmt,
        dilations=_sequence(dilations, "dilations", fmt, "Conv2DBackpropInput"),
        name=name,
    )


@public
def conv2d_backprop_filter(
    input: TensorLike,
    filter_sizes: TensorLike,
    out_backprop: TensorLike,
    strides: Any,
    padding: Any,
    use_cudnn_on_gpu: bool = True,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`conv2d` with respect to its filter, of shape ``filter_sizes``.

    A GEMM of the transposed output gradient with the input's patches whose inner dimension
    (batch x output pixels) is summed in one fixed order, never split across threads.

    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    >>> dy = np.ones((1, 2, 2, 1), np.float32)
    >>> ow.kernels.conv2d_backprop_filter(x, [2, 2, 1, 1], dy, 1, "VALID")[:, :, 0, 0]
    array([[ 8., 12.],
           [20., 24.]], dtype=float32)
    """
    fmt = _checks.check_string(
        data_format, "data_format", op="Conv2DBackpropFilter", allowed=_FORMATS
    )
    pad, explicit = _padding(padding, fmt, "Conv2DBackpropFilter")
    return _CONV2D_BACKPROP_FILTER(  # type: ignore[no-any-return]
        input,
        filter_sizes,
        out_backprop,
        strides=_sequence(strides, "strides", fmt, "Conv2DBackpropFilter"),
        use_cudnn_on_gpu=use_cudnn_on_gpu,
        padding=pad,
        explicit_paddings=explicit,
        data_format=fmt,
        dilations=_sequence(dilations, "dilations", fmt, "Conv2DBackpropFilter"),
        name=name,
    )


def _static_dim(t: Any, axis: int) -> int | None:
    s = t._shape if isinstance(t, Tensor) else np.shape(t)
    if s is None or len(s) != 4:
        return None
    d = s[axis]
    return None if d is None else int(d)


@public
def conv2d_transpose(
    value: TensorLike = None,
    filter: TensorLike = None,
    output_shape: TensorLike = None,
    strides: Any = None,
    padding: Any = "SAME",
    data_format: str = "NHWC",
    name: str | None = None,
    input: TensorLike = None,
    filters: TensorLike = None,
    dilations: Any = None,
) -> Tensor:
    """The transpose of :func:`conv2d` (a "deconvolution"): the gradient of a convolution of an
    ``output_shape`` input with respect to that input, given ``value`` as its output gradient.

    ``filter`` is ``[height, width, output_channels, in_channels]`` (``in_channels`` = the
    channels of ``value``); ``input`` / ``filters`` are TensorFlow 2's names for ``value`` /
    ``filter``.

    Raises
    ------
    ValueError
        When the channels of ``value``, ``filter`` and ``output_shape`` disagree, or when a
        convolution of ``output_shape`` would not have ``value``'s shape.

    >>> import numpy as np
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, (None, 5, 5, 3))
    ...     y = ow.nn.conv2d_transpose(x, ow.ones([3, 3, 8, 3]), [4, 10, 10, 8], [1, 2, 2, 1])
    >>> y.shape
    TensorShape([Dimension(4), Dimension(10), Dimension(10), Dimension(8)])
    """
    for a, b, what in ((value, input, "value or input"), (filter, filters, "filter or filters")):
        if a is not None and b is not None:
            raise ValueError(f"conv2d_transpose: give {what}, not both")
    x = input if value is None else value
    f = filters if filter is None else filter
    if x is None or f is None or output_shape is None:
        raise TypeError("conv2d_transpose: value, filter and output_shape are required")
    fmt = _checks.check_string(data_format, "data_format", op="conv2d_transpose", allowed=_FORMATS)
    channel = 1 if fmt == "NCHW" else 3
    x_c, f_in = _static_dim(x, channel), _static_dim(f, 3)
    if x_c is not None and f_in is not None and x_c != f_in:
        raise ValueError(f"input channels does not match filter's input channels, {x_c} != {f_in}")
    if not isinstance(output_shape, (Tensor, np.ndarray)) and isinstance(
        output_shape, (list, tuple)
    ):
        dims = _checks.check_dims(output_shape, "output_shape", op="conv2d_transpose")
        if len(dims) != 4:
            raise ValueError(f"output_shape must have shape (4,), got {dims}")
        f_out = _static_dim(f, 2)
        if f_out is not None and dims[channel] != f_out:
            raise ValueError(
                f"output_shape does not match filter's output channels, {dims[channel]} != {f_out}"
            )
    return conv2d_backprop_input(
        output_shape,
        f,
        x,
        strides,
        padding,
        data_format=fmt,
        dilations=(1, 1, 1, 1) if dilations is None else dilations,
        name=name or "conv2d_transpose",
    )


# -- depthwise -----------------------------------------------------------------------------------

_DEPTHWISE_KEYS = ("strides", "padding", "explicit_paddings", "data_format", "dilations")


_DEPTHWISE_FAMILY = _ConvFamily(_DEPTHWISE_KEYS)

_DEPTHWISE = OpDef(
    "DepthwiseConv2dNative",
    inputs=["input: T", "filter: T"],
    attrs=_depthwise_attrs(),
    types={"T": FLOATS},
    shape=_conv_shape,
    grad=_DEPTHWISE_FAMILY.grad,
    flops=_depthwise_flops,
)
_DEPTHWISE_BACKPROP_INPUT = OpDef(
    "DepthwiseConv2dNativeBackpropInput",
    inputs=["input_sizes: int32", "filter: T", "out_backprop: T"],
    attrs=_depthwise_attrs(),
    types={"T": FLOATS},
    shape=_backprop_input_shape,
    grad=_DEPTHWISE_FAMILY.backprop_input_grad,
    flops=_depthwise_flops,
)
_DEPTHWISE_BACKPROP_FILTER = OpDef(
    "DepthwiseConv2dNativeBackpropFilter",
    inputs=["input: T", "filter_sizes: int32", "out_backprop: T"],
    attrs=_depthwise_attrs(),
    types={"T": FLOATS},
    shape=_backprop_filter_shape,
    grad=_DEPTHWISE_FAMILY.backprop_filter_grad,
    flops=_depthwise_flops,
)
_DEPTHWISE_FAMILY.forward = _DEPTHWISE
_DEPTHWISE_FAMILY.backprop_input = _DEPTHWISE_BACKPROP_INPUT
_DEPTHWISE_FAMILY.backprop_filter = _DEPTHWISE_BACKPROP_FILTER


def _depthwise_call(
    opdef: OpDef,
    args: tuple[Any, ...],
    strides: Any,
    padding: Any,
    data_format: Any,
    dilations: Any,
    name: str | None,
) -> Tensor:
    fmt = _checks.check_string(data_format, "data_format", op=opdef.type, allowed=_FORMATS)
    pad, explicit = _padding(padding, fmt, opdef.type)
    return opdef(  # type: ignore[no-any-return]
        *args,
        strides=_sequence(strides, "strides", fmt, opdef.type),
        padding=pad,
        explicit_paddings=explicit,
        data_format=fmt,
        dilations=_sequence(dilations, "dilations", fmt, opdef.type),
        name=name,
    )


@public
def depthwise_conv2d_native(
    input: TensorLike,
    filter: TensorLike,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """Depthwise 2-D convolution: each input channel ``c`` convolved with its own
    ``filter[:, :, c, :]`` (``channel_multiplier`` outputs), giving ``in_channels *
    channel_multiplier`` channels ordered ``c * channel_multiplier + m``.

    ``filter`` is ``[filter_height, filter_width, in_channels, channel_multiplier]``.

    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.ones((1, 3, 3, 2), np.float32)
    >>> w = np.stack([np.ones((2, 2)), 2 * np.ones((2, 2))], -1)[:, :, :, None].astype(np.float32)
    >>> ow.kernels.depthwise_conv2d_native(x, w, 1, "VALID")[0, 0, 0]
    array([4., 8.], dtype=float32)
    """
    return _depthwise_call(
        _DEPTHWISE, (input, filter), strides, padding, data_format, dilations, name
    )


@public
def depthwise_conv2d_native_backprop_input(
    input_sizes: TensorLike,
    filter: TensorLike,
    out_backprop: TensorLike,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`depthwise_conv2d_native` with respect to its input.

    >>> import numpy as np
    >>> import opweave as ow
    >>> dy = np.ones((1, 1, 1, 1), np.float32)
    >>> ow.kernels.depthwise_conv2d_native_backprop_input(
    ...     [1, 2, 2, 1], np.ones((2, 2, 1, 1), np.float32), dy, 1, "VALID")[0, :, :, 0]
    array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return _depthwise_call(
        _DEPTHWISE_BACKPROP_INPUT,
        (input_sizes, filter, out_backprop),
        strides,
        padding,
        data_format,
        dilations,
        name,
    )


@public
def depthwise_conv2d_native_backprop_filter(
    input: TensorLike,
    filter_sizes: TensorLike,
    out_backprop: TensorLike,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    dilations: Any = (1, 1, 1, 1),
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`depthwise_conv2d_native` with respect to its filter.

    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1)
    >>> ow.kernels.depthwise_conv2d_native_backprop_filter(
    ...     x, [1, 1, 1, 1], np.ones((1, 2, 2, 1), np.float32), 1, "VALID").ravel()
    array([6.], dtype=float32)
    """
    return _depthwise_call(
        _DEPTHWISE_BACKPROP_FILTER,
        (input, filter_sizes, out_backprop),
        strides,
        padding,
        data_format,
        dilations,
        name,
    )


@public
def depthwise_conv2d(
    input: TensorLike,
    filter: TensorLike,
    strides: Any,
    padding: Any,
    rate: Any = None,
    name: str | None = None,
    data_format: str | None = None,
    dilations: Any = None,
) -> Tensor:
    """Depthwise 2-D convolution (TensorFlow 1's ``tf.nn.depthwise_conv2d``): see
    :func:`depthwise_conv2d_native`; ``rate`` (or ``dilations``, its TensorFlow 2 name) is the
    ``[height, width]`` dilation. As in TensorFlow, a rate above 1 needs strides of 1.

    >>> import numpy as np
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, (None, 8, 8, 3))
    ...     y = ow.nn.depthwise_conv2d(x, ow.ones([3, 3, 3, 2]), 1, "SAME", rate=[2, 2])
    >>> y.shape
    TensorShape([Dimension(None), Dimension(8), Dimension(8), Dimension(6)])
    """
    if rate is not None and dilations is not None:
        raise ValueError("depthwise_conv2d: give rate or dilations, not both")
    fmt = "NHWC" if data_format is None else data_format
    fmt = _checks.check_string(fmt, "data_format", op="DepthwiseConv2dNative", allowed=_FORMATS)
    r = dilations if rate is None else rate
    dil = [1, 1] if r is None else _checks.check_int_list(r, "rate", op="depthwise_conv2d")
    if len(dil) == 1:
        dil = dil * 2
    if len(dil) != 2:
        raise ValueError(f"depthwise_conv2d: rate must be 2 ints [height, width], got {dil}")
    st = _sequence(strides, "strides", fmt, "DepthwiseConv2dNative")
    if any(d > 1 for d in dil) and any(s > 1 for s in st):
        raise ValueError(
            f"depthwise_conv2d: strides > 1 not supported in conjunction with rate > 1 "
            f"(strides={st}, rate={dil})"
        )
    return _depthwise_call(_DEPTHWISE, (input, filter), st, padding, fmt, dil, name)


# -- pooling -------------------------------------------------------------------------------------


def _pool_output(ctx: ShapeContext, x: Sequence[int | None]) -> tuple[int | None, ...]:
    kh, kw = _spatial(ctx, "ksize")
    sh, sw = _spatial(ctx, "strides")
    n, h, w, c = x
    return (n, _out_size(ctx, h, kh, sh, 1, 0, 0), _out_size(ctx, w, kw, sw, 1, 0, 0), c)


def _pool_shape(ctx: ShapeContext) -> Shape:
    return _from_nhwc(ctx, _pool_output(ctx, _to_nhwc(ctx, _rank4(ctx, 0))))


def _max_pool_grad_shape(ctx: ShapeContext) -> Shape:
    x = _rank4(ctx, 0)
    y = _to_nhwc(ctx, _rank4(ctx, 1))
    dy = _to_nhwc(ctx, _rank4(ctx, 2))
    out = _pool_output(ctx, _to_nhwc(ctx, x))
    _check_out_backprop(ctx, out, y)
    _check_out_backprop(ctx, out, dy)
    return x


def _avg_pool_grad_shape(ctx: ShapeContext) -> Shape:
    sizes = _sizes_value(ctx, 0, "orig_input_shape")
    dy = _to_nhwc(ctx, _rank4(ctx, 1))
    _check_out_backprop(ctx, _pool_output(ctx, _to_nhwc(ctx, sizes)), dy)
    return sizes


def _pool_flops(inputs: Shapes, outputs: Shapes, attrs: Mapping[str, Any]) -> int | None:
    k = attrs.get("ksize")
    if not k or len(k) != 4 or not outputs:
        return None
    big = outputs[0] if len(inputs) < 2 else inputs[-1]  # the pooled shape
    return int(math.prod(big) * k[0] * k[1] * k[2] * k[3])


_POOL_KEYS = ("ksize", "strides", "padding", "data_format")


def _max_pool_grad_fn(op_: Operation, grad: Tensor) -> list[Any]:
    return [_MAX_POOL_GRAD(op_.inputs[0], op_.outputs[0], grad, **_same_attrs(op_, _POOL_KEYS))]


def _avg_pool_grad_fn(op_: Operation, grad: Tensor) -> list[Any]:
    return [_AVG_POOL_GRAD(_shape_of(op_.inputs[0]), grad, **_same_attrs(op_, _POOL_KEYS))]


def _avg_pool_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [None, _AVG_POOL(grad, **_same_attrs(op_, _POOL_KEYS))]


_MAX_POOL = OpDef(
    "MaxPool",
    inputs=["input: T"],
    attrs=dict(_POOL_ATTRS),
    types={"T": REALS},
    shape=_pool_shape,
    grad=_max_pool_grad_fn,
    flops=_pool_flops,
)
_AVG_POOL = OpDef(
    "AvgPool",
    inputs=["value: T"],
    attrs=dict(_POOL_ATTRS),
    types={"T": FLOATS},
    shape=_pool_shape,
    grad=_avg_pool_grad_fn,
    flops=_pool_flops,
)
_MAX_POOL_GRAD = OpDef(
    "MaxPoolGrad",
    inputs=["orig_input: T", "orig_output: T", "grad: T"],
    attrs=dict(_POOL_ATTRS),
    types={"T": FLOATS},
    shape=_max_pool_grad_shape,
    flops=_pool_flops,
)
_AVG_POOL_GRAD = OpDef(
    "AvgPoolGrad",
    inputs=["orig_input_shape: int32", "grad: T"],
    attrs=dict(_POOL_ATTRS),
    types={"T": FLOATS},
    shape=_avg_pool_grad_shape,
    grad=_avg_pool_grad_grad,
    flops=_pool_flops,
)


def _pool_call(
    opdef: OpDef,
    args: tuple[Any, ...],
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: Any,
    name: str | None,
) -> Tensor:
    fmt = _checks.check_string(data_format, "data_format", op=opdef.type, allowed=_FORMATS)
    if not isinstance(padding, (str, bytes)):
        raise TypeError(f"{opdef.type}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return opdef(  # type: ignore[no-any-return]
        *args,
        ksize=_sequence(ksize, "ksize", fmt, opdef.type),
        strides=_sequence(strides, "strides", fmt, opdef.type),
        padding=padding,
        data_format=fmt,
        name=name,
    )


def _value_or_input(value: Any, input: Any, op_name: str) -> Any:
    if value is not None and input is not None:
        raise ValueError(f"{op_name}: give value or input, not both")
    x = input if value is None else value
    if x is None:
        raise TypeError(f"{op_name}: value is required")
    return x


@memoizable
@public
def max_pool(
    value: TensorLike,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
    input: TensorLike = None,
) -> Tensor:
    """Max pooling: the maximum over each ``ksize`` window, stepped by ``strides``; with SAME
    padding the window holds only the cells inside the image.

    As TensorFlow's CPU kernels: NaN is skipped, and the gradient goes to the first cell (in
    row-major order) holding the maximum. ``value`` may be a real-valued tensor of any dtype
    (``input`` is TensorFlow 2's name for it).

    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    >>> ow.kernels.max_pool(x, 2, 2, "VALID")[0, :, :, 0]
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    x = _value_or_input(value, input, "MaxPool")
    return _pool_call(_MAX_POOL, (x,), ksize, strides, padding, data_format, name)


@memoizable
@public
def avg_pool(
    value: TensorLike,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
    input: TensorLike = None,
) -> Tensor:
    """Average pooling: the mean over each window's cells inside the image (SAME padding is not
    counted). NHWC is computed directly, NCHW through a transpose on each side.

    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    >>> ow.kernels.avg_pool(x, 2, 2, "SAME")[0, :, :, 0]
    array([[2. , 3.5],
           [6.5, 8. ]], dtype=float32)
    """
    x = _value_or_input(value, input, "AvgPool")
    return _pool_call(_AVG_POOL, (x,), ksize, strides, padding, data_format, name)


@public
def max_pool_grad(
    orig_input: TensorLike,
    orig_output: TensorLike,
    grad: TensorLike,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`max_pool` (TensorFlow's ``gen_nn_ops.max_pool_grad``): each
    output's ``grad`` added to the first cell of its window holding the maximum of
    ``orig_input``.

    >>> import numpy as np
    >>> import opweave as ow
    >>> x = np.array([[1.0, 3.0], [3.0, 2.0]], np.float32).reshape(1, 2, 2, 1)
    >>> y = ow.kernels.max_pool(x, 2, 2, "VALID")
    >>> ow.kernels.max_pool_grad(x, y, np.ones_like(y), 2, 2, "VALID")[0, :, :, 0]
    array([[0., 1.],
           [0., 0.]], dtype=float32)
    """
    return _pool_call(
        _MAX_POOL_GRAD, (orig_input, orig_output, grad), ksize, strides, padding, data_format, name
    )


@public
def avg_pool_grad(
    orig_input_shape: TensorLike,
    grad: TensorLike,
    ksize: Any,
    strides: Any,
    padding: Any,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The gradient of :func:`avg_pool` (TensorFlow's ``gen_nn_ops.avg_pool_grad``): each input
    cell gets ``grad / count`` from every output whose window holds it.

    >>> import numpy as np
    >>> import opweave as ow
    >>> g = np.ones((1, 1, 1, 1), np.float32)
    >>> ow.kernels.avg_pool_grad([1, 2, 2, 1], g, 2, 2, "VALID")[0, :, :, 0]
    array([[0.25, 0.25],
           [0.25, 0.25]], dtype=float32)
    """
    return _pool_call(
        _AVG_POOL_GRAD, (orig_input_shape, grad), ksize, strides, padding, data_format, name
    )
