"""Exception classes raised by opweave, mirroring TensorFlow's ``tf.errors``.

Every failure during a run is an :class:`OpError` subclass that names the node and op that
failed::

    try:
        sess.run(y, feed_dict={x: bad})
    except opweave.errors.InvalidArgumentError as e:
        print(e.node_name, e.op_type, e.message)
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = [
    "ABORTED",
    "ALREADY_EXISTS",
    "CANCELLED",
    "DATA_LOSS",
    "DEADLINE_EXCEEDED",
    "FAILED_PRECONDITION",
    "INTERNAL",
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "OK",
    "OUT_OF_RANGE",
    "RESOURCE_EXHAUSTED",
    "UNAVAILABLE",
    "UNIMPLEMENTED",
    "UNKNOWN",
    "AbortedError",
    "AlreadyExistsError",
    "CancelledError",
    "DataLossError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "OpError",
    "OutOfRangeError",
    "ResourceExhaustedError",
    "UnavailableError",
    "UnimplementedError",
    "UnknownError",
    "error_from_code",
]

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15


class OpError(Exception):
    """A failure while running a graph.

    Attributes
    ----------
    node_name : str or None
        The name of the node that failed, when one did.
    op_type : str or None
        That node's op type (``"MatMul"``, ``"PyFunc"``, ...).
    message : str
        What went wrong.
    error_code : int
        TensorFlow's canonical error code.
    op : Operation or None
        The failing operation, as in TensorFlow, when the error came from a run of a graph that
        has it.
    node_def : NodeDef-like or None
        ``op.node_def``: the failing node's name, op type, inputs, device and attributes.
    """

    error_code: int = UNKNOWN
    op: Any = None

    def __init__(
        self,
        node_name: str | None = None,
        op_type: str | None = None,
        message: str = "",
        error_code: int | None = None,
    ) -> None:
        self.node_name = node_name
        self.op_type = op_type
        self.message = message
        if error_code is not None:
            self.error_code = error_code
        super().__init__(self._describe())

    @property
    def node_def(self) -> Any:
        """The failing node's definition (``op.node_def``), or None."""
        return None if self.op is None else self.op.node_def

    def _attach_graph(self, graph: Any) -> None:
        """Resolve ``node_name`` to the Operation of ``graph`` that failed (for ``.op``)."""
        if self.node_name and self.op is None:
            # A node the graph optimizer made (a folded constant) has no Python Operation.
            with contextlib.suppress(KeyError, ValueError):
                self.op = graph.get_operation_by_name(self.node_name)

    def _describe(self) -> str:
        if self.node_name:
            return f"{self.message}\n\t [[node {self.node_name} (op: {self.op_type})]]"
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross processes (Dask and Ray workers send them back to the client): rebuild
        # from the fields, not from the formatted text, which __init__ would format again.
        return (type(self), (self.node_name, self.op_type, self.message, self.error_code))


class CancelledError(OpError):
    """The run was cancelled (session closed, Ctrl-C, or another failure stopped it)."""

    error_code = CANCELLED


class UnknownError(OpError):
    """An error that fits no other class (e.g. an unexpected C++ exception)."""

    error_code = UNKNOWN


class InvalidArgumentError(OpError):
    """An op got an argument it cannot use: wrong shape, dtype or value."""

    error_code = INVALID_ARGUMENT


class DeadlineExceededError(OpError):
    """The run took longer than ``timeout_in_ms`` / ``operation_timeout_in_ms``."""

    error_code = DEADLINE_EXCEEDED


class NotFoundError(OpError):
    """A requested node, tensor or pool does not exist."""

    error_code = NOT_FOUND


class AlreadyExistsError(OpError):
    """Something being created already exists."""

    error_code = ALREADY_EXISTS


class ResourceExhaustedError(OpError):
    """Memory (or another resource) ran out, e.g. a tensor too large to allocate."""

    error_code = RESOURCE_EXHAUSTED


class FailedPreconditionError(OpError):
    """The system is not in a state to run the operation (e.g. a closed session)."""

    error_code = FAILED_PRECONDITION


class AbortedError(OpError):
    """The operation was aborted."""

    error_code = ABORTED


class OutOfRangeError(OpError):
    """An index or iteration went past its valid range."""

    error_code = OUT_OF_RANGE


class UnimplementedError(OpError):
    """The operation is not implemented for these arguments."""

    error_code = UNIMPLEMENTED


class InternalError(OpError):
    """An invariant of opweave itself broke; please report it."""

    error_code = INTERNAL


class UnavailableError(OpError):
    """The service is unavailable."""

    error_code = UNAVAILABLE


class DataLossError(OpError):
    """Unrecoverable data loss or corruption: a truncated or corrupt file (a GraphDef's bytes)."""

    error_code = DATA_LOSS


_BY_CODE: dict[int, type[OpError]] = {
    cls.error_code: cls
    for cls in (
        CancelledError,
        UnknownError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        AlreadyExistsError,
        ResourceExhaustedError,
        FailedPreconditionError,
        AbortedError,
        OutOfRangeError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
    )
}


def error_from_code(
    code: int, message: str, node_name: str | None = None, op_type: str | None = None
) -> OpError:
    """Return the :class:`OpError` subclass instance for a canonical error ``code``.

    >>> error_from_code(3, "bad shape").__class__.__name__
    'InvalidArgumentError'
    """
    cls = _BY_CODE.get(code, UnknownError)
    return cls(node_name, op_type, message, code)
