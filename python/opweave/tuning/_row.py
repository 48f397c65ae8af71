"""One setting of the tuner's grid and the run times its fresh process measured."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from ..timeline import Parallelism

__all__ = ["TuneRow"]


@dataclass(frozen=True)
class TuneRow:
    """One setting of the grid and what its fresh process measured.

    Attributes
    ----------
    intra, inter : int
        The setting, as given to :class:`~opweave.ConfigProto`.
    times : tuple of float
        Seconds of each timed ``Session.run`` (after the warm-up runs); empty if it failed.
    error : str or None
        Why the setting's worker failed (exit status or timeout, and the tail of its stderr).
    check : str
        Its fetched values compared with those of ``(1, 1)``: ``"reference"`` (it is
        ``(1, 1)``), ``"same"``, ``"mismatch"`` (a bug: see ``mismatch``), ``"differs"`` (they
        differ, but the model has ops whose results may change between runs, such as a
        py_function: not a bug, and the setting may still be recommended) or ``"unchecked"``.
    mismatch : str or None
        Where the values differ (or why they could not be compared).
    seen : Parallelism or None
        What one traced run of the setting showed: the most ops at once and the most threads
        one op was split over (:func:`opweave.timeline.parallelism`).

    Examples
    --------
    >>> row = TuneRow(2, 1, times=(0.010, 0.012, 0.011))
    >>> row.ok, round(row.median * 1e3, 3)
    (True, 11.0)
    """

    intra: int
    inter: int
    times: tuple[float, ...] = ()
    error: str | None = None
    check: str = "unchecked"
    mismatch: str | None = None
    seen: Parallelism | None = None

    @property
    def ok(self) -> bool:
        """The worker ran and timed every run."""
        return self.error is None and bool(self.times)

    @property
    def median(self) -> float:
        """Median run time in seconds (NaN if the setting failed)."""
        return statistics.median(self.times) if self.times else math.nan

    def _quartiles(self) -> tuple[float, float]:
        if len(self.times) < 2:
            return self.median, self.median
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return q1, q3

    @property
    def q1(self) -> float:
        """First quartile of the run times in seconds."""
        return self._quartiles()[0]

    @property
    def q3(self) -> float:
        """Third quartile of the run times in seconds."""
        return self._quartiles()[1]

    @property
    def min(self) -> float:
        """Fastest run in seconds."""
        return min(self.times) if self.times else math.nan

    @property
    def max(self) -> float:
        """Slowest run in seconds."""
        return max(self.times) if self.times else math.nan

    @property
    def label(self) -> str:
        """``"intra=2 inter=1"``."""
        return f"intra={self.intra} inter={self.inter}"
