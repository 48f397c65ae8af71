"""Graph ops: constructors that check shapes and dtypes statically and add a node.

Shape or dtype mistakes are caught when the op is built, with errors that name the op and both
shapes, e.g. ``ValueError: Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul')
with input shapes: [2,3], [4,5].``

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     a = ow.placeholder(ow.float32, shape=(None, 3))
...     b = ow.constant([[1.0], [2.0], [3.0]])
...     y = ow.reduce_sum(ow.relu(a @ b), axis=0)
>>> y.shape
(1,)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from .dtypes import DType, as_dtype, bool_, float32, float64, implicit_array, int32, int64
from .framework import Operation, Shape, Tensor, format_shape, get_default_graph

__all__ = [
    "add",
    "add_n",
    "cast",
    "constant",
    "convert_to_tensor",
    "div",
    "exp",
    "group",
    "identity",
    "matmul",
    "maximum",
    "mul",
    "neg",
    "no_op",
    "placeholder",
    "py_function",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "relu",
    "reshape",
    "sigmoid",
    "sub",
    "tanh",
    "transpose",
    "truediv",
]

TensorLike = Tensor | float | int | bool | Sequence[Any] | np.ndarray
ShapeLike = Sequence[int | None] | None


def _shape_of(shape: ShapeLike) -> Shape:
    if shape is None:
        return None
    dims: list[int | None] = []
    for d in shape:
        if d is not None and (not isinstance(d, (int, np.integer)) or d < 0):
            raise ValueError(f"invalid dimension {d!r} in shape {tuple(shape)!r}")
        dims.append(None if d is None else int(d))
    return tuple(dims)


def _input_shapes(op_type: str, name: str, *shapes: Shape) -> str:
    return f"for '{name}' (op: '{op_type}') with input shapes: " + ", ".join(
        format_shape(s) for s in shapes
    )


def _inferred_dtype(value: Any) -> DType:
    """TensorFlow's dtype for a constant given without ``dtype``.

    NumPy arrays and scalars keep theirs; Python floats become float32, Python ints int32, or
    int64 when some value does not fit in int32; bools stay bool.
    """
    arr = np.asarray(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return as_dtype(arr.dtype)
    if arr.dtype.kind == "f":
        return float32
    if arr.dtype.kind in "iu":
        info = np.iinfo(np.int32)
        fits = arr.size == 0 or (info.min <= arr.min() and arr.max() <= info.max)
        return int32 if fits else int64
    return as_dtype(arr.dtype)


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _conversion_error(value: Any, dtype: DType) -> TypeError:
    """TensorFlow's "Expected int32, but got 2.5 of type 'float'.", naming the first element of a
    Python sequence that does not convert."""
    culprit = value
    if isinstance(value, (list, tuple)):
        for element in np.asarray(value, dtype=object).flat:
            try:
                implicit_array(element, dtype)
            except (TypeError, ValueError, OverflowError):
                culprit = element
                break
    return TypeError(
        f"Expected {dtype.name}, but got {_short_repr(culprit)} of type '{type(culprit).__name__}'."
    )


def constant(value: Any, dtype: Any = None, shape: ShapeLike = None, name: str = "Const") -> Tensor:
    """A tensor holding ``value`` (copied into the graph).

    Parameters
    ----------
    value : array_like
        The value. Without ``dtype``, NumPy arrays and scalars keep their dtype, Python floats
        become float32, Python ints int32 (int64 when a value does not fit in int32), as in
        TensorFlow.
    dtype : DType, optional
        The element type. ``value`` must convert to it without losing anything: ints become
        floats, but a float never becomes an int (not even ``2.0``, as in TensorFlow) and an
        int that does not fit is an error instead of wrapping around.
    shape : sequence of int, optional
        Reshape (or broadcast a scalar) to this shape.
    name : str

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
    dt = _inferred_dtype(value) if dtype is None else as_dtype(dtype)
    try:
        arr = implicit_array(value, dt)
    except (TypeError, ValueError, OverflowError):
        raise _conversion_error(value, dt) from None
    if shape is not None:
        target = tuple(int(d) for d in shape)  # type: ignore[arg-type]
        arr = np.broadcast_to(arr, target).copy() if arr.size == 1 else arr.reshape(target)
    arr = np.array(arr, order="C", copy=True)  # ascontiguousarray would make 0-d arrays 1-d
    g = get_default_graph()
    op = g._create_op("Const", [], {"value": arr}, [(dt, tuple(arr.shape))], name)
    return op.outputs[0]


