"""The one converter from the C++ core's CoreError to the opweave.errors classes.

The core raises ``CoreError(code, message)`` from kernels and thread controls, and
``CoreError(code, message, node, op_type, original)`` from runs, where ``original`` is the Python
exception a py_function raised (re-raised as itself, with its traceback).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from . import _opweave_core as _core
from . import errors

R = TypeVar("R")


def raise_core_error(exc: BaseException) -> NoReturn:
    """Re-raise a CoreError as the matching opweave.errors class (or a py_function's error)."""
    args = exc.args
    code, message = int(args[0]), str(args[1])
    node = str(args[2]) if len(args) > 2 and args[2] else None
    op_type = str(args[3]) if len(args) > 3 and args[3] else None
    original = args[4] if len(args) > 4 else None
    if isinstance(original, BaseException):
        if hasattr(original, "add_note"):
            original.add_note(f"raised inside node {node!r} (op: {op_type})")
        # The original object: its type is the user's and its __traceback__ still holds the
        # frames of the py_function body; raising it chains them under the caller's frames.
        raise original
    raise errors.error_from_code(code, message, node, op_type) from None


def call_core(fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
    """``fn(*args, **kwargs)``, a CoreError raised as the matching opweave.errors class."""
    failure: BaseException | None = None
    try:
        return fn(*args, **kwargs)
    except _core.CoreError as exc:
        failure = exc
    # Raised outside the except block so the CoreError does not show up as context.
    raise_core_error(failure)
