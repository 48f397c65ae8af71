# Type stubs for the private extension module. Keep in step with csrc/bindings/.
from collections.abc import Sequence
from typing import Any

import numpy as np

__version__: str

class CoreError(RuntimeError):
    """args = (code: int, message: str)"""

# --- kernels (csrc/bindings/kernel_bindings.cpp) ---

def matmul(
    a: np.ndarray[Any, Any],
    b: np.ndarray[Any, Any],
    transpose_a: bool = ...,
    transpose_b: bool = ...,
    out: np.ndarray[Any, Any] | None = ...,
    num_threads: int = ...,
) -> np.ndarray[Any, Any]: ...
def reduce(
    op: str,
    x: np.ndarray[Any, Any],
    axes: Sequence[int] | None = ...,
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
