"""What the tuner measured over a grid, and the setting it recommends (with the reason)."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConfigProto
from ._grid import ModelError as TuneError
from ._row import TuneRow

__all__ = ["TOLERANCE", "TuneResult", "recommend"]

#: Default tolerance of the recommendation: a setting within 3 % of the fastest median is as good.
TOLERANCE = 0.03


def _threads_used(value: int, cpus: int, *, inter: bool) -> int:
    if value == 0:
        return cpus  # "the system picks": every CPU the process may use
    if value < 0 and inter:
        return 1  # every op in the caller's thread: one at a time, no pool
    return value


def recommend(
    rows: Iterable[TuneRow], *, cpus: int = 1, tolerance: float = TOLERANCE
) -> tuple[TuneRow | None, str]:
    """The setting to use and why: the fewest threads whose median is within noise of the best.

    A setting is *within noise* of the fastest one when its median is at most ``tolerance``
    slower, or when its interquartile range overlaps the fastest one's. Among those, the one
    using the fewest threads wins (``intra + inter``, then ``intra * inter``, then the faster).
    Failed settings and settings whose values differ from ``(1, 1)`` are never recommended.

    Parameters
    ----------
    rows : iterable of TuneRow
    cpus : int
        What ``0`` ("the system picks") means when counting threads.
    tolerance : float
        Relative slowdown still counted as noise.

    Returns
    -------
    (TuneRow or None, str)
        The recommended row (None if no setting succeeded) and the reason in one line.

    Examples
    --------
    >>> rows = [
    ...     TuneRow(1, 1, times=(0.100, 0.101, 0.102)),
    ...     TuneRow(1, 2, times=(0.055, 0.056, 0.057)),
    ...     TuneRow(2, 2, times=(0.054, 0.0545, 0.055)),
    ... ]
    >>> row, why = recommend(rows)
    >>> row.label
    'intra=1 inter=2'
    >>> for part in why.split("; "):
    ...     print(part)
    inter=2: 1.80x faster than inter=1
    intra=2 inter=2 is only 2.8% faster (< 3%): not worth more threads
    """
    usable = [r for r in rows if r.ok and r.check != "mismatch"]
    if not usable:
        return None, "no setting ran successfully with the same result as (1, 1)"
    best = min(usable, key=lambda r: r.median)
    near = [r for r in usable if r.median <= best.median * (1.0 + tolerance) or r.q1 <= best.q3]

    def cost(r: TuneRow) -> tuple[int, int, float]:
        a = _threads_used(r.intra, cpus, inter=False)
        b = _threads_used(r.inter, cpus, inter=True)
        return a + b, a * b, r.median

    chosen = min(near, key=cost)
    parts = []
    for dim, other in (("inter", "intra"), ("intra", "inter")):
        value = getattr(chosen, dim)
        if value == 1:
            continue
        one = [
            r
            for r in usable
            if getattr(r, dim) == 1 and getattr(r, other) == getattr(chosen, other)
        ]
        if one:
            parts.append(f"{dim}={value}: {one[0].median / chosen.median:.2f}x faster than {dim}=1")
    if chosen is not best:
        gain = chosen.median / best.median - 1.0
        if gain <= tolerance:
            lead = f"is only {gain:.1%} faster (< {tolerance:.0%})"
        else:  # a larger lead, but the run times overlap: not established, on this machine
            lead = f"leads by {gain:.1%}, within the run-to-run spread (IQRs overlap)"
        parts.append(f"{best.label} {lead}: not worth more threads")
    if not parts:
        parts.append("the fastest setting")
        if (chosen.intra, chosen.inter) == (1, 1):
            parts[0] += "; more threads do not pay off on this graph"
    return chosen, "; ".join(parts)


def _ms(seconds: float) -> float | None:
    return None if math.isnan(seconds) else round(seconds * 1e3, 6)


@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune` measured, and the setting it recommends.

    Attributes
    ----------
    model : str
        The model as given (``"mlp"``, a path, a module or function name).
    description : str
        What the graph computes.
    rows : tuple of TuneRow
        One per setting, in grid order, ``(1, 1)`` first.
    runs, warmup : int
        Timed and warm-up runs per setting.
    cpus : int
        CPUs available to the process that ran the tuner.
    tolerance : float
        The noise threshold of the recommendation.
    recommended : TuneRow or None
        The fewest threads within noise of the fastest (None if every setting failed).
    reason : str
        Why, in one line.

    Examples
    --------
    >>> r = TuneResult("mlp", "demo", (TuneRow(1, 1, times=(0.02,)), TuneRow(2, 1, times=(0.01,))))
    >>> r.recommended.label, r.speedup(r.rows[1])
    ('intra=2 inter=1', 2.0)
    >>> r.config_line()
    'opweave.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=1)'
    """

    model: str
    description: str
    rows: tuple[TuneRow, ...]
    runs: int = 0
    warmup: int = 0
    cpus: int = 1
    tolerance: float = TOLERANCE
    recommended: TuneRow | None = field(init=False)
    reason: str = field(init=False)

    def __post_init__(self) -> None:
        row, reason = recommend(self.rows, cpus=self.cpus, tolerance=self.tolerance)
        object.__setattr__(self, "recommended", row)  # frozen: set once, here
        object.__setattr__(self, "reason", reason)

    @property
    def best(self) -> TuneRow | None:
        """The fastest setting (by median) among those that succeeded with the right values."""
        usable = [r for r in self.rows if r.ok and r.check != "mismatch"]
        return min(usable, key=lambda r: r.median) if usable else None

    @property
    def baseline(self) -> TuneRow | None:
        """The ``(1, 1)`` row, if it succeeded."""
        return next((r for r in self.rows if (r.intra, r.inter) == (1, 1) and r.ok), None)

    @property
    def failures(self) -> tuple[TuneRow, ...]:
        """Settings whose worker failed or timed out."""
        return tuple(r for r in self.rows if r.error is not None)

    @property
    def mismatches(self) -> tuple[TuneRow, ...]:
        """Settings whose fetched values differ from ``(1, 1)``'s (each one is a bug)."""
        return tuple(r for r in self.rows if r.check == "mismatch")

    @property
    def differences(self) -> tuple[TuneRow, ...]:
        """Settings whose values differ from ``(1, 1)``'s in a model with ops whose results may
        change between runs (a py_function, unseeded random ops): not counted as bugs."""
        return tuple(r for r in self.rows if r.check == "differs")

    def speedup(self, row: TuneRow) -> float:
        """``median(1, 1) / median(row)``; NaN if either failed."""
        base = self.baseline
        if base is None or not row.ok:
            return math.nan
        return base.median / row.median

    def _recommended(self) -> TuneRow:
        if self.recommended is None:
            raise TuneError(f"nothing to recommend: {self.reason}")
        return self.recommended

    def config_line(self) -> str:
        """The recommended ConfigProto as one line of Python to paste.

        Raises
        ------
        TuneError
            Every setting failed.
        """
        r = self._recommended()
        return (
            f"opweave.ConfigProto(intra_op_parallelism_threads={r.intra}, "
            f"inter_op_parallelism_threads={r.inter})"
        )

    def to_config(self) -> ConfigProto:
        """The recommended setting as a :class:`~opweave.ConfigProto`.

        Raises
        ------
        TuneError
            Every setting failed.
        """
        r = self._recommended()
        return ConfigProto(
            intra_op_parallelism_threads=r.intra, inter_op_parallelism_threads=r.inter
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-ready data (times in milliseconds; ``None`` where unknown)."""

        def setting(r: TuneRow | None) -> dict[str, int] | None:
            return None if r is None else {"intra": r.intra, "inter": r.inter}

        speedups = [self.speedup(r) for r in self.rows]
        return {
            "model": self.model,
            "description": self.description,
            "runs": self.runs,
            "warmup": self.warmup,
            "cpus": self.cpus,
            "tolerance": self.tolerance,
            "rows": [
                {
                    "intra": r.intra,
                    "inter": r.inter,
                    "ok": r.ok,
                    "median_ms": _ms(r.median),
                    "q1_ms": _ms(r.q1),
                    "q3_ms": _ms(r.q3),
                    "min_ms": _ms(r.min),
                    "max_ms": _ms(r.max),
                    "speedup": None if math.isnan(s) else round(s, 4),
                    "times_ms": [_ms(t) for t in r.times],
                    "check": r.check,
                    "mismatch": r.mismatch,
                    "error": r.error,
                    "seen": None if r.seen is None else dataclasses.asdict(r.seen),
                }
                for r, s in zip(self.rows, speedups, strict=True)
            ],
            "best": setting(self.best),
            "recommended": setting(self.recommended),
            "reason": self.reason,
            "config_line": None if self.recommended is None else self.config_line(),
        }

    def format_table(self) -> str:
        """The table ``python -m opweave tune`` prints: medians, spread, speedup, what a traced run
        saw (ops at once, threads per op), result check."""
        same_name = self.description.startswith(f"{self.model}:")  # "chain: chain: ..." reads badly
        lines = [
            self.description if same_name else f"{self.model}: {self.description}",
            f"each setting in a fresh process: {self.warmup} warm-up + {self.runs} timed runs; "
            f"{self.cpus} CPU{'s' if self.cpus != 1 else ''} available",
            "",
            f"{'intra':>5} {'inter':>5} {'median ms':>10} {'IQR ms':>19} {'speedup':>8} "
            f"{'ops at once':>11} {'threads/op':>10}  result",
        ]
        best = self.best
        for r in self.rows:
            head = f"{r.intra:>5} {r.inter:>5} "
            if not r.ok:
                lines.append(head + "   FAILED (below)")
                continue
            note = []
            if r is self.recommended:
                note.append("<- recommended")
            if r is best:
                note.append("(fastest)")
            check = "MISMATCH" if r.check == "mismatch" else r.check
            iqr = f"{r.q1 * 1e3:.3f}-{r.q3 * 1e3:.3f}"
            speedup = self.speedup(r)
            ratio = "-" if math.isnan(speedup) else f"{speedup:.2f}x"
            at_once, per_op = (
                ("-", "-")
                if r.seen is None
                else (str(r.seen.max_ops_at_once), str(r.seen.max_threads_per_op))
            )
            lines.append(
                head
                + f"{r.median * 1e3:>10.3f} {iqr:>19} {ratio:>8} {at_once:>11} {per_op:>10}  "
                f"{check:<9} {' '.join(note)}".rstrip()
            )
        lines.append("")
        if self.recommended is None:
            lines.append(f"no recommendation: {self.reason}")
        else:
            if best is not None:
                gain = self.speedup(best)
                vs = (
                    ""
                    if best is self.baseline or math.isnan(gain)
                    else f", {gain:.2f}x faster than intra=1 inter=1"
                )
                lines.append(f"fastest    : {best.label} ({best.median * 1e3:.3f} ms{vs})")
            lines.append(f"recommended: {self.recommended.label} ({self.reason})")
            lines.append(f"paste      : {self.config_line()}")
        for r in self.mismatches:
            lines.append(
                f"\nMISMATCH {r.label}: its values differ from (1, 1)'s (a bug: kernels are "
                f"deterministic for any thread count): {r.mismatch}"
            )
        for r in self.differences:
            lines.append(
                f"\nDIFFERS {r.label}: its values differ from (1, 1)'s, which ops that may give "
                f"other results on every run explain (not a bug of the kernels): {r.mismatch}"
            )
        for r in self.failures:
            error = (r.error or "").splitlines()
            lines.append(f"\nFAILED {r.label}: {error[0] if error else ''}")
            lines.extend("  | " + line for line in error[1:])
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format_table()

    def plot(self, path: str | os.PathLike[str]) -> Path:
        """Draw a heat map of the median time over the grid into ``path`` (PNG, SVG, PDF...).

        Each cell shows the median and the speedup over ``(1, 1)``; the recommended cell is
        framed. Needs matplotlib (the ``plot`` extra); pyplot and its global state are not used.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        ImportError
            matplotlib is not installed; the message says how to install it.

        Examples
        --------
        >>> result.plot("tune.png")  # doctest: +SKIP
        PosixPath('tune.png')
        """
        from ._plot import plot_heat_map  # matplotlib is optional: imported only to plot

        cpus = f"{self.cpus} CPU" + ("s" if self.cpus != 1 else "")
        return plot_heat_map(
            self.rows,
            self.speedup,
            self.recommended,
            f"{self.model}: median of {self.runs} runs, {cpus}",
            Path(path),
        )
