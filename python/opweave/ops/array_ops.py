"""Ops that create, describe and rearrange tensors: constants, placeholders, identity, reshape,
shape, transpose, fill and friends.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     x = ow.placeholder(ow.float32, shape=(None, 6))
...     ow.reshape(x, [-1, 2, 3]).shape
TensorShape([Dimension(None), Dimension(2), Dimension(3)])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import ANY, INDEX, DType, as_dtype, float32, int32
from ..framework import Operation, Shape, Tensor, format_shape
from ..tensor_shape import TensorShape, as_shape
from . import _checks
from ._op_def import (
    Attr,
    OpDef,
    ShapeContext,
    convert_to_tensor,
    executing_eagerly,
    make_const,
    op,
    public,
    to_array,
)

__all__ = [
    "broadcast_to",
    "cast",
    "constant",
    "convert_to_tensor",
    "fill",
    "identity",
    "ones",
    "ones_like",
    "placeholder",
    "placeholder_with_default",
    "rank",
    "reshape",
    "shape",
    "size",
    "stop_gradient",
    "transpose",
    "zeros",
    "zeros_like",
]

TensorLike = Any


# -- constants and placeholders ------------------------------------------------------------------

OpDef(
    "Const",
    outputs=["output: dtype"],
    attrs={"value": Attr("tensor"), "dtype": Attr("type")},
    shape=lambda ctx: tuple(ctx.attrs["value"].shape),
    not_differentiable=True,
)


@public
def constant(
    value: Any,
    dtype: Any = None,
    shape: Any = None,
    name: str | None = "Const",
    verify_shape: bool = False,
) -> Tensor:
    """A tensor holding ``value`` (copied into the graph).

    Parameters
    ----------
    value : array_like
        The value. Without ``dtype``, NumPy arrays and scalars keep their dtype, Python floats
        become float32, Python ints int32 (int64 when a value does not fit in int32), bytes and
        str string, as in TensorFlow.
    dtype : DType, optional
        The element type. ``value`` must convert to it without losing anything: ints become
        floats, but a float never becomes an int (not even ``2.0``, as in TensorFlow) and an
        int that does not fit is an error instead of wrapping around.
    shape : sequence of int, optional
        Reshape (or broadcast a one-element value) to this shape.
    name : str, optional
    verify_shape : bool, optional
        With ``shape``: the value must already have that shape.

    Raises
    ------
    TypeError
        When ``value`` does not convert to ``dtype`` implicitly:
        ``Expected int32, but got 2.5 of type 'float'.`` (use :func:`cast` to truncate).

    Examples
    --------
    >>> import opweave as ow
    >>> ow.constant([1, 2]).dtype
    opweave.int32
    >>> ow.constant(np.float64(1.5)).dtype, ow.constant(2**40).dtype
    (opweave.float64, opweave.int64)
    >>> ow.constant(2.5, dtype=ow.int32)
    Traceback (most recent call last):
    ...
    TypeError: Expected int32, but got 2.5 of type 'float'.
    """
    dt = None if dtype is None else as_dtype(dtype)
    arr = to_array(value, dt)
    if shape is not None:
        dims = _checks.check_dims(
            [getattr(d, "value", d) for d in as_shape(shape)]
            if isinstance(shape, TensorShape)
            else shape,
            "shape",
            op="Const",
            allow_unknown=False,
        )
        target = tuple(dims)
        if verify_shape and arr.shape != target:
            raise TypeError(f"Expected Tensor's shape: {target}, got {arr.shape}.")
        if arr.size == 1:
            arr = np.broadcast_to(arr.reshape(()), target)
        elif arr.size == math.prod(target):
            arr = arr.reshape(target)
        else:
            raise TypeError(
                f"Failed to create a constant of shape {list(target)} from a value with "
                f"{arr.size} elements"
            )
    if executing_eagerly():
        return np.array(arr, copy=True)  # type: ignore[return-value]
    return make_const(arr, as_dtype(arr.dtype), _checks.check_name(name, "Const"))


def _placeholder_shape(ctx: ShapeContext) -> Shape:
    s: TensorShape = ctx.attrs["shape"]
    return s.as_raw()


_PLACEHOLDER = OpDef(
    "Placeholder",
    outputs=["output: dtype"],
    attrs={"dtype": Attr("type"), "shape": Attr("shape", None), "shape_str": Attr("string", "")},
    shape=_placeholder_shape,
    not_differentiable=True,
    stateful=True,
)


@public
def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor whose value must be fed in ``Session.run(feed_dict=...)``.

    Parameters
    ----------
    dtype : DType or str
        ``"float"`` is float32, as in TensorFlow.
    shape : sequence of (int or None), optional
        ``None`` dims accept any size; ``shape=None`` accepts any rank.
    name : str, optional

    Examples
    --------
    >>> import opweave as ow
    >>> ow.placeholder("float", shape=(None, 3))
    <opweave.Tensor 'Placeholder:0' shape=[?,3] dtype=float32>
    """
    if executing_eagerly():
        raise TypeError("placeholder has no value outside a Session: opweave.kernels cannot run it")
    dt = as_dtype(dtype)
    s = as_shape(None) if shape is None else _static_shape_arg(shape, "Placeholder")
    return _PLACEHOLDER(  # type: ignore[no-any-return]
        dtype=dt, shape=s, shape_str=format_shape(s.as_raw()), name=name
    )


