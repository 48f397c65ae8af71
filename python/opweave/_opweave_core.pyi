# Type stubs for the private extension module. Keep in step with csrc/bindings/.
from collections.abc import Sequence
from typing import Any, Optional

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

# --- kernels (csrc/bindings/kernel_bindings.cpp) ---

def matmul(
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    transpose_a: bool = ...,
    transpose_b: bool = ...,
    out: Optional[np.ndarray[Any, Any]] = ...,
    num_threads: int = ...,
) -> np.ndarray[Any, Any]: ...
def reduce(
    op: str,
    x: np.ndarray[Any, Any],
    axes: Optional[Sequence[int]] = ...,
    keepdims: bool = ...,
    num_threads: int = ...,
) -> np.ndarray[Any, Any]: ...
def binary(
    op: str, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], num_threads: int = ...
) -> np.ndarray[Any, Any]: ...
def unary(op: str, x: np.ndarray[Any, Any], num_threads: int = ...) -> np.ndarray[Any, Any]: ...
def add_n(
    inputs: Sequence[np.ndarray[Any, Any]], num_threads: int = ...
) -> np.ndarray[Any, Any]: ...
def cast(
    x: np.ndarray[Any, Any], dtype: np.dtype[Any], num_threads: int = ...
) -> np.ndarray[Any, Any]: ...
def transpose(
    x: np.ndarray[Any, Any], perm: Sequence[int] = ..., num_threads: int = ...
) -> np.ndarray[Any, Any]: ...
def gemm_isa(dtype: str) -> str: ...
