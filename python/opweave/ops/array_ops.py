"""Ops that create, describe and rearrange tensors: constants, placeholders, identity, reshape,
shape, transpose, fill and friends.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     x = ow.placeholder(ow.float32, shape=(None, 6))
...     ow.reshape(x, [-1, 2, 3]).shape
TensorShape([Dimension(None), Dimension(2), Dimension(3)])
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ..dtypes import ANY, INDEX, NUMBERS, DType, as_dtype, float32, int32
from ..framework import Operation, Shape, Tensor, format_shape, register_operator
from ..tensor_shape import TensorShape, as_shape
from . import _checks
from ._op_def import (
    Attr,
    OpDef,
    ShapeContext,
    constant_rule,
    constant_value,
    constant_value_as_shape,
    convert_to_tensor,
    executing_eagerly,
    make_const,
    memoizable,
    op,
    public,
    register_auto_pack,
    shape_rule,
    to_array,
)

__all__ = [
    "broadcast_to",
    "cast",
    "concat",
    "constant",
    "convert_to_tensor",
    "diag",
    "diag_part",
    "expand_dims",
    "eye",
    "fill",
    "gather",
    "identity",
    "identity_n",
    "lin_space",
    "linspace",
    "matrix_diag",
    "matrix_diag_part",
    "matrix_set_diag",
    "newaxis",
    "one_hot",
    "ones",
    "ones_like",
    "pad",
    "placeholder",
    "placeholder_with_default",
    "rank",
    "reshape",
    "reverse",
    "reverse_v2",
    "shape",
    "size",
    "slice",
    "split",
    "squeeze",
    "stack",
    "stop_gradient",
    "strided_slice",
    "tile",
    "transpose",
    "unsorted_segment_sum",
    "unstack",
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


# Its kernel reads a variable's value (reads_refs): `v/read` is Identity(v), as in TensorFlow 1.
@op("Identity", inputs=["input: T"], grad=lambda op_, grad: [grad], reads_refs=True)
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


@memoizable
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
    """A shape entry given as an int, a Dimension, or a scalar tensor (packed with the others
    into one shape tensor, as TensorFlow does)."""
    if isinstance(d, Tensor):
        return d
    v = getattr(d, "value", d)
    if v is None:
        raise ValueError(f"shape[{i}] is an unknown Dimension; use -1 for an inferred size")
    return v


def _shape_out(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    return (None,) if s is None else (len(s),)


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
        ps = ctx.shape(1)
        n = len(s) if s is not None else ps[0] if ps is not None and len(ps) == 1 else None
        if s is not None and ps is not None and len(ps) == 1 and ps[0] not in (None, len(s)):
            raise ctx.error(f"perm has {ps[0]} entries for a tensor of rank {len(s)}")
        if n is None:
            return None
        if s is not None and s and s[0] is not None and all(d == s[0] for d in s):
            return s  # every permutation of equal dimensions gives the same shape
        return (None,) * n
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


@memoizable
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
    if not isinstance(shape_, np.ndarray) and any(isinstance(d, Tensor) for d in shape_):
        return fill([_dim_value(d, i) for i, d in enumerate(shape_)], value, name=name)
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


@memoizable
@public
def zeros_like(
    tensor: TensorLike, dtype: Any = None, name: str | None = None, optimize: bool = True
) -> Tensor:
    """Zeros with the shape of ``tensor`` (and its dtype, unless ``dtype`` is given)."""
    t = convert_to_tensor(tensor)
    if dtype is not None and as_dtype(dtype) is not _dtype(t):
        return zeros(shape(t), dtype=dtype, name=name)
    return zeros_like_op(t, name=name)


@memoizable
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


builtins_slice = builtins.slice  # the public ``slice`` below shadows the builtin in this module
_const = constant_value

# ================================================================================================
# Array manipulation: joining, cutting, slicing, gathering, padding, tiling, reshaping by one
# axis, diagonals. Kernels: csrc/opweave/kernels/{array,concat_split,gather,pad_tile,slice}_ops.cpp
# (they move bytes, so every dtype of one element size shares one instantiation; strings are
# moved as objects).
# ================================================================================================


def _static(t: Any) -> Shape:
    """The static shape of a Tensor, or the shape of an array (eager mode)."""
    return t._shape if isinstance(t, Tensor) else tuple(int(d) for d in np.shape(t))


def _merge_dims(a: int | None, b: int | None) -> int | None:
    return b if a is None else a


def _int_value(ctx: ShapeContext, i: int) -> int | None:
    v = ctx.value(i)
    return None if v is None else int(v.reshape(-1)[0]) if v.size == 1 else None


def _scalar_input_check(ctx: ShapeContext, i: int, what: str) -> None:
    r = ctx.rank(i)
    if r is not None and r != 0 and not (r == 1 and ctx.shape(i) == (1,)):
        raise ctx.error(f"{what} must be a scalar, but has shape {format_shape(ctx.shape(i))}")


def _known(shape_: Shape) -> bool:
    return shape_ is not None and all(d is not None for d in shape_)


def _out_type(*tensors: Any) -> DType:
    """int64 when an index tensor among ``tensors`` is int64, else int32 (shape arithmetic)."""
    from ..dtypes import int64

    for t in tensors:
        if isinstance(t, Tensor) and t.dtype is int64:
            return int64
    return int32


# -- auto-packing: lists holding tensors become tensors ------------------------------------------


def _nested_ints(value: Any) -> Any:
    """Indices given as nested Python lists (``[[0, 1], [2, 0]]``): an int32 (int64 when needed)
    array, which the op's dtype check then takes; anything else unchanged."""
    if isinstance(value, (list, tuple)):
        from ._op_def import _contains_tensor  # here: an import costs ~1 us a call

        if not _contains_tensor(value):
            return to_array(value)
    return value


def _auto_pack_value(value: Any, dtype: DType | None) -> Tensor:
    """A (nested) list or tuple of tensors and Python values packed into one tensor (Pack), as
    TensorFlow converts ``[-1, tf.shape(x)[1]]``: Python values take the tensors' dtype."""
    from ._op_def import _contains_tensor

    items = [
        _auto_pack_value(v, dtype) if isinstance(v, (list, tuple)) and _contains_tensor(v) else v
        for v in value
    ]
    hint = dtype
    if hint is None:
        for v in items:
            if isinstance(v, Tensor):
                hint = v.dtype
                break
    if hint is not None:
        items = [v if isinstance(v, Tensor) else convert_to_tensor(v, hint) for v in items]
    return _PACK(values=items, axis=0, name="packed")  # type: ignore[no-any-return]


# -- concat ---------------------------------------------------------------------------------------


def _concat_shape(ctx: ShapeContext) -> Shape:
    n = len(ctx.shapes) - 1
    _scalar_input_check(ctx, n, "axis")
    shapes = ctx.shapes[:n]
    known = [s for s in shapes if s is not None]
    if not known:
        return None
    rank_ = len(known[0])
    for s in known:
        if len(s) != rank_:
            raise ctx.error(f"Shape must be rank {rank_} but is rank {len(s)}")
    if rank_ == 0:
        raise ctx.error("Can't concatenate scalars (use tf.stack instead)")
    axis = _int_value(ctx, n)
    if axis is None:
        return (None,) * rank_
    if not -rank_ <= axis < rank_:
        raise ctx.error(
            f"ConcatOp : Expected concatenating dimensions in the range [{-rank_}, {rank_}), "
            f"but got {axis}"
        )
    axis %= rank_
    out: list[int | None] = [None] * rank_
    owner: list[Shape] = [None] * rank_
    total: int | None = 0
    for shp in shapes:
        if shp is None:
            total = None
            continue
        for d in range(rank_):
            dim = shp[d]
            if d == axis:
                total = None if total is None or dim is None else total + dim
            elif dim is not None:
                if out[d] is not None and out[d] != dim:
                    raise ctx.error(
                        f"Dimension {d} in both shapes must be equal, but are {out[d]} and "
                        f"{dim}. Shapes are {format_shape(owner[d])} and {format_shape(shp)}."
                    )
                out[d], owner[d] = dim, shp
    out[axis] = total
    return tuple(out)


def _axis_dim_sizes(values: list[Tensor], axis_t: Tensor) -> tuple[Any, Any]:
    """The sizes of ``values`` along ``axis_t`` (a list when static, else a tensor) and the axis
    (an int when static, else a non-negative int32 tensor)."""
    from .math_ops import add, greater_equal, select_v2

    a = _const(axis_t)
    r = values[0]._shape
    if a is not None and r is not None and len(r):
        ax = int(a) % len(r)
        dims = [v._shape[ax] if v._shape is not None else None for v in values]
        if all(d is not None for d in dims):
            return dims, ax
        return stack([shape(v)[ax] for v in values]), ax
    axis32 = cast(axis_t, int32)
    ax_t = select_v2(greater_equal(axis32, 0), axis32, add(axis32, rank(values[0])))
    return stack([gather(shape(v), ax_t) for v in values]), ax_t


def _concat_grad(op_: Operation, grad: Tensor) -> list[Any]:
    values = list(op_.inputs[:-1])
    sizes, ax = _axis_dim_sizes(values, op_.inputs[-1])
    parts = split(grad, sizes, ax, num=len(values))
    return [*parts, None]