def _static_shape_arg(shape: Any, op_name: str) -> TensorShape:
    """A shape argument given as sizes / None / Dimensions, checked as exact integers."""
    if isinstance(shape, TensorShape):
        return shape
    if _checks.is_exact_int(shape):
        shape = [shape]
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"{op_name}: shape must be a list of sizes or None, got {shape!r}")
    dims: list[int | None] = []
    for i, d in enumerate(shape):
        v = getattr(d, "value", d) if not isinstance(d, (int, np.integer)) else d
        if v is None or (_checks.is_exact_int(v) and v == -1):
            dims.append(None)
        else:
            dims.append(_checks.check_int(v, f"shape[{i}]", op=op_name, minimum=0))
    _checks.shape_product([d for d in dims if d is not None], "shape", op=op_name)
    return TensorShape(dims)


def _placeholder_with_default_shape(ctx: ShapeContext) -> Shape:
    s: TensorShape = ctx.attrs["shape"]
    if not as_shape(ctx.shape(0)).is_compatible_with(s):
        raise ctx.error(f"the default value's shape is not compatible with {s}")
    return s.as_raw()


_PLACEHOLDER_WITH_DEFAULT = OpDef(
    "PlaceholderWithDefault",
    inputs=["input: dtype"],
    outputs=["output: dtype"],
    attrs={"dtype": Attr("type", None), "shape": Attr("shape")},
    shape=_placeholder_with_default_shape,
    grad=lambda op_, grad: [grad],  # when not fed it passes its input on, like identity
)


@public
def placeholder_with_default(input: TensorLike, shape: Any, name: str | None = None) -> Tensor:
    """A placeholder that gives ``input`` when it is not fed.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder_with_default([1.0, 2.0], shape=[None])
    ...     with ow.Session() as s:
    ...         print(s.run(x), s.run(x, {x: [5.0]}))
    [1. 2.] [5.]
    """
    s = _static_shape_arg(shape, "PlaceholderWithDefault")
    return _PLACEHOLDER_WITH_DEFAULT(input=input, shape=s, name=name)  # type: ignore[no-any-return]


# -- identity ------------------------------------------------------------------------------------


@op("Identity", inputs=["input: T"], grad=lambda op_, grad: [grad])
def identity(input: TensorLike, name: str | None = None) -> Tensor:
    """The same value as ``input`` (a cheap node; useful as a fetch or feed point).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.identity(ow.constant(1.0), name="out").name
    'out:0'
    """


