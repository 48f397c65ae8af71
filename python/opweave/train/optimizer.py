"""``Optimizer``: the base of TensorFlow 1's optimizers (``compute_gradients``,
``apply_gradients``, ``minimize``, slots).

A subclass says which slots each variable needs (``_create_slots``), turns its hyper-parameters
into tensors once per ``apply_gradients`` (``_prepare``), builds the one fused update op of a
variable (``_apply_dense``: an ``Apply*`` op, one pass over the variable and its slots) and may
add a final step (``_finish``: Adam's ``beta1_power`` update).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..dtypes import DType, float16, float32, float64
from ..framework import Graph, GraphKeys, Operation, Tensor, get_default_graph
from ..ops._op_def import convert_to_tensor
from ..ops.control_flow_ops import group
from ..ops.control_flow_ops import tuple as tuple_
from ..ops.gradients_impl import gradients
from ..ops.init_ops import constant_initializer, ones_initializer, zeros_initializer
from ..ops.state_ops import assign_add
from ..ops.variable_scopes import get_variable, get_variable_scope, variable_scope
from ..ops.variables import Variable, trainable_variables

__all__ = ["Optimizer"]

GradsAndVars = list[tuple[Tensor | None, Variable]]


def _var_key(var: Variable) -> tuple[Graph, str]:
    return (var.graph, var.op.name)


def _constant_initializer(value: float) -> Callable[..., Tensor]:
    """A slot's start: TensorFlow's zeros, ones or constant initializer (which name the initial
    value's op ``.../Initializer/zeros`` and so on)."""
    if value == 0.0:
        return zeros_initializer()
    if value == 1.0:
        return ones_initializer()
    return constant_initializer(value)


def create_slot_with_initializer(
    primary: Variable, initializer: Callable[..., Tensor], shape: Any, dtype: DType, name: str
) -> Variable:
    """A slot of ``primary`` (non-trainable, in GLOBAL_VARIABLES), named
    ``<primary's op name>/<name>`` (made unique: ``w/Adam``, ``w/Adam_1``), as TensorFlow's
    ``slot_creator`` names them."""
    g = primary.graph
    # Slots ignore the control dependencies and the name scope of the apply_gradients call.
    with (
        g.as_default(),
        g.control_dependencies(None),
        variable_scope(None, default_name=f"{primary.op.name}/{name}"),
    ):
        scope = get_variable_scope()
        saved = scope.partitioner
        scope.set_partitioner(None)
        try:
            return get_variable(
                "",
                shape=shape,
                dtype=dtype,
                initializer=initializer,
                trainable=False,
                validate_shape=primary.shape.is_fully_defined(),
            )
        finally:
            scope.set_partitioner(saved)


class Optimizer:
    """The base class of optimizers (TensorFlow 1's ``tf.train.Optimizer``).

    Parameters
    ----------
    use_locking : bool
        Pass ``use_locking`` to the update ops: each variable's update is then atomic with
        respect to the other locking updates of it, when several threads run training steps on
        one session at once (Hogwild otherwise: see :class:`opweave.Variable`).
    name : str
        The name scope of the update ops and the suffix of slot variables' names.

    Notes
    -----
    ``minimize(loss)`` is ``apply_gradients(compute_gradients(loss))``. ``apply_gradients``
    creates the slots (zeros or a constant, not trainable, in GLOBAL_VARIABLES: run the
    initializer after it), then one fused update op per variable with a gradient -- one kernel
    pass over the variable and its slots -- and groups them (incrementing ``global_step`` when
    given). Learning rates and other hyper-parameters may be Python numbers, tensors,
    placeholders or callables returning one.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     w = ow.Variable(5.0)
    ...     train = ow.train.GradientDescentOptimizer(0.25).minimize(w * w)
    ...     with ow.Session() as s:
    ...         s.run(ow.global_variables_initializer())
    ...         for _ in range(3):
    ...             _ = s.run(train)
    ...         print(s.run(w))
    0.625
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = bool(use_locking)
        self._name = name
        # slot name -> {variable key -> slot variable}
        self._slots: dict[str, dict[tuple[Graph, str], Variable]] = {}
        # (name, graph) -> variable, for variables that are not per-variable slots
        self._non_slot_dict: dict[tuple[str, Graph], Variable] = {}

    def get_name(self) -> str:
        return self._name

    # -- the public steps -----------------------------------------------------------------------
    def minimize(
        self,
        loss: Any,
        global_step: Variable | None = None,
        var_list: Sequence[Variable] | None = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Any = None,
    ) -> Operation:
        """One training step: the op applying the gradients of ``loss`` to ``var_list``
        (default: the trainable variables), incrementing ``global_step`` when given.

        Raises
        ------
        ValueError
            "No variables to optimize." when there are none; "No gradients provided for any
            variable, ..." when ``loss`` depends on none of them through differentiable ops.
        """
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                "support gradients, between variables "
                f"{[str(v) for _, v in grads_and_vars]} and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(
        self,
        loss: Any,
        var_list: Sequence[Variable] | None = None,
        gate_gradients: int = GATE_OP,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> GradsAndVars:
        """``[(gradient or None, variable)]`` for ``var_list`` (default: the trainable
        variables of ``loss``'s graph); None where ``loss`` does not depend on the variable."""
        if callable(loss):
            raise TypeError(
                "loss must be a Tensor: opweave builds graphs (a callable loss is TensorFlow 2's "
                "eager API)"
            )
        if gate_gradients not in (Optimizer.GATE_NONE, Optimizer.GATE_OP, Optimizer.GATE_GRAPH):
            raise ValueError(
                "gate_gradients must be one of: Optimizer.GATE_NONE, Optimizer.GATE_OP, "
                f"Optimizer.GATE_GRAPH.  Not {gate_gradients}"
            )
        loss_t = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss_t])
        if grad_loss is not None:
            self._assert_valid_dtypes([convert_to_tensor(grad_loss)])
        if var_list is None:
            with loss_t.graph.as_default():
                var_list = trainable_variables() + list(
                    loss_t.graph.get_collection(GraphKeys.TRAINABLE_RESOURCE_VARIABLES)
                )
        else:
            var_list = list(_flatten(var_list))
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"Argument is not a tf.Variable: {v!r}")
        with loss_t.graph.as_default():
            grads = gradients(
                loss_t,
                list(var_list),
                grad_ys=grad_loss,
                gate_gradients=gate_gradients == Optimizer.GATE_OP,
                aggregation_method=aggregation_method,
                colocate_gradients_with_ops=colocate_gradients_with_ops,
            )
            if gate_gradients == Optimizer.GATE_GRAPH:
                # No update starts before every gradient is computed.
                present = [g for g in grads if g is not None]
                gated = iter(tuple_(present) if present else [])
                grads = [None if g is None else next(gated) for g in grads]
        grads_and_vars: GradsAndVars = list(zip(grads, var_list, strict=True))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(
        self,
        grads_and_vars: Iterable[tuple[Any, Variable]],
        global_step: Variable | None = None,
        name: str | None = None,
    ) -> Operation:
        """The op applying each gradient to its variable (one fused update op per variable),
        incrementing ``global_step`` when given. Pairs whose gradient is None are skipped."""
        pairs = tuple(grads_and_vars)
        if not pairs:
            raise ValueError("No variables provided.")
        converted: list[tuple[Tensor | None, Variable]] = []
        for g, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"Argument is not a tf.Variable: {v!r}")
            if g is not None:
                try:
                    g = convert_to_tensor(g)
                except TypeError:
                    raise TypeError(
                        f"Gradient must be convertible to a Tensor or IndexedSlices, or None: {g}"
                    ) from None
            converted.append((g, v))
        var_list = [v for g, v in converted if g is not None]
        if not var_list:
            raise ValueError(
                f"No gradients provided for any variable: {[str(v) for _, v in converted]}."
            )
        graph = var_list[0].graph
        with graph.as_default():
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            update_ops: list[Operation] = []
            with graph.name_scope(name or self._name) as scope:
                self._prepare()
                for grad, var in converted:
                    if grad is None:
                        continue
                    if grad.dtype is not var.dtype:
                        raise TypeError(
                            f"The gradient of {var.name} has dtype {grad.dtype.name}, the "
                            f"variable {var.dtype.name}"
                        )
                    with graph.name_scope("update_" + var.op.name):
                        update = self._apply_dense(grad, var)
                        if var.constraint is not None:
                            # read_value: a read made here, after the update (value() is the
                            # variable's own read, which may run before it).
                            with graph.control_dependencies([update]):
                                update = var.assign(var.constraint(var.read_value())).op
                        update_ops.append(update)
                if global_step is None:
                    apply_updates = self._finish(update_ops, scope)
                else:
                    with graph.control_dependencies([self._finish(update_ops, "update")]):
                        apply_updates = assign_add(global_step, 1, name=scope).op
            train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
            if apply_updates not in train_ops:
                train_ops.append(apply_updates)
        return apply_updates

    # -- slots ----------------------------------------------------------------------------------
    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot ``name`` (``"m"``, ``"momentum"``, ...) of ``var``, or None."""
        named = self._slots.get(name)
        if not named:
            return None
        return named.get(_var_key(var))

    def get_slot_names(self) -> list[str]:
        """The names of the slots this optimizer creates, sorted."""
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The variables this optimizer made (slots and others such as Adam's ``beta1_power``)
        in the default graph, sorted by name."""
        g = get_default_graph()
        out = [v for (_, graph), v in self._non_slot_dict.items() if graph is g]
        for named in self._slots.values():
            out.extend(v for (graph, _), v in named.items() if graph is g)
        return sorted(out, key=lambda v: v.name)

    def _slot_dict(self, slot_name: str) -> dict[tuple[Graph, str], Variable]:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot_with_initializer(
        self,
        var: Variable,
        initializer: Callable[..., Tensor],
        shape: Any,
        dtype: DType,
        slot_name: str,
        op_name: str,
    ) -> Variable:
        named = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named:
            named[key] = create_slot_with_initializer(var, initializer, shape, dtype, op_name)
        return named[key]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        """The slot ``slot_name`` of ``var``, zeros of its shape and dtype (made once)."""
        return self._get_or_make_slot_with_initializer(
            var, _constant_initializer(0.0), var.shape, var.dtype, slot_name, op_name
        )

    def _constant_slot(self, var: Variable, value: float, slot_name: str, op_name: str) -> Variable:
        """The slot ``slot_name`` of ``var``, filled with ``value`` (made once)."""
        return self._get_or_make_slot_with_initializer(
            var, _constant_initializer(value), var.shape, var.dtype, slot_name, op_name
        )

    def _create_non_slot_variable(
        self, initial_value: Any, name: str, colocate_with: Variable
    ) -> Variable:
        """A variable of the optimizer itself (not per variable), one per graph."""
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.as_default(), graph.control_dependencies(None):
                v = Variable(initial_value=initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph: Graph | None = None) -> Variable | None:
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    # -- what subclasses define -----------------------------------------------------------------
    def _create_slots(self, var_list: list[Variable]) -> None:
        """Create the slots of each variable (nothing by default)."""

    def _prepare(self) -> None:
        """Turn the hyper-parameters into tensors (once per apply_gradients)."""

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        raise NotImplementedError(f"{type(self).__name__} does not define _apply_dense")

    def _finish(self, update_ops: list[Operation], name_scope: str) -> Operation:
        """The op completing a step: by default, the updates grouped."""
        return group(*update_ops, name=name_scope)

    # -- helpers --------------------------------------------------------------------------------
    @staticmethod
    def _call_if_callable(param: Any) -> Any:
        return param() if callable(param) else param

    def _valid_dtypes(self) -> set[DType]:
        return {float16, float32, float64}

    def _assert_valid_dtypes(self, tensors: Sequence[Any]) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dtype = t.dtype.base_dtype
            if dtype not in valid:
                raise ValueError(
                    f"Invalid type {dtype.name} for {t.name}, expected: "
                    f"{sorted(d.name for d in valid)}."
                )


def _flatten(items: Any) -> Iterable[Any]:
    if isinstance(items, (list, tuple, set)):
        for i in items:
            yield from _flatten(i)
    else:
        yield items
