"""TensorFlow's strided-slice index arithmetic, for static shape inference.

``StridedSlice(input, begin, end, strides)`` with its five bit masks means what TensorFlow's
``ValidateStridedSliceOp`` says; the C++ kernel (``csrc/opweave/kernels/slice_ops.cpp``) does the
same arithmetic on the actual shape at run time, and this module does it on a static shape whose
dimensions (and ``begin`` / ``end`` values) may be unknown, so graphs get the output shape
TensorFlow would give them.

>>> dense_slice((4, 5), [1, 0], [3, 0], [1, 2], end_mask=2).final_shape
(2, 3)
>>> dense_slice((4, None), [0, 0], [1, 0], [1, 1], shrink_axis_mask=1, end_mask=2).final_shape
(None,)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["DenseSlice", "SliceError", "dense_slice"]

NEW_AXIS = -1
SHRINK_AXIS = -2


class SliceError(ValueError):
    """A slice that TensorFlow rejects (the message is TensorFlow's)."""


@dataclass
class DenseSlice:
    """One strided slice in terms of the input's dimensions.

    Attributes
    ----------
    begin : list of (int or None)
        The first index taken in each input dimension (None where unknown).
    strides : list of int
        The step in each input dimension.
    sizes : list of (int or None)
        How many elements are taken in each input dimension (the "processing shape").
    shrink : list of bool
        The dimensions an integer index removes.
    final_shape : tuple of (int or None)
        The output's shape: ``sizes`` with new axes (1) added and shrunk axes removed.
    """

    begin: list[int | None] = field(default_factory=list)
    strides: list[int] = field(default_factory=list)
    sizes: list[int | None] = field(default_factory=list)
    shrink: list[bool] = field(default_factory=list)
    final_shape: tuple[int | None, ...] = ()


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


def _canonical(x: int | None, masked: bool, is_end: bool, stride: int, dim: int) -> int:
    """A bound made explicit (masked: the widest for the stride's sign), negative values counted
    from the end, clamped to the valid range."""
    lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return lo if (stride > 0) != is_end else hi
    assert x is not None
    fwd = dim + x if x < 0 else x
    return lo if fwd < lo else hi if fwd > hi else fwd


def dense_slice(
    shape: Sequence[int | None],
    begin: Sequence[int] | None,
    end: Sequence[int] | None,
    strides: Sequence[int],
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
) -> DenseSlice:
    """TensorFlow's strided slice of a tensor of static ``shape`` (None: unknown dimension).

    ``begin`` / ``end`` are None when their values are unknown (their length is that of
    ``strides``). Raises :class:`SliceError` with TensorFlow's message for an invalid slice.
    """
    if begin is not None and len(begin) != len(strides):
        raise SliceError("Expected begin, end, and strides to be 1D equal size tensors")
    if end is not None and len(end) != len(strides):
        raise SliceError("Expected begin, end, and strides to be 1D equal size tensors")
    if ellipsis_mask & (ellipsis_mask - 1):
        raise SliceError("Multiple ellipses in slice spec not allowed")
    # Step 1: new axes after the ellipsis; no ellipsis means an implicit one at the end.
    sparse_dims = len(strides)
    after_ellipsis = 0
    seen = False
    for i in range(sparse_dims):
        if seen and _bit(new_axis_mask, i):
            after_ellipsis += 1
        if _bit(ellipsis_mask, i):
            seen = True
    if not seen:
        ellipsis_mask |= 1 << sparse_dims
        sparse_dims += 1
    # Step 2: one entry per input dimension.
    dims = len(shape)
    d_begin: list[int | None] = [0] * dims
    d_end: list[int | None] = [0] * dims
    d_strides = [1] * dims
    begin_masked = [False] * dims
    end_masked = [False] * dims
    shrink = [False] * dims
    gather: list[int] = []
    full = 0
    for i in range(sparse_dims):
        if _bit(ellipsis_mask, i):
            nxt = min(dims - (sparse_dims - i) + 1 + after_ellipsis, dims)
            while full < nxt:
                begin_masked[full] = end_masked[full] = True
                gather.append(full)
                full += 1
        elif _bit(new_axis_mask, i):
            gather.append(NEW_AXIS)
        else:
            if full == dims:
                raise SliceError(
                    f"Index out of range using input dim {full}; input has only {dims} dims"
                )
            d_begin[full] = None if begin is None else int(begin[i])
            d_end[full] = None if end is None else int(end[i])
            d_strides[full] = int(strides[i])
            begin_masked[full] = _bit(begin_mask, i)
            end_masked[full] = _bit(end_mask, i)
            if _bit(shrink_axis_mask, i):
                gather.append(SHRINK_AXIS)
                shrink[full] = True
            else:
                gather.append(full)
            full += 1
    # Step 3: explicit, clamped bounds and the number of elements per dimension.
    out = DenseSlice(shrink=shrink)
    known = begin is not None and end is not None
    for i in range(dims):
        dim = shape[i]
        stride = d_strides[i]
        out.strides.append(stride)
        if dim is None:
            out.begin.append(None)
            out.sizes.append(1 if shrink[i] else None)
            continue
        if stride == 0:
            raise SliceError(f"strides[{i}] must be non-zero")
        if shrink[i] and stride <= 0:
            raise SliceError("only stride 1 allowed on non-range indexing.")
        lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)

        interval: int | None = None
        b: int | None = None
        if known:
            bi = d_begin[i]
            assert bi is not None
            if shrink[i]:
                b = dim + bi if bi < 0 else bi
                if not 0 <= b < dim:
                    raise SliceError(f"slice index {bi} of dimension {i} out of bounds.")
                interval = 1
            else:
                b = _canonical(bi, begin_masked[i], False, stride, dim)
                interval = _canonical(d_end[i], end_masked[i], True, stride, dim) - b
        elif shrink[i]:
            interval = 1
        elif begin_masked[i] and end_masked[i]:
            interval = dim if stride > 0 else -dim
            b = lo if stride > 0 else hi
        out.begin.append(b)
        if interval is None:
            out.sizes.append(None)
        elif interval == 0 or (interval < 0) != (stride < 0):
            out.sizes.append(0)
        else:
            out.sizes.append(interval // stride + (1 if interval % stride else 0))
    # Step 4: the final shape.
    final: list[int | None] = []
    for g in gather:
        if g >= 0:
            final.append(out.sizes[g])
        elif g == NEW_AXIS:
            final.append(1)
    out.final_shape = tuple(final)
    return out
