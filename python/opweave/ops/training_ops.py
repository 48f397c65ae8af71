"""The optimizers' fused updates, TensorFlow 1's training ops: ``ApplyGradientDescent``,
``ApplyMomentum``, ``ApplyAdam``, ``ApplyRMSProp``, ``ApplyCenteredRMSProp``, ``ApplyAdagrad``.

Each updates a variable and its slots (refs) from a gradient in one kernel pass over their
elements, split over the intra-op pool (``csrc/opweave/kernels/training_ops.cpp``), with
TensorFlow's formulas; the bits do not depend on the thread count. The optimizers of
:mod:`opweave.train` build them; they are also public under TensorFlow's
``tf.raw_ops``-style names in this module (``apply_adam``, ...).

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     v = ow.Variable([1.0, 2.0])
...     step = ow.ops.training_ops.apply_gradient_descent(v, 0.5, [1.0, 1.0])
...     with ow.Session() as s:
...         _ = s.run(v.initializer)
...         print(s.run(step))
[0.5 1.5]
"""

from __future__ import annotations

from typing import Any

from ..dtypes import float32, float64
from ..framework import Shape, Tensor
from ._op_def import Attr, OpDef, ShapeContext
from .state_ops import merge_shapes

__all__ = [
    "apply_adagrad",
    "apply_adam",
    "apply_centered_rms_prop",
    "apply_gradient_descent",
    "apply_momentum",
    "apply_rms_prop",
]

TensorLike = Any
_FLOATS = frozenset({float32, float64})


def _apply_def(type_: str, inputs: list[str], attrs: dict[str, Attr] | None = None) -> OpDef:
    """An update op: ``inputs`` in TensorFlow's order, refs first (the variable and its slots,
    which share the gradient's shape), the other inputs scalars except the gradient."""
    names = [spec.partition(":")[0].strip() for spec in inputs]
    grad = names.index("delta" if "delta" in names else "grad")
    refs = tuple(i for i, spec in enumerate(inputs) if "Ref(" in spec)
    scalars = tuple(i for i in range(len(inputs)) if i not in refs and i != grad)

    def shape(ctx: ShapeContext) -> Shape:
        out = ctx.shape(grad)
        for i in refs:
            out = merge_shapes(ctx, ctx.shape(i), out)
        for i in scalars:
            s = ctx.shape(i)
            if s is not None and len(s) != 0:
                raise ctx.error(f"Shape must be rank 0 but is rank {len(s)}")
        return out

    return OpDef(
        type_,
        inputs=inputs,
        outputs=["out: Ref(T)"],
        types={"T": _FLOATS},
        attrs={"use_locking": Attr("bool", False), **(attrs or {})},
        shape=shape,
        not_differentiable=True,
        stateful=True,
    )


_NESTEROV = {"use_nesterov": Attr("bool", False)}
_GD = _apply_def("ApplyGradientDescent", ["var: Ref(T)", "alpha: T", "delta: T"])
_MOMENTUM = _apply_def(
    "ApplyMomentum",
    ["var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T", "momentum: T"],
    _NESTEROV,
)
_ADAM = _apply_def(
    "ApplyAdam",
    ["var: Ref(T)", "m: Ref(T)", "v: Ref(T)"]
    + [f"{s}: T" for s in ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")]
    + ["grad: T"],
    _NESTEROV,
)
_RMSPROP = _apply_def(
    "ApplyRMSProp",
    [
        "var: Ref(T)",
        "ms: Ref(T)",
        "mom: Ref(T)",
        "lr: T",
        "rho: T",
        "momentum: T",
        "epsilon: T",
        "grad: T",
    ],
)
_CENTERED_RMSPROP = _apply_def(
    "ApplyCenteredRMSProp",
    [
        "var: Ref(T)",
        "mg: Ref(T)",
        "ms: Ref(T)",
        "mom: Ref(T)",
        "lr: T",
        "rho: T",
        "momentum: T",
        "epsilon: T",
        "grad: T",
    ],
)
_ADAGRAD = _apply_def(
    "ApplyAdagrad",
    ["var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T"],
    {"update_slots": Attr("bool", True)},
)


def apply_gradient_descent(
    var: Any,
    alpha: TensorLike,
    delta: TensorLike,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """``var -= alpha * delta``; returns the ref of ``var``."""
    return _GD(var, alpha, delta, use_locking=use_locking, name=name)  # type: ignore[no-any-return]


def apply_momentum(
    var: Any,
    accum: Any,
    lr: TensorLike,
    grad: TensorLike,
    momentum: TensorLike,
    use_locking: bool = False,
    use_nesterov: bool = False,
    name: str | None = None,
) -> Tensor:
    """``accum = accum * momentum + grad; var -= lr * accum`` (Nesterov:
    ``var -= grad * lr + accum * momentum * lr``)."""
    return _MOMENTUM(  # type: ignore[no-any-return]
        var,
        accum,
        lr,
        grad,
        momentum,
        use_locking=use_locking,
        use_nesterov=use_nesterov,
        name=name,
    )


def apply_adam(
    var: Any,
    m: Any,
    v: Any,
    beta1_power: TensorLike,
    beta2_power: TensorLike,
    lr: TensorLike,
    beta1: TensorLike,
    beta2: TensorLike,
    epsilon: TensorLike,
    grad: TensorLike,
    use_locking: bool = False,
    use_nesterov: bool = False,
    name: str | None = None,
) -> Tensor:
    """Adam: ``lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)``,
    ``m += (grad - m) * (1 - beta1)``, ``v += (grad^2 - v) * (1 - beta2)``,
    ``var -= lr_t * m / (sqrt(v) + epsilon)``."""
    return _ADAM(  # type: ignore[no-any-return]
        var,
        m,
        v,
        beta1_power,
        beta2_power,
        lr,
        beta1,
        beta2,
        epsilon,
        grad,
        use_locking=use_locking,
        use_nesterov=use_nesterov,
        name=name,
    )


def apply_rms_prop(
    var: Any,
    ms: Any,
    mom: Any,
    lr: TensorLike,
    rho: TensorLike,
    momentum: TensorLike,
    epsilon: TensorLike,
    grad: TensorLike,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """``ms += (grad^2 - ms) * (1 - rho)``,
    ``mom = mom * momentum + lr * grad / sqrt(ms + epsilon)``, ``var -= mom``."""
    return _RMSPROP(  # type: ignore[no-any-return]
        var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=use_locking, name=name
    )


def apply_centered_rms_prop(
    var: Any,
    mg: Any,
    ms: Any,
    mom: Any,
    lr: TensorLike,
    rho: TensorLike,
    momentum: TensorLike,
    epsilon: TensorLike,
    grad: TensorLike,
    use_locking: bool = False,
    name: str | None = None,
) -> Tensor:
    """RMSProp with the mean gradient ``mg += (grad - mg) * (1 - rho)`` subtracted:
    ``mom = mom * momentum + lr * grad / sqrt(ms - mg^2 + epsilon)``, ``var -= mom``."""
    return _CENTERED_RMSPROP(  # type: ignore[no-any-return]
        var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=use_locking, name=name
    )


def apply_adagrad(
    var: Any,
    accum: Any,
    lr: TensorLike,
    grad: TensorLike,
    use_locking: bool = False,
    update_slots: bool = True,
    name: str | None = None,
) -> Tensor:
    """``accum += grad^2; var -= lr * grad / sqrt(accum)``."""
    return _ADAGRAD(  # type: ignore[no-any-return]
        var, accum, lr, grad, use_locking=use_locking, update_slots=update_slots, name=name
    )
