# Type stubs for the private extension module. Keep in step with csrc/bindings/.
from collections.abc import Sequence
from typing import Any

import numpy as np

__version__: str

class CoreError(RuntimeError):
    """args = (code: int, message: str)"""

# -- graph and session (csrc/bindings/graph_bindings.cpp, session_bindings.cpp) ------------------

class DType:
    float32: DType
    float64: DType
    int32: DType
    int64: DType
    bool: DType
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class Graph:
    def __init__(self) -> None: ...
    def add_node(
        self,
        name: str,
        op: str,
        inputs: Sequence[tuple[int, int]],
        control_inputs: Sequence[int],
        attrs: dict[str, Any],
        device: str,
        num_outputs: int,
    ) -> int: ...
    def num_nodes(self) -> int: ...

class InterPool:
    @property
    def num_threads(self) -> int: ...
    @property
    def name(self) -> str: ...

StatsRow = tuple[str, str, str, int, int, int, int]

class Executor:
    def __init__(self, graph: Graph) -> None: ...
    def run(
        self,
        feeds: Sequence[tuple[int, int, np.ndarray[Any, Any]]],
        fetches: Sequence[tuple[int, int]],
        targets: Sequence[int],
        inter_pool: InterPool | None,
        timeout_ms: int,
        trace: bool,
    ) -> tuple[list[np.ndarray[Any, Any]], list[StatsRow] | None]: ...
    def num_compiled(self) -> int: ...

def configure_global_pools_if_unset(
    intra: int, inter: int, source: str
) -> tuple[int, int, str, str]: ...
def global_inter_pool() -> InterPool: ...
def named_inter_pool(name: str, num_threads: int) -> InterPool: ...
def new_inter_pool(num_threads: int, name: str) -> InterPool: ...
def resolve_num_threads(requested: int) -> int: ...