@op("StopGradient", inputs=["input: T"], grad=lambda op_, grad: [None])
def stop_gradient(input: TensorLike, name: str | None = None) -> Tensor:
    """``input`` unchanged, but :func:`opweave.gradients` treats it as a constant.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.constant(3.0)
    ...     y = x * ow.stop_gradient(x)
    ...     with ow.Session() as s:
    ...         print(s.run(ow.gradients(y, x)[0]))
    3.0
    """


# -- shapes --------------------------------------------------------------------------------------


def _reshape_shape(ctx: ShapeContext) -> Shape:
    spec = ctx.value(1)
    if spec is not None:
        wanted = [int(d) for d in spec.reshape(-1)]
        if wanted.count(-1) > 1:
            raise ctx.error(f"Only one input size may be -1, not several: {wanted}")
        bad = [d for d in wanted if d < -1]
        if bad:
            raise ctx.error(f"Size {bad[0]} must be non-negative (or -1 to infer it): {wanted}")
    target = ctx.shape_value(1)
    if target is None:
        r = ctx.shape(1)
        return None if r is None or r[0] is None else (None,) * r[0]
    src = ctx.shape(0)
    known = [d for d in target if d is not None]
    _checks.shape_product(known, "shape", op="Reshape")
    if src is None or any(d is None for d in src):
        if target.count(None) == 0 and src is not None:
            n_src = [d for d in src if d is not None]
            if math.prod(n_src) and math.prod(known) % math.prod(n_src):
                raise ctx.error(f"Cannot reshape a tensor to shape {list(target)}")
        return target
    n = math.prod(d for d in src if d is not None)
    m = math.prod(known)
    unknown = target.count(None)
    if unknown == 0:
        if n != m:
            raise ctx.error(
                f"Cannot reshape a tensor with {n} elements to shape "
                f"{format_shape(target)} ({m} elements)"
            )
        return target
    if unknown == 1:
        if m == 0 or n % m:
            raise ctx.error(
                f"Cannot reshape a tensor with {n} elements to shape {format_shape(target)}"
            )
        return tuple(n // m if d is None else d for d in target)
    return target


def _reshape_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [reshape(grad, shape(op_.inputs[0])), None]


@op(
    "Reshape",
    inputs=["tensor: T", "shape: Tshape"],
    types={"Tshape": INDEX},
    shape=_reshape_shape,
    grad=_reshape_grad,
)
def reshape(tensor: TensorLike, shape: Any, name: str | None = None) -> Tensor:
    """The same elements in a new shape; one entry of ``shape`` may be -1 (inferred).

    ``shape`` may be a list of ints or an int32/int64 tensor (computed at run time).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.reshape(ow.constant(np.zeros((2, 3))), [3, -1]).shape
    TensorShape([Dimension(3), Dimension(2)])
    """
    if not isinstance(shape, (Tensor, np.ndarray)) and not _checks.is_exact_int(shape):
        shape = [_dim_value(d, i) for i, d in enumerate(shape)]
    return {"tensor": tensor, "shape": shape, "name": name}  # type: ignore[return-value]


def _dim_value(d: Any, i: int) -> Any:
    """A shape entry given as an int, a Dimension, or a scalar tensor (stacked at run time)."""
    if isinstance(d, Tensor):
        raise TypeError(
            f"shape[{i}] is a Tensor: build the shape with opweave.stack([...]) to mix tensors "
            "and ints"
        )
    v = getattr(d, "value", d)
    if v is None:
        raise ValueError(f"shape[{i}] is an unknown Dimension; use -1 for an inferred size")
    return v


def _shape_out(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    return None if s is None else (len(s),)


@op(
    "Shape",
    inputs=["input: T"],
    outputs=["output: out_type"],
    attrs={"out_type": Attr("type", int32)},
    shape=_shape_out,
    not_differentiable=True,
)
def shape(input: TensorLike, name: str | None = None, out_type: Any = int32) -> Tensor:
    """The shape of ``input`` as a 1-D int32 (or ``out_type``) tensor, known at run time.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, (None, 3))
    ...     with ow.Session() as s:
    ...         print(s.run(ow.shape(x), {x: np.zeros((2, 3))}))
    [2 3]
    """


@op(
    "Size",
    inputs=["input: T"],
    outputs=["output: out_type"],
    attrs={"out_type": Attr("type", int32)},
    shape=lambda ctx: (),
    not_differentiable=True,
)
def size(input: TensorLike, name: str | None = None, out_type: Any = int32) -> Tensor:
    """The number of elements of ``input`` (a scalar, int32 or ``out_type``)."""


@op(
    "Rank",
    inputs=["input: T"],
    outputs=["output: int32"],
    shape=lambda ctx: (),
    not_differentiable=True,
)
def rank(input: TensorLike, name: str | None = None) -> Tensor:
    """The number of dimensions of ``input`` (an int32 scalar)."""


# -- transpose -----------------------------------------------------------------------------------


def _transpose_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    p = ctx.value(1)
    if p is None:
        return None if s is None else (None,) * len(s)
    perm = [int(v) for v in p.reshape(-1)]
    if s is None:
        return (None,) * len(perm)
    rank_ = len(s)
    if (
        len(perm) != rank_
        or sorted(q % rank_ if rank_ else q for q in perm) != list(range(rank_))
        or any(not -rank_ <= q < rank_ for q in perm)
    ):
        raise ctx.error(f"perm {perm} is not a permutation of {rank_} dimensions")
    return tuple(s[q] for q in perm)


def _transpose_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .math_ops import invert_permutation

    return [transpose(grad, invert_permutation(op_.inputs[1])), None]


@op(
    "Transpose",
    inputs=["x: T", "perm: Tperm"],
    types={"Tperm": INDEX},
    shape=_transpose_shape,
    grad=_transpose_grad,
    default_name="transpose",
)
def transpose(
    a: TensorLike, perm: Any = None, name: str | None = "transpose", conjugate: bool = False
) -> Tensor:
    """Permute the dimensions of ``a``: output dimension i is input dimension ``perm[i]``
    (``perm=None`` reverses them).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.transpose(ow.constant(np.zeros((2, 3, 4))), [1, 0, 2]).shape
    TensorShape([Dimension(3), Dimension(2), Dimension(4)])
    """
    if perm is None:
        x = convert_to_tensor(a)
        r = len(np.shape(x)) if executing_eagerly() else x._shape
        if r is None:
            from .math_ops import range as range_
            from .math_ops import subtract

            n = rank(x)
            perm = subtract(subtract(n, 1), range_(0, n, 1))
        else:
            n_ = r if isinstance(r, int) else len(r)
            perm = list(range(n_ - 1, -1, -1))
        a = x
    return {"x": a, "perm": perm, "name": name}  # type: ignore[return-value]


def _broadcast_to_shape(ctx: ShapeContext) -> Shape:
    return ctx.shape_value(1)


@op(
    "BroadcastTo",
    inputs=["input: T", "shape: Tidx"],
    types={"Tidx": INDEX},
    shape=_broadcast_to_shape,
    grad=lambda op_, g: [_unbroadcast_to(g, op_.inputs[0]), None],
    default_name="BroadcastTo",
)
def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """``input`` broadcast (NumPy rules) to ``shape``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.broadcast_to([1, 2], [2, 2])))
    [[1 2]
     [1 2]]
    """


def _unbroadcast_to(grad: Tensor, x: Tensor) -> Tensor:
    from .math_ops import unbroadcast

    return unbroadcast(grad, x)


# -- fill ----------------------------------------------------------------------------------------


def _fill_shape(ctx: ShapeContext) -> Shape:
    if ctx.rank(1) not in (None, 0):
        raise ctx.error("value must be a scalar")
    return ctx.shape_value(0)


@op(
    "Fill",
    inputs=["dims: index_type", "value: T"],
    types={"index_type": INDEX},
    shape=_fill_shape,
    grad=lambda op_, grad: [None, _reduce_all(grad)],
)
def fill(dims: Any, value: TensorLike, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` whose every element is ``value``.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.fill([2, 2], 7)))
    [[7 7]
     [7 7]]
    """


def _reduce_all(grad: Tensor) -> Tensor:
    from .math_ops import reduce_sum

    return reduce_sum(grad)


@public
def zeros(shape: Any, dtype: Any = float32, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` filled with zeros (float32 by default).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.zeros([2, 3], ow.int32).shape
    TensorShape([Dimension(2), Dimension(3)])
    """
    return _filled(shape, 0, dtype, name or "zeros")


@public
def ones(shape: Any, dtype: Any = float32, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` filled with ones (float32 by default)."""
    return _filled(shape, 1, dtype, name or "ones")


def _filled(shape_: Any, v: int, dtype: Any, name: str) -> Tensor:
    dt = as_dtype(dtype)
    value = np.array(v, dtype=dt.as_numpy_dtype) if dt.name != "string" else np.array(b"", object)
    if isinstance(shape_, Tensor):
        return fill(shape_, value, name=name)
    if isinstance(shape_, TensorShape):
        shape_ = shape_.as_list()
    if _checks.is_exact_int(shape_):
        shape_ = [shape_]
    dims = _checks.check_dims(
        [_dim_value(d, i) for i, d in enumerate(shape_)], "shape", op=name, allow_unknown=False
    )
    if executing_eagerly():
        return np.full(dims, value, dtype=value.dtype)  # type: ignore[return-value]
    if math.prod(dims) <= 1024:
        return make_const(np.full(dims, value, dtype=value.dtype), dt, name)
    return fill(dims, value, name=name)


@op("ZerosLike", inputs=["x: T"], grad=lambda op_, grad: [None])
def zeros_like_op(x: TensorLike, name: str | None = None) -> Tensor:
    """Zeros with the shape and dtype of ``x`` (the op behind :func:`zeros_like`)."""


@op("OnesLike", inputs=["x: T"], grad=lambda op_, grad: [None])
def ones_like_op(x: TensorLike, name: str | None = None) -> Tensor:
    """Ones with the shape and dtype of ``x`` (the op behind :func:`ones_like`)."""


@public
def zeros_like(
    tensor: TensorLike, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Zeros with the shape of ``tensor`` (and its dtype, unless ``dtype`` is given)."""
    t = convert_to_tensor(tensor)
    if dtype is not None and as_dtype(dtype) is not _dtype(t):
        return zeros(shape(t), dtype=dtype, name=name)
    return zeros_like_op(t, name=name)


@public
def ones_like(
    tensor: TensorLike, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Ones with the shape of ``tensor`` (and its dtype, unless ``dtype`` is given)."""
    t = convert_to_tensor(tensor)
    if dtype is not None and as_dtype(dtype) is not _dtype(t):
        return ones(shape(t), dtype=dtype, name=name)
    return ones_like_op(t, name=name)


def _dtype(t: Any) -> DType:
    return t.dtype if isinstance(t, Tensor) else as_dtype(np.asarray(t).dtype)


# -- cast ----------------------------------------------------------------------------------------


def _cast_grad(op_: Operation, grad: Tensor) -> list[Any]:
    src = op_.inputs[0].dtype
    if src.is_floating and grad.dtype.is_floating:
        return [cast(grad, src)]
    return [None]


_CAST = OpDef(
    "Cast",
    inputs=["x: SrcT"],
    outputs=["y: DstT"],
    attrs={"DstT": Attr("type"), "Truncate": Attr("bool", False)},
    types={"SrcT": ANY},
    grad=_cast_grad,
)


@public
def cast(x: TensorLike, dtype: Any, name: str | None = None) -> Tensor:
    """``x`` converted to ``dtype`` (floats truncate toward zero when cast to integers; a value
    of ``x`` already of ``dtype`` is returned as is, as in TensorFlow).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.cast([1.7, -1.7], ow.int32)))
    [ 1 -1]
    """
    dt = as_dtype(dtype)
    t = convert_to_tensor(x)
    if isinstance(t, Tensor) and t.dtype is dt:
        return t
    return _CAST(x=t, DstT=dt, name=name or "Cast")  # type: ignore[no-any-return]
