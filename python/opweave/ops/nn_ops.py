"""Neural-network ops: activations, bias_add, top_k / in_top_k, normalization (``opweave.nn``).

Each activation is one element-wise kernel with TensorFlow's formula, and its gradient is
TensorFlow's gradient op (``Relu6Grad``, ``EluGrad``, ...), itself differentiable where
TensorFlow's is, so second derivatives work. The softmax family and the losses are in
:mod:`opweave.ops.nn_losses`.

>>> import opweave as ow
>>> with ow.Graph().as_default(), ow.Session() as s:
...     print(s.run(ow.nn.relu([-1.0, 2.0])))
[0. 2.]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import FLOATS, INDEX, NUMBERS, REALS, float16, float32
from ..framework import Operation, Shape, Tensor
from . import _checks
from ._op_def import (
    Attr,
    OpDef,
    ShapeContext,
    convert_to_tensor,
    executing_eagerly,
    memoizable,
    op,
    public,
)
from .array_ops import (
    cast,
    concat,
    expand_dims,
    gather,
    ones_like,
    reshape,
    shape,
    size,
    squeeze,
    stack,
    stop_gradient,
    tile,
    unsorted_segment_sum,
    zeros_like,
)
from .math_ops import (
    add,
    exp,
    greater_equal,
    matmul,
    maximum,
    multiply,
    negative,
    per_output_element,
    realdiv,
    reduce_mean,
    reduce_sum,
    rsqrt,
    select_v2,
    sigmoid,
    square,
    squared_difference,
    subtract,
    tanh,
)
from .math_ops import range as range_

__all__ = [
    "batch_normalization",
    "bias_add",
    "elu",
    "embedding_lookup",
    "in_top_k",
    "l2_normalize",
    "leaky_relu",
    "log_sigmoid",
    "moments",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "softplus",
    "softsign",
    "tanh",
    "top_k",
    "xw_plus_b",
]

TensorLike = Any


# -- shape helpers -------------------------------------------------------------------------------


def merge_shapes(ctx: ShapeContext, a: Shape, b: Shape) -> Shape:
    """Two shapes that must be equal, merged (an unknown dimension takes the other's); TensorFlow's
    error naming the first dimension that differs."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ctx.error(f"Shapes must be equal rank, but are {len(a)} and {len(b)}")
    out: list[int | None] = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x is not None and y is not None and x != y:
            raise ctx.error(f"Dimension {i} in both shapes must be equal, but are {x} and {y}")
        out.append(x if x is not None else y)
    return tuple(out)


def merged_shape(ctx: ShapeContext) -> Shape:
    """The common shape of two same-shape inputs (gradient ops, element-wise losses)."""
    return merge_shapes(ctx, ctx.shape(0), ctx.shape(1))


def _is_zeros(t: Any) -> bool:
    """Whether ``t`` is the zeros ``gradients`` passes for an output nobody differentiates."""
    return isinstance(t, Tensor) and t.op.type == "ZerosLike"


# -- activations ---------------------------------------------------------------------------------


def _grad_op(type_: str, second: Any, types: frozenset[Any] = FLOATS, **kwargs: Any) -> OpDef:
    """An activation's gradient op: ``(gradients, features or outputs) -> backprops``."""
    return OpDef(
        type_,
        inputs=["gradients: T", kwargs.pop("second_input", "features: T")],
        outputs=["backprops: T"],
        types={"T": types},
        shape=merged_shape,
        grad=second,
        flops=per_output_element,
        **kwargs,
    )


def _relu_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x = op_.inputs[1]
    return [_RELU_GRAD(grad, x), zeros_like(x)]


_RELU_GRAD = _grad_op("ReluGrad", _relu_grad_grad, REALS)


def _relu_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [_RELU_GRAD(grad, op_.outputs[0])]


@op(
    "Relu",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": REALS},
    grad=_relu_grad,
    flops=per_output_element,
)
def relu(features: TensorLike, name: str | None = None) -> Tensor:
    """Rectified linear: ``max(features, 0)``; NaN stays NaN.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.nn.relu(ow.placeholder(ow.float32, (None, 4))).shape
    TensorShape([Dimension(None), Dimension(4)])
    """


def _relu6_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x = op_.inputs[1]
    return [_RELU6_GRAD(grad, x), zeros_like(x)]


_RELU6_GRAD = _grad_op("Relu6Grad", _relu6_grad_grad, REALS)


@op(
    "Relu6",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": REALS},
    grad=lambda op_, grad: [_RELU6_GRAD(grad, op_.outputs[0])],
    flops=per_output_element,
)
def relu6(features: TensorLike, name: str | None = None) -> Tensor:
    """Rectified linear capped at 6: ``min(max(features, 0), 6)``; NaN stays NaN.

    The gradient passes where ``0 < features < 6``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.relu6([-1.0, 3.0, 9.0])))
    [0. 3. 6.]
    """


def _negative_branch_grad(op_: Operation, grad: Tensor, first: OpDef) -> list[Any]:
    """EluGrad / SeluGrad: ``(first(grad, y), grad * dy where y < 0, else 0)``, as TensorFlow."""
    dy, y = op_.inputs
    return [first(grad, y), select_v2(greater_equal(y, 0), zeros_like(y), multiply(grad, dy))]


_ELU_GRAD: OpDef = _grad_op(
    "EluGrad",
    lambda op_, grad: _negative_branch_grad(op_, grad, _ELU_GRAD),
    second_input="outputs: T",
)


@op(
    "Elu",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": FLOATS},
    grad=lambda op_, grad: [_ELU_GRAD(grad, op_.outputs[0])],
    flops=lambda i, o, a: per_output_element(i, o, a, 20),
)
def elu(features: TensorLike, name: str | None = None) -> Tensor:
    """Exponential linear unit: ``features`` where positive, else ``exp(features) - 1``
    (computed as ``expm1``, exact near 0).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.elu([-1.0, 2.0])))
    [-0.63212055  2.        ]
    """


_SELU_GRAD: OpDef = _grad_op(
    "SeluGrad",
    lambda op_, grad: _negative_branch_grad(op_, grad, _SELU_GRAD),
    second_input="outputs: T",
)


@op(
    "Selu",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": FLOATS},
    grad=lambda op_, grad: [_SELU_GRAD(grad, op_.outputs[0])],
    flops=lambda i, o, a: per_output_element(i, o, a, 20),
)
def selu(features: TensorLike, name: str | None = None) -> Tensor:
    """Scaled exponential linear unit: ``scale * features`` where positive, else
    ``scale * alpha * (exp(features) - 1)``, with ``alpha ~ 1.6733`` and ``scale ~ 1.0507``
    (Klambauer et al., 2017).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.selu([1.0])))
    [1.050701]
    """


def _leaky_relu_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x = op_.inputs[1]
    return [_LEAKY_RELU_GRAD(grad, x, alpha=op_.attrs["alpha"]), zeros_like(x)]


_LEAKY_RELU_GRAD = _grad_op(
    "LeakyReluGrad", _leaky_relu_grad_grad, attrs={"alpha": Attr("float", 0.2)}
)
_LEAKY_RELU = OpDef(
    "LeakyRelu",
    inputs=["features: T"],
    outputs=["activations: T"],
    attrs={"alpha": Attr("float", 0.2)},
    types={"T": FLOATS},
    grad=lambda op_, grad: [_LEAKY_RELU_GRAD(grad, op_.inputs[0], alpha=op_.attrs["alpha"])],
    flops=per_output_element,
)


@memoizable
@public
def leaky_relu(features: TensorLike, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """Leaky rectified linear: ``features`` where positive, else ``alpha * features``.

    Integer features are cast to float32 first, and a NumPy ``alpha`` is taken as its Python
    value, as in TensorFlow.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.leaky_relu([-1.0, 2.0], alpha=0.1)))
    [-0.1  2. ]
    """
    x = convert_to_tensor(features)
    if _dtype_of(x).is_integer:
        x = cast(x, float32)
    if isinstance(alpha, np.ndarray):
        alpha = alpha.item()
    return _LEAKY_RELU(x, alpha=alpha, name=name or "LeakyRelu")  # type: ignore[no-any-return]


def _softplus_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    # y = softplus(x), dx = SoftplusGrad(dy, x) = dy * sigmoid(x): returns (ddy, d2x).
    dy, x = op_.inputs
    ddy = _SOFTPLUS_GRAD(grad, x)
    denom = add(add(exp(negative(x)), 2.0), exp(x))
    return [ddy, realdiv(multiply(grad, dy), denom)]


_SOFTPLUS_GRAD = _grad_op("SoftplusGrad", _softplus_grad_grad)


@op(
    "Softplus",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": FLOATS},
    grad=lambda op_, grad: [_SOFTPLUS_GRAD(grad, op_.inputs[0])],
    flops=lambda i, o, a: per_output_element(i, o, a, 40),
)
def softplus(features: TensorLike, name: str | None = None) -> Tensor:
    """``log(exp(features) + 1)``, computed as ``max(x, 0) + log1p(exp(-|x|))``: no overflow for
    large inputs, no loss of precision for very negative ones.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.softplus([0.0, 1000.0])))
    [6.931472e-01 1.000000e+03]
    """


# TensorFlow defines no gradient for SoftsignGrad: softsign has no second derivative there.
_SOFTSIGN_GRAD = _grad_op("SoftsignGrad", None)


@op(
    "Softsign",
    inputs=["features: T"],
    outputs=["activations: T"],
    types={"T": FLOATS},
    grad=lambda op_, grad: [_SOFTSIGN_GRAD(grad, op_.inputs[0])],
    flops=lambda i, o, a: per_output_element(i, o, a, 3),
)
def softsign(features: TensorLike, name: str | None = None) -> Tensor:
    """``features / (abs(features) + 1)``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.softsign([-3.0, 1.0])))
    [-0.75  0.5 ]
    """


@public
def log_sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """``log(1 / (1 + exp(-x)))``, computed as ``-softplus(-x)`` so it neither overflows nor
    rounds to ``log(0)`` (TensorFlow's ``tf.math.log_sigmoid``).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.log_sigmoid([-200.0, 0.0])))
    [-200.          -0.6931472]
    """
    return negative(softplus(negative(x)), name=name or "LogSigmoid")


def _dtype_of(t: Any) -> Any:
    from ._op_def import _dtype_of as dtype_of

    return dtype_of(t)


# -- bias_add ------------------------------------------------------------------------------------


def _channel_dim(data_format: str, rank: int) -> int:
    return 1 if data_format == "NCHW" and rank >= 3 else rank - 1


def _bias_add_shape(ctx: ShapeContext) -> Shape:
    s, b = ctx.shape(0), ctx.shape(1)
    nchw = ctx.attrs["data_format"] == "NCHW"
    need = 3 if nchw else 2
    if s is not None and len(s) < need:
        raise ctx.error(f"Shape must be at least rank {need} but is rank {len(s)}")
    if b is not None and len(b) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(b)}")
    if s is None:
        return None
    c = _channel_dim(ctx.attrs["data_format"], len(s))
    have, want = s[c], (b[0] if b is not None else None)
    if have is not None and want is not None and have != want:
        raise ctx.error(f"Dimensions must be equal, but are {have} and {want}")
    return tuple(want if i == c and d is None else d for i, d in enumerate(s))


def _bias_add_grad_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    if s is None:
        return (None,)
    if len(s) < 2:
        raise ctx.error(f"Shape must be at least rank 2 but is rank {len(s)}")
    return (s[_channel_dim(ctx.attrs["data_format"], len(s))],)


def _bias_add_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    """BiasAddGrad's gradient: the bias gradient broadcast back along every other dimension."""
    x = op_.inputs[0]
    s = x._shape
    nchw = op_.attrs["data_format"] == "NCHW"
    if s is not None and None not in s:
        c = _channel_dim(op_.attrs["data_format"], len(s))
        expanded = [1] * len(s)
        expanded[c] = -1
        mults: Any = [1 if i == c else d for i, d in enumerate(s)]
        return [tile(reshape(grad, expanded), mults)]
    in_shape = shape(x)
    ones = ones_like(in_shape)
    if nchw:
        expanded_t = concat([ones[:1], shape(grad), ones[2:]], 0)
        mults = concat([in_shape[:1], [1], in_shape[2:]], 0)
    else:
        expanded_t = concat([ones[:-1], shape(grad)], 0)
        mults = concat([in_shape[:-1], [1]], 0)
    return [tile(reshape(grad, expanded_t), mults)]


_DATA_FORMAT = Attr("string", "NHWC", allowed=("NHWC", "NCHW"))

_BIAS_ADD_GRAD = OpDef(
    "BiasAddGrad",
    inputs=["out_backprop: T"],
    attrs={"data_format": _DATA_FORMAT},
    types={"T": NUMBERS},
    shape=_bias_add_grad_shape,
    grad=_bias_add_grad_grad,
    flops=lambda i, o, a: math.prod(i[0]) if i else None,
)


def _bias_add_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [grad, _BIAS_ADD_GRAD(grad, data_format=op_.attrs["data_format"])]


_BIAS_ADD = OpDef(
    "BiasAdd",
    inputs=["value: T", "bias: T"],
    attrs={"data_format": _DATA_FORMAT},
    types={"T": NUMBERS},
    shape=_bias_add_shape,
    grad=_bias_add_grad,
    flops=per_output_element,
)


def _data_format(data_format: Any) -> str:
    """TensorFlow's reading of bias_add's ``data_format``: ``NC...`` or ``N...C``."""
    if data_format is None:
        return "NHWC"
    fmt = _checks.check_string(data_format, "data_format", op="bias_add")
    if fmt.startswith("NC"):
        return "NCHW"
    if fmt.startswith("N") and fmt.endswith("C"):
        return "NHWC"
    raise ValueError("data_format must be of the form `N...C` or `NC...`")


@memoizable
@public
def bias_add(
    value: TensorLike, bias: TensorLike, data_format: str | None = None, name: str | None = None
) -> Tensor:
    """``value`` plus the vector ``bias`` along its channel dimension.

    Parameters
    ----------
    value : Tensor
        Rank >= 2 (rank >= 3 for ``NC...``), any real dtype.
    bias : Tensor
        A vector as long as the channel dimension, of ``value``'s dtype.
    data_format : str, optional
        ``"N...C"`` (the default, ``NHWC``): channels last; ``"NC..."`` (``NCHW``): channels
        in dimension 1.

    Raises
    ------
    ValueError
        For a bias whose length is not the channel dimension's, naming both shapes.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.bias_add([[1.0, 2.0], [3.0, 4.0]], [10.0, 20.0])))
    [[11. 22.]
     [13. 24.]]
    """
    fmt = _data_format(data_format)
    return _BIAS_ADD(value, bias, data_format=fmt, name=name or "BiasAdd")  # type: ignore[no-any-return]


@public
def xw_plus_b(
    x: TensorLike, weights: TensorLike, biases: TensorLike, name: str | None = None
) -> Tensor:
    """``matmul(x, weights) + biases``: a dense layer's affine part (``biases`` by bias_add).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.xw_plus_b([[1.0, 2.0]], [[1.0], [1.0]], [0.5])))
    [[3.5]]
    """
    name = _checks.check_name(name, "xw_plus_b")
    return bias_add(matmul(x, weights), biases, name=name)


# -- top_k / in_top_k ----------------------------------------------------------------------------


def _top_k_shape(ctx: ShapeContext) -> list[Shape]:
    s = ctx.shape(0)
    k_shape = ctx.shape(1)
    if k_shape is not None and len(k_shape) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(k_shape)}")
    kv = ctx.value(1)
    k = None if kv is None else int(kv.reshape(-1)[0])
    if k is not None and k < 0:
        raise ctx.error(f"Need k >= 0, got {k}")
    if s is None:
        return [None, None]
    if len(s) < 1:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    if k is not None and s[-1] is not None and s[-1] < k:
        raise ctx.error(f"input must have last dimension >= k = {k} but is {s[-1]}")
    out = (*s[:-1], k)
    return [out, out]


