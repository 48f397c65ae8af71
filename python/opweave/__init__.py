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

from . import config, errors, kernels, models, timeline, tuning
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
    PoolConfigWarning,
    RunMetadata,
    RunOptions,
    ThreadPoolOptionProto,
)
from .dtypes import DType, as_dtype, bool_, float32, float64, int32, int64
from .framework import (
    Graph,
    Operation,
    Tensor,
    control_dependencies,
    device,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from .ops import (
    add,
    add_n,
    cast,
    constant,
    convert_to_tensor,
    div,
    exp,
    group,
    identity,
    matmul,
    maximum,
    mul,
    neg,
    no_op,
    placeholder,
    py_function,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    relu,
    reshape,
    sigmoid,
    sub,
    tanh,
    transpose,
    truediv,
)
from .session import Session, get_default_session
from .tuning import tune

bool = bool_

__all__ = [
    # graph API and thread controls, sorted together
    "BufferCacheInfo",
    "ConfigProto",
    "DType",
    "Graph",
    "Operation",
    "PoolConfigWarning",
    "RunMetadata",
    "RunOptions",
    "Session",
    "Tensor",
    "ThreadPoolOptionProto",
    "__version__",
    "add",
    "add_n",
    "as_dtype",
    "bool",
    "bool_",
    "buffer_cache_info",
    "cast",
    "config",
    "constant",
    "control_dependencies",
    "convert_to_tensor",
    "device",
    "div",
    "empty_buffer_cache",
    "errors",
    "exp",
    "float32",
    "float64",
    "get_default_graph",
    "get_default_session",
    "get_num_interop_threads",
    "get_num_threads",
    "group",
    "identity",
    "int32",
    "int64",
    "kernels",
    "matmul",
    "maximum",
    "models",
    "mul",
    "name_scope",
    "neg",
    "no_op",
    "parallel_info",
    "placeholder",
    "py_function",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_sum",
    "relu",
    "reset_default_graph",
    "reshape",
    "set_num_interop_threads",
    "set_num_threads",
    "sigmoid",
    "sub",
    "tanh",
    "threads",
    "timeline",
    "transpose",
    "truediv",
    "tune",
    "tuning",
]

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
