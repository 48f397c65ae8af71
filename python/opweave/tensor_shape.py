"""Static shapes: :class:`TensorShape` and :class:`Dimension`, as TensorFlow 1 has them.

A shape may be partly known: a dimension is ``None`` when its size is known only at run time, and
the whole shape has unknown rank when even the number of dimensions is. ``TensorShape`` is a
tuple of the known sizes (so ``shape == (None, 3)`` works), whose items read as
:class:`Dimension` objects, as in TensorFlow 1 (``shape[1].value``, ``int(shape[1])``).

>>> s = TensorShape([None, 3])
>>> s, s.as_list(), s[1].value, s.ndims
(TensorShape([Dimension(None), Dimension(3)]), [None, 3], 3, 2)
>>> str(s)
'(?, 3)'
>>> TensorShape(None).ndims is None
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from typing import Any, SupportsIndex, overload

import numpy as np

__all__ = ["Dimension", "TensorShape", "as_dimension", "as_shape", "dimension_value"]

#: The raw form used inside opweave: a tuple of sizes (``None`` = unknown), or ``None`` for an
#: unknown rank.
RawShape = tuple[int | None, ...] | None


class Dimension:
    """One dimension of a static shape: a size, or unknown (``value is None``).

    Arithmetic with an unknown dimension gives an unknown dimension.

    >>> Dimension(3) * 2, Dimension(None) + 1, int(Dimension(4))
    (Dimension(6), Dimension(None), 4)
    """

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        if isinstance(value, Dimension):
            value = value.value
        if value is None:
            self._value: int | None = None
            return
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"Dimension value must be an integer or None, got {value!r}")
        if value < 0:
            raise ValueError(f"Dimension {value} must be >= 0")
        self._value = int(value)

    @property
    def value(self) -> int | None:
        """The size, or None when unknown."""
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int")
        return self._value

    def __index__(self) -> int:
        return int(self)

    def __hash__(self) -> int:
        return hash(self._value)

    def __eq__(self, other: object) -> bool:
        try:
            return self._value == as_dimension(other).value
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __bool__(self) -> bool:
        return bool(self._value)

    def _arith(self, other: Any, fn: Callable[[int, int], int]) -> Dimension:
        o = as_dimension(other).value
        if self._value is None or o is None:
            return Dimension(None)
        return Dimension(fn(self._value, o))

    def __add__(self, other: Any) -> Dimension:
        return self._arith(other, operator.add)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Dimension:
        return self._arith(other, operator.sub)

    def __rsub__(self, other: Any) -> Dimension:
        return as_dimension(other)._arith(self, operator.sub)

    def __mul__(self, other: Any) -> Dimension:
        return self._arith(other, operator.mul)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Dimension:
        return self._arith(other, operator.floordiv)

    def __rfloordiv__(self, other: Any) -> Dimension:
        return as_dimension(other)._arith(self, operator.floordiv)

    def __mod__(self, other: Any) -> Dimension:
        return self._arith(other, operator.mod)

    def _compare(self, other: Any, fn: Callable[[int, int], bool]) -> bool | None:
        o = as_dimension(other).value
        if self._value is None or o is None:
            return None
        return fn(self._value, o)

    def __lt__(self, other: Any) -> bool | None:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> bool | None:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> bool | None:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> bool | None:
        return self._compare(other, operator.ge)

    def is_compatible_with(self, other: Any) -> bool:
        """True when both are equal or either is unknown."""
        o = as_dimension(other).value
        return self._value is None or o is None or self._value == o

    def merge_with(self, other: Any) -> Dimension:
        """The more specific of two compatible dimensions; ValueError when they differ."""
        o = as_dimension(other).value
        if not self.is_compatible_with(o):
            raise ValueError(f"Dimensions {self} and {o} are not compatible")
        return Dimension(self._value if self._value is not None else o)


def as_dimension(value: Any) -> Dimension:
    """``value`` as a :class:`Dimension` (an int, None or a Dimension)."""
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dim: Any) -> int | None:
    """The size of ``dim`` (a Dimension, int or None) as an int or None."""
    return dim.value if isinstance(dim, Dimension) else dim


class TensorShape(tuple):  # type: ignore[type-arg]  # a tuple of int | None, read as Dimensions
    """A static shape: a tuple of sizes (``None`` = unknown) that may have an unknown rank.

    Indexing and iteration give :class:`Dimension` objects (TensorFlow 1's behaviour); the tuple
    itself compares with plain tuples of ints and None.

    Examples
    --------
    >>> s = TensorShape([2, None])
    >>> s == (2, None), s.is_fully_defined(), s.merge_with([2, 5]).as_list()
    (True, False, [2, 5])
    """

    _unknown_rank: bool

    def __new__(cls, dims: Any = None) -> TensorShape:
        if isinstance(dims, TensorShape):
            return dims
        if dims is None:
            self = super().__new__(cls, ())
            self._unknown_rank = True
            return self
        if isinstance(dims, (int, np.integer, Dimension)) and not isinstance(dims, bool):
            dims = [dims]
        values = tuple(dimension_value(as_dimension(d)) for d in dims)
        self = super().__new__(cls, values)
        self._unknown_rank = False
        return self

    @property
    def ndims(self) -> int | None:
        """The rank, or None when unknown."""
        return None if self._unknown_rank else tuple.__len__(self)

    rank = ndims

    @property
    def dims(self) -> list[Dimension] | None:
        """The dimensions, or None for an unknown rank."""
        return None if self._unknown_rank else [Dimension(d) for d in tuple.__iter__(self)]

    def as_list(self) -> list[int | None]:
        """The sizes as a list (None = unknown); ValueError for an unknown rank."""
        if self._unknown_rank:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(tuple.__iter__(self))

    def as_raw(self) -> RawShape:
        """The internal form: a tuple of int | None, or None for an unknown rank."""
        return None if self._unknown_rank else tuple(tuple.__iter__(self))

    def is_fully_defined(self) -> bool:
        """True when the rank and every size are known."""
        return not self._unknown_rank and all(d is not None for d in tuple.__iter__(self))

    def num_elements(self) -> int | None:
        """The number of elements, or None when not fully defined."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in tuple.__iter__(self):
            n *= d if d is not None else 0
        return n

    def is_compatible_with(self, other: Any) -> bool:
        """True when the shapes could describe the same tensor."""
        o = as_shape(other)
        if self._unknown_rank or o._unknown_rank:
            return True
        if len(self.as_list()) != len(o.as_list()):
            return False
        return all(
            a is None or b is None or a == b
            for a, b in zip(self.as_list(), o.as_list(), strict=True)
        )

    def assert_is_compatible_with(self, other: Any) -> None:
        """ValueError unless :meth:`is_compatible_with`."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both; ValueError when they conflict."""
        o = as_shape(other)
        if self._unknown_rank:
            return o
        if o._unknown_rank:
            return self
        self.assert_is_compatible_with(o)
        return TensorShape(
            [a if a is not None else b for a, b in zip(self.as_list(), o.as_list(), strict=True)]
        )

    def with_rank(self, rank: int) -> TensorShape:
        """This shape with ``rank`` dimensions; ValueError when it has another rank."""
        if self._unknown_rank:
            return TensorShape([None] * rank)
        if self.ndims != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def assert_has_rank(self, rank: int) -> None:
        """ValueError unless the rank is unknown or ``rank``."""
        if not self._unknown_rank and self.ndims != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def concatenate(self, other: Any) -> TensorShape:
        """This shape followed by ``other``'s dimensions."""
        o = as_shape(other)
        if self._unknown_rank or o._unknown_rank:
            return TensorShape(None)
        return TensorShape(self.as_list() + o.as_list())

    def __len__(self) -> int:
        if self._unknown_rank:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return tuple.__len__(self)

    def __bool__(self) -> bool:
        return self._unknown_rank or tuple.__len__(self) > 0

    def __iter__(self) -> Iterator[Dimension]:
        if self._unknown_rank:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return (Dimension(d) for d in tuple.__iter__(self))

    @overload
    def __getitem__(self, key: SupportsIndex) -> Dimension: ...

    @overload
    def __getitem__(self, key: slice) -> TensorShape: ...

    def __getitem__(self, key: SupportsIndex | slice) -> Dimension | TensorShape:
        if self._unknown_rank:
            if isinstance(key, slice):
                return TensorShape(None)
            return Dimension(None)
        if isinstance(key, slice):
            return TensorShape(tuple.__getitem__(self, key))
        return Dimension(tuple.__getitem__(self, key))

    def __eq__(self, other: object) -> bool:
        try:
            o = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._unknown_rank or o._unknown_rank:
            return self._unknown_rank and o._unknown_rank
        return tuple.__eq__(self, o)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self.as_raw())

    def __repr__(self) -> str:
        if self._unknown_rank:
            return "TensorShape(None)"
        return f"TensorShape({[Dimension(d) for d in tuple.__iter__(self)]})"

    def __str__(self) -> str:
        if self._unknown_rank:
            return "<unknown>"
        dims = ["?" if d is None else str(d) for d in tuple.__iter__(self)]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TensorShape, (self.as_raw(),))


def as_shape(shape: Any) -> TensorShape:
    """``shape`` (a TensorShape, a sequence of sizes / Dimensions / None, or None) as a
    :class:`TensorShape`."""
    if isinstance(shape, TensorShape):
        return shape
    if shape is not None and not isinstance(shape, Iterable):
        return TensorShape([shape])
    return TensorShape(shape)