def _top_k_grad(op_: Operation, grad: Tensor, _: Tensor | None = None) -> list[Any]:
    """The values' gradient scattered back to the input positions the indices name."""
    x = op_.inputs[0]
    indices = op_.outputs[1]
    if indices._shape is not None and indices._shape[-1] == 0:
        return [zeros_like(x), None]  # nothing was selected (and [-1, 0] cannot be reshaped to)
    in_shape = shape(x)
    k = shape(indices)[-1]
    n = in_shape[-1]
    idx_2d = reshape(indices, stack([-1, k]))
    rows = shape(idx_2d)[0]
    offsets = expand_dims(range_(0, rows * n, n), -1)
    flat = reshape(add(idx_2d, offsets), [-1])
    scattered = unsorted_segment_sum(reshape(grad, [-1]), flat, size(x))
    return [reshape(scattered, in_shape), None]


_TOP_K = OpDef(
    "TopKV2",
    inputs=["input: T", "k: int32"],
    outputs=["values: T", "indices: int32"],
    attrs={"sorted": Attr("bool", True)},
    types={"T": REALS},
    shape=_top_k_shape,
    grad=_top_k_grad,
    flops=lambda i, o, a: math.prod(i[0]) if i else None,
)


@public
def top_k(input: TensorLike, k: Any = 1, sorted: bool = True, name: str | None = None) -> Any:
    """The ``k`` largest entries of each row (the last dimension) and their positions.

    Returns ``(values, indices)`` (a named tuple): ``values`` of ``input``'s dtype and int32
    ``indices``, both of shape ``input.shape[:-1] + [k]``. With ``sorted`` (the default) they are
    in descending order of value, equal values by lower index first (TensorFlow's stable order);
    NaN counts as larger than any number. With ``sorted=False`` the same ``k`` entries come in the
    order they have in ``input`` (TensorFlow leaves that order unspecified). The gradient flows to
    the selected positions.

    Raises
    ------
    ValueError
        When ``k`` is negative or larger than the last dimension (known before the run), naming
        both; at run time the same is an InvalidArgumentError.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     values, indices = s.run(ow.nn.top_k([[1.0, 3.0, 3.0, 2.0]], k=2))
    >>> print(values, indices)
    [[3. 3.]] [[1 2]]
    """
    if not isinstance(k, (Tensor, np.ndarray)):
        k = _checks.check_int(k, "k", op="top_k", minimum=0, maximum=_checks.INT32_MAX)
    return _TOP_K(input, k, sorted=sorted, name=name or "TopKV2")


