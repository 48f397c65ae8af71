"""A threadpoolctl controller for opweave's intra-op pool, registered when opweave is imported.

With threadpoolctl installed (it is optional), ``threadpoolctl.threadpool_info()`` lists opweave
(``user_api="opweave"``, ``internal_api="opweave"``) with its intra-op size, and
``threadpool_limits(1)`` or ``threadpool_limits(2, user_api="opweave")`` limit opweave inside the
block, as they limit OpenBLAS or OpenMP:

>>> import opweave
>>> from threadpoolctl import threadpool_limits
>>> with threadpool_limits(1, user_api="opweave"):
...     opweave.get_num_threads()
1

threadpoolctl finds libraries by file name among the loaded shared objects; the extension is
named ``_opweave_core*.so``, which is what ``filename_prefixes`` matches. The controller calls
opweave's Python API rather than C symbols, so it needs nothing exported from the extension.
The inter-op pool is not a "thread limit" in threadpoolctl's sense (it caps ops at once, not the
threads of one computation) and is left alone.
"""

from __future__ import annotations

import weakref
from typing import Any

from . import _runtime
from ._version import __version__

_SOURCE = "threadpoolctl.threadpool_limits({n})"


def register() -> bool:
    """Register the controller with threadpoolctl if it is installed; True when registered.

    Idempotent: a second call (a re-import, say) registers nothing more.
    """
    try:
        import threadpoolctl
    except ImportError:
        return False
    if not hasattr(threadpoolctl, "register") or not hasattr(threadpoolctl, "LibController"):
        return False  # threadpoolctl < 3.5 has no third-party controllers
    if any(
        getattr(c, "internal_api", None) == "opweave"
        for c in getattr(threadpoolctl, "_ALL_CONTROLLERS", ())
    ):
        return True

    class OpweaveController(threadpoolctl.LibController):  # type: ignore[misc]
        """threadpoolctl's view of opweave's intra-op pool (threads per op, caller included)."""

        user_api = "opweave"
        internal_api = "opweave"
        filename_prefixes = ("_opweave_core",)

        def get_num_threads(self) -> int:
            return _runtime.intra_threads()

        def set_num_threads(self, num_threads: int) -> Any:
            # threadpool_limits restores by calling this again with the size it saw on entry, so a
            # call asking for the size saved by the latest unrestored call is a restore: it puts
            # back that saved state, provenance included (see _runtime.restore). Nested limits
            # (which share this instance through threadpoolctl's cached controller) nest here.
            n = max(1, int(num_threads))
            stack = _saved_states.setdefault(self, [])
            if stack and n == stack[-1].size:
                _runtime.restore("intra", stack.pop())
                return None
            saved = _runtime.snapshot("intra")
            _runtime.set_intra_threads(n, _SOURCE.format(n=n))
            stack.append(saved)  # only once the limit is in effect: a refused one has no restore
            return None

        def get_version(self) -> str:
            return __version__

    threadpoolctl.register(OpweaveController)
    return True


# Per controller instance, the states saved by limits not yet restored, innermost last
# (threadpool_limits restores through the instance that set the limit).
_saved_states: weakref.WeakKeyDictionary[Any, list[_runtime.PoolState]] = (
    weakref.WeakKeyDictionary()
)
