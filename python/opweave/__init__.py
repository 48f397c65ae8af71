"""opweave: dataflow graphs on two honest thread pools.

Build a graph, run it in a :class:`Session`, and control the intra-op pool (threads inside one op)
and the inter-op pool (ops running at once) the way TensorFlow and PyTorch users already know.

>>> import opweave
>>> opweave.__version__  # doctest: +SKIP
'0.1.0'
"""

from __future__ import annotations

import atexit

from ._version import __version__

try:
    from . import _opweave_core as _core
except ImportError as exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "opweave's compiled extension (_opweave_core) could not be imported. Install the package "
        "with `pip install .` from a source checkout (it compiles the C++ core with CMake), and do "
        "not run Python from inside the source tree's python/ folder. Original error: "
        f"{exc}"
    ) from exc

from . import _tf_logging as logging
from . import (
    app,
    config,
    errors,
    flags,
    graph_util,
    graphdef,
    initializers,
    kernels,
    layers,
    losses,
    math,
    models,
    nn,
    ops,
    random,
    summary,
    timeline,
    train,
    tuning,
)
from ._memory import BufferCacheInfo, buffer_cache_info, empty_buffer_cache
from ._pool import parallel_info
from ._threadpoolctl import register as _register_threadpoolctl
from ._threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
    threads,
)
from .config import (
    ConfigProto,
    GraphOptions,
    OptimizerOptions,
    PoolConfigWarning,
    RewriterConfig,
    RunMetadata,
    RunOptions,
    ThreadPoolOptionProto,
)
from .dtypes import (
    DType,
    as_dtype,
    bool_,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
)
from .framework import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    add_to_collections,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from .graphdef import import_graph_def, make_ndarray, make_tensor_proto
from .ops import REGISTRY as _OP_REGISTRY  # noqa: F401  (every op is defined on import)
from .ops import executing_eagerly, gradients
from .ops.array_ops import *  # noqa: F403
from .ops.control_flow_ops import *  # noqa: F403
from .ops.init_ops import *  # noqa: F403
from .ops.math_ops import *  # noqa: F403
from .ops.nn_ops import relu
from .ops.random_ops import *  # noqa: F403
from .ops.script_ops import *  # noqa: F403
from .ops.state_ops import *  # noqa: F403
from .ops.variable_scopes import *  # noqa: F403
from .ops.variables import *  # noqa: F403
from .session import InteractiveSession, Session, get_default_session
from .tensor_shape import Dimension, TensorShape
from .tuning import tune

bool = bool_

__all__ = [
    "BufferCacheInfo",
    "ConfigProto",
    "DType",
    "Dimension",
    "Graph",
    "GraphKeys",
    "GraphOptions",
    "InteractiveSession",
    "Operation",
    "OptimizerOptions",
    "PoolConfigWarning",
    "RewriterConfig",
    "RunMetadata",
    "RunOptions",
    "Session",
    "Tensor",
    "TensorShape",
    "ThreadPoolOptionProto",
    "__version__",
    "add_to_collection",
    "add_to_collections",
    "app",
    "as_dtype",
    "bool",
    "bool_",
    "buffer_cache_info",
    "config",
    "control_dependencies",
    "device",
    "double",
    "empty_buffer_cache",
    "errors",
    "flags",
    "float16",
    "float32",
    "float64",
    "get_collection",
    "get_collection_ref",
    "get_default_graph",
    "get_default_session",
    "get_num_interop_threads",
    "get_num_threads",
    "graph_util",
    "graphdef",
    "half",
    "import_graph_def",
    "int8",
    "int16",
    "int32",
    "int64",
    "kernels",
    "layers",
    "logging",
    "losses",
    "make_ndarray",
    "make_tensor_proto",
    "math",
    "models",
    "name_scope",
    "nn",
    "parallel_info",
    "reset_default_graph",
    "set_num_interop_threads",
    "set_num_threads",
    "string",
    "summary",
    "threads",
    "timeline",
    "train",
    "tune",
    "tuning",
    "uint8",
]

__all__ += ["executing_eagerly", "gradients", "relu"]
__all__ += ops.array_ops.__all__
__all__ += ops.control_flow_ops.__all__
__all__ += ops.math_ops.__all__
__all__ += ops.init_ops.__all__
__all__ += ops.random_ops.__all__
__all__ += ["initializers", "random"]
__all__ += ops.script_ops.__all__
__all__ += ops.state_ops.__all__
__all__ += ops.variable_scopes.__all__
__all__ += ops.variables.__all__

# At interpreter exit (after non-daemon threads were joined, before finalization starts): refuse
# new calls into the core, cancel the runs still in flight in daemon threads and wait for every
# GIL-released call (runs, kernels) to have the GIL back; a thread that met the finalizing
# interpreter inside C++ would abort the process (csrc/bindings/interpreter_exit.h). Bounded: a
# py_function that never returns cannot be cancelled.

atexit.register(_core.close_runs_for_exit, 10.0)
del atexit

# threadpoolctl (optional) lists and limits opweave's intra-op pool once opweave is imported.
_register_threadpoolctl()
del _register_threadpoolctl

del _core


def __getattr__(name: str) -> object:
    """``opweave.compat`` is imported on first use: ``compat.v1`` re-exports this module, so it
    can only be built once this module is complete."""
    if name == "compat":
        import importlib

        return importlib.import_module(".compat", __name__)
    if name in ("GraphDef", "NodeDef", "AttrValue", "MetaGraphDef", "TensorProto"):
        # TensorFlow 1's message classes (tf.GraphDef().ParseFromString(...)), built from the
        # protobuf package on first use, so that opweave imports without it.
        return getattr(graphdef, name)
    raise AttributeError(f"module 'opweave' has no attribute {name!r}")
