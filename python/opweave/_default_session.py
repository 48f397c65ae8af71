"""The default session of each thread: the innermost session entered with ``with``.

``Session`` pushes itself here; ``Tensor.eval`` and ``Operation.run`` (framework.py) read it. Both
import this module instead of each other, so the graph layer does not depend on the session.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TypeVar

__all__ = ["entered", "innermost", "push", "remove"]

S = TypeVar("S")

_local = threading.local()  # .sessions: this thread's entered sessions, innermost last
# Every thread's stack by thread id, so an InteractiveSession closed in another thread than the
# one it was made in can leave that thread's stack. Lists are only appended to and removed from
# under _registry_lock; innermost() reads its own thread's list without it (a list read is one
# atomic operation under the GIL, and only an InteractiveSession's close changes another
# thread's list).
_by_thread: dict[int, list[object]] = {}
_registry_lock = threading.Lock()


def _stack() -> list[object]:
    sessions: list[object] | None = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = []
        _local.sessions = sessions
    return sessions


def innermost() -> object | None:
    """The innermost session entered in this thread and not yet left, or None."""
    sessions: list[object] = getattr(_local, "sessions", [])
    return sessions[-1] if sessions else None


def push(session: object) -> None:
    """Make ``session`` this thread's default session until :func:`remove`."""
    sessions = _stack()
    with _registry_lock:
        _by_thread[threading.get_ident()] = sessions
        sessions.append(session)


def remove(session: object, thread: int | None = None) -> None:
    """Take ``session`` (its innermost entry) off the stack of ``thread`` (default: this one)."""
    ident = threading.get_ident() if thread is None else thread
    with _registry_lock:
        sessions = _by_thread.get(ident)
        if not sessions:
            return
        for i in range(len(sessions) - 1, -1, -1):
            if sessions[i] is session:
                del sessions[i]
                break
        if not sessions:  # an empty stack leaves the registry, so dead threads leave nothing
            del _by_thread[ident]


@contextlib.contextmanager
def entered(session: S) -> Iterator[S]:
    """Make ``session`` this thread's default session inside the ``with`` block."""
    push(session)
    try:
        yield session
    finally:
        remove(session)
