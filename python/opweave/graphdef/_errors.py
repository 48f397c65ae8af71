"""The errors of reading a GraphDef."""

from __future__ import annotations

from ..errors import InvalidArgumentError

__all__ = ["GraphDefError"]


class GraphDefError(InvalidArgumentError, ValueError):
    """A GraphDef that does not describe a graph opweave can build: a missing input, a cycle, a
    wrong attribute, a constant whose bytes do not match its shape, ...

    An :class:`opweave.errors.InvalidArgumentError` naming the node and its op, and a
    ``ValueError`` too, since TensorFlow's ``import_graph_def`` raises ValueError for these.
    """

    def __init__(
        self,
        message: str = "",
        node_name: str | None = None,
        op_type: str | None = None,
        error_code: int | None = None,
    ) -> None:
        super().__init__(node_name, op_type, message, error_code)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.node_name, self.op_type, self.error_code))