_CONCAT = OpDef(
    "ConcatV2",
    inputs=["values: N * T", "axis: Tidx"],
    attrs={"N": Attr("int", None, minimum=2)},
    types={"Tidx": INDEX},
    shape=_concat_shape,
    grad=_concat_grad,
    default_name="concat",
)


@memoizable
@public
def concat(values: Any, axis: Any, name: str | None = "concat") -> Tensor:
    """Join ``values`` (same rank, same shape except along ``axis``) along ``axis``.

    Parameters
    ----------
    values : list of Tensor
        At least one tensor; one is returned unchanged (an identity node).
    axis : int or scalar int32/int64 Tensor
        Negative values count from the end.
    name : str, optional

    Raises
    ------
    ValueError
        At build time, naming the op and the shapes, when the shapes do not agree.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.concat([[[1, 2]], [[3, 4]]], axis=0)))
    [[1 2]
     [3 4]]
    """
    if not isinstance(values, (list, tuple)):
        values = [values]
    if not values:
        raise ValueError("concat: values must hold at least one tensor, got an empty list")
    if len(values) == 1:
        if not isinstance(axis, Tensor):
            _checks.check_int(axis, "axis", op="ConcatV2")
        return identity(values[0], name=name)
    return _CONCAT(values=list(values), axis=axis, name=name)  # type: ignore[no-any-return]


# -- stack / unstack ------------------------------------------------------------------------------


def _merged_shape(ctx: ShapeContext, shapes: list[Shape], what: str) -> Shape:
    """All ``shapes`` merged (unknown dims filled in from the others); ValueError naming them
    when two disagree."""
    merged: Shape = None
    for s in shapes:
        if s is None:
            continue
        if merged is None:
            merged = s
            continue
        if len(s) != len(merged):
            raise ctx.error(f"Shapes must be equal rank, but are {len(merged)} and {len(s)}")
        out: list[int | None] = []
        for d, (a, b) in enumerate(zip(merged, s, strict=True)):
            if a is not None and b is not None and a != b:
                raise ctx.error(
                    f"Dimension {d} in both shapes must be equal, but are {a} and {b}. Shapes "
                    f"are {format_shape(merged)} and {format_shape(s)} ({what})."
                )
            out.append(_merge_dims(a, b))
        merged = tuple(out)
    return merged


def _pack_shape(ctx: ShapeContext) -> Shape:
    merged = _merged_shape(ctx, list(ctx.shapes), "all values of a stack must have one shape")
    if merged is None:
        return None
    r = len(merged) + 1
    axis = ctx.attrs["axis"]
    if not -r <= axis < r:
        raise ctx.error(f"Invalid axis: {axis}; must be in [{-r},{r})")
    axis %= r
    return (*merged[:axis], len(ctx.shapes), *merged[axis:])


_PACK = OpDef(
    "Pack",
    inputs=["values: N * T"],
    attrs={"N": Attr("int", None, minimum=1), "axis": Attr("int", 0)},
    shape=_pack_shape,
    grad=lambda op_, grad: unstack(grad, num=len(op_.inputs), axis=op_.attrs["axis"]),
    default_name="stack",
)


@memoizable
@public
def stack(values: Any, axis: int = 0, name: str | None = "stack") -> Tensor:
    """Stack same-shape tensors into one tensor of rank one higher, along a new ``axis``.

    ``stack([x, y], axis=1)`` of two ``[2]`` vectors is ``[[x0, y0], [x1, y1]]``. Python values
    (and lists mixing them with scalar tensors) are packed too; a list of constants becomes one
    constant, as in TensorFlow.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = ow.constant([1, 2])
    ...     print(s.run(ow.stack([x, x * 2], axis=1)))
    [[1 2]
     [2 4]]
    """
    from ._op_def import _contains_tensor

    axis = _checks.check_int(axis, "axis", op="Pack")
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"stack: values must be a list of tensors, got {type(values).__name__}")
    if not values:
        raise ValueError("stack: values must hold at least one tensor, got an empty list")
    if axis == 0 and not executing_eagerly() and not _contains_tensor(values):
        try:
            return convert_to_tensor(values, name=name)  # type: ignore[no-any-return]
        except (TypeError, ValueError):
            pass
    first = _static(
        convert_to_tensor(values[0]) if not isinstance(values[0], Tensor) else values[0]
    )
    if first is not None:
        r = len(first) + 1
        if not -r <= axis < r:
            raise ValueError(f"axis = {axis} not in [{-r}, {r})")
    return _PACK(values=list(values), axis=axis, name=name)  # type: ignore[no-any-return]


def _unpack_shape(ctx: ShapeContext) -> list[Shape]:
    num, axis = ctx.attrs["num"], ctx.attrs["axis"]
    s = ctx.shape(0)
    if s is None:
        return [None] * num
    r = len(s)
    if not -r <= axis < r:
        raise ctx.error(f"Invalid axis: {axis}; must be in [{-r},{r})")
    axis %= r
    if s[axis] is not None and s[axis] != num:
        raise ctx.error(f"Dimension must be {num} but is {s[axis]}")
    out = s[:axis] + s[axis + 1 :]
    return [out] * num


def _unpack_grad(op_: Operation, *grads: Tensor | None) -> list[Any]:
    filled = [
        g if g is not None else zeros_like_op(out)
        for g, out in zip(grads, op_.outputs, strict=True)
    ]
    return [stack(filled, axis=op_.attrs["axis"])]


_UNPACK = OpDef(
    "Unpack",
    inputs=["value: T"],
    outputs=["output: num * T"],
    attrs={"num": Attr("int", minimum=0), "axis": Attr("int", 0)},
    shape=_unpack_shape,
    grad=_unpack_grad,
    default_name="unstack",
)


@memoizable
@public
def unstack(
    value: TensorLike, num: int | None = None, axis: int = 0, name: str | None = "unstack"
) -> list[Tensor]:
    """Cut ``value`` along ``axis`` into a list of ``num`` tensors of rank one lower.

    ``num`` defaults to the static size of ``axis``; ValueError when that is unknown.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     a, b = ow.unstack(ow.constant([[1, 2], [3, 4]]), axis=1)
    ...     print(s.run(b))
    [2 4]
    """
    axis = _checks.check_int(axis, "axis", op="Unpack")
    if num is None:
        value = convert_to_tensor(value)
        s = _static(value)
        if s is not None:
            if not -len(s) <= axis < len(s):
                raise ValueError(f"axis = {axis} not in [{-len(s)}, {len(s)})")
            num = s[axis]
        if num is None:
            raise ValueError(f"Cannot infer num from shape {format_shape(s)}")
    return _UNPACK(value=value, num=num, axis=axis, name=name)  # type: ignore[no-any-return]


# -- split ----------------------------------------------------------------------------------------


def _split_pieces(ctx: ShapeContext, s: Shape, axis: int | None, sizes: list[int | None]) -> Any:
    if s is None:
        return [None] * len(sizes)
    if axis is None:
        return [(None,) * len(s)] * len(sizes)
    r = len(s)
    if not -r <= axis < r:
        raise ctx.error(f"Dimension size must be in [{-r}, {r}), but is {axis}")
    axis %= r
    return [(*s[:axis], d, *s[axis + 1 :]) for d in sizes]