def _in_top_k_shape(ctx: ShapeContext) -> Shape:
    p, t, k = ctx.shape(0), ctx.shape(1), ctx.shape(2)
    if p is not None and len(p) != 2:
        raise ctx.error(f"Shape must be rank 2 but is rank {len(p)}")
    if t is not None and len(t) != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {len(t)}")
    if k is not None and len(k) != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {len(k)}")
    batch = p[0] if p is not None else None
    tb = t[0] if t is not None else None
    if batch is not None and tb is not None and batch != tb:
        raise ctx.error(f"Dimensions must be equal, but are {batch} and {tb}")
    return (batch if batch is not None else tb,)


_IN_TOP_K = OpDef(
    "InTopKV2",
    inputs=["predictions: float32", "targets: T", "k: T"],
    outputs=["precision: bool"],
    types={"T": INDEX},
    shape=_in_top_k_shape,
    not_differentiable=True,
    flops=lambda i, o, a: math.prod(i[0]) if i else None,
)


@public
def in_top_k(
    predictions: TensorLike, targets: TensorLike, k: Any, name: str | None = None
) -> Tensor:
    """Whether each target class is among its row's ``k`` largest predictions.

    ``predictions`` is float32 ``[batch, classes]``, ``targets`` int32 or int64 ``[batch]``; the
    result is a bool ``[batch]``. A prediction tied with the target's counts in the target's
    favour; a target out of range or a non-finite prediction in the row gives False (TensorFlow's
    CPU kernel). Not differentiable.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.in_top_k([[0.1, 0.5, 0.4], [0.8, 0.1, 0.1]], [2, 1], 1)))
    [False False]
    """
    return _IN_TOP_K(predictions, targets, k, name=name or "in_top_k")  # type: ignore[no-any-return]


