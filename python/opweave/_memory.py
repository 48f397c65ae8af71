"""Memory that opweave keeps for reuse: the tensor buffer cache.

Large tensor buffers (64 KiB and up) that a run frees are kept, per size class, for the next run
that needs one of that size, instead of going back to the operating system: otherwise every run
of a graph pays a page fault per 4 KiB of each intermediate result it writes (for the built-in MLP
towers, a quarter of the run). The cache holds at most ``OPWEAVE_BUFFER_CACHE_MB`` MiB (read at
import; default 256, ``0`` turns it off); :func:`empty_buffer_cache` gives it all back now.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _opweave_core as _core

__all__ = ["BufferCacheInfo", "buffer_cache_info", "empty_buffer_cache"]


@dataclass(frozen=True)
class BufferCacheInfo:
    """What the tensor buffer cache holds (see :func:`buffer_cache_info`)."""

    held_bytes: int
    """Bytes of freed buffers waiting for reuse."""
    cap_bytes: int
    """The most it may hold (0: the cache is off)."""
    cap_source: str
    """Where the cap came from: ``"default"``, ``"OPWEAVE_BUFFER_CACHE_MB=64"``, ..."""
    hits: int
    """Allocations served from the cache since the process started."""
    misses: int
    """Cacheable allocations that had to ask the system allocator."""


def buffer_cache_info() -> BufferCacheInfo:
    """How much memory the tensor buffer cache holds, its cap, and how often it was used.

    Examples
    --------
    >>> import opweave
    >>> info = opweave.buffer_cache_info()
    >>> info.held_bytes <= info.cap_bytes
    True
    """
    return BufferCacheInfo(**_core.buffer_cache_info())


def empty_buffer_cache() -> int:
    """Give every buffer the cache holds back to the system allocator; return how many bytes.

    Useful after a burst of large runs in a long-lived process, like PyTorch's
    ``torch.cuda.empty_cache()``. Buffers in use are not affected, and the cache fills again as
    runs free buffers.

    Examples
    --------
    >>> import opweave
    >>> freed = opweave.empty_buffer_cache()
    >>> opweave.buffer_cache_info().held_bytes
    0
    """
    return int(_core.empty_buffer_cache())