def convert_to_tensor(value: TensorLike, dtype: DType | None = None, name: str = "Const") -> Tensor:
    """``value`` itself when it is a Tensor (dtype checked), else a constant of ``dtype``.

    Like :func:`constant`, a value that does not convert to ``dtype`` without loss is a
    TypeError (``Expected int32, but got 2.5 of type 'float'.``), never truncated.
    """
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not dtype:
            raise TypeError(
                f"Tensor {value.name!r} has dtype {value.dtype.name}, expected {dtype.name}"
            )
        return value
    return constant(value, dtype=dtype, name=name)


def _like(value: TensorLike, dtype: DType) -> Tensor:
    """``value`` as a tensor, of ``dtype`` when it converts implicitly (``2`` beside a float
    tensor is ``2.0``), else of its own dtype (``2.5`` beside an int tensor stays float32, so the
    op's dtype check rejects it), as TensorFlow's dtype hint for operands does."""
    if isinstance(value, Tensor):
        return value
    try:
        implicit_array(value, dtype)
    except (TypeError, ValueError, OverflowError):
        return constant(value)
    return constant(value, dtype=dtype)


def _operands(x: TensorLike, y: TensorLike) -> tuple[Tensor, Tensor]:
    """Both operands of a binary op as tensors; a Tensor's dtype is the hint for the other."""
    if isinstance(y, Tensor) and not isinstance(x, Tensor):
        return _like(x, y.dtype), y
    a = convert_to_tensor(x)
    return a, _like(y, a.dtype)


def placeholder(dtype: Any, shape: ShapeLike = None, name: str = "Placeholder") -> Tensor:
    """A tensor whose value must be fed in ``Session.run(feed_dict=...)``.

    Parameters
    ----------
    dtype : DType
    shape : sequence of (int or None), optional
        ``None`` dims accept any size; ``shape=None`` accepts any rank.
    name : str

    Examples
    --------
    >>> import opweave as ow
    >>> ow.placeholder(ow.float32, shape=(None, 3)).shape
    (None, 3)
    """
    dt = as_dtype(dtype)
    s = _shape_of(shape)
    g = get_default_graph()
    attrs: dict[str, Any] = {"dtype": dt, "shape_str": format_shape(s)}
    return g._create_op("Placeholder", [], attrs, [(dt, s)], name).outputs[0]


def identity(x: TensorLike, name: str = "Identity") -> Tensor:
    """The same value as ``x`` (a cheap node; useful as a fetch or feed point)."""
    t = convert_to_tensor(x)
    return (
        get_default_graph()._create_op("Identity", [t], {}, [(t.dtype, t.shape)], name).outputs[0]
    )


def no_op(name: str = "NoOp") -> Operation:
    """An op that does nothing; with control inputs it joins them."""
    return get_default_graph()._create_op("NoOp", [], {}, [], name)


def group(*inputs: Operation | Tensor, name: str = "group_deps") -> Operation:
    """An op that finishes after all ``inputs`` (run it as a target).

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     g = ow.group(ow.constant(1.0), ow.constant(2.0))
    >>> len(g.control_inputs)
    2
    """
    deps = [i.op if isinstance(i, Tensor) else i for i in inputs]
    return get_default_graph()._create_op("NoOp", [], {}, [], name, control_inputs=deps)


# -- element-wise -----------------------------------------------------------------------------


def _broadcast(
    a: Shape, b: Shape, op_type: str, name: str, inputs: tuple[Shape, Shape] | None = None
) -> Shape:
    """The broadcast of shapes ``a`` and ``b``; the error names ``inputs`` (default: ``a, b``),
    so matmul can report its full input shapes rather than their batch dims."""
    if a is None or b is None:
        return None
    out: list[int | None] = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        elif da is None or db is None:
            out.append(da if db is None else db)
        elif da == db:
            out.append(da)
        else:
            raise ValueError(
                f"Dimensions must be equal, but are {da} and {db} "
                + _input_shapes(op_type, name, *(inputs or (a, b)))
                + "."
            )
    return tuple(reversed(out))


