"""The default session of each thread: the innermost session entered with ``with``.

``Session`` pushes itself here; ``Tensor.eval`` and ``Operation.run`` (framework.py) read it. Both
import this module instead of each other, so the graph layer does not depend on the session.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TypeVar

__all__ = ["entered", "innermost"]

S = TypeVar("S")

_stack = threading.local()  # .sessions: this thread's entered sessions, innermost last


def innermost() -> object | None:
    """The innermost session entered in this thread and not yet left, or None."""
    sessions: list[object] = getattr(_stack, "sessions", [])
    return sessions[-1] if sessions else None


@contextlib.contextmanager
def entered(session: S) -> Iterator[S]:
    """Make ``session`` this thread's default session inside the ``with`` block."""
    sessions: list[object] = getattr(_stack, "sessions", None) or []
    _stack.sessions = sessions
    sessions.append(session)
    try:
        yield session
    finally:
        sessions.pop()