def _split_shape(ctx: ShapeContext) -> list[Shape]:
    n = ctx.attrs["num_split"]
    s = ctx.shape(1)
    axis = _int_value(ctx, 0)
    if s is not None and axis is not None and -len(s) <= axis < len(s):
        dim = s[axis % len(s)]
        if dim is not None and dim % n:
            raise ctx.error(f"Dimension size must be evenly divisible by {n} but is {dim}")
        return _split_pieces(ctx, s, axis, [None if dim is None else dim // n] * n)  # type: ignore[no-any-return]
    return _split_pieces(ctx, s, axis, [None] * n)  # type: ignore[no-any-return]


def _split_v_shape(ctx: ShapeContext) -> list[Shape]:
    n = ctx.attrs["num_split"]
    s = ctx.shape(0)
    axis = _int_value(ctx, 2)
    sizes_v = ctx.value(1)
    if sizes_v is None:
        partial = ctx.shape_value(1)
        sizes: list[int | None] = list(partial) if partial is not None else [None] * n
    else:
        given = [int(v) for v in sizes_v.reshape(-1)]
        sizes = list(given)
        if len(sizes) != n:
            raise ctx.error(f"size_splits has {len(sizes)} values, but num_split is {n}")
        if sizes.count(-1) > 1:
            raise ctx.error("Cannot infer argument `num` from shape: more than one -1")
        if any(v < -1 for v in given):
            raise ctx.error(f"size_splits must be non-negative or -1, got {sizes}")
        dim = None
        if s is not None and axis is not None and -len(s) <= axis < len(s):
            dim = s[axis % len(s)]
        known = sum(v for v in given if v >= 0)
        if dim is not None and (
            (-1 not in sizes and known != dim) or (-1 in sizes and known > dim)
        ):
            raise ctx.error(
                "Determined shape must either match input shape along split_dim exactly if "
                "fully specified, or be less than the size of the input along split_dim if not "
                f"fully specified.  Got: {known}"
            )
        sizes = [(None if dim is None else dim - known) if v == -1 else v for v in sizes]
    if len(sizes) != n:
        sizes = [None] * n
    return _split_pieces(ctx, s, axis, [None if v == -1 else v for v in sizes])  # type: ignore[no-any-return]


def _split_grad(op_: Operation, *grads: Tensor | None) -> list[Any]:
    filled = [
        g if g is not None else zeros_like_op(out)
        for g, out in zip(grads, op_.outputs, strict=True)
    ]
    return [None, concat(filled, op_.inputs[0])]


def _split_v_grad(op_: Operation, *grads: Tensor | None) -> list[Any]:
    filled = [
        g if g is not None else zeros_like_op(out)
        for g, out in zip(grads, op_.outputs, strict=True)
    ]
    return [concat(filled, op_.inputs[2]), None, None]


_SPLIT = OpDef(
    "Split",
    inputs=["split_dim: int32", "value: T"],
    outputs=["output: num_split * T"],
    attrs={"num_split": Attr("int", minimum=1)},
    shape=_split_shape,
    grad=_split_grad,
    default_name="split",
)

_SPLIT_V = OpDef(
    "SplitV",
    inputs=["value: T", "size_splits: Tlen", "split_dim: int32"],
    outputs=["output: num_split * T"],
    attrs={"num_split": Attr("int", minimum=1)},
    types={"Tlen": INDEX},
    shape=_split_v_shape,
    grad=_split_v_grad,
    default_name="split",
)


@memoizable
@public
def split(
    value: TensorLike,
    num_or_size_splits: Any,
    axis: Any = 0,
    num: int | None = None,
    name: str | None = "split",
) -> list[Tensor]:
    """Cut ``value`` along ``axis`` into pieces.

    Parameters
    ----------
    value : Tensor
    num_or_size_splits : int, or list / 1-D tensor of ints
        An int ``n``: ``n`` equal pieces (the dimension must be divisible by ``n``). A list:
        the pieces' sizes; one of them may be -1 (the rest of the dimension).
    axis : int or scalar int32 Tensor
    num : int, optional
        The number of pieces when ``num_or_size_splits`` is a tensor of unknown length.
    name : str, optional

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     a, b = ow.split(ow.constant([1, 2, 3, 4, 5]), [2, -1])
    ...     print(s.run(b))
    [3 4 5]
    """
    if not isinstance(axis, Tensor):
        axis = _checks.check_int(axis, "axis", op="Split")
    if _checks.is_exact_int(num_or_size_splits) and not isinstance(num_or_size_splits, np.ndarray):
        n = _checks.check_int(num_or_size_splits, "num_or_size_splits", op="Split", minimum=1)
        return _SPLIT(split_dim=axis, value=value, num_split=n, name=name)  # type: ignore[no-any-return]
    sizes = num_or_size_splits
    if isinstance(sizes, Tensor):
        s = sizes._shape
        if s is not None and len(s) == 0:
            raise ValueError(
                "Rank-0 tensors are not supported as the num_or_size_splits argument to split. "
                f"Argument provided: {sizes!r}"
            )
        if num is None:
            num = s[0] if s is not None and len(s) == 1 else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {format_shape(s)}")
    elif not _contains_tensor_(sizes):
        sizes = _checks.check_int_list(sizes, "num_or_size_splits", op="SplitV", minimum=-1)
        if num is None:
            num = len(sizes)
    elif num is None:
        num = len(sizes)
    return _SPLIT_V(  # type: ignore[no-any-return]
        value=value, size_splits=sizes, split_dim=axis, num_split=num, name=name
    )


def _contains_tensor_(value: Any) -> bool:
    from ._op_def import _contains_tensor

    return _contains_tensor(value)


# -- slice ----------------------------------------------------------------------------------------


def _slice_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    begin_v, size_v = ctx.value(1), ctx.value(2)
    n = None
    for i in (1, 2):
        shp = ctx.shape(i)
        if shp is not None:
            if len(shp) != 1:
                raise ctx.error(f"Shape must be rank 1 but is rank {len(shp)}")
            n = shp[0] if shp[0] is not None else n
    if s is not None and n is not None and n != len(s):
        raise ctx.error(
            f"Expected begin and size arguments to be 1-D tensors of size {len(s)}, but got "
            f"shapes [{n}] and [{n}] instead."
        )
    r = len(s) if s is not None else n
    if r is None:
        return None
    if size_v is None:
        partial = ctx.shape_value(2)
        sizes: list[int | None] = list(partial) if partial is not None else [None] * r
        return tuple(sizes) if len(sizes) == r else (None,) * r
    sizes_i = [int(v) for v in size_v.reshape(-1)]
    begins = None if begin_v is None else [int(v) for v in begin_v.reshape(-1)]
    out: list[int | None] = []
    for i, z in enumerate(sizes_i):
        dim = None if s is None else s[i]
        b = None if begins is None else begins[i]
        if b is not None and dim is not None and not 0 <= b <= dim:
            raise ctx.error(f"Expected begin[{i}] in [0, {dim}], but got {b}")
        if z == -1:
            out.append(None if dim is None or b is None else dim - b)
            continue
        if z < -1:
            raise ctx.error(f"Expected size[{i}] >= -1, but got {z}")
        if dim is not None and b is not None and b + z > dim:
            raise ctx.error(f"Expected size[{i}] in [0, {dim - b}], but got {z}")
        out.append(z)
    return tuple(out)


def _slice_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .math_ops import subtract

    x, begin, _ = op_.inputs
    b = _const(begin)
    xs, gs = x._shape, grad._shape
    if b is not None and _known(xs) and _known(gs):
        bv = [int(v) for v in b.reshape(-1)]
        pads: Any = np.array(
            [[bv[i], xs[i] - bv[i] - gs[i]] for i in range(len(bv))],  # type: ignore[index,operator]
            dtype=np.int64 if begin.dtype.name == "int64" else np.int32,
        ).reshape(len(bv), 2)
    else:
        after = subtract(
            subtract(shape(x, out_type=begin.dtype), begin), shape(grad, out_type=begin.dtype)
        )
        pads = stack([begin, after], axis=1)
    return [pad(grad, pads), None, None]


_SLICE = OpDef(
    "Slice",
    inputs=["input: T", "begin: Index", "size: Index"],
    types={"Index": INDEX},
    shape=_slice_shape,
    grad=_slice_grad,
)


@memoizable
@public
def slice(input_: TensorLike, begin: Any, size: Any, name: str | None = None) -> Tensor:
    """The block of ``input_`` that starts at ``begin`` and has ``size`` (-1: to the end).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = ow.constant([[1, 2, 3], [4, 5, 6]])
    ...     print(s.run(ow.slice(x, [0, 1], [-1, 2])))
    [[2 3]
     [5 6]]
    """
    return _SLICE(input=input_, begin=begin, size=size, name=name)  # type: ignore[no-any-return]


# -- strided slice --------------------------------------------------------------------------------

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _strided_slice_spec(ctx: ShapeContext, s: Shape, first: int) -> Shape:
    from ._slicing import SliceError, dense_slice

    strides_v = ctx.value(first + 2)
    if s is None or strides_v is None:
        return None
    begin_v, end_v = ctx.value(first), ctx.value(first + 1)
    try:
        spec = dense_slice(
            s,
            None if begin_v is None else [int(v) for v in begin_v.reshape(-1)],
            None if end_v is None else [int(v) for v in end_v.reshape(-1)],
            [int(v) for v in strides_v.reshape(-1)],
            **{m: ctx.attrs[m] for m in _MASKS},
        )
    except SliceError as e:
        raise ctx.error(str(e)) from None
    return spec.final_shape


def _strided_slice_shape(ctx: ShapeContext) -> Shape:
    return _strided_slice_spec(ctx, ctx.shape(0), 1)


def _strided_slice_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, begin, end, strides = op_.inputs
    xs = x._shape
    dims: Any = (
        np.array(xs, dtype=begin.dtype.as_numpy_dtype)
        if _known(xs)
        else shape(x, out_type=begin.dtype)
    )
    masks = {m: op_.attrs[m] for m in _MASKS}
    return [_STRIDED_SLICE_GRAD(dims, begin, end, strides, grad, **masks), None, None, None]


_MASK_ATTRS = {m: Attr("int", 0, minimum=0, maximum=2**63 - 1) for m in _MASKS}

_STRIDED_SLICE = OpDef(
    "StridedSlice",
    inputs=["input: T", "begin: Index", "end: Index", "strides: Index"],
    attrs=dict(_MASK_ATTRS),
    types={"Index": INDEX},
    shape=_strided_slice_shape,
    grad=_strided_slice_grad,
)


def _strided_slice_grad_shape(ctx: ShapeContext) -> Shape:
    out = ctx.shape_value(0)
    if out is not None and _known(out):
        want = _strided_slice_spec(ctx, out, 1)
        dy = ctx.shape(4)
        if want is not None and dy is not None:
            from ..tensor_shape import TensorShape as _TS

            if not _TS(dy).is_compatible_with(_TS(want)):
                raise ctx.error(
                    f"shape of dy was {format_shape(dy)} instead of {format_shape(want)}"
                )
    return out


def _strided_slice_grad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    _, begin, end, strides, _ = op_.inputs
    masks = {m: op_.attrs[m] for m in _MASKS}
    return [None, None, None, None, strided_slice(grad, begin, end, strides, **masks)]


_STRIDED_SLICE_GRAD = OpDef(
    "StridedSliceGrad",
    inputs=["shape: Index", "begin: Index", "end: Index", "strides: Index", "dy: T"],
    attrs=dict(_MASK_ATTRS),
    types={"Index": INDEX},
    shape=_strided_slice_grad_shape,
    grad=_strided_slice_grad_grad,
)


@memoizable
@public
def strided_slice(
    input_: TensorLike,
    begin: Any,
    end: Any,
    strides: Any = None,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    var: Any = None,
    name: str | None = None,
) -> Tensor:
    """``input_[begin:end:strides]`` per dimension, with TensorFlow's masks.

    Bit ``i`` of a mask applies to the ``i``-th entry of ``begin`` / ``end`` / ``strides``:
    ``begin_mask`` / ``end_mask`` ignore that bound (the widest range for the stride's sign),
    ``ellipsis_mask`` makes the entry an ``...`` (as many full dimensions as needed),
    ``new_axis_mask`` inserts a dimension of size 1, ``shrink_axis_mask`` takes the single index
    ``begin[i]`` and removes the dimension. ``strides`` defaults to ones. ``x[...]`` builds this op.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = ow.constant([[1, 2, 3], [4, 5, 6]])
    ...     print(s.run(ow.strided_slice(x, [0, 2], [2, 0], [1, -1], end_mask=2)))
    [[3 2 1]
     [6 5 4]]
    """
    if strides is None:
        if isinstance(begin, Tensor):
            strides = ones_like_op(begin)
        elif isinstance(begin, (list, tuple)) and _contains_tensor_(begin):
            strides = [1] * len(begin)
        else:
            strides = [1] * len(_checks.check_int_list(begin, "begin", op="StridedSlice"))
    masks = {
        "begin_mask": begin_mask,
        "end_mask": end_mask,
        "ellipsis_mask": ellipsis_mask,
        "new_axis_mask": new_axis_mask,
        "shrink_axis_mask": shrink_axis_mask,
    }
    return _STRIDED_SLICE(  # type: ignore[no-any-return]
        input_, begin, end, strides, name=name, **masks
    )


def strided_slice_grad(
    shape: Any,
    begin: Any,
    end: Any,
    strides: Any,
    dy: TensorLike,
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
    name: str | None = None,
) -> Tensor:
    """Zeros of ``shape`` with ``dy`` written where ``strided_slice`` with the same arguments takes
    its elements (the gradient of :func:`strided_slice`)."""
    return _STRIDED_SLICE_GRAD(  # type: ignore[no-any-return]
        shape,
        begin,
        end,
        strides,
        dy,
        begin_mask=begin_mask,
        end_mask=end_mask,
        ellipsis_mask=ellipsis_mask,
        new_axis_mask=new_axis_mask,
        shrink_axis_mask=shrink_axis_mask,
        name=name,
    )


# -- Tensor.__getitem__ ---------------------------------------------------------------------------

_INDEX_TYPES_MESSAGE = (
    "Only integers, slices (`:`), ellipsis (`...`), opweave.newaxis (`None`) and scalar "
    "opweave.int32/opweave.int64 tensors are valid indices, got {!r}"
)

#: ``x[:, newaxis]`` inserts a dimension of size 1 (it is ``None``, as in NumPy and TensorFlow).
newaxis = None


def _check_index(idx: Any) -> None:
    if isinstance(idx, Tensor):
        if idx.dtype not in INDEX or (idx._shape is not None and len(idx._shape) != 0):
            raise TypeError(_INDEX_TYPES_MESSAGE.format(idx))
        return
    if not _checks.is_exact_int(idx):
        raise TypeError(_INDEX_TYPES_MESSAGE.format(idx))


def _is_unknown_dimension(v: Any) -> bool:
    return hasattr(v, "value") and getattr(v, "value", 0) is None


def _slice_helper(tensor: Tensor, slice_spec: Any, var: Any = None) -> Tensor:
    """``tensor[slice_spec]``: TensorFlow 1's indexing, built as one StridedSlice."""
    if isinstance(slice_spec, (bool, np.bool_)) or (
        isinstance(slice_spec, Tensor) and slice_spec.dtype.name == "bool"
    ):
        raise TypeError(
            "boolean indices (a mask) are not supported by x[...]; use opweave.boolean_mask"
        )
    if not isinstance(slice_spec, (list, tuple)):
        slice_spec = [slice_spec]
    begin: list[Any] = []
    end: list[Any] = []
    strides: list[Any] = []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_axis_mask = 0
    for index, s in enumerate(slice_spec):
        if isinstance(s, builtins_slice):
            if s.start is not None and not _is_unknown_dimension(s.start):
                _check_index(s.start)
                begin.append(s.start)
            else:
                begin.append(0)
                begin_mask |= 1 << index
            if s.stop is not None and not _is_unknown_dimension(s.stop):
                _check_index(s.stop)
                end.append(s.stop)
            else:
                end.append(0)
                end_mask |= 1 << index
            if s.step is not None and not _is_unknown_dimension(s.step):
                _check_index(s.step)
                strides.append(s.step)
            else:
                strides.append(1)
        elif s is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            ellipsis_mask |= 1 << index
        elif s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            new_axis_mask |= 1 << index
        else:
            _check_index(s)
            begin.append(s)
            end.append(s + 1 if not isinstance(s, Tensor) else s)
            strides.append(1)
            shrink_axis_mask |= 1 << index
    if begin:
        want = _out_type(*begin, *end, *strides)
        if any(
            not isinstance(v, Tensor) and not -(2**31) <= int(v) < 2**31
            for v in (*begin, *end, *strides)
        ):
            want = as_dtype("int64")
        packed = [
            _index_vector(v, want, what)
            for v, what in ((begin, "begin"), (end, "end"), (strides, "strides"))
        ]
    else:
        empty = np.zeros((0,), np.int32)
        packed = [empty, empty, empty]
    return strided_slice(
        tensor,
        packed[0],
        packed[1],
        packed[2],
        begin_mask=begin_mask,
        end_mask=end_mask,
        ellipsis_mask=ellipsis_mask,
        new_axis_mask=new_axis_mask,
        shrink_axis_mask=shrink_axis_mask,
        name="strided_slice",
    )


def _index_vector(items: list[Any], dtype: DType, what: str) -> Any:
    """Index entries (ints and scalar tensors) as one vector: a constant when all are ints."""
    if not any(isinstance(v, Tensor) for v in items):
        return np.array([int(v) for v in items], dtype=dtype.as_numpy_dtype)
    return stack(
        [
            cast(v, dtype) if isinstance(v, Tensor) else np.array(int(v), dtype.as_numpy_dtype)
            for v in items
        ],
        name=what,
    )


# -- gather ---------------------------------------------------------------------------------------


def _gather_shape(ctx: ShapeContext) -> Shape:
    if ctx.attrs["batch_dims"] != 0:
        raise ctx.error("batch_dims other than 0 is not supported")
    _scalar_input_check(ctx, 2, "axis")
    params, indices = ctx.shape(0), ctx.shape(1)
    axis = _int_value(ctx, 2)
    if params is not None and len(params) == 0:
        raise ctx.error("Shape must be at least rank 1 but is rank 0")
    if params is None or indices is None or axis is None:
        return None
    r = len(params)
    if not -r <= axis < r:
        raise ctx.error(
            f"Shape must be at least rank {axis + 1 if axis >= 0 else -axis} but is rank {r}"
        )
    axis %= r
    return (*params[:axis], *indices, *params[axis + 1 :])


def _gather_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .math_ops import add
    from .math_ops import range as range_

    params, indices, axis_t = op_.inputs
    a = _const(axis_t)
    pr, ir = params._shape, indices._shape
    if a is not None and pr is not None and ir is not None:
        ax = int(a) % len(pr)
        n: Any = pr[ax] if pr[ax] is not None else shape(params)[ax]
        q = len(ir)
        if ax == 0:
            return [unsorted_segment_sum(grad, indices, n), None, None]
        # grad: outer + indices.shape + inner; move the indices' dims first, sum, move back.
        g_rank = len(pr) - 1 + q
        perm = [*_span(ax, ax + q), *_span(0, ax), *_span(ax + q, g_rank)]
        summed = unsorted_segment_sum(transpose(grad, perm), indices, n)
        back = [*_span(1, ax + 1), 0, *_span(ax + 1, len(pr))]
        return [transpose(summed, back), None, None]
    # Ranks or the axis known only at run time: the same permutations, computed.
    axis32 = cast(axis_t, int32)
    pr_t, ir_t = rank(params), rank(indices)
    from .math_ops import greater_equal, select_v2

    ax_t = select_v2(greater_equal(axis32, 0), axis32, add(axis32, pr_t))
    g_rank_t = add(pr_t, ir_t) - 1
    perm_t = concat(
        [range_(ax_t, add(ax_t, ir_t)), range_(0, ax_t), range_(add(ax_t, ir_t), g_rank_t)], 0
    )
    n_t = gather(shape(params), ax_t)
    summed = unsorted_segment_sum(transpose(grad, perm_t), indices, n_t)
    back_t = concat([range_(1, ax_t + 1), [0], range_(ax_t + 1, pr_t)], 0)
    return [transpose(summed, back_t), None, None]


def _span(a: int, b: int) -> list[int]:
    return list(builtins.range(a, b))


_GATHER = OpDef(
    "GatherV2",
    inputs=["params: Tparams", "indices: Tindices", "axis: Taxis"],
    outputs=["output: Tparams"],
    attrs={"batch_dims": Attr("int", 0)},
    types={"Tindices": INDEX, "Taxis": INDEX},
    shape=_gather_shape,
    grad=_gather_grad,
)


@memoizable
@public
def gather(
    params: TensorLike,
    indices: TensorLike,
    validate_indices: Any = None,
    name: str | None = None,
    axis: Any = None,
    batch_dims: int = 0,
) -> Tensor:
    """The slices of ``params`` along ``axis`` picked by ``indices`` (any shape).

    The result's shape is ``params.shape[:axis] + indices.shape + params.shape[axis + 1:]``.
    An index outside ``[0, params.shape[axis])`` (negative ones included) is an
    InvalidArgumentError naming the node, as TensorFlow's CPU kernel. ``validate_indices`` is
    accepted and ignored (indices are always checked); ``batch_dims`` other than 0 is not
    supported. The gradient with respect to ``params`` is dense (an UnsortedSegmentSum).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.gather([[1, 2], [3, 4], [5, 6]], [2, 0])))
    [[5 6]
     [1 2]]
    """
    if axis is None:
        axis = 0
    batch_dims = _checks.check_int(batch_dims, "batch_dims", op="GatherV2")
    return _GATHER(  # type: ignore[no-any-return]
        params=params, indices=_nested_ints(indices), axis=axis, batch_dims=batch_dims, name=name
    )


# -- unsorted segment sum -------------------------------------------------------------------------


def _segment_shape(ctx: ShapeContext) -> Shape:
    data, ids = ctx.shape(0), ctx.shape(1)
    _scalar_input_check(ctx, 2, "num_segments")
    num = _int_value(ctx, 2)
    if num is not None and num < 0:
        raise ctx.error(f"num_segments must be non-negative, got {num}")
    if data is None or ids is None:
        return None
    if len(ids) > len(data) or any(
        a is not None and b is not None and a != b for a, b in zip(ids, data, strict=False)
    ):
        raise ctx.error(
            f"data.shape = {format_shape(data)} does not start with segment_ids.shape = "
            f"{format_shape(ids)}"
        )
    return (num, *data[len(ids) :])


def _gather_drop_negatives(params: Tensor, ids: Tensor) -> Tensor:
    """``gather(params, ids)`` with zeros where an id is negative (the gradient of a segment sum,
    which drops those rows)."""
    from .math_ops import greater_equal, maximum, select_v2

    zero = np.array(0, ids.dtype.as_numpy_dtype)
    gathered = gather(params, maximum(ids, zero))
    keep = greater_equal(ids, zero)  # ids' shape; gathered has params.shape[1:] after it
    if params._shape is not None:
        for _ in builtins.range(len(params._shape) - 1):
            keep = expand_dims(keep, -1)
    else:
        keep = reshape(keep, concat([shape(keep), ones_like_op(shape(params)[1:])], 0))
    return select_v2(keep, gathered, zeros_like_op(gathered))


def _segment_sum_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [_gather_drop_negatives(grad, op_.inputs[1]), None, None]


_UNSORTED_SEGMENT_SUM = OpDef(
    "UnsortedSegmentSum",
    inputs=["data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"],
    types={"T": NUMBERS, "Tindices": INDEX, "Tnumsegments": INDEX},
    shape=_segment_shape,
    grad=_segment_sum_grad,
)


@public
def unsorted_segment_sum(
    data: TensorLike, segment_ids: TensorLike, num_segments: Any, name: str | None = None
) -> Tensor:
    """Sums of the slices of ``data`` that share a segment id: ``output[i] = sum of data[j...]
    over j with segment_ids[j...] == i``.

    ``segment_ids`` has a prefix of ``data``'s shape; the result has shape
    ``[num_segments] + data.shape[segment_ids.ndim:]``, zeros for empty segments. Negative ids
    are dropped; an id ``>= num_segments`` is an InvalidArgumentError. Sums are added in index
    order, so the result does not depend on the number of threads.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.unsorted_segment_sum([1.0, 2.0, 3.0, 4.0], [0, 2, 0, -1], 3)))
    [4. 0. 2.]
    """
    return _UNSORTED_SEGMENT_SUM(  # type: ignore[no-any-return]
        data=data, segment_ids=_nested_ints(segment_ids), num_segments=num_segments, name=name
    )


# -- one_hot --------------------------------------------------------------------------------------


def _one_hot_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    axis = ctx.attrs["axis"]
    for i, what in ((1, "depth"), (2, "on_value"), (3, "off_value")):
        _scalar_input_check(ctx, i, what)
    depth = _int_value(ctx, 1)
    if depth is not None and depth < 0:
        raise ctx.error(f"depth must be non-negative, got: {depth}")
    if s is None:
        return None
    if not -1 <= axis <= len(s):
        raise ctx.error(
            f"Expected axis to be -1 or between [0, {len(s) + 1}).  But received: {axis}"
        )
    at = len(s) if axis == -1 else axis
    return (*s[:at], depth, *s[at:])


_ONE_HOT = OpDef(
    "OneHot",
    inputs=["indices: TI", "depth: int32", "on_value: T", "off_value: T"],
    attrs={"axis": Attr("int", -1)},
    types={"TI": frozenset({as_dtype("uint8"), int32, as_dtype("int64")})},
    shape=_one_hot_shape,
    not_differentiable=True,
)


@public
def one_hot(
    indices: TensorLike,
    depth: Any,
    on_value: Any = None,
    off_value: Any = None,
    axis: int | None = None,
    dtype: Any = None,
    name: str | None = None,
) -> Tensor:
    """A one-hot encoding: a new dimension of size ``depth`` at ``axis`` (-1: last) holding
    ``on_value`` where it equals the index and ``off_value`` elsewhere (everywhere for an index
    outside ``[0, depth)``).

    ``dtype`` defaults to that of ``on_value`` / ``off_value``, else float32; ``on_value`` and
    ``off_value`` default to 1 and 0.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.one_hot([0, 2, -1], 3)))
    [[1. 0. 0.]
     [0. 0. 1.]
     [0. 0. 0.]]
    """
    from ._op_def import _operand_dtype

    on_dt = None if on_value is None else _operand_dtype(on_value)
    off_dt = None if off_value is None else _operand_dtype(off_value)
    if on_value is not None and on_dt is None:
        on_dt = _python_value_dtype(on_value, dtype)
    if off_value is not None and off_dt is None:
        off_dt = _python_value_dtype(off_value, dtype)
    if dtype is not None:
        dt = as_dtype(dtype)
        for v, d, what in ((on_value, on_dt, "on_value"), (off_value, off_dt, "off_value")):
            if v is not None and d is not dt:
                raise TypeError(f"dtype {d} of {what} does not match dtype parameter {dt}")
    elif on_dt is not None or off_dt is not None:
        dt = on_dt if on_dt is not None else off_dt  # type: ignore[assignment]
    else:
        dt = float32
    if on_dt is not None and off_dt is not None and on_dt is not off_dt:
        raise TypeError(f"dtype {on_dt} of on_value does not match dtype {off_dt} of off_value")
    on = convert_to_tensor(1 if on_value is None else on_value, dt)
    off = convert_to_tensor(0 if off_value is None else off_value, dt)
    ax = -1 if axis is None else _checks.check_int(axis, "axis", op="OneHot")
    return _ONE_HOT(_nested_ints(indices), depth, on, off, axis=ax, name=name)  # type: ignore[no-any-return]


def _python_value_dtype(value: Any, dtype: Any) -> DType:
    """A Python on/off value's dtype: ``dtype`` when it converts to it without loss, else its
    own (TensorFlow's inferred dtype)."""
    from ._op_def import _inferred_dtype, to_array

    if dtype is not None:
        try:
            to_array(value, as_dtype(dtype))
            return as_dtype(dtype)
        except TypeError:
            pass
    return _inferred_dtype(value)


# -- expand_dims / squeeze ------------------------------------------------------------------------


def _expand_dims_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    _scalar_input_check(ctx, 1, "dim")
    dim = _int_value(ctx, 1)
    if s is None:
        return None
    r = len(s)
    if dim is None:
        return (None,) * (r + 1)
    if not -r - 1 <= dim <= r:
        raise ctx.error(f"Tried to expand dim index {dim} for tensor with {r} dimensions.")
    at = dim + r + 1 if dim < 0 else dim
    return (*s[:at], 1, *s[at:])


def _reshape_to_input(op_: Operation, grad: Tensor) -> list[Any]:
    x = op_.inputs[0]
    target: Any = np.array(x._shape, np.int64) if _known(x._shape) else shape(x)
    return [reshape(grad, target)] + [None] * (len(op_.inputs) - 1)


_EXPAND_DIMS = OpDef(
    "ExpandDims",
    inputs=["input: T", "dim: Tdim"],
    types={"Tdim": INDEX},
    shape=_expand_dims_shape,
    grad=_reshape_to_input,
)


@memoizable
@public
def expand_dims(
    input: TensorLike,
    axis: Any = None,
    name: str | None = None,
    dim: Any = None,
) -> Tensor:
    """``input`` with a dimension of size 1 inserted at ``axis`` (``dim``: TensorFlow 1's old
    name); ``axis`` in ``[-rank - 1, rank]``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.expand_dims(ow.zeros([2, 3]), -1).shape
    TensorShape([Dimension(2), Dimension(3), Dimension(1)])
    """
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("Must specify an axis argument to expand_dims()")
    return _EXPAND_DIMS(input=input, dim=axis, name=name)  # type: ignore[no-any-return]


def _squeeze_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    dims = ctx.attrs["squeeze_dims"]
    if s is None:
        return None
    r = len(s)
    drop = set()
    for d in dims:
        if not -r <= d < r:
            raise ctx.error(f"Tried to squeeze dim index {d} for tensor with {r} dimensions.")
        a = d % r
        if s[a] is not None and s[a] != 1:
            raise ctx.error(f"Can not squeeze dim[{a}], expected a dimension of 1, got {s[a]}")
        drop.add(a)
    if not dims:
        if any(d is None for d in s):
            return None
        return tuple(d for d in s if d != 1)
    return tuple(d for i, d in enumerate(s) if i not in drop)


_SQUEEZE = OpDef(
    "Squeeze",
    inputs=["input: T"],
    attrs={"squeeze_dims": Attr("list(int)", [])},
    shape=_squeeze_shape,
    grad=_reshape_to_input,
)


@memoizable
@public
def squeeze(
    input: TensorLike,
    axis: Any = None,
    name: str | None = None,
    squeeze_dims: Any = None,
) -> Tensor:
    """``input`` without its dimensions of size 1 (only those in ``axis`` when given; naming a
    dimension that is not 1 is an error). ``squeeze_dims`` is TensorFlow 1's old name.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.squeeze(ow.zeros([1, 2, 1, 3]), [0]).shape
    TensorShape([Dimension(2), Dimension(1), Dimension(3)])
    """
    if axis is not None and squeeze_dims is not None:
        raise ValueError("Cannot specify both 'axis' and 'squeeze_dims'")
    axis = squeeze_dims if axis is None else axis
    if axis is None:
        axis = []
    elif _checks.is_exact_int(axis):
        axis = [axis]
    return _SQUEEZE(input=input, squeeze_dims=axis, name=name)  # type: ignore[no-any-return]


# -- tile -----------------------------------------------------------------------------------------


def _tile_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    m = ctx.shape_value(1)
    mv = ctx.value(1)
    if mv is not None and any(int(v) < 0 for v in mv.reshape(-1)):
        raise ctx.error(f"Expected multiples >= 0, but got {[int(v) for v in mv.reshape(-1)]}")
    if s is not None and m is not None and len(m) != len(s):
        raise ctx.error(
            f"Expected multiples argument to be a vector of length {len(s)} but got length {len(m)}"
        )
    if s is None:
        return None if m is None else (None,) * len(m)
    if m is None:
        return (None,) * len(s)
    return tuple(None if a is None or b is None else a * b for a, b in zip(s, m, strict=True))


def _tile_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .math_ops import range as range_
    from .math_ops import reduce_sum

    x, multiples = op_.inputs
    m = _const(multiples)
    xs = x._shape
    if m is not None and _known(xs):
        mult = [int(v) for v in m.reshape(-1)]
        if all(v == 1 for v in mult):
            return [grad, None]
        split_shape: Any = np.array(
            [v for pair in zip(mult, xs or (), strict=True) for v in pair], dtype=np.int64
        )
        axes: Any = np.arange(0, 2 * len(mult), 2, dtype=np.int32)
    else:
        dims = shape(x, out_type=multiples.dtype)
        split_shape = reshape(transpose(stack([multiples, dims])), [-1])
        axes = range_(0, size(split_shape), 2)
    g = reduce_sum(reshape(grad, split_shape), axes)
    if xs is not None:
        g.set_shape(xs)
    return [g, None]


_TILE = OpDef(
    "Tile",
    inputs=["input: T", "multiples: Tmultiples"],
    types={"Tmultiples": INDEX},
    shape=_tile_shape,
    grad=_tile_grad,
)


@memoizable
@public
def tile(input: TensorLike, multiples: Any, name: str | None = None) -> Tensor:
    """``input`` repeated ``multiples[i]`` times along each dimension ``i``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.tile([[1, 2]], [2, 2])))
    [[1 2 1 2]
     [1 2 1 2]]
    """
    return _TILE(input=input, multiples=multiples, name=name)  # type: ignore[no-any-return]


# -- pad ------------------------------------------------------------------------------------------


def _pad_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    p = ctx.shape(1)
    if p is not None:
        if len(p) != 2 or (p[1] is not None and p[1] != 2):
            raise ctx.error(
                f"paddings must be a matrix with 2 columns, got shape {format_shape(p)}"
            )
        if s is not None and p[0] is not None and p[0] != len(s):
            raise ctx.error(
                f"The first dimension of paddings must be the rank of inputs: {p[0]} paddings "
                f"for a tensor of rank {len(s)}"
            )
    if len(ctx.shapes) > 2 and ctx.op.type == "PadV2":
        _scalar_input_check(ctx, 2, "constant_values")
    v = ctx.value(1)
    r = len(s) if s is not None else (p[0] if p is not None else None)
    if v is None:
        return None if r is None else (None,) * r
    pads = v.reshape(-1, 2).tolist()
    for before, after in pads:
        if before < 0 or after < 0:
            raise ctx.error(f"Paddings must be non-negative: {before} {after}")
    if s is None:
        return (None,) * len(pads)
    mode = ctx.attrs.get("mode")
    out: list[int | None] = []
    for d, (dim, (before, after)) in enumerate(zip(s, pads, strict=True)):
        if dim is not None and mode is not None:
            limit = dim - 1 if mode == "REFLECT" else dim
            if before > limit or after > limit:
                word = "less than" if mode == "REFLECT" else "no greater than"
                raise ctx.error(
                    f"paddings must be {word} the dimension size: {before}, {after} for "
                    f"dimension {d} of size {dim}"
                )
        out.append(None if dim is None else dim + before + after)
    return tuple(out)


def _pad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    x, paddings = op_.inputs[:2]
    p = _const(paddings)
    xs = x._shape
    if p is not None and _known(xs):
        begin: Any = np.array([int(v) for v in p.reshape(-1, 2)[:, 0]], np.int64)
        sizes: Any = np.array(xs, np.int64)
    else:
        begin = reshape(slice(paddings, [0, 0], [-1, 1]), [-1])
        sizes = shape(x, out_type=paddings.dtype)
    return [slice(grad, begin, sizes), None] + [None] * (len(op_.inputs) - 2)


_PAD = OpDef(
    "Pad",
    inputs=["input: T", "paddings: Tpaddings"],
    types={"Tpaddings": INDEX},
    shape=_pad_shape,
    grad=_pad_grad,
)

_PAD_V2 = OpDef(
    "PadV2",
    inputs=["input: T", "paddings: Tpaddings", "constant_values: T"],
    types={"Tpaddings": INDEX},
    shape=_pad_shape,
    grad=_pad_grad,
)

_MIRROR_MODES = ("REFLECT", "SYMMETRIC")


def _mirror_pad_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [_MIRROR_PAD_GRAD(grad, op_.inputs[1], mode=op_.attrs["mode"]), None]


_MIRROR_PAD = OpDef(
    "MirrorPad",
    inputs=["input: T", "paddings: Tpaddings"],
    attrs={"mode": Attr("string", allowed=_MIRROR_MODES)},
    types={"Tpaddings": INDEX},
    shape=_pad_shape,
    grad=_mirror_pad_grad,
)


def _mirror_pad_grad_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    v = ctx.value(1)
    if s is None:
        return None
    if v is None:
        return (None,) * len(s)
    pads = v.reshape(-1, 2).tolist()
    if len(pads) != len(s):
        raise ctx.error(f"paddings has {len(pads)} rows for a gradient of rank {len(s)}")
    out: list[int | None] = []
    for dim, (before, after) in zip(s, pads, strict=True):
        if dim is not None and dim - before - after < 0:
            raise ctx.error(f"paddings {before}, {after} exceed the dimension of size {dim}")
        out.append(None if dim is None else dim - before - after)
    return tuple(out)


_MIRROR_PAD_GRAD = OpDef(
    "MirrorPadGrad",
    inputs=["input: T", "paddings: Tpaddings"],
    attrs={"mode": Attr("string", allowed=_MIRROR_MODES)},
    types={"T": NUMBERS, "Tpaddings": INDEX},
    shape=_mirror_pad_grad_shape,
    grad=lambda op_, g: [_MIRROR_PAD(g, op_.inputs[1], mode=op_.attrs["mode"]), None],
)


def _paddings_value(paddings: Any) -> Any:
    """Paddings given as nested Python lists: a checked [n, 2] integer array (tensors and
    arrays pass through; lists holding tensors are packed)."""
    from ._op_def import _contains_tensor

    if isinstance(paddings, (Tensor, np.ndarray)) or _contains_tensor(paddings):
        return paddings
    if isinstance(paddings, (str, bytes)) or not hasattr(paddings, "__iter__"):
        raise TypeError(f"pad: paddings must be a [rank, 2] list of integers, got {paddings!r}")
    rows = [
        _checks.check_int_list(row, f"paddings[{i}]", op="Pad", allow_scalar=False)
        for i, row in enumerate(paddings)
    ]
    if any(len(r) != 2 for r in rows):
        raise ValueError(f"pad: each row of paddings must hold 2 integers, got {paddings!r}")
    flat = [v for r in rows for v in r]
    fits = all(-(2**31) <= v < 2**31 for v in flat)
    return np.array(rows, dtype=np.int32 if fits else np.int64).reshape(len(rows), 2)


@memoizable
@public
def pad(
    tensor: TensorLike,
    paddings: Any,
    mode: str = "CONSTANT",
    name: str | None = None,
    constant_values: Any = 0,
) -> Tensor:
    """``tensor`` with ``paddings[i] = [before, after]`` elements added around dimension ``i``.

    Parameters
    ----------
    tensor : Tensor
    paddings : [rank, 2] list or int32/int64 Tensor
        Non-negative.
    mode : {"CONSTANT", "REFLECT", "SYMMETRIC"}
        Case-insensitive. CONSTANT fills with ``constant_values``; REFLECT mirrors without the
        edge element (paddings < the dimension), SYMMETRIC with it (paddings <= the dimension),
        as ``numpy.pad``'s "reflect" and "symmetric".
    name : str, optional
    constant_values : scalar, optional
        The fill value of CONSTANT mode (same dtype as ``tensor``).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.pad([[1, 2, 3]], [[0, 0], [2, 2]], "REFLECT")))
    [[3 2 1 2 3 2 1]]
    """
    m = _checks.check_string(mode, "mode", op="Pad").upper()
    paddings = _paddings_value(paddings)
    if m == "CONSTANT":
        if not isinstance(constant_values, (Tensor, np.ndarray)) and _is_zero(constant_values):
            return _PAD(tensor, paddings, name=name)  # type: ignore[no-any-return]
        return _PAD_V2(tensor, paddings, constant_values, name=name)  # type: ignore[no-any-return]
    if m in _MIRROR_MODES:
        return _MIRROR_PAD(tensor, paddings, mode=m, name=name)  # type: ignore[no-any-return]
    raise ValueError(f"Unknown padding mode: {mode}")


def _is_zero(v: Any) -> bool:
    try:
        return bool(v == 0) and not isinstance(v, (str, bytes))
    except (TypeError, ValueError):
        return False


# -- reverse --------------------------------------------------------------------------------------


def _reverse_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    v = ctx.value(1)
    if s is not None and v is not None:
        r = len(s)
        seen: set[int] = set()
        for a in (int(x) for x in v.reshape(-1)):
            if not -r <= a < r:
                raise ctx.error(f"'axis'[{a}] = {a} is out of valid range [{-r}, {r - 1}]")
            if a % r in seen:
                raise ctx.error(f"axis {a % r} specified more than once.")
            seen.add(a % r)
    return s


_REVERSE = OpDef(
    "ReverseV2",
    inputs=["tensor: T", "axis: Tidx"],
    types={"Tidx": INDEX},
    shape=_reverse_shape,
    grad=lambda op_, g: [reverse(g, op_.inputs[1]), None],
)


@memoizable
@public
def reverse(tensor: TensorLike, axis: Any, name: str | None = None) -> Tensor:
    """``tensor`` with the order of the elements along each dimension in ``axis`` reversed.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.reverse([[1, 2], [3, 4]], [1])))
    [[2 1]
     [4 3]]
    """
    return _REVERSE(tensor=tensor, axis=axis, name=name)  # type: ignore[no-any-return]


@public
def reverse_v2(tensor: TensorLike, axis: Any, name: str | None = None) -> Tensor:
    """Same as :func:`reverse` (TensorFlow 1's name of the op's function)."""
    return reverse(tensor, axis, name=name)


# -- linspace -------------------------------------------------------------------------------------


def _lin_space_shape(ctx: ShapeContext) -> Shape:
    for i, what in ((0, "start"), (1, "stop"), (2, "num")):
        r = ctx.rank(i)
        if r not in (None, 0):
            raise ctx.error(f"{what} must be a scalar, not shape {format_shape(ctx.shape(i))}")
    num = _int_value(ctx, 2)
    if num is not None and num <= 0:
        raise ctx.error(f"Requires num > 0: {num}")
    return (num,)


_LIN_SPACE = OpDef(
    "LinSpace",
    inputs=["start: T", "stop: T", "num: Tidx"],
    types={"T": frozenset({float32, as_dtype("float64")}), "Tidx": INDEX},
    shape=_lin_space_shape,
    not_differentiable=True,
)


@public
def lin_space(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (float32 / float64).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.linspace(0.0, 1.0, 5)))
    [0.   0.25 0.5  0.75 1.  ]
    """
    return _LIN_SPACE(start, stop, num, name=name)  # type: ignore[no-any-return]


@public
def linspace(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """Same as :func:`lin_space`."""
    return lin_space(start, stop, num, name=name)


# -- diagonals ------------------------------------------------------------------------------------

_DIAG_TYPES = NUMBERS | {as_dtype("bool")}


def _diag_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    if s is not None and len(s) == 0:
        raise ctx.error("Input must be at least rank 1, got 0")
    return None if s is None else (*s, *s)


def _diag_part_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    if s is None:
        return None
    if not s or len(s) % 2:
        raise ctx.error(
            f"The rank of the tensor should be even and positive, got shape {format_shape(s)}"
        )
    h = len(s) // 2
    for i in range(h):
        if s[i] is not None and s[i + h] is not None and s[i] != s[i + h]:
            raise ctx.error(
                f"Invalid shape {format_shape(s)}: dimensions {i} and {i + h} do not match."
            )
    return tuple(_merge_dims(s[i], s[i + h]) for i in range(h))


_DIAG = OpDef(
    "Diag",
    inputs=["diagonal: T"],
    types={"T": _DIAG_TYPES},
    shape=_diag_shape,
    grad=lambda op_, g: [diag_part(g)],
)

_DIAG_PART = OpDef(
    "DiagPart",
    inputs=["input: T"],
    outputs=["diagonal: T"],
    types={"T": _DIAG_TYPES},
    shape=_diag_part_shape,
    grad=lambda op_, g: [diag(g)],
)


@public
def diag(diagonal: TensorLike, name: str | None = None) -> Tensor:
    """A tensor of shape ``diagonal.shape * 2`` holding ``diagonal`` on its diagonal, zeros
    elsewhere (``diag([1, 2])`` is ``[[1, 0], [0, 2]]``)."""
    return _DIAG(diagonal, name=name)  # type: ignore[no-any-return]


@public
def diag_part(input: TensorLike, name: str | None = None) -> Tensor:
    """The diagonal of a tensor of shape ``D + D`` (the inverse of :func:`diag`)."""
    return _DIAG_PART(input, name=name)  # type: ignore[no-any-return]


def _matrix_diag_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    if s is None:
        return None
    if not s:
        raise ctx.error(f"input must be at least 1-dim, received shape: {format_shape(s)}")
    return (*s, s[-1])


def _matrix_diag_part_shape(ctx: ShapeContext) -> Shape:
    s = ctx.shape(0)
    if s is None:
        return None
    if len(s) < 2:
        raise ctx.error(f"input must be at least 2-dim, received shape: {format_shape(s)}")
    m, n = s[-2], s[-1]
    k = None if m is None or n is None else min(m, n)
    return (*s[:-2], k)


def _matrix_set_diag_shape(ctx: ShapeContext) -> Shape:
    want = _matrix_diag_part_shape(ctx)
    d = ctx.shape(1)
    if want is not None and d is not None:
        from ..tensor_shape import TensorShape as _TS

        if not _TS(d).is_compatible_with(_TS(want)):
            raise ctx.error(f"diagonal must have shape {format_shape(want)}")
    return ctx.shape(0)


def _matrix_diag_part_grad(op_: Operation, g: Tensor) -> list[Any]:
    s = op_.inputs[0]._shape
    if s is not None and s[-1] is not None and s[-1] == s[-2]:
        return [matrix_diag(g)]
    return [matrix_set_diag(zeros_like_op(op_.inputs[0]), g)]


_MATRIX_DIAG = OpDef(
    "MatrixDiag",
    inputs=["diagonal: T"],
    types={"T": _DIAG_TYPES},
    shape=_matrix_diag_shape,
    grad=lambda op_, g: [matrix_diag_part(g)],
)

_MATRIX_DIAG_PART = OpDef(
    "MatrixDiagPart",
    inputs=["input: T"],
    outputs=["diagonal: T"],
    types={"T": _DIAG_TYPES},
    shape=_matrix_diag_part_shape,
    grad=_matrix_diag_part_grad,
)

_MATRIX_SET_DIAG = OpDef(
    "MatrixSetDiag",
    inputs=["input: T", "diagonal: T"],
    types={"T": _DIAG_TYPES},
    shape=_matrix_set_diag_shape,
    grad=lambda op_, g: [
        matrix_set_diag(g, zeros_like_op(op_.inputs[1])),
        matrix_diag_part(g),
    ],
)


@public
def matrix_diag(diagonal: TensorLike, name: str | None = None) -> Tensor:
    """A batch of square matrices ``[..., k, k]`` with ``diagonal`` (``[..., k]``) on their
    diagonals, zeros elsewhere."""
    return _MATRIX_DIAG(diagonal, name=name)  # type: ignore[no-any-return]


@public
def matrix_diag_part(input: TensorLike, name: str | None = None) -> Tensor:
    """The diagonals ``[..., min(m, n)]`` of a batch of matrices ``[..., m, n]``."""
    return _MATRIX_DIAG_PART(input, name=name)  # type: ignore[no-any-return]


@public
def matrix_set_diag(
    input: TensorLike,
    diagonal: TensorLike,
    name: str | None = None,
) -> Tensor:
    """A copy of the matrices ``input`` (``[..., m, n]``) with their diagonals replaced by
    ``diagonal`` (``[..., min(m, n)]``)."""
    return _MATRIX_SET_DIAG(input, diagonal, name=name)  # type: ignore[no-any-return]


@public
def eye(
    num_rows: Any,
    num_columns: Any = None,
    batch_shape: Any = None,
    dtype: Any = float32,
    name: str | None = None,
) -> Tensor:
    """Identity matrices: ``[*batch_shape, num_rows, num_columns]`` with ones on the diagonal.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.eye(2, 3, dtype=ow.int32)))
    [[1 0 0]
     [0 1 0]]
    """
    is_square = num_columns is None
    batch = [] if batch_shape is None else batch_shape
    cols = num_rows if num_columns is None else num_columns
    dynamic = isinstance(num_rows, Tensor) or isinstance(cols, Tensor)
    if not dynamic:
        num_rows = _checks.check_int(num_rows, "num_rows", op="eye", minimum=0)
        cols = _checks.check_int(cols, "num_columns", op="eye", minimum=0)
        is_square = num_rows == cols
        k: Any = min(num_rows, cols)
    else:
        from .math_ops import minimum

        k = minimum(num_rows, cols)
    if isinstance(batch, Tensor):
        diag_shape: Any = concat([batch, stack([k])], 0)
        full: Any = concat([batch, stack([num_rows, cols])], 0)
    else:
        if not _contains_tensor_(batch):
            batch = _checks.check_dims(batch, "batch_shape", op="eye", allow_unknown=False)
        diag_shape = [*batch, k]
        full = [*batch, num_rows, cols]
    ones_ = ones(diag_shape, dtype=dtype)
    if is_square:
        return matrix_diag(ones_, name=name)
    return matrix_set_diag(zeros(full, dtype=dtype), ones_, name=name)


# -- identity_n -----------------------------------------------------------------------------------

_IDENTITY_N = OpDef(
    "IdentityN",
    inputs=["input: list"],
    outputs=["output: list"],
    attrs={"T": Attr("list(type)")},
    shape=lambda ctx: list(ctx.shapes),
    grad=lambda op_, *grads: list(grads),
)


@public
def identity_n(input: Any, name: str | None = None) -> list[Tensor]:
    """The tensors of the list ``input`` passed on unchanged, as one node (with one gradient
    each).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     a, b = ow.identity_n([ow.constant(1), ow.constant(2.0)])
    ...     b.dtype
    opweave.float32
    """
    tensors = [convert_to_tensor(v) for v in input]
    dts = [v.dtype if isinstance(v, Tensor) else as_dtype(np.asarray(v).dtype) for v in tensors]
    return _IDENTITY_N(input=tensors, T=dts, name=name)  # type: ignore[no-any-return]


# -- static values through the family's ops (TensorFlow's constant_value and
#    constant_value_as_shape) ---------------------------------------------------------------------

_SMALL = 4096  # constant folding of values this small only: shape arithmetic, not data


@constant_rule("Pack")
def _pack_value(t: Tensor) -> np.ndarray[Any, Any] | None:
    found = [constant_value(v) for v in t.op.inputs]
    values = [v for v in found if v is not None]
    if len(values) < len(found) or sum(int(v.size) for v in values) > _SMALL:
        return None
    return np.stack(values, axis=t.op.attrs["axis"]).astype(t.dtype.as_numpy_dtype)


@constant_rule("ConcatV2")
def _concat_value(t: Tensor) -> np.ndarray[Any, Any] | None:
    found = [constant_value(v) for v in t.op.inputs]
    values = [v for v in found if v is not None]
    if len(values) < len(found) or sum(int(v.size) for v in values) > _SMALL:
        return None
    *parts, axis = values
    return np.concatenate(parts, axis=int(axis)).astype(t.dtype.as_numpy_dtype)


@constant_rule("Cast")
def _cast_value(t: Tensor) -> np.ndarray[Any, Any] | None:
    v = constant_value(t.op.inputs[0])
    if v is None or v.size > _SMALL or t.dtype.name == "string" or v.dtype.kind in "SUO":
        return None
    return v.astype(t.dtype.as_numpy_dtype)


@constant_rule("Fill")
def _fill_value(t: Tensor) -> np.ndarray[Any, Any] | None:
    dims, value = (constant_value(v) for v in t.op.inputs)
    if dims is None or value is None or math.prod(int(d) for d in dims.reshape(-1)) > _SMALL:
        return None
    return np.full([int(d) for d in dims.reshape(-1)], value, dtype=value.dtype)


@constant_rule("ExpandDims")
def _expand_dims_value(t: Tensor) -> np.ndarray[Any, Any] | None:
    v = constant_value(t.op.inputs[0])
    if v is None or v.size > _SMALL or t._shape is None:
        return None
    return v.reshape(tuple(d or 0 for d in t._shape))


def _slice_of_value(t: Tensor, value: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | None:
    """A StridedSlice of a known small value, computed with NumPy from TensorFlow's dense spec."""
    from ._slicing import SliceError, dense_slice

    _, b, e, st = t.op.inputs
    bv, ev, sv = constant_value(b), constant_value(e), constant_value(st)
    if bv is None or ev is None or sv is None or value.size > _SMALL:
        return None
    try:
        spec = dense_slice(
            value.shape,
            [int(v) for v in bv.reshape(-1)],
            [int(v) for v in ev.reshape(-1)],
            [int(v) for v in sv.reshape(-1)],
            **{m: t.op.attrs[m] for m in _MASKS},
        )
    except SliceError:
        return None
    index = tuple(
        builtins_slice(b_, b_ + n * s_ if b_ + n * s_ >= 0 else None, s_)  # type: ignore[operator]
        for b_, n, s_ in zip(spec.begin, spec.sizes, spec.strides, strict=True)
    )
    return np.asarray(value[index]).reshape(tuple(d or 0 for d in spec.final_shape))


