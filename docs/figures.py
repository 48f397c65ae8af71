"""Make the README's pictures from real runs: ``python docs/figures.py``.

- ``docs/img/timeline.png``: Chrome traces of a typical run (the median of 15) of the built-in
  MLP towers (``opweave.models.mlp_towers``) under four (intra, inter) settings, drawn from the
  JSON that :class:`opweave.timeline.Timeline` writes (also saved, not committed, as
  ``docs/img/timeline_<intra>_<inter>.json`` for chrome://tracing or Perfetto).
- ``docs/img/tune_mlp.png``: the tuner's heat map (``opweave.tune``) of the same model over
  intra and inter in {1, 2, 4}, each setting in a fresh process; the table is printed too.

Needs matplotlib (``pip install "opweave[plot]"``). The pictures show the machine they were made
on: the README says which.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import opweave as ow
from opweave.timeline import Timeline

OUT = Path(__file__).resolve().parent / "img"

# One colour per op type; anything else is grey.
COLOURS = {
    "MatMul": "#1f77b4",
    "Add": "#ff7f0e",
    "Relu": "#2ca02c",
    "AddN": "#d62728",
    "Sum": "#9467bd",
    "Placeholder": "#8c564b",
    "Const": "#c7c7c7",
}


def traced_run(intra: int, inter: int, runs: int = 15) -> dict[str, Any]:
    """The trace of a typical run of the MLP towers: of ``runs`` traced runs (after one that
    compiles and measures), the one of median length, so the picture is neither a lucky nor an
    unlucky run."""
    m = ow.models.mlp_towers()
    options = ow.RunOptions(trace_level=ow.RunOptions.FULL_TRACE)
    traced: list[tuple[int, Timeline]] = []
    with ow.threads(intra=intra, inter=inter), ow.Session(graph=m.graph) as sess:
        sess.run(m.fetches, m.feed_dict)
        for _ in range(runs):
            meta = ow.RunMetadata()
            sess.run(m.fetches, m.feed_dict, options=options, run_metadata=meta)
            nodes = meta.step_stats.node_stats
            length = max(n.all_end_nanos for n in nodes) - min(n.scheduled_nanos for n in nodes)
            traced.append((length, Timeline(meta.step_stats)))
    traced.sort(key=lambda item: item[0])
    timeline = traced[len(traced) // 2][1]
    timeline.save(OUT / f"timeline_{intra}_{inter}.json")
    return dict(json.loads(timeline.generate_chrome_trace_format()))


def draw_timelines(panels: list[tuple[str, dict[str, Any]]], title: str, path: Path) -> None:
    """Gantt charts of Chrome traces: a row per thread, ops as bars, chunks as thin bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    heights = [
        1 + len([e for e in t["traceEvents"] if e["name"] == "thread_name"]) for _, t in panels
    ]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(11, 1.6 + 0.55 * sum(heights)),
        sharex=True,
        gridspec_kw={"height_ratios": heights},
    )
    for ax, (label, trace) in zip(axes, panels, strict=True):
        events = trace["traceEvents"]
        names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
        order = {
            e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"
        }
        rows = {tid: i for i, tid in enumerate(sorted(names, key=lambda t: order[t]))}
        for e in events:
            if e.get("cat") == "Op":
                colour = COLOURS.get(e["args"]["op"], "#7f7f7f")
                ax.broken_barh(
                    [(e["ts"] / 1000, e["dur"] / 1000)], (rows[e["tid"]] - 0.4, 0.5), color=colour
                )
            elif e.get("cat") == "intra-op chunk":
                ax.broken_barh(
                    [(e["ts"] / 1000, e["dur"] / 1000)],
                    (rows[e["tid"]] + 0.15, 0.22),
                    color="#17becf",
                    edgecolor="#0b6e78",
                    linewidth=0.3,
                )
        ax.set_yticks(list(rows.values()), [names[t] for t in rows])
        ax.set_ylim(len(rows) - 0.5, -0.6)
        ax.set_title(label, fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel("time since the run started (ms)")
    legend = [Patch(color=c, label=op) for op, c in COLOURS.items()]
    legend.append(Patch(color="#17becf", label="intra-op chunk (a piece of one op's loop)"))
    fig.legend(handles=legend, loc="lower center", ncol=8, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Write the pictures into docs/img."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    cpus = len(os.sched_getaffinity(0))
    settings = [
        (1, 1, "one op at a time, each on one thread"),
        (2, 1, "one op at a time, each split over 2 threads"),
        (1, 2, "2 ops at once, each on one thread"),
        (2, 2, "2 ops at once, each may split over 2 threads (more threads than CPUs)"),
    ]
    panels = []
    for intra, inter, what in settings:
        trace = traced_run(intra, inter)
        end = max(e["ts"] + e.get("dur", 0) for e in trace["traceEvents"] if "ts" in e) / 1000
        panels.append((f"intra={intra}, inter={inter}: {what} -- {end:.1f} ms", trace))
    m = ow.models.mlp_towers()
    draw_timelines(panels, f"{m.description}, {cpus} CPUs", OUT / "timeline.png")
    print(f"wrote {OUT / 'timeline.png'} (and the traces as docs/img/timeline_*.json)")
    result = ow.tune("mlp", intra=[1, 2, 4], inter=[1, 2, 4], runs=15)
    print(result.format_table())
    result.plot(OUT / "tune_mlp.png")
    print(f"wrote {OUT / 'tune_mlp.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
