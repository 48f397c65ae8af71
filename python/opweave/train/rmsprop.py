"""``RMSPropOptimizer``: TensorFlow 1's RMSProp (one ``ApplyRMSProp`` or
``ApplyCenteredRMSProp`` per variable; slots ``"rms"``, ``"momentum"`` and, centered, ``"mg"``)."""

from __future__ import annotations

from typing import Any

from ..framework import Operation, Tensor
from ..ops._op_def import convert_to_tensor
from ..ops.array_ops import cast
from ..ops.training_ops import apply_centered_rms_prop, apply_rms_prop
from ..ops.variables import Variable
from .optimizer import Optimizer

__all__ = ["RMSPropOptimizer"]


class RMSPropOptimizer(Optimizer):
    """RMSProp, TensorFlow 1's formulation.

    ``rms = decay * rms + (1 - decay) * g^2`` (the slot ``"rms"``, ones at first),
    ``mom = momentum * mom + learning_rate * g / sqrt(rms + epsilon)`` (slot ``"momentum"``,
    zeros), ``var -= mom``. ``centered=True`` also tracks the mean gradient
    ``mg = decay * mg + (1 - decay) * g`` (slot ``"mg"``) and divides by
    ``sqrt(rms - mg^2 + epsilon)``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     w = ow.Variable(1.0)
    ...     opt = ow.train.RMSPropOptimizer(0.01, centered=True)
    ...     step = opt.minimize(w * w)
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         _ = s.run(step)
    ...         print(round(float(s.run(w)), 4), opt.get_slot_names())
    0.9822 ['mg', 'momentum', 'rms']
    """

    def __init__(
        self,
        learning_rate: Any,
        decay: Any = 0.9,
        momentum: Any = 0.0,
        epsilon: Any = 1e-10,
        use_locking: bool = False,
        centered: bool = False,
        name: str = "RMSProp",
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = bool(centered)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._constant_slot(v, 1.0, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        c = self._call_if_callable
        self._learning_rate_tensor = convert_to_tensor(c(self._learning_rate), name="learning_rate")
        self._decay_tensor = convert_to_tensor(c(self._decay), name="decay")
        self._momentum_tensor = convert_to_tensor(c(self._momentum), name="momentum")
        self._epsilon_tensor = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        rms = self.get_slot(var, "rms")
        mom = self.get_slot(var, "momentum")
        dt = var.dtype
        hyper = (
            cast(self._learning_rate_tensor, dt),
            cast(self._decay_tensor, dt),
            cast(self._momentum_tensor, dt),
            cast(self._epsilon_tensor, dt),
        )
        if self._centered:
            mg = self.get_slot(var, "mg")
            return apply_centered_rms_prop(
                var, mg, rms, mom, *hyper, grad, use_locking=self._use_locking
            ).op
        return apply_rms_prop(var, rms, mom, *hyper, grad, use_locking=self._use_locking).op
