"""The op surface: one definition per op (:mod:`opweave.ops._op_def`), grouped by family.

Every public op function is re-exported from the top-level ``opweave`` package (and the ones of
``opweave.nn`` from there); this package holds the definitions.
"""

from __future__ import annotations

from . import (
    array_ops,
    control_flow_ops,
    init_ops,
    math_ops,
    random_ops,
    script_ops,
    state_ops,
    training_ops,  # noqa: F401  (defines the optimizers' Apply* ops)
    variable_scopes,
    variables,
)
from ._op_def import REGISTRY, OpDef, executing_eagerly
from .array_ops import *  # noqa: F403
from .control_flow_ops import *  # noqa: F403
from .gradients_impl import gradients
from .init_ops import *  # noqa: F403
from .math_ops import *  # noqa: F403
from .nn_ops import relu
from .random_ops import *  # noqa: F403
from .script_ops import *  # noqa: F403
from .state_ops import *  # noqa: F403
from .variable_scopes import *  # noqa: F403
from .variables import *  # noqa: F403

__all__ = ["REGISTRY", "OpDef", "executing_eagerly", "gradients", "relu"]
__all__ += array_ops.__all__
__all__ += control_flow_ops.__all__
__all__ += init_ops.__all__
__all__ += math_ops.__all__
__all__ += random_ops.__all__
__all__ += script_ops.__all__
__all__ += state_ops.__all__
__all__ += variable_scopes.__all__
__all__ += variables.__all__