@constant_rule("StridedSlice")
def _strided_slice_value(t: Tensor) -> np.ndarray[Any, Any] | None:
    x = t.op.inputs[0]
    v = constant_value(x)
    if v is None and x.op.type == "Shape":
        # A slice of the shape of a tensor whose shape is partly known: known when the
        # dimensions it takes are.
        dims = constant_value_as_shape(x)
        if dims is None:
            return None
        picked = _slice_of_value(t, np.arange(len(dims)))
        if picked is None or any(dims[int(i)] is None for i in picked.reshape(-1)):
            return None
        out: np.ndarray[Any, Any] = np.array(
            [dims[int(i)] for i in picked.reshape(-1)], dtype=t.dtype.as_numpy_dtype
        )
        result: np.ndarray[Any, Any] = out.reshape(picked.shape)
        return result
    return None if v is None else _slice_of_value(t, v)


@shape_rule("Pack")
def _pack_as_shape(t: Tensor) -> Shape:
    if t.op.attrs["axis"] != 0 or any(v._shape not in ((), None) for v in t.op.inputs):
        return None
    dims: list[int | None] = []
    for v in t.op.inputs:
        c = constant_value(v)
        dims.append(None if c is None or int(c) == -1 else int(c))
    return tuple(dims)


@shape_rule("ConcatV2")
def _concat_as_shape(t: Tensor) -> Shape:
    dims: list[int | None] = []
    for v in t.op.inputs[:-1]:
        part = constant_value_as_shape(v)
        if part is None:
            return None
        dims.extend(part)
    return tuple(dims)


@shape_rule("Cast")
def _cast_as_shape(t: Tensor) -> Shape:
    src = t.op.inputs[0]
    if src.dtype in INDEX and t.dtype in INDEX:
        return constant_value_as_shape(src)
    return None


@shape_rule("StridedSlice")
def _strided_slice_as_shape(t: Tensor) -> Shape:
    x = t.op.inputs[0]
    if x.op.type != "Shape" or t.op.attrs["shrink_axis_mask"] or t.op.attrs["new_axis_mask"]:
        return None
    dims = constant_value_as_shape(x)
    if dims is None:
        return None
    picked = _slice_of_value(t, np.arange(len(dims)))
    if picked is None or picked.ndim != 1:
        return None
    return tuple(dims[int(i)] for i in picked)


register_auto_pack(_auto_pack_value)
register_operator("__getitem__", _slice_helper)
