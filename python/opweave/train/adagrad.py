"""``AdagradOptimizer``: ``accum += g^2; var -= learning_rate * g / sqrt(accum)`` (one
``ApplyAdagrad`` per variable; slot ``"accumulator"``)."""

from __future__ import annotations

from typing import Any

from ..framework import Operation, Tensor
from ..ops._op_def import convert_to_tensor
from ..ops.array_ops import cast
from ..ops.training_ops import apply_adagrad
from ..ops.variables import Variable
from .optimizer import Optimizer

__all__ = ["AdagradOptimizer"]


class AdagradOptimizer(Optimizer):
    """Adagrad: ``accum += g^2; var -= learning_rate * g / sqrt(accum)``.

    The accumulator is the slot ``"accumulator"``, starting at ``initial_accumulator_value``
    (which must be positive).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     w = ow.Variable(1.0)
    ...     opt = ow.train.AdagradOptimizer(0.1)
    ...     step = opt.minimize(w * w)
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         _ = s.run(step)
    ...         print(round(float(s.run(w)), 4), opt.get_slot_names())
    0.9012 ['accumulator']
    """

    def __init__(
        self,
        learning_rate: Any,
        initial_accumulator_value: float = 0.1,
        use_locking: bool = False,
        name: str = "Adagrad",
    ) -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(
                f"initial_accumulator_value must be positive: {initial_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = float(initial_accumulator_value)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for v in var_list:
            self._constant_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate"
        )

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        acc = self.get_slot(var, "accumulator")
        return apply_adagrad(
            var,
            acc,
            cast(self._learning_rate_tensor, var.dtype),
            grad,
            use_locking=self._use_locking,
        ).op
