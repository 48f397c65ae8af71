"""Element-wise unary math: abs, sign, square, sqrt, rsqrt, log, log1p, expm1, floor, ceil, round,
reciprocal, sin, cos, tan, the float predicates (is_nan, is_inf, is_finite) and logical_not.

Each is one op with TensorFlow's name, dtypes and gradient. Float math is computed by vectorised
polynomial kernels (float16 in float32); the result of every element is the same whatever the
thread count. Integer ``abs`` and ``square`` wrap like TensorFlow's (``abs`` of -128 as int8 is
-128).

>>> import numpy as np
>>> import opweave as ow
>>> ow.kernels.sqrt(np.array([4.0, 9.0]))
array([2., 3.])
"""

from __future__ import annotations

from typing import Any

from ..dtypes import FLOATS, INTEGERS, DType, int8, int16, int32, int64
from ..framework import Operation, Tensor, register_operator
from ._op_def import convert_to_tensor, memoizable, op
from .math_ops import (
    TensorLike,
    multiply,
    negative,
    per_output_element,
    realdiv,
)

__all__: list[str] = [
    "abs",
    "ceil",
    "cos",
    "expm1",
    "floor",
    "inv",
    "is_finite",
    "is_inf",
    "is_nan",
    "log",
    "log1p",
    "logical_not",
    "reciprocal",
    "round",
    "rsqrt",
    "sign",
    "sin",
    "sqrt",
    "square",
    "tan",
]

SIGNED = FLOATS | frozenset({int8, int16, int32, int64})  # TensorFlow's Abs / Sign / Round types


def _unary(types: frozenset[DType], grad: Any = None, flops: int = 1, **kwargs: Any) -> Any:
    """The definition of an element-wise op ``y = f(x)`` of one dtype."""
    if grad is None and not kwargs.get("not_differentiable"):
        kwargs["grad"] = lambda op_, g: [None]  # TensorFlow's gradient: None (piecewise constant)
    elif grad is not None:
        kwargs["grad"] = grad
    return {
        "inputs": ["x: T"],
        "outputs": ["y: T"],
        "types": {"T": types},
        "flops": lambda i, o, a: per_output_element(i, o, a, flops),
        **kwargs,
    }


def _predicate() -> Any:
    """The definition of a float predicate ``y = p(x)`` (a bool tensor), not differentiable."""
    return {
        "inputs": ["x: T"],
        "outputs": ["y: bool"],
        "types": {"T": FLOATS},
        "flops": lambda i, o, a: per_output_element(i, o, a, 1),
        "not_differentiable": True,
    }


# -- gradients (TensorFlow's formulas) -----------------------------------------------------------


def _abs_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, sign(op_.inputs[0]))]


def _sign_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .array_ops import zeros_like_op

    return [zeros_like_op(op_.inputs[0])]


def _square_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, multiply(op_.inputs[0], 2))]


def _sqrt_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [realdiv(multiply(grad, 0.5), op_.outputs[0])]  # TensorFlow's SqrtGrad: dy / 2y


def _rsqrt_grad(op_: Operation, grad: Tensor) -> list[Any]:
    y = op_.outputs[0]  # RsqrtGrad: -dy y^3 / 2
    return [multiply(multiply(multiply(grad, y), multiply(y, y)), -0.5)]


def _reciprocal_grad(op_: Operation, grad: Tensor) -> list[Any]:
    y = op_.outputs[0]  # ReciprocalGrad: -dy y^2
    return [multiply(negative(multiply(y, y)), grad)]


def _log_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, reciprocal(op_.inputs[0]))]


def _log1p_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .math_ops import add

    return [multiply(grad, reciprocal(add(1, op_.inputs[0])))]


def _expm1_grad(op_: Operation, grad: Tensor) -> list[Any]:
    from .math_ops import exp

    return [multiply(grad, exp(op_.inputs[0]))]


def _sin_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [multiply(grad, cos(op_.inputs[0]))]


def _cos_grad(op_: Operation, grad: Tensor) -> list[Any]:
    return [multiply(negative(grad), sin(op_.inputs[0]))]


def _tan_grad(op_: Operation, grad: Tensor) -> list[Any]:
    secx = reciprocal(cos(op_.inputs[0]))  # TensorFlow's _TanGrad: grad * sec(x)^2
    return [multiply(square(secx), grad)]


# -- the ops -------------------------------------------------------------------------------------


@op("Abs", **_unary(SIGNED, _abs_grad))
def abs(x: TensorLike, name: str | None = None) -> Tensor:
    """``|x|`` element-wise (integers wrap: ``abs`` of the lowest value is itself).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.abs(np.array([-1.5, 2.0]))
    array([1.5, 2. ])
    """


@op("Sign", **_unary(SIGNED, _sign_grad))
def sign(x: TensorLike, name: str | None = None) -> Tensor:
    """-1, 0 or 1 by the sign of ``x``; ``sign(nan)`` is NaN and ``sign(-0.0)`` is 0.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.sign(np.array([-3, 0, 5]))
    array([-1,  0,  1])
    """


@op("Square", **_unary(FLOATS | INTEGERS, _square_grad))
def square(x: TensorLike, name: str | None = None) -> Tensor:
    """``x * x`` element-wise (integers wrap).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.square(np.array([3, -4]))
    array([ 9, 16])
    """


@op("Sqrt", **_unary(FLOATS, _sqrt_grad, flops=4))
def sqrt(x: TensorLike, name: str | None = None) -> Tensor:
    """Square root (floating dtypes); NaN for negative ``x``, ``sqrt(-0.0)`` is -0.0.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.sqrt(np.array([4.0, 0.25]))
    array([2. , 0.5])
    """


