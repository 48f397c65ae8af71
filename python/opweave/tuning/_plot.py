"""The tuner's heat map: median time over the (intra, inter) grid (matplotlib, optional extra).

It draws rows (``_row.TuneRow``), not a ``TuneResult``: the result imports this module to plot
itself, so this one must not import the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ._row import TuneRow

INSTALL_HINT = (
    "plotting the tuner's heat map needs matplotlib, an optional extra of opweave: "
    "pip install 'opweave[plot]' (or pip install matplotlib)"
)


def _axis_label(value: int, *, inter: bool) -> str:
    if value == 0:
        return "0 (auto)"
    if value < 0 and inter:
        return f"{value} (caller)"
    return str(value)


def plot_heat_map(
    rows: Sequence[TuneRow],
    speedup: Callable[[TuneRow], float],
    recommended: TuneRow | None,
    heading: str,
    path: Path,
) -> Path:
    """Draw ``rows`` as a heat map (x: intra, y: inter, colour: median ms) into ``path``.

    Each cell shows the median and ``speedup(row)`` (NaN: not shown); ``recommended`` is framed
    and named under ``heading`` in the title.
    """
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle
    except ImportError:
        raise ImportError(INSTALL_HINT) from None

    intras = sorted({r.intra for r in rows})
    inters = sorted({r.inter for r in rows})
    medians = np.full((len(inters), len(intras)), np.nan)
    for r in rows:
        if r.ok and r.check != "mismatch":  # a wrong result has no place on the colour scale
            medians[inters.index(r.inter), intras.index(r.intra)] = r.median * 1e3

    # Figure, not pyplot: no global state and no GUI backend, in a script or a notebook alike.
    fig = Figure(figsize=(1.6 + 1.3 * len(intras), 1.4 + 0.9 * len(inters)), layout="constrained")
    ax = fig.add_subplot()
    shown = np.ma.masked_invalid(medians)
    image = ax.imshow(shown, cmap="viridis_r", origin="lower", aspect="auto")
    fig.colorbar(image, ax=ax, label="median time (ms)")
    finite = medians[np.isfinite(medians)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    for r in rows:
        x, y = intras.index(r.intra), inters.index(r.inter)
        if not r.ok:
            text, colour = "failed", "red"
        elif r.check == "mismatch":
            text, colour = f"MISMATCH\n{r.median * 1e3:.3g} ms", "red"
        else:
            ms = r.median * 1e3
            gain = speedup(r)
            text = f"{ms:.3g} ms" + ("" if math.isnan(gain) else f"\n{gain:.2f}x")
            # viridis_r is bright for fast cells: dark text there, light text on slow ones.
            colour = "black" if hi == lo or (ms - lo) / (hi - lo) < 0.5 else "white"
        ax.text(x, y, text, ha="center", va="center", color=colour, fontsize=9)
    if recommended is not None:
        x = intras.index(recommended.intra)
        y = inters.index(recommended.inter)
        ax.add_patch(
            Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5)
        )
    ax.set_xticks(range(len(intras)), [_axis_label(v, inter=False) for v in intras])
    ax.set_yticks(range(len(inters)), [_axis_label(v, inter=True) for v in inters])
    ax.set_xlabel("intra_op_parallelism_threads (threads per op)")
    ax.set_ylabel("inter_op_parallelism_threads (ops at once)")
    title = heading
    if recommended is not None:
        title += f"\nrecommended (framed): {recommended.label}"
    ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=120)
    return path