def _binary(
    op_type: str, x: TensorLike, y: TensorLike, name: str | None, unique_name: str | None = None
) -> Tensor:
    name = name or op_type.lower()
    a, b = _operands(x, y)
    g = get_default_graph()
    full = unique_name if unique_name is not None else g.unique_name(name)
    if a.dtype is not b.dtype:
        raise TypeError(
            f"Input 'y' of '{op_type}' Op '{full}' has type {b.dtype.name} that does not match "
            f"type {a.dtype.name} of argument 'x'."
        )
    if a.dtype is bool_:
        raise TypeError(f"'{op_type}' Op '{full}' does not support dtype bool")
    shape = _broadcast(a.shape, b.shape, op_type, full)
    return g._create_op(op_type, [a, b], {}, [(a.dtype, shape)], name, unique_name=full).outputs[0]


def add(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x + y`` with NumPy broadcasting (same dtype required, as in TensorFlow).

    A Python or NumPy operand takes the tensor operand's dtype when it converts without loss
    (``float_tensor + 2`` adds ``2.0``); otherwise it keeps its own and the op is a TypeError,
    never a truncation. The same holds for every binary op and :func:`matmul`.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.constant([1]) + 2.5
    Traceback (most recent call last):
    ...
    TypeError: Input 'y' of 'Add' Op 'add' has type float32 that does not match type int32 of ...
    """
    return _binary("Add", x, y, name)


def sub(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x - y`` with broadcasting."""
    return _binary("Sub", x, y, name)


def mul(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x * y`` with broadcasting."""
    return _binary("Mul", x, y, name)


def div(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """TensorFlow 1's ``tf.div``: ``x / y`` with broadcasting, flooring for integers.

    Integer division floors (``div([-7, 7], 2)`` is ``[-4, 3]``) and integer division by zero
    fails with ``InvalidArgumentError``; floats divide exactly. The ``/`` operator on tensors is
    :func:`truediv` instead, as in TensorFlow 1 under Python 3.
    """
    return _binary("Div", x, y, name)


def truediv(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """``x / y`` as Python 3 divides: TensorFlow 1's ``tf.truediv``, what ``/`` on tensors does.

    int32 and int64 operands are cast to float64 first (exact for integers up to 2**53), so the
    result is float64 and never floored; float operands divide as :func:`div`. Both operands
    must have the same dtype (a Python number takes the tensor's when it converts without loss).

    Raises
    ------
    TypeError
        For operands of different dtypes ("`x` and `y` must have the same dtype, got
        opweave.int32 != opweave.float32.", TensorFlow's text) or bool operands.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     q = ow.constant([-7, 7]) / 2
    ...     with ow.Session() as sess:
    ...         print(q.dtype, sess.run(q))
    opweave.float64 [-3.5  3.5]
    """
    name = name or "truediv"
    a, b = _operands(x, y)
    if a.dtype is not b.dtype:
        raise TypeError(f"`x` and `y` must have the same dtype, got {a.dtype!r} != {b.dtype!r}.")
    if a.dtype is bool_:
        raise TypeError(
            "Invalid dtype opweave.bool in truediv. Expected one of opweave.int32, "
            "opweave.int64, opweave.float32, opweave.float64."
        )
    if a.dtype.is_floating:
        return _binary("Div", a, b, name)
    # As TensorFlow: the casts live in a name scope and the division is named after it.
    with get_default_graph().name_scope(name) as scope:
        a, b = cast(a, float64), cast(b, float64)
    return _binary("Div", a, b, name, unique_name=scope[:-1])


def maximum(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """Element-wise maximum with broadcasting."""
    return _binary("Maximum", x, y, name)


def _unary(op_type: str, x: TensorLike, name: str | None, floating: bool) -> Tensor:
    t = convert_to_tensor(x)
    name = name or op_type
    g = get_default_graph()
    full = g.unique_name(name)
    if floating and not t.dtype.is_floating:
        raise TypeError(
            f"'{op_type}' Op '{full}' needs a float32 or float64 input, got {t.dtype.name}"
        )
    if t.dtype is bool_:
        raise TypeError(f"'{op_type}' Op '{full}' does not support dtype bool")
    return g._create_op(op_type, [t], {}, [(t.dtype, t.shape)], name, unique_name=full).outputs[0]


def neg(x: TensorLike, name: str | None = None) -> Tensor:
    """``-x``."""
    return _unary("Neg", x, name, floating=False)


def relu(x: TensorLike, name: str | None = None) -> Tensor:
    """``max(x, 0)``."""
    return _unary("Relu", x, name, floating=False)


def exp(x: TensorLike, name: str | None = None) -> Tensor:
    """``e ** x`` (floating dtypes)."""
    return _unary("Exp", x, name, floating=True)


def tanh(x: TensorLike, name: str | None = None) -> Tensor:
    """Hyperbolic tangent (floating dtypes)."""
    return _unary("Tanh", x, name, floating=True)


def sigmoid(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / (1 + e ** -x)`` (floating dtypes)."""
    return _unary("Sigmoid", x, name, floating=True)


# -- matmul, reductions, shape ops -------------------------------------------------------------


def matmul(
    a: TensorLike,
    b: TensorLike,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str | None = None,
) -> Tensor:
    """Matrix product of the two innermost dims (leading dims broadcast), optionally transposed.

    Raises
    ------
    ValueError
        When the inner dimensions differ or the batch dimensions do not broadcast, naming the
        op and both full input shapes (``... with input shapes: [5,2,3], [4,3,6].``).
    TypeError
        For non-floating or mismatched dtypes.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     y = ow.matmul(ow.constant(np.ones((2, 3))), ow.constant(np.ones((4, 3))),
    ...                   transpose_b=True)
    >>> y.shape
    (2, 4)
    """
    name = name or "MatMul"
    ta, tb = _operands(a, b)
    g = get_default_graph()
    full = g.unique_name(name)
    if ta.dtype is not tb.dtype:
        raise TypeError(
            f"Input 'b' of 'MatMul' Op '{full}' has type {tb.dtype.name} that does not match "
            f"type {ta.dtype.name} of argument 'a'."
        )
    if not ta.dtype.is_floating:
        raise TypeError(
            f"'MatMul' Op '{full}' needs float32 or float64 inputs, got {ta.dtype.name}"
        )
    sa, sb = ta.shape, tb.shape
    shape: Shape = None
    if sa is not None and sb is not None:
        if len(sa) < 2 or len(sb) < 2:
            raise ValueError(
                "Shape must be rank >= 2 " + _input_shapes("MatMul", full, sa, sb) + "."
            )
        m, ka = (sa[-1], sa[-2]) if transpose_a else (sa[-2], sa[-1])
        kb, n = (sb[-1], sb[-2]) if transpose_b else (sb[-2], sb[-1])
        if ka is not None and kb is not None and ka != kb:
            raise ValueError(
                f"Dimensions must be equal, but are {ka} and {kb} "
                + _input_shapes("MatMul", full, sa, sb)
                + "."
            )
        batch = _broadcast(sa[:-2], sb[:-2], "MatMul", full, inputs=(sa, sb))
        assert batch is not None
        shape = (*batch, m, n)
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
    return g._create_op(
        "MatMul", [ta, tb], attrs, [(ta.dtype, shape)], name, unique_name=full
    ).outputs[0]


def _reduce(
    op_type: str,
    x: TensorLike,
    axis: int | Sequence[int] | None,
    keepdims: bool,
    name: str | None,
) -> Tensor:
    t = convert_to_tensor(x)
    name = name or op_type
    g = get_default_graph()
    full = g.unique_name(name)
    if op_type in ("Sum", "Mean") and t.dtype is bool_:
        raise TypeError(f"'{op_type}' Op '{full}' does not support dtype bool")
    axes: list[int] | None = None
    if axis is not None:
        axes = [int(axis)] if isinstance(axis, (int, np.integer)) else [int(a) for a in axis]
    shape: Shape = None
    if t.shape is not None:
        rank = len(t.shape)
        if axes is None:
            norm = list(range(rank))
        else:
            norm = []
            for a in axes:
                if not -rank <= a < rank:
                    raise ValueError(
                        f"Invalid reduction dimension {a} for input with {rank} dimensions "
                        + _input_shapes(op_type, full, t.shape)
                        + "."
                    )
                norm.append(a % rank)
        dims = [(1 if keepdims else -1) if i in norm else d for i, d in enumerate(t.shape)]
        shape = tuple(d for d in dims if d != -1)
    attrs: dict[str, Any] = {"keepdims": bool(keepdims), "all_axes": axes is None}
    attrs["axes"] = axes if axes is not None else []
    return g._create_op(op_type, [t], attrs, [(t.dtype, shape)], name, unique_name=full).outputs[0]


def reduce_sum(
    x: TensorLike,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    name: str | None = None,
) -> Tensor:
    """Sum over ``axis`` (all axes when None); the result is the same for any thread count."""
    return _reduce("Sum", x, axis, keepdims, name)


def reduce_mean(
    x: TensorLike,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    name: str | None = None,
) -> Tensor:
    """Mean over ``axis`` (integer means truncate toward zero, as in TensorFlow)."""
    return _reduce("Mean", x, axis, keepdims, name)


def reduce_max(
    x: TensorLike,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    name: str | None = None,
) -> Tensor:
    """Maximum over ``axis``."""
    return _reduce("Max", x, axis, keepdims, name)


def reduce_min(
    x: TensorLike,
    axis: int | Sequence[int] | None = None,
    keepdims: bool = False,
    name: str | None = None,
) -> Tensor:
    """Minimum over ``axis``."""
    return _reduce("Min", x, axis, keepdims, name)


def add_n(inputs: Sequence[TensorLike], name: str | None = None) -> Tensor:
    """Sum of same-shape, same-dtype tensors.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.add_n([ow.constant([1.0]), ow.constant([2.0])]).shape
    (1,)
    """
    name = name or "AddN"
    if not inputs:
        raise ValueError("add_n needs at least one input")
    ts = [convert_to_tensor(i) for i in inputs]
    g = get_default_graph()
    full = g.unique_name(name)
    shape = ts[0].shape
    for t in ts[1:]:
        if t.dtype is not ts[0].dtype:
            raise TypeError(
                f"'AddN' Op '{full}': inputs have types {ts[0].dtype.name} and {t.dtype.name}"
            )
        if shape is not None and t.shape is not None:
            if len(shape) != len(t.shape) or any(
                a is not None and b is not None and a != b
                for a, b in zip(shape, t.shape, strict=False)
            ):
                raise ValueError(
                    "Shapes must be equal " + _input_shapes("AddN", full, shape, t.shape) + "."
                )
            shape = tuple(a if a is not None else b for a, b in zip(shape, t.shape, strict=True))
        elif shape is None:
            shape = t.shape
    return g._create_op("AddN", ts, {}, [(ts[0].dtype, shape)], name, unique_name=full).outputs[0]


def reshape(x: TensorLike, shape: Sequence[int], name: str | None = None) -> Tensor:
    """Same elements, new shape (one dim may be -1: inferred)."""
    t = convert_to_tensor(x)
    name = name or "Reshape"
    g = get_default_graph()
    full = g.unique_name(name)
    target = [int(d) for d in shape]
    if sum(1 for d in target if d == -1) > 1 or any(d < -1 for d in target):
        raise ValueError(f"'Reshape' Op '{full}': invalid target shape {target}")
    out: list[int | None] = [d if d != -1 else None for d in target]
    if t.shape is not None and all(d is not None for d in t.shape):
        n = int(np.prod([d for d in t.shape if d is not None], dtype=np.int64))
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        if -1 in target and known and n % known == 0:
            out[target.index(-1)] = n // known
        elif (-1 in target and (known == 0 or n % known)) or (-1 not in target and known != n):
            raise ValueError(
                f"Cannot reshape a tensor with {n} elements to shape {target} "
                + _input_shapes("Reshape", full, t.shape)
                + "."
            )
    return g._create_op(
        "Reshape", [t], {"shape": target}, [(t.dtype, tuple(out))], name, unique_name=full
    ).outputs[0]


def transpose(x: TensorLike, perm: Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """Permute dimensions (``perm=None`` reverses them)."""
    t = convert_to_tensor(x)
    name = name or "transpose"
    g = get_default_graph()
    full = g.unique_name(name)
    shape: Shape = None
    p = [int(i) for i in perm] if perm is not None else None
    if t.shape is not None:
        rank = len(t.shape)
        if p is None:
            p = list(reversed(range(rank)))
        if sorted(p) != list(range(rank)):
            raise ValueError(
                f"perm {p} is not a permutation of {rank} dimensions "
                + _input_shapes("Transpose", full, t.shape)
                + "."
            )
        shape = tuple(t.shape[i] for i in p)
    attrs = {"perm": p if p is not None else []}
    return g._create_op(
        "Transpose", [t], attrs, [(t.dtype, shape)], name, unique_name=full
    ).outputs[0]


def cast(x: TensorLike, dtype: Any, name: str | None = None) -> Tensor:
    """``x`` converted to ``dtype`` (NumPy ``astype`` semantics)."""
    t = convert_to_tensor(x)
    dt = as_dtype(dtype)
    return (
        get_default_graph()
        ._create_op("Cast", [t], {"DstT": dt}, [(dt, t.shape)], name or "Cast")
        .outputs[0]
    )


# -- py_function --------------------------------------------------------------------------------


@overload
def py_function(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: DType | str | type,
    name: str | None = None,
) -> Tensor: ...


@overload
def py_function(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: list[Any] | tuple[Any, ...],
    name: str | None = None,
) -> list[Tensor]: ...


def py_function(
    func: Callable[..., Any],
    inp: Sequence[TensorLike],
    Tout: Any | Sequence[Any],
    name: str | None = None,
) -> Tensor | list[Tensor]:
    """An op that calls a Python function on NumPy arrays.

    The function receives read-only NumPy arrays (one per input) and returns one value per entry
    of ``Tout`` (a single value when ``Tout`` is a single dtype). It runs on an inter-op thread
    and holds the GIL only while it runs. An exception it raises reaches the ``Session.run``
    caller with its original type and traceback.

    Parameters
    ----------
    func : callable
    inp : sequence of Tensor or array_like
    Tout : DType or sequence of DType
    name : str, optional

    Returns
    -------
    Tensor or list of Tensor
        One tensor when ``Tout`` is a single dtype, else a list (shapes unknown).

    Notes
    -----
    The function may call ``Session.run`` (of any session) itself: that nested run executes in
    the py_function's own thread, so it never waits for the inter-op pool and cannot deadlock,
    whatever the pool size. A nested run started from a *helper thread* that the function starts
    and then waits for (``Thread.join``, ``Future.result``) is an ordinary run: its ops queue on
    the inter-op pool, and when every worker of that pool is busy -- always with
    ``inter_op_parallelism_threads=1``, since one worker is blocked in this very function -- it
    hangs, as in TensorFlow. Deadlines do not help: ``timeout_in_ms`` and
    ``operation_timeout_in_ms`` cancel the ops not yet started, but a run returns only after its
    running kernels have returned and its queued ops have left the queue, and nothing interrupts
    a blocked kernel. From a helper thread, run the nested call in that thread with
    ``options=RunOptions(inter_op_thread_pool=-1)``, or use a session whose pool has more threads
    than there can be blocked py_functions.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     y = ow.py_function(lambda v: v * 2, [ow.constant([1.0])], ow.float32)
    ...     with ow.Session() as sess:
    ...         print(sess.run(y))
    [2.]
    """
    single = not isinstance(Tout, (list, tuple))
    touts = [as_dtype(Tout)] if single else [as_dtype(d) for d in Tout]
    inputs = [convert_to_tensor(i) for i in inp]

    def call(*arrays: np.ndarray) -> list[np.ndarray]:
        result = func(*arrays)
        values = [result] if single else ([] if result is None else list(result))
        if len(values) != len(touts):
            raise ValueError(
                f"py_function {getattr(func, '__name__', func)!r} returned {len(values)} values; "
                f"Tout has {len(touts)}"
            )
        arrays_out = []
        for i, (v, d) in enumerate(zip(values, touts, strict=True)):
            try:
                arrays_out.append(implicit_array(v, d))
            except (TypeError, ValueError, OverflowError) as e:
                raise TypeError(
                    f"py_function {getattr(func, '__name__', func)!r} returned a value for "
                    f"output {i} that is not {d.name}: {e}"
                ) from None
        return arrays_out

    op = get_default_graph()._create_op(
        "PyFunc",
        inputs,
        {"func": call, "Tout": touts},
        [(d, None) for d in touts],
        name or "EagerPyFunc",
    )
    return op.outputs[0] if single else list(op.outputs)