# -- normalization -------------------------------------------------------------------------------


@public
def moments(
    x: TensorLike,
    axes: Any,
    shift: Any = None,
    name: str | None = None,
    keep_dims: bool | None = None,
    keepdims: bool | None = None,
) -> tuple[Tensor, Tensor]:
    """The mean and the (population) variance of ``x`` over ``axes``.

    As TensorFlow: the mean is ``reduce_mean(x, axes)``, the variance the mean of the squared
    differences from it (the mean behind ``stop_gradient`` there, which leaves the gradient
    unchanged); float16 is computed in float32. ``shift`` is accepted and unused, as in
    TensorFlow; ``keep_dims`` is the older name of ``keepdims``.

    Returns
    -------
    (mean, variance)

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.moments(ow.constant([[1.0, 2.0], [3.0, 6.0]]), axes=[0])))
    (array([2., 4.], dtype=float32), array([1., 4.], dtype=float32))
    """
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    keep = keepdims if keepdims is not None else keep_dims
    keep = False if keep is None else _checks.check_bool(keep, "keepdims", op="moments")
    _checks.check_name(name, "moments")
    if not isinstance(axes, (Tensor, np.ndarray)):
        axes = _checks.check_int_list(axes, "axes", op="moments")
    t = convert_to_tensor(x)
    half = _dtype_of(t) is float16
    y = cast(t, float32) if half else t
    mean = reduce_mean(y, axes, keepdims=True)
    variance = reduce_mean(squared_difference(y, stop_gradient(mean)), axes, keepdims=True)
    if not keep:
        mean, variance = squeeze(mean, axes), squeeze(variance, axes)
    if half:
        mean, variance = cast(mean, float16), cast(variance, float16)
    return mean, variance


