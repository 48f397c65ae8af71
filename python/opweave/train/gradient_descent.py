"""``GradientDescentOptimizer``: ``var -= learning_rate * grad`` (one ``ApplyGradientDescent``
per variable)."""

from __future__ import annotations

from typing import Any

from ..framework import Operation, Tensor
from ..ops._op_def import convert_to_tensor
from ..ops.array_ops import cast
from ..ops.training_ops import apply_gradient_descent
from ..ops.variables import Variable
from .optimizer import Optimizer

__all__ = ["GradientDescentOptimizer"]


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent: ``var -= learning_rate * grad``.

    Parameters
    ----------
    learning_rate : float, tensor, placeholder or callable
    use_locking : bool, default False
        See :class:`Optimizer`.
    name : str, default "GradientDescent"

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     w = ow.Variable([1.0, -2.0])
    ...     step = ow.train.GradientDescentOptimizer(0.1).minimize(ow.reduce_sum(w * w))
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         _ = s.run(step)
    ...         print(s.run(w))
    [ 0.8 -1.6]
    """

    def __init__(
        self, learning_rate: Any, use_locking: bool = False, name: str = "GradientDescent"
    ) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor: Tensor | None = None

    def _prepare(self) -> None:
        lr = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = convert_to_tensor(lr, name="learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return apply_gradient_descent(
            var, cast(self._learning_rate_tensor, var.dtype), grad, use_locking=self._use_locking
        ).op
