"""``AdamOptimizer``: Kingma and Ba's Adam as TensorFlow 1 computes it (one ``ApplyAdam`` per
variable; slots ``"m"`` and ``"v"``; non-trainable ``beta1_power`` and ``beta2_power``)."""

from __future__ import annotations

from typing import Any

from ..framework import Operation, Tensor
from ..ops._op_def import convert_to_tensor
from ..ops.array_ops import cast
from ..ops.control_flow_ops import group
from ..ops.training_ops import apply_adam
from ..ops.variables import Variable
from .optimizer import Optimizer

__all__ = ["AdamOptimizer"]


class AdamOptimizer(Optimizer):
    """Adam, TensorFlow 1's formulation.

    At step t (``beta1_power = beta1^t``, ``beta2_power = beta2^t``, two non-trainable variables
    the optimizer makes and updates after each step):
    ``lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)``,
    ``m = beta1 * m + (1 - beta1) * g``, ``v = beta2 * v + (1 - beta2) * g^2``,
    ``var -= lr_t * m / (sqrt(v) + epsilon)`` -- epsilon is TensorFlow's "epsilon hat", added
    after the bias correction. ``m`` and ``v`` are the slots ``"m"`` and ``"v"`` (zeros at first).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     w = ow.Variable(1.0, name="w")
    ...     opt = ow.train.AdamOptimizer(0.1)
    ...     step = opt.minimize(w * w)
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         _ = s.run(step)
    ...         print(round(float(s.run(w)), 4), [v.name for v in opt.variables()])
    0.9 ['beta1_power:0', 'beta2_power:0', 'w/Adam:0', 'w/Adam_1:0']
    """

    def __init__(
        self,
        learning_rate: Any = 0.001,
        beta1: Any = 0.9,
        beta2: Any = 0.999,
        epsilon: Any = 1e-08,
        use_locking: bool = False,
        name: str = "Adam",
    ) -> None:
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon

    def _get_beta_accumulators(self) -> tuple[Variable, Variable]:
        b1 = self._get_non_slot_variable("beta1_power")
        b2 = self._get_non_slot_variable("beta2_power")
        if b1 is None or b2 is None:
            raise ValueError("apply_gradients has not created Adam's beta powers yet")
        return b1, b2

    def _create_slots(self, var_list: list[Variable]) -> None:
        first = min(var_list, key=lambda v: v.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first)
        self._create_non_slot_variable(self._beta2, "beta2_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        c = self._call_if_callable
        self._lr_t = convert_to_tensor(c(self._lr), name="learning_rate")
        self._beta1_t = convert_to_tensor(c(self._beta1), name="beta1")
        self._beta2_t = convert_to_tensor(c(self._beta2), name="beta2")
        self._epsilon_t = convert_to_tensor(c(self._epsilon), name="epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        m = self.get_slot(var, "m")
        v = self.get_slot(var, "v")
        beta1_power, beta2_power = self._get_beta_accumulators()
        dt = var.dtype
        return apply_adam(
            var,
            m,
            v,
            cast(beta1_power, dt),
            cast(beta2_power, dt),
            cast(self._lr_t, dt),
            cast(self._beta1_t, dt),
            cast(self._beta2_t, dt),
            cast(self._epsilon_t, dt),
            grad,
            use_locking=self._use_locking,
        ).op

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        # The powers advance once every variable's update has read them.
        beta1_power, beta2_power = self._get_beta_accumulators()
        g = beta1_power.graph
        with g.control_dependencies(update_ops):
            update_beta1 = beta1_power.assign(
                beta1_power * cast(self._beta1_t, beta1_power.dtype), use_locking=self._use_locking
            )
            update_beta2 = beta2_power.assign(
                beta2_power * cast(self._beta2_t, beta2_power.dtype), use_locking=self._use_locking
            )
        return group(*update_ops, update_beta1, update_beta2, name=name_scope)
