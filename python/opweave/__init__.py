"""opweave: dataflow graphs on two honest thread pools.

Build a graph, run it in a :class:`Session`, and control the intra-op pool (threads inside one op)
and the inter-op pool (ops running at once) the way TensorFlow and PyTorch users already know.

>>> import opweave
>>> opweave.__version__  # doctest: +SKIP
'0.1.0'
"""

from __future__ import annotations

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

from . import errors, kernels
from ._pool import parallel_info

__all__ = ["__version__", "errors", "kernels", "parallel_info"]

del _core