@public
def l2_normalize(
    x: TensorLike,
    axis: Any = None,
    epsilon: float = 1e-12,
    name: str | None = None,
    dim: Any = None,
) -> Tensor:
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))``: ``x`` scaled to unit L2 norm along ``axis``
    (every axis when None); ``dim`` is TensorFlow 1's older name of ``axis``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.l2_normalize([3.0, 4.0], axis=0)))
    [0.6 0.8]
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    eps = _checks.check_float(epsilon, "epsilon", op="l2_normalize")
    name = _checks.check_name(name, "l2_normalize")
    t = convert_to_tensor(x)
    square_sum = reduce_sum(square(t), axis, keepdims=True)
    inv_norm = rsqrt(maximum(square_sum, np.asarray(eps, _dtype_of(t).as_numpy_dtype)))
    return multiply(t, inv_norm, name=name)


@public
def batch_normalization(
    x: TensorLike,
    mean: TensorLike,
    variance: TensorLike,
    offset: TensorLike,
    scale: TensorLike,
    variance_epsilon: float,
    name: str | None = None,
) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``, as TensorFlow builds
    it: ``inv = rsqrt(variance + variance_epsilon) * scale``, then ``x * inv + (offset - mean *
    inv)``. ``offset`` and ``scale`` may be None; ``mean``, ``variance``, ``offset`` and
    ``scale`` broadcast against ``x`` (usually the moments over the batch axes).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.nn.batch_normalization([1.0, 3.0], 2.0, 1.0, 0.5, 2.0, 0.0)))
    [-1.5  2.5]
    """
    eps = _checks.check_float(variance_epsilon, "variance_epsilon", op="batch_normalization")
    name = _checks.check_name(name, "batchnorm")
    t = convert_to_tensor(x)
    dt = _dtype_of(t)
    inv = rsqrt(add(variance, np.asarray(eps, dt.as_numpy_dtype)))
    if scale is not None:
        inv = multiply(inv, scale)
    shift = (
        negative(multiply(mean, inv)) if offset is None else subtract(offset, multiply(mean, inv))
    )
    return add(multiply(t, cast(inv, dt)), cast(shift, dt), name=name)


# -- embedding_lookup ----------------------------------------------------------------------------


@public
def embedding_lookup(
    params: Any,
    ids: TensorLike,
    partition_strategy: str = "mod",
    name: str | None = None,
    validate_indices: bool = True,
    max_norm: Any = None,
) -> Tensor:
    """Rows of ``params`` picked by ``ids``: ``gather(params, ids)`` for one tensor.

    ``params`` may also be a Python list of shards of one table (a list is always read as
    shards, as in TensorFlow), split along dimension 0 as
    ``partition_strategy`` says: ``"mod"`` (id ``i`` is row ``i // n`` of shard ``i % n``) or
    ``"div"`` (contiguous ranges, the first shards one row longer when the size does not
    divide). The gradient flows to the rows looked up. ``max_norm`` is not supported.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     table = ow.constant([[0.0, 1.0], [2.0, 3.0]])
    ...     print(s.run(ow.nn.embedding_lookup(table, [1, 1, 0])))
    [[2. 3.]
     [2. 3.]
     [0. 1.]]
    """
    _checks.check_bool(validate_indices, "validate_indices", op="embedding_lookup")
    strategy = _checks.check_string(
        partition_strategy, "partition_strategy", op="embedding_lookup", allowed=("mod", "div")
    )
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: max_norm is not supported by opweave")
    name = _checks.check_name(name, "embedding_lookup")
    shards = list(params) if isinstance(params, list) else [params]
    if not shards:
        raise ValueError("Need at least one param")
    if len(shards) == 1:
        return gather(shards[0], ids, name=name)
    tensors = [convert_to_tensor(p) for p in shards]
    table = concat(tensors, 0)
    if strategy == "div":
        # Shards hold contiguous id ranges in order: their concatenation is the table itself.
        return gather(table, ids, name=name)
    # "mod": id i is row i // n of shard i % n: row starts[i % n] + i // n of the concatenation.
    from .math_ops import floordiv, subtract

    ids_t = convert_to_tensor(ids)
    dt = _dtype_of(ids_t)
    n = np.array(len(tensors), dt.as_numpy_dtype)
    starts: list[Any] = []
    total: Any = np.array(0, dt.as_numpy_dtype)
    for t in tensors:
        starts.append(total)
        s = np.shape(t) if executing_eagerly() else t._shape
        known = s is not None and len(s) >= 1 and s[0] is not None
        rows: Any = np.array(s[0], dt.as_numpy_dtype) if known else cast(shape(t)[0], dt)
        total = total + rows if known and isinstance(total, np.ndarray) else add(total, rows)
    # Where each id's row sits in the concatenation, for every id in [0, total): gathering from it
    # checks the ids, so an id out of range is gather's error naming it.
    every = range_(np.array(0, dt.as_numpy_dtype), total, np.array(1, dt.as_numpy_dtype))
    quotient = floordiv(every, n)
    shard = subtract(every, multiply(quotient, n))
    where = add(gather(stack(starts), shard), quotient)
    return gather(table, gather(where, ids_t), name=name)
