"""The global step: ``get_or_create_global_step``, ``get_global_step``, ``create_global_step``,
``global_step``, as in TensorFlow 1's ``tf.train``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import int64
from ..framework import Graph, GraphKeys, Tensor, get_default_graph
from ..ops.variable_scopes import VariableScope, _graph_scopes, get_variable
from ..ops.variables import Variable

__all__ = ["create_global_step", "get_global_step", "get_or_create_global_step", "global_step"]


def _zeros(shape: Any, dtype: Any = int64, partition_info: Any = None) -> Any:
    from ..ops.array_ops import zeros

    return zeros(shape, dtype)


def get_global_step(graph: Graph | None = None) -> Variable | Tensor | None:
    """The global step of ``graph`` (default: the default graph): the variable in
    ``GraphKeys.GLOBAL_STEP``, else the tensor named ``global_step:0``, else None.

    Raises TypeError when it is not an integer scalar and ValueError when the collection holds
    several.
    """
    g = graph or get_default_graph()
    found = g.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        step: Variable | Tensor = found[0]
    elif not found:
        try:
            t = g.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
        step = t
    else:
        raise ValueError(f"Multiple tensors in global_step collection: {found}")
    if not step.dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {step.dtype.name}')
    if step.shape.ndims != 0 and step.shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {step.shape}')
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """A new global step: an int64 scalar variable ``global_step``, zero, not trainable, in
    ``GLOBAL_VARIABLES`` and ``GLOBAL_STEP``. ValueError when the graph has one already.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     step = ow.train.create_global_step()
    ...     step.name, step.dtype, step.trainable
    ('global_step:0', opweave.int64, False)
    """
    g = graph or get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError('"global_step" already exists.')
    with g.as_default(), g.name_scope(None), g.control_dependencies(None):
        return _top_level_get_variable(g)


def _top_level_get_variable(g: Graph) -> Variable:
    """``global_step`` at the top level, whatever variable scope the caller is in (as
    TensorFlow makes it)."""
    scopes = _graph_scopes(g)
    saved = scopes.scopes.current
    scopes.scopes.current = VariableScope(False)
    try:
        return get_variable(
            GraphKeys.GLOBAL_STEP,
            shape=[],
            dtype=int64,
            initializer=_zeros,
            trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )
    finally:
        scopes.scopes.current = saved


def get_or_create_global_step(graph: Graph | None = None) -> Variable | Tensor:
    """The graph's global step, created (see :func:`create_global_step`) when missing.

    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.train.get_or_create_global_step() is ow.train.get_or_create_global_step()
    True
    """
    g = graph or get_default_graph()
    step = get_global_step(g)
    if step is None:
        step = create_global_step(g)
    return step


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The value of ``global_step_tensor`` in ``sess``, as a Python int."""
    return int(np.asarray(sess.run(global_step_tensor)))