@op("Rsqrt", **_unary(FLOATS, _rsqrt_grad, flops=5))
def rsqrt(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / sqrt(x)`` (floating dtypes).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.rsqrt(np.array([4.0, 0.25]))
    array([0.5, 2. ])
    """


@op("Log", **_unary(FLOATS, _log_grad, flops=20))
def log(x: TensorLike, name: str | None = None) -> Tensor:
    """Natural logarithm (floating dtypes): ``log(0)`` is -inf, ``log(x < 0)`` NaN.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.log(np.array([1.0, np.e]))
    array([0., 1.])
    """


@op("Log1p", **_unary(FLOATS, _log1p_grad, flops=20))
def log1p(x: TensorLike, name: str | None = None) -> Tensor:
    """``log(1 + x)``, accurate for small ``x`` (floating dtypes).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.log1p(np.array([1e-20, 0.0]))
    array([1.e-20, 0.e+00])
    """


@op("Expm1", **_unary(FLOATS, _expm1_grad, flops=20))
def expm1(x: TensorLike, name: str | None = None) -> Tensor:
    """``exp(x) - 1``, accurate for small ``x`` (floating dtypes).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.expm1(np.array([1e-20, 0.0]))
    array([1.e-20, 0.e+00])
    """


@op("Floor", **_unary(FLOATS))
def floor(x: TensorLike, name: str | None = None) -> Tensor:
    """The largest integer not above ``x`` (floating dtypes; the gradient is None, as in
    TensorFlow).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.floor(np.array([-1.5, 1.5]))
    array([-2.,  1.])
    """


@op("Ceil", **_unary(FLOATS))
def ceil(x: TensorLike, name: str | None = None) -> Tensor:
    """The smallest integer not below ``x`` (floating dtypes; the gradient is None).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.ceil(np.array([-1.5, 1.5]))
    array([-1.,  2.])
    """


_ROUND = _unary(SIGNED)


@memoizable
@op("Round", **_ROUND)
def round(x: TensorLike, name: str | None = None) -> Tensor:
    """Round half to even, as TensorFlow (``round(2.5)`` is 2, ``round(-0.5)`` is -0.0).

    As in TensorFlow 1, an integer tensor is returned as it is, without an op.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.round(np.array([0.5, 1.5, 2.5, -2.6]))
    array([ 0.,  2.,  2., -3.])
    """
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    from ._op_def import _dtype_of

    if _dtype_of(t).is_integer:
        return t
    return {"x": t, "name": name}  # type: ignore[return-value]


@op("Reciprocal", **_unary(FLOATS, _reciprocal_grad))
def reciprocal(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / x`` (floating dtypes; TensorFlow has no integer kernel).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.reciprocal(np.array([4.0, -0.5]))
    array([ 0.25, -2.  ])
    """


@op("Inv", **_unary(FLOATS, _reciprocal_grad))
def inv(x: TensorLike, name: str | None = None) -> Tensor:
    """``1 / x``: TensorFlow's older Inv op, the same as :func:`reciprocal`.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.inv(np.array([4.0]))
    array([0.25])
    """


@op("Sin", **_unary(FLOATS, _sin_grad, flops=20))
def sin(x: TensorLike, name: str | None = None) -> Tensor:
    """Sine (floating dtypes, radians).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.sin(np.array([0.0, np.pi / 2]))
    array([0., 1.])
    """


@op("Cos", **_unary(FLOATS, _cos_grad, flops=20))
def cos(x: TensorLike, name: str | None = None) -> Tensor:
    """Cosine (floating dtypes, radians).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.cos(np.array([0.0, np.pi]))
    array([ 1., -1.])
    """


@op("Tan", **_unary(FLOATS, _tan_grad, flops=20))
def tan(x: TensorLike, name: str | None = None) -> Tensor:
    """Tangent (floating dtypes, radians).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.tan(np.array([0.0, np.pi / 4]))
    array([0., 1.])
    """


@op("IsNan", **_predicate())
def is_nan(x: TensorLike, name: str | None = None) -> Tensor:
    """True where ``x`` is NaN (floating dtypes).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.is_nan(np.array([np.nan, np.inf, 1.0]))
    array([ True, False, False])
    """


@op("IsInf", **_predicate())
def is_inf(x: TensorLike, name: str | None = None) -> Tensor:
    """True where ``x`` is +inf or -inf (floating dtypes).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.is_inf(np.array([np.nan, -np.inf, 1.0]))
    array([False,  True, False])
    """


@op("IsFinite", **_predicate())
def is_finite(x: TensorLike, name: str | None = None) -> Tensor:
    """True where ``x`` is neither infinite nor NaN (floating dtypes).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.is_finite(np.array([np.nan, -np.inf, 1.0]))
    array([False, False,  True])
    """


@op(
    "LogicalNot",
    inputs=["x: bool"],
    outputs=["y: bool"],
    flops=lambda i, o, a: per_output_element(i, o, a, 1),
    not_differentiable=True,
)
def logical_not(x: TensorLike, name: str | None = None) -> Tensor:
    """``not x`` element-wise on a bool tensor (the ``~`` operator).

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.logical_not(np.array([True, False]))
    array([False,  True])
    """


register_operator("__abs__", lambda a: abs(a, name="Abs"))
register_operator("__invert__", lambda a: logical_not(a, name="LogicalNot"))
