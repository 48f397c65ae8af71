"""The one converter from the C++ core's errors to :mod:`opweave.errors`.

The core raises ``_opweave_core.CoreError`` in two shapes:

- ``(code, message)``: a kernel called from Python or a thread control refused the call;
- ``(code, message, node, op_type, original)``: a run failed in node ``node``; ``original`` is the
  exception a ``py_function`` body raised, or None.

:func:`raise_core_error` re-raises either as the matching :class:`opweave.errors.OpError`
subclass naming the node and op, or, for a ``py_function``, as the user's own exception object.
:func:`call_core` calls into the core and converts on the way out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

from . import _opweave_core as _core
from . import errors

__all__ = ["call_core", "raise_core_error"]

P = ParamSpec("P")
T = TypeVar("T")


def raise_core_error(exc: BaseException) -> NoReturn:
    """Re-raise a CoreError as the matching opweave.errors class (or the py_function's error).

    Call it outside the ``except`` block that caught ``exc``, so the CoreError does not show up as
    the context of what is raised.
    """
    args = exc.args
    code, message = int(args[0]), str(args[1])
    node = str(args[2]) if len(args) > 2 and args[2] else None
    op_type = str(args[3]) if len(args) > 3 and args[3] else None
    original = args[4] if len(args) > 4 else None
    if isinstance(original, BaseException):
        if hasattr(original, "add_note"):
            original.add_note(f"raised inside node {node!r} (op: {op_type})")
        # The original object: its type is the user's and its __traceback__ still holds the
        # frames of the py_function body; raising it chains them under Session.run's frames.
        raise original
    raise errors.error_from_code(code, message, node, op_type) from None


def call_core(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``, with a CoreError raised as :func:`raise_core_error` does."""
    try:
        return fn(*args, **kwargs)
    except _core.CoreError as exc:
        failure: BaseException = exc
    raise_core_error(failure)  # outside the except block: the CoreError is not shown as context
