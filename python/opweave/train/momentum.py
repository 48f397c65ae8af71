"""``MomentumOptimizer``: ``accum = momentum * accum + grad; var -= learning_rate * accum`` (one
``ApplyMomentum`` per variable; slot ``"momentum"``)."""

from __future__ import annotations

from typing import Any

from ..framework import Operation, Tensor
from ..ops._op_def import convert_to_tensor
from ..ops.array_ops import cast
from ..ops.training_ops import apply_momentum
from ..ops.variables import Variable
from .optimizer import Optimizer

__all__ = ["MomentumOptimizer"]


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum, TensorFlow 1's formula.

    ``accum = momentum * accum + grad``, then ``var -= learning_rate * accum``; with
    ``use_nesterov``, ``var -= learning_rate * (grad + momentum * accum)``. The accumulator is
    the slot ``"momentum"`` (zeros at first).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     w = ow.Variable(1.0)
    ...     opt = ow.train.MomentumOptimizer(0.1, momentum=0.9)
    ...     step = opt.minimize(w * w)
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         _, _ = s.run(step), s.run(step)
    ...         print(round(float(s.run(w)), 4), opt.get_slot_names())
    0.46 ['momentum']
    """

    def __init__(
        self,
        learning_rate: Any,
        momentum: Any,
        use_locking: bool = False,
        name: str = "Momentum",
        use_nesterov: bool = False,
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = bool(use_nesterov)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate"
        )
        self._momentum_tensor = convert_to_tensor(
            self._call_if_callable(self._momentum), name="momentum"
        )

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        mom = self.get_slot(var, "momentum")
        return apply_momentum(
            var,
            mom,
            cast(self._learning_rate_tensor, var.dtype),
            grad,
            cast(self._momentum_tensor, var.dtype),
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        ).op
