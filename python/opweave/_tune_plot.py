"""The tuner's heat map: median time over the (intra, inter) grid (matplotlib, optional extra)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .tuning import TuneResult

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


def plot_heat_map(result: TuneResult, path: Path) -> Path:
    """Draw ``result`` as a heat map (x: intra, y: inter, colour: median ms) into ``path``."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle
    except ImportError:
        raise ImportError(INSTALL_HINT) from None

    intras = sorted({r.intra for r in result.rows})
    inters = sorted({r.inter for r in result.rows})
    medians = np.full((len(inters), len(intras)), np.nan)
    for r in result.rows:
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
    for r in result.rows:
        x, y = intras.index(r.intra), inters.index(r.inter)
        if not r.ok:
            text, colour = "failed", "red"
        elif r.check == "mismatch":
            text, colour = f"MISMATCH\n{r.median * 1e3:.3g} ms", "red"
        else:
            ms = r.median * 1e3
            speedup = result.speedup(r)
            text = f"{ms:.3g} ms" + ("" if math.isnan(speedup) else f"\n{speedup:.2f}x")
            # viridis_r is bright for fast cells: dark text there, light text on slow ones.
            colour = "black" if hi == lo or (ms - lo) / (hi - lo) < 0.5 else "white"
        ax.text(x, y, text, ha="center", va="center", color=colour, fontsize=9)
    if result.recommended is not None:
        x = intras.index(result.recommended.intra)
        y = inters.index(result.recommended.inter)
        ax.add_patch(
            Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5)
        )
    ax.set_xticks(range(len(intras)), [_axis_label(v, inter=False) for v in intras])
    ax.set_yticks(range(len(inters)), [_axis_label(v, inter=True) for v in inters])
    ax.set_xlabel("intra_op_parallelism_threads (threads per op)")
    ax.set_ylabel("inter_op_parallelism_threads (ops at once)")
    cpus = f"{result.cpus} CPU" + ("s" if result.cpus != 1 else "")
    title = f"{result.model}: median of {result.runs} runs, {cpus}"
    if result.recommended is not None:
        title += f"\nrecommended (framed): {result.recommended.label}"
    ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=120)
    return path
